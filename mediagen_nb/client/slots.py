"""The earliest slot a request may take in rolling windows whose future is partly booked: gaps filled.

A window's stamps are booked slots, each with its *spread*: how long after its slot the request
may reach the service (the booking process's latency margin until it is sent and answered, then
what its answer showed). A new stamp at ``t`` with spread ``m`` fits a window of ``limit`` events
in ``seconds`` when

- every ``limit + 1`` consecutive stamps, in the order of their slots, it among them, span a whole
  window: the last slot at least ``seconds`` after the first one's slot plus its spread (so the
  service, which counts a request when it arrives, never sees ``limit + 1`` in a window);
- every ``burst + 1`` consecutive stamps span ``burst`` gaps of ``seconds / limit``: ``burst`` is
  how many may go at once. ``burst = limit`` (the client's default) is the spec's rule alone, 60 at
  once into an empty window and the 61st when the first has left it; ``burst = 1`` is an even
  stream, every two neighbouring slots a gap apart.

The earliest such ``t`` may lie *between* booked slots (a gap another process's bookings left, or a
start's account slot that was later than its key's), not only after the last one: filling it is what
lets several processes on keys of one account use every slot of both limits, instead of each key
waiting behind its own furthest booking (head-of-line blocking).
"""

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

EPSILON = 1e-9  # seconds: slots computed from one another compare equal despite rounding


@dataclass(frozen=True)
class Stamps:
    """One window's booked slots, ascending, with the spread of each (real seconds)."""

    limit: int
    seconds: float
    at: Sequence[float]
    spread: Sequence[float]
    burst: int = 1
    _broken: list[int] = field(init=False, repr=False, compare=False)
    _crowded: list[int] = field(init=False, repr=False, compare=False)
    _still: list[float] = field(init=False, repr=False, compare=False)  # the burst counts slots alone

    def __post_init__(self) -> None:
        if not 1 <= self.burst <= self.limit:
            raise ValueError("Stamps: burst must be 1 to limit")
        object.__setattr__(self, "_broken", _prefix(self.at, self.spread, self.limit, self.seconds))
        if self.burst < self.limit:
            still = [0.0] * len(self.at)
            object.__setattr__(self, "_still", still)
            object.__setattr__(self, "_crowded", _prefix(self.at, still, self.burst, self.burst * self.gap))

    @property
    def gap(self) -> float:
        return self.seconds / self.limit

    def fits(self, t: float, spread: float) -> bool:
        """Whether a stamp at ``t`` with ``spread`` keeps this window's rules."""
        k = bisect_right(self.at, t)  # the new stamp's place: stamps before it are at[:k]
        if not _fits(self.at, self.spread, self.limit, self.seconds, self._broken, k, t, spread):
            return False
        if self.burst == self.limit:  # the spec's rule alone: the short window is the window itself
            return True
        return _fits(self.at, self._still, self.burst, self.burst * self.gap, self._crowded, k, t, 0.0)

    def candidates(self, spread: float) -> list[float]:
        """Every time at which this window's rules may start to allow a stamp: a burst's gaps after
        a stamp, or a window after one (the earliest slot that fits is one of these, or the earliest
        asked)."""
        out = [a + s + self.seconds for a, s in zip(self.at, self.spread, strict=True)]
        if self.burst < self.limit:
            out += [a + self.burst * self.gap for a in self.at]
        return out


def _prefix(at: Sequence[float], spread: Sequence[float], limit: int, seconds: float) -> list[int]:
    """broken[s]: how many of the stamps before s and s + limit - 1 (limit apart once one more is put
    between them) leave less than ``seconds``: no new stamp may go between them. A prefix sum."""
    broken = [0]
    for s in range(max(0, len(at) - limit + 1)):
        late = at[s + limit - 1] + EPSILON < at[s] + spread[s] + seconds
        broken.append(broken[-1] + late)
    return broken


def _fits(
    at: Sequence[float],
    spread: Sequence[float],
    limit: int,
    seconds: float,
    broken: list[int],
    k: int,
    t: float,
    mine: float,
) -> bool:
    """Whether a stamp at ``t`` (place ``k``) with spread ``mine`` leaves every ``limit + 1`` consecutive
    stamps spanning ``seconds`` (plus the first one's spread)."""
    n = len(at)
    if k >= limit and t + EPSILON < at[k - limit] + spread[k - limit] + seconds:
        return False
    if k + limit - 1 < n and at[k + limit - 1] + EPSILON < t + mine + seconds:
        return False
    first, last = max(0, k - limit + 1), min(k - 1, n - limit)
    return first > last or broken[last + 1] == broken[first]


def earliest(after: float, windows: Sequence[Stamps], spread: float) -> float:
    """The earliest time, ``after`` or later, at which a stamp with ``spread`` fits every window.

    In an even stream (``burst`` 1), a stamp in several windows (a start: its key's and the
    account's) while any of them is busy (a stamp in the last window or ahead) falls on a multiple of
    the shortest gap, on the store's clock: every process's starts then meet in whole gaps, where
    stamps put anywhere would leave slivers too short for a request. A stamp in one window (a read),
    or in windows that take bursts, takes the earliest time that fits, on or off the grid, so one
    caller reading through a pool of keys goes as fast as the pool allows. An idle window takes a
    request at once.
    """
    several = len(windows) > 1 and all(window.burst == 1 for window in windows)
    busy = several and any(window.at and window.at[-1] > after - window.seconds for window in windows)
    gap = min(window.gap for window in windows) if busy else 0.0
    times = {after}
    for window in windows:
        times.update(t for t in window.candidates(spread) if t > after)
    for t in sorted({on_grid(t, gap) for t in times}):
        if all(window.fits(t, spread) for window in windows):
            return t
    raise AssertionError("a stamp always fits after every booked one")  # pragma: no cover


def on_grid(t: float, gap: float) -> float:
    """``t``, or the first multiple of ``gap`` after it (0: no grid)."""
    return t if gap <= 0 else math.ceil(t / gap - EPSILON) * gap
