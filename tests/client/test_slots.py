"""The earliest slot in partly booked windows: gaps are filled, bursts go at once while a window has
room, and the rules hold wherever it goes."""

import itertools
import math
import random

import pytest

from mediagen_nb.client.slots import Stamps, earliest
from mediagen_nb.runtime.clock import ManualClock
from mediagen_nb.sandbox.windows import RollingWindow


def valid(limit: int, seconds: float, stamps: list[tuple[float, float]]) -> bool:
    """Whether booked (slot, spread) stamps keep the even stream and, wherever each request arrives
    within its spread, never put ``limit + 1`` in a window (:func:`crowded`)."""
    ordered = sorted(stamps)
    gaps = all(b[0] - a[0] >= seconds / limit - 1e-9 for a, b in itertools.pairwise(ordered))
    return gaps and not crowded(limit, seconds, stamps)


def crowded(limit: int, seconds: float, stamps: list[tuple[float, float]]) -> bool:
    """Whether some arrivals (each request anywhere from its slot to its slot plus spread) put more than
    ``limit`` in one window: the service counts a request from its arrival until a window later, so
    at the moment ``x`` that most requests can be counted at once, each of them arrived at or before
    ``x`` and less than a window before (by brute force, over every slot)."""
    return any(
        sum(1 for a, s in stamps if a <= x + 1e-9 and x < a + s + seconds - 1e-9) > limit for x, _ in stamps
    )


def refused(limit: int, seconds: float, stamps: list[tuple[float, float]], rng: random.Random) -> int:
    """How many requests the sandbox's own window refuses when each arrives at a random moment of its
    spread (at either end, half the time)."""
    clock = ManualClock()
    service = RollingWindow(clock, limit, seconds)
    start = clock.now()
    arrivals = sorted(a + rng.choice([0.0, s, rng.uniform(0.0, s)]) for a, s in stamps)
    for arrival in arrivals:
        clock.advance(max(0.0, start + arrival - clock.now()))
        service.acquire("key")
    return service.refused


def window(limit: int, seconds: float, stamps: list[tuple[float, float]], burst: int = 1) -> Stamps:
    stamps = sorted(stamps)
    return Stamps(limit, seconds, [a for a, _ in stamps], [s for _, s in stamps], burst)


def test_a_read_fills_the_gap_a_start_left_on_its_key() -> None:
    """The key's stamps at 0 and 2 (its start waited for the account): a read goes at 1, not at 3."""
    key = window(60, 60.0, [(0.0, 0.0), (2.0, 0.0)])
    assert earliest(0.5, [key], 0.0) == 1.0
    account = window(60, 60.0, [(1.0, 0.0)])  # another key's start took the account at 1
    assert earliest(0.5, [key, account], 0.0) == 3.0  # a start needs both: after every booking


def test_a_stamp_never_makes_a_window_hold_one_too_many() -> None:
    """Three a window: stamps at 0, 1 and 5 leave a gap at 3 by spacing, but 3 would be the fourth
    within 10 s of 0 (with 1 and 5); the slot is 10 (0's window over, 5 s past the last stamp)."""
    stamps = window(3, 10.0, [(0.0, 0.0), (1.0, 0.0), (5.0, 0.0)])
    assert not stamps.fits(3.0, 0.0)
    assert earliest(0.0, [stamps], 0.0) == 10.0


def test_a_spread_delays_the_stamp_a_window_later() -> None:
    """A request that may arrive 0.5 s after its slot counts until then: the stamp a window later
    waits that long too, and a new stamp's own spread keeps it a window before the next."""
    stamps = window(2, 10.0, [(0.0, 0.5), (5.0, 0.0)])
    assert stamps.fits(10.5, 0.0) and not stamps.fits(10.4, 0.0)
    assert earliest(5.0, [stamps], 0.0) == 10.5
    ahead = window(2, 10.0, [(20.0, 0.0), (25.0, 0.0)])
    assert earliest(0.0, [ahead], 0.0) == 0.0  # two before them, a window earlier, fit: 0 and 5
    assert ahead.fits(14.5, 0.5)  # it may arrive at 15: a window before 25
    assert not ahead.fits(15.0, 0.5)  # it may arrive at 15.5: too close
    assert earliest(14.6, [ahead], 0.5) == 30.0  # so after them


def test_a_read_takes_the_earliest_fit_a_start_on_a_busy_window_a_whole_gap() -> None:
    """A read (one window) goes as early as the rules allow, so one caller reading through a pool of
    keys is not held to the grid; a start (key and account) on a busy window takes whole gaps, so
    every process's starts meet without slivers; an idle pair takes a start at once."""
    idle, account = window(60, 60.0, [(-60.0, 0.0)]), window(60, 60.0, [])
    assert earliest(3.7, [idle], 0.0) == 3.7
    assert earliest(3.7, [window(60, 60.0, [(3.0, 0.0)])], 0.0) == 4.0
    assert earliest(3.2, [window(60, 60.0, [(2.1, 0.0)])], 0.0) == 3.2  # 3.1 has passed: at once
    assert earliest(3.7, [idle, account], 0.0) == 3.7
    assert earliest(3.2, [window(60, 60.0, [(2.1, 0.0)]), account], 0.0) == 4.0  # 3.1 is no whole gap


def test_random_bookings_are_the_earliest_that_keep_the_rules() -> None:
    rng = random.Random(7)
    for _ in range(200):
        limit, seconds = rng.randint(1, 6), rng.choice([6.0, 10.0])
        booked: list[tuple[float, float]] = []
        for _ in range(rng.randint(0, 15)):  # book at random times, as many processes would
            after, spread = rng.uniform(0, 40), rng.choice([0.0, 0.0, 0.3, 1.0])
            booked.append((earliest(after, [window(limit, seconds, booked)], spread), spread))
            assert valid(limit, seconds, booked)
        after, spread = rng.uniform(0, 40), rng.choice([0.0, 0.5])
        stamps = window(limit, seconds, booked)
        slot = earliest(after, [stamps], spread)
        assert slot >= after and valid(limit, seconds, [*booked, (slot, spread)])
        busy = bool(booked) and max(booked)[0] > after - seconds
        gap = seconds / limit
        grid = [k * gap for k in range(math.ceil(after / gap), int(slot / gap) + 1)]
        earlier = grid if busy else [after]
        assert not any(valid(limit, seconds, [*booked, (t, spread)]) for t in earlier if t < slot - 1e-6)


def test_a_window_with_room_takes_a_burst_at_once_and_the_next_when_the_first_has_left() -> None:
    """The spec's rule alone (burst = limit): 60 go at once into an empty window, the 61st when the
    first has left it (its slot, its spread and a window later), the 62nd when the second has."""
    booked: list[tuple[float, float]] = []
    for _ in range(60):
        booked.append((earliest(100.0, [window(60, 60.0, booked, burst=60)], 0.25), 0.25))
    assert [at for at, _ in booked] == [100.0] * 60
    assert earliest(100.0, [window(60, 60.0, booked, burst=60)], 0.25) == 160.25
    later = [(100.0, 0.25)] * 59 + [(130.0, 0.25)]
    assert earliest(161.0, [window(60, 60.0, later, burst=60)], 0.25) == 161.0  # 59 left at 160.25
    assert earliest(100.0, [window(60, 60.0, later[:3], burst=60)], 0.0) == 100.0  # room: at once


def test_a_burst_of_three_on_a_limit_of_sixty_then_one_a_second() -> None:
    """burst = 3: three at once into an empty window; every four stamps span three gaps (3 s), so
    the next three go three gaps after the first three."""
    booked: list[tuple[float, float]] = []
    for _ in range(5):
        booked.append((earliest(0.0, [window(60, 60.0, booked, burst=3)], 0.0), 0.0))
    assert [at for at, _ in booked] == [0.0, 0.0, 0.0, 3.0, 3.0]


def test_random_bursty_bookings_never_put_limit_plus_one_in_a_window() -> None:
    rng = random.Random(11)
    for _ in range(200):
        limit, seconds = rng.randint(1, 6), rng.choice([6.0, 10.0])
        burst = rng.randint(1, limit)
        booked: list[tuple[float, float]] = []
        for _ in range(rng.randint(1, 15)):
            after, spread = rng.uniform(0, 40), rng.choice([0.0, 0.3, 1.0])
            slot = earliest(after, [window(limit, seconds, booked, burst)], spread)
            assert slot >= after
            booked.append((slot, spread))
            ordered = sorted(booked)
            assert not crowded(limit, seconds, booked)
            gap = seconds / limit
            spans = [ordered[i + burst][0] - ordered[i][0] for i in range(len(ordered) - burst)]
            assert all(span >= burst * gap - 1e-9 for span in spans)


def test_requests_booked_at_one_slot_leave_the_window_in_the_order_of_their_spreads() -> None:
    """Sixty requests booked at one slot reach the service over their spreads (a burst sent over a
    loaded event loop: the last one 0.59 s after the first). The next ten go as each of the first ten
    to arrive has left the window, whatever order the stamps are listed in, and the sandbox refuses none."""
    spreads = [0.01 * i for i in range(60)]
    for order in (spreads, spreads[::-1]):
        booked = [(100.0, s) for s in order]
        for _ in range(10):
            stamps = Stamps(60, 60.0, [a for a, _ in booked], [s for _, s in booked], burst=60)
            booked.append((earliest(100.0, [stamps], 0.0), 0.0))
        assert [a for a, _ in booked[60:]] == pytest.approx([160.0 + 0.01 * i for i in range(10)])
        assert not crowded(60, 60.0, booked)
        assert refused(60, 60.0, booked, random.Random(1)) == 0


def test_random_bookings_with_their_spreads_meet_no_refusal_from_the_sandbox_s_window() -> None:
    """Bookings from many processes, at random times and spreads, each arriving anywhere within its
    spread: the sandbox's own rolling window refuses none of them."""
    rng = random.Random(5)
    for _ in range(300):
        limit, seconds = rng.randint(1, 8), rng.choice([6.0, 10.0])
        burst = rng.choice([1, limit])
        booked: list[tuple[float, float]] = []
        for _ in range(rng.randint(1, 25)):
            after, spread = rng.uniform(0, 30), rng.choice([0.0, 0.2, 0.7, 2.0])
            booked.append((earliest(after, [window(limit, seconds, booked, burst)], spread), spread))
        for _ in range(5):
            assert refused(limit, seconds, booked, rng) == 0
