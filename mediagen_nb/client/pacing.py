"""Client-side limiters that make 429s from our own load impossible.

A rolling window of timestamps (not a bucket that bursts): a request may go at time ``t`` only
if the request ``limit`` places before it was sent at least ``window`` earlier. Slots are
reserved under one process-wide lock, so every client object, thread and task using the same
key (or account) shares one budget. Windows are real seconds: the service's 60 s divided by the
time scale (for a time-scaled sandbox), plus a small margin for network latency.
"""

import hashlib
import math
import threading
import time
from collections import deque
from dataclasses import dataclass

from mediagen_nb.protocol import limits as spec_limits

_LOCK = threading.Lock()
# Network latency is real time: it does not shrink with a time-scaled sandbox, so the margin never does.
MIN_MARGIN = 0.1  # real seconds; evenly spaced requests arrive within a few ms of their slot


@dataclass(frozen=True)
class Limits:
    """The service's limits as the client paces itself; ``time_scale`` matches a time-scaled sandbox."""

    requests_per_key: int = spec_limits.REQUESTS_PER_KEY
    starts_per_account: int = spec_limits.STARTS_PER_ACCOUNT
    window: float = spec_limits.WINDOW_SECONDS  # service seconds
    time_scale: float = 1.0  # service seconds per real second
    margin: float | None = None  # real seconds added to each window; default: 5% of it, 0.1 s to 1 s

    def __post_init__(self) -> None:
        if not (0 < self.time_scale < math.inf and 0 < self.window < math.inf):
            raise ValueError("Limits: time_scale and window must be positive and finite")
        if self.margin is not None and not 0 <= self.margin < math.inf:
            raise ValueError("Limits: margin must be a finite number of real seconds, 0 or more")
        if self.requests_per_key < 1 or self.starts_per_account < 1:
            raise ValueError("Limits: requests_per_key and starts_per_account must be at least 1")

    def real(self, service_seconds: float) -> float:
        """Real seconds that ``service_seconds`` of service time take."""
        return service_seconds / self.time_scale

    @property
    def real_window(self) -> float:
        base = self.real(self.window)
        return base + (self.margin if self.margin is not None else min(1.0, max(MIN_MARGIN, 0.05 * base)))


class RollingLimiter:
    """At most ``limit`` events in any ``window`` real seconds, by reserved timestamps."""

    def __init__(self, limit: int, window: float) -> None:
        self.limit = limit
        self.window = window
        self._stamps: deque[float] = deque(maxlen=limit)  # the last ``limit`` events, in order
        self._paused_until = 0.0

    def earliest(self, now: float) -> float:
        """The first time a new event may go (call under the lock).

        Events go at least ``window / limit`` apart and never more than ``limit`` in a window: an
        even stream, not a burst of ``limit`` at once. A burst reaches the service spread over the
        time it takes to open connections and serve it, in any order, so the next burst could land
        early by as much; an even stream arrives as it was sent, so a small margin is enough.
        """
        slot = max(now, self._paused_until)
        if self._stamps:
            slot = max(slot, self._stamps[-1] + self.window / self.limit)
        if len(self._stamps) == self.limit:
            slot = max(slot, self._stamps[0] + self.window)
        return slot

    def book(self, slot: float) -> None:
        """Record an event at ``slot`` (from :meth:`earliest`, under the lock)."""
        self._stamps.append(slot)

    def pause(self, seconds: float) -> None:
        """Send nothing for ``seconds`` (after an unexpected 429, the spec says wait a window)."""
        with _LOCK:
            self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    def used(self, now: float | None = None) -> int:
        """Events in the window ending now (for budgets and tests)."""
        now = time.monotonic() if now is None else now
        with _LOCK:
            return sum(1 for stamp in self._stamps if now - self.window < stamp <= now)


_REGISTRY: dict[tuple[str, str, str, float, int], RollingLimiter] = {}


def shared(scope: str, base_url: str, identity: str, limit: int, window: float) -> RollingLimiter:
    """The process-wide limiter of one key or account on one service (created on first use)."""
    ident = hashlib.sha256(identity.encode()).hexdigest()[:16]  # never keep the key itself
    with _LOCK:
        return _REGISTRY.setdefault((scope, base_url, ident, window, limit), RollingLimiter(limit, window))


def reserve(choices: list[list[RollingLimiter]]) -> tuple[int, float]:
    """Book one event on the choice of limiters that allows it first (a key of a pool, with its account).

    Returns the index of the choice and the real delay before the event may be sent.
    """
    with _LOCK:
        now = time.monotonic()
        slots = [max(limiter.earliest(now) for limiter in choice) for choice in choices]
        best = min(range(len(choices)), key=slots.__getitem__)
        for limiter in choices[best]:
            limiter.book(slots[best])
        return best, max(0.0, slots[best] - now)
