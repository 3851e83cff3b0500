"""A session budget: what every path in this process may spend, checked before each start is sent.

``mediagen_nb.budget(500)`` (or ``%mediagen budget 500``, or ``MEDIAGEN_BUDGET=500``) caps the
credits charged by starts from this process: magics, forms, calls, sweeps, replication and
topic-to-video alike. Each start holds its estimate before it is sent; the answer replaces the hold
with the real charge, a refund (a failed run) gives it back, and a start whose answer never came
keeps its hold, because it may have been charged. The process's budget is the assembler's
(``assemble.session_budget``), set by :func:`mediagen_nb.client.balance.budget`.
"""

import threading
from dataclasses import dataclass

from mediagen_nb.client.errors import BudgetExceeded


@dataclass(frozen=True)
class BudgetStatus:
    """The budget now: ``limit`` (None: no budget), credits ``spent`` and ``held`` by starts in flight."""

    limit: int | None
    spent: int
    held: int

    @property
    def left(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.spent - self.held)

    def __str__(self) -> str:
        if self.limit is None:
            return f"no session budget; {self.spent} credits spent by this process"
        held = f", {self.held} held by starts in flight" if self.held else ""
        return f"session budget {self.limit} credits: {self.spent} spent{held}, {self.left} left"


class Budget:
    """The process's budget; charges are kept per resource so a refund or a correction is exact."""

    def __init__(self, limit: int | None = None) -> None:
        self._lock = threading.Lock()
        self.limit = limit
        self._charges: dict[str, int] = {}  # resource -> credits charged now
        self._holds: dict[int, int] = {}  # hold id -> credits held
        self._next = 0

    def status(self) -> BudgetStatus:
        with self._lock:
            return BudgetStatus(self.limit, sum(self._charges.values()), sum(self._holds.values()))

    def hold(self, credits: int, what: str) -> int:
        """Reserve ``credits`` for a start of ``what``; BudgetExceeded (nothing sent) when over."""
        with self._lock:
            spent, held = sum(self._charges.values()), sum(self._holds.values())
            if self.limit is not None and spent + held + credits > self.limit:
                in_flight = f" and {held} held by starts in flight" if held else ""
                raise BudgetExceeded(
                    f"budget: {what} would cost {credits} credits, but {spent} of the session budget of "
                    f"{self.limit} credits are spent{in_flight}; nothing was sent. Raise it with "
                    "mediagen_nb.budget(N) or %mediagen budget N"
                )
            self._next += 1
            self._holds[self._next] = credits
            return self._next

    def charge(self, hold: int | None, resource: str, credits: int) -> None:
        """The start answered: replace its hold by the charge of ``resource``."""
        with self._lock:
            if hold is not None:
                self._holds.pop(hold, None)
            self._charges[resource] = credits

    def correct(self, resource: str, credits: int) -> None:
        """A read of a resource this process started: its charge now (0 once a failed run is refunded)."""
        with self._lock:
            if resource in self._charges:
                self._charges[resource] = credits

    def release(self, hold: int | None) -> None:
        """The start was refused (nothing charged): drop its hold."""
        with self._lock:
            if hold is not None:
                self._holds.pop(hold, None)
