"""The durable ledger of a sweep: every row's Idempotency-Key and generation, written as it happens.

SQLite in WAL mode, one row per Idempotency-Key. A start is recorded the moment it returns and a
result the moment it is read, so a crash, a kernel restart or a Ctrl-C loses nothing: a re-run
reuses finished rows at no cost, re-reads in-flight generations by id, and starts only the rest
(and even a start whose answer was lost is safe: the service returns the same generation for the
same key).
"""

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mediagen_nb.client import Generation

DEFAULT_PATH = Path(".mediagen") / "ledger.sqlite"
FINAL = ("succeeded", "failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rows (
    key TEXT PRIMARY KEY,
    base_url TEXT NOT NULL,
    model_id TEXT NOT NULL,
    input TEXT NOT NULL,
    generation_id TEXT,
    status TEXT NOT NULL,
    credits INTEGER NOT NULL DEFAULT 0,
    urls TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    elapsed_s REAL,
    started_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS rows_by_month ON rows (started_at);
"""


@dataclass(frozen=True)
class Entry:
    """What the ledger knows of one row."""

    key: str
    model_id: str
    generation_id: str | None
    status: str
    credits: int
    urls: tuple[str, ...]
    error: str | None
    elapsed_s: float | None

    @property
    def final(self) -> bool:
        return self.status in FINAL


class Ledger:
    """A sweep ledger at ``path`` (default ``.mediagen/ledger.sqlite`` in the working folder)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else DEFAULT_PATH
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across a process crash
        self._db.executescript(_SCHEMA)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def entries(self, keys: Iterable[str]) -> dict[str, Entry]:
        """The known entries among ``keys``."""
        wanted = list(keys)
        found: dict[str, Entry] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in self._db.execute(
                    "SELECT key, model_id, generation_id, status, credits, urls, error, elapsed_s "
                    f"FROM rows WHERE key IN ({marks})",
                    chunk,
                ):
                    found[row[0]] = Entry(
                        row[0], row[1], row[2], row[3], row[4], tuple(json.loads(row[5])), row[6], row[7]
                    )
        return found

    def started(self, key: str, base_url: str, values: dict[str, Any], generation: Generation) -> None:
        """Record a start the moment it returns (before anything else can go wrong)."""
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT INTO rows (key, base_url, model_id, input, generation_id, status, credits, "
                "started_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "generation_id=excluded.generation_id, status=excluded.status, credits=excluded.credits, "
                "updated_at=excluded.updated_at",
                (
                    key,
                    base_url,
                    generation.model_id,
                    json.dumps(values, sort_keys=True, default=str),
                    generation.id,
                    generation.status,
                    generation.credits_spent,
                    now,
                    now,
                ),
            )

    def finished(self, key: str, generation: Generation) -> None:
        """Record what a read returned (final or not)."""
        with self._lock:
            self._db.execute(
                "UPDATE rows SET status=?, credits=?, urls=?, error=?, elapsed_s=COALESCE(?, elapsed_s), "
                "updated_at=? WHERE key=?",
                (
                    generation.status,
                    generation.credits_spent,
                    json.dumps(list(generation.urls)),
                    generation.error,
                    generation.elapsed_s,
                    time.time(),
                    key,
                ),
            )

    def usage(self, since: float, base_url: str) -> list[tuple[str, int, int]]:
        """(model id, runs, credits) of succeeded runs on ``base_url`` started since ``since`` (Unix time).

        One service at a time: sandbox credits are never added to what the real service charged.
        """
        with self._lock:
            return list(
                self._db.execute(
                    "SELECT model_id, COUNT(*), SUM(credits) FROM rows "
                    "WHERE status='succeeded' AND started_at>=? AND base_url=? GROUP BY model_id "
                    "ORDER BY SUM(credits) DESC",
                    (since, base_url),
                )
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
