"""The earliest slot a request may take in rolling windows whose future is partly booked: gaps filled.

A window's stamps are booked slots, each with its *spread*: how long after its slot the request
may reach the service (the booking process's latency margin until it is sent and answered, then
what its answer showed). A new stamp at ``t`` with spread ``m`` fits a window of ``limit`` events
in ``seconds`` when

- it keeps the even stream: every two neighbouring slots at least ``seconds / limit`` apart;
- every ``limit + 1`` consecutive stamps, in the order of their slots, it among them, span a whole
  window: the last slot at least ``seconds`` after the first one's slot plus its spread (so the
  service, which counts a request when it arrives, never sees ``limit + 1`` in a window).

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
    _broken: list[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # broken[s]: the stamps s and s + limit - 1 (limit apart once one more is put between them)
        # leave less than a window: no new stamp may go between them. Counted as a prefix sum.
        n, limit = len(self.at), self.limit
        broken = [0]
        for s in range(max(0, n - limit + 1)):
            late = self.at[s + limit - 1] + EPSILON < self.at[s] + self.spread[s] + self.seconds
            broken.append(broken[-1] + late)
        object.__setattr__(self, "_broken", broken)

    @property
    def gap(self) -> float:
        return self.seconds / self.limit

    def fits(self, t: float, spread: float) -> bool:
        """Whether a stamp at ``t`` with ``spread`` keeps this window's rules."""
        at, limit, n = self.at, self.limit, len(self.at)
        k = bisect_right(at, t)  # the new stamp's place: stamps before it are at[:k]
        if k > 0 and t + EPSILON < at[k - 1] + self.gap:
            return False
        if k < n and at[k] + EPSILON < t + self.gap:
            return False
        if k >= limit and t + EPSILON < at[k - limit] + self.spread[k - limit] + self.seconds:
            return False
        if k + limit - 1 < n and at[k + limit - 1] + EPSILON < t + spread + self.seconds:
            return False
        first, last = max(0, k - limit + 1), min(k - 1, n - limit)
        return first > last or self._broken[last + 1] == self._broken[first]

    def candidates(self, spread: float) -> list[float]:
        """Every time at which this window's rules may start to allow a stamp: right after a stamp,
        or a window after one (the earliest slot that fits is one of these, or the earliest asked)."""
        out = [a + self.gap for a in self.at]
        out += [a + s + self.seconds for a, s in zip(self.at, self.spread, strict=True)]
        return out


def earliest(after: float, windows: Sequence[Stamps], spread: float) -> float:
    """The earliest time, ``after`` or later, at which a stamp with ``spread`` fits every window.

    A stamp in several windows (a start: its key's and the account's) while any of them is busy (a
    stamp in the last window or ahead) falls on a multiple of the shortest gap, on the store's
    clock: every process's starts then meet in whole gaps, where stamps put anywhere would leave
    slivers too short for a request. A stamp in one window (a read) takes the earliest time that
    fits, on or off the grid, so one caller reading through a pool of keys goes as fast as the pool
    allows (on the grid, each read would wait for the next whole gap whichever key it took).
    An idle window takes a request at once.
    """
    several = len(windows) > 1
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
