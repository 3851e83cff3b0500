"""Rolling 60-second windows: the per-key request limit and the per-account start limit."""

from collections import deque

from mediagen_nb.runtime.clock import SimulatedClock


class RollingWindow:
    """At most ``limit`` events per ``window`` simulated seconds for each scope, by timestamps."""

    def __init__(self, clock: SimulatedClock, limit: int, window: float) -> None:
        self.clock = clock
        self.limit = limit
        self.window = window
        self._events: dict[str, deque[float]] = {}
        self.refused = 0  # events refused because the window was full (each one a 429)
        self.accepted = 0

    def _live(self, scope: str) -> deque[float]:
        events = self._events.setdefault(scope, deque())
        horizon = self.clock.now() - self.window
        while events and events[0] <= horizon:
            events.popleft()
        return events

    def acquire(self, scope: str) -> float | None:
        """Record an event and return its token, or None when the window is full."""
        events = self._live(scope)
        if len(events) >= self.limit:
            self.refused += 1
            return None
        stamp = self.clock.now()
        events.append(stamp)
        self.accepted += 1
        return stamp

    def release(self, scope: str, token: float) -> None:
        """Take back an event recorded by :meth:`acquire` (a start refused by a later check)."""
        events = self._events.get(scope)
        if events and token in events:
            events.remove(token)

    def count(self, scope: str) -> int:
        return len(self._live(scope))
