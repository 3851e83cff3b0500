"""The earliest slot a request may take in rolling windows whose future is partly booked: gaps filled.

A window's stamps are booked slots, each with its *spread*: how long after its slot the request
may reach the service (the booking process's latency margin until it is sent and answered, then
what its answer showed). The service counts a request in its window from when it arrives until a
window later, and refuses one that finds ``limit`` there; so a stamp at ``a`` with spread ``s`` may
be counted at any moment of ``[a, a + s + seconds)``, its *reach*. A new stamp at ``t`` with spread
``m`` fits a window of ``limit`` events in ``seconds`` when

- no moment is in the reach of more than ``limit`` stamps, it among them (so whatever order the
  requests arrive in within their spreads, the service never sees ``limit + 1`` in a window);
- no moment is in more than ``burst`` stamps' ``[a, a + burst * seconds / limit)``: ``burst`` is how
  many may go at once. ``burst = limit`` (the client's default) is the spec's rule alone, 60 at once
  into an empty window and the 61st when the first has left it; ``burst = 1`` is an even stream,
  every two neighbouring slots a gap apart.

The earliest such ``t`` may lie *between* booked slots (a gap another process's bookings left, or a
start's account slot that was later than its key's), not only after the last one: filling it is what
lets several processes on keys of one account use every slot of both limits, instead of each key
waiting behind its own furthest booking (head-of-line blocking).
"""

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate

EPSILON = 1e-9  # seconds: slots computed from one another compare equal despite rounding


@dataclass(frozen=True)
class Reach:
    """How many stamps' reaches hold each moment: ``count[j]`` from ``moments[j]`` to the next one."""

    moments: list[float]
    count: list[int]

    @classmethod
    def of(cls, at: Sequence[float], length: Sequence[float]) -> "Reach":
        """The reaches ``[at[i], at[i] + length[i])``, each ending a hair early (slots computed from an
        end compare equal to it)."""
        changes = sorted(
            [(a, 1) for a in at] + [(a + n - EPSILON, -1) for a, n in zip(at, length, strict=True)]
        )
        moments = [t for t, _ in changes]
        return cls(moments, list(accumulate(step for _, step in changes)))

    def most(self, start: float, end: float) -> int:
        """The most reaches that hold any one moment of ``[start, end)``."""
        first = bisect_right(self.moments, start) - 1  # the change in force at ``start`` (-1: none yet)
        last = bisect_left(self.moments, end) - 1  # the last change before ``end``
        return max(self.count[max(first, 0) : last + 1], default=0)


@dataclass(frozen=True)
class Stamps:
    """One window's booked slots, ascending, with the spread of each (real seconds)."""

    limit: int
    seconds: float
    at: Sequence[float]
    spread: Sequence[float]
    burst: int = 1
    _reach: Reach = field(init=False, repr=False, compare=False)
    _crowd: Reach | None = field(init=False, repr=False, compare=False)  # the burst's, slots alone

    def __post_init__(self) -> None:
        if not 1 <= self.burst <= self.limit:
            raise ValueError("Stamps: burst must be 1 to limit")
        object.__setattr__(self, "_reach", Reach.of(self.at, [s + self.seconds for s in self.spread]))
        short = self.burst * self.gap
        crowd = Reach.of(self.at, [short] * len(self.at)) if self.burst < self.limit else None
        object.__setattr__(self, "_crowd", crowd)

    @property
    def gap(self) -> float:
        return self.seconds / self.limit

    def fits(self, t: float, spread: float) -> bool:
        """Whether a stamp at ``t`` with ``spread`` keeps this window's rules."""
        if self._reach.most(t, t + spread + self.seconds - EPSILON) >= self.limit:
            return False
        # burst = limit is the spec's rule alone: the short window is the window itself
        return self._crowd is None or self._crowd.most(t, t + self.burst * self.gap - EPSILON) < self.burst

    def candidates(self, spread: float) -> list[float]:
        """Every time at which this window's rules may start to allow a stamp: where a stamp's reach
        ends (or its burst's, when the burst is short); the earliest slot that fits is one of these,
        or the earliest asked."""
        out = [a + s + self.seconds for a, s in zip(self.at, self.spread, strict=True)]
        if self.burst < self.limit:
            out += [a + self.burst * self.gap for a in self.at]
        return out


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
