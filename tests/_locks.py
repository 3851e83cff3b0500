"""A ledger another process holds locked, and the ledger's manual clock that lets it go at a moment.

Importable from any test module (``from _locks import HeldLock, LedgerClock``), as ``_wait.py`` is.
"""

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from mediagen_nb.runtime.clock import ManualClock, SteppingClock


class HeldLock:
    """Another process's write lock on a ledger file (a long transaction), from :meth:`take` until
    :meth:`free` (or :meth:`close`)."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.freed_at: float | None = None
        self.taken = False
        self._lock = threading.Lock()

    def take(self) -> "HeldLock":
        with self._lock:
            self.db.execute("BEGIN EXCLUSIVE")
            self.taken = True
        return self

    def free(self, now: float) -> None:
        """Let go (at ``now`` on the ledger's clock), once."""
        with self._lock:
            if self.taken and self.freed_at is None:
                self.db.execute("ROLLBACK")
                self.freed_at = now

    def close(self) -> None:
        with self._lock:
            if self.taken and self.freed_at is None:
                self.db.execute("ROLLBACK")
            self.db.close()


class LedgerClock(SteppingClock):
    """A ledger's manual clock: each pause of the ledger's waits moves it (nothing sleeps); once it has
    reached ``at``, each pause calls ``then(now)``."""

    def __init__(self, at: float | None = None, then: Callable[[float], None] | None = None) -> None:
        super().__init__(ManualClock(start=0.0))
        self.at, self.then = at, then

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if self.then is not None and self.at is not None and self.now() >= self.at:
            self.then(self.now())
