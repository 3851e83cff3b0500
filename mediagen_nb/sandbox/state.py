"""The saved state of a sandbox with a data folder, so it outlives its process: ``DIR/state.sqlite``.

Everything the sandbox knows is kept: accounts, keys and balances, agent clients' access tokens,
generations, analyses, replication runs, topic-to-video jobs, Idempotency-Keys, webhooks sent, its
ledger of charges and refunds, its seed, the id generator's position, the fault plan and its clock
(uploads and rendered media already live in the folder). One SQLite file (WAL): a row per resource
(as JSON; no pickle), a row per ledger entry, and meta rows. Each part of the world dumps and loads its
own rows (``saved.py``); this module only stores them, with the ledger and the meta. :meth:`State.save`
writes what changed since the last save in one transaction; the app saves before each response
starts, so a charge, a refund or a new resource is on disk before anyone hears of it, and every
second for what timers change (which a restart would redo the same way: runs settle from their
saved times). A lock keeps a folder to one sandbox at a time.
"""

import json
import sqlite3
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from mediagen_nb.sandbox.saved import Rows, Saved, text

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

FORMAT = 1  # of the saved state; another format is refused with the fix, never misread
FILE = "state.sqlite"
LOCK = "state.lock"
CLOCK_EVERY = 5.0  # real seconds between saves of the clock alone (it is saved with every other change)
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS resources (
    kind TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (kind, id)
);
CREATE TABLE IF NOT EXISTS ledger (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);
"""


class StateError(RuntimeError):
    """A data folder whose state this sandbox cannot use: in use by another sandbox, or unreadable."""


def _parts(world: "World") -> tuple[Saved, ...]:
    """The parts of ``world`` that save their own rows besides its accounts, loaded in this order after
    the accounts (whose callers the resources name)."""
    return (world.access, world.generations, world.replication, world.topic, world.outbox)


class State:
    """The state file of one data folder, held by this sandbox until :meth:`close`."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / FILE
        self._lock = FileLock(folder / LOCK, thread_local=False, mode=0o600)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise StateError(
                f"another sandbox is using {folder}: stop it (mediagen sandbox stop) or give this one "
                "another --data-dir"
            ) from None
        try:
            self.path.touch(mode=0o600, exist_ok=True)  # the sandbox's keys are in it: the user's alone
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across a killed process
            self._db.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            self._lock.release()
            raise StateError(f"cannot open the sandbox state {self.path} ({exc}): {_FIX}") from None
        self._written: dict[tuple[str, str], int] = {}  # hash of each row's JSON as last saved
        self._meta: dict[str, str] = {}
        self._ledger_saved = 0
        self._clock_saved = 0.0  # time.monotonic() of the last save of the clock

    def saved(self) -> bool:
        """Whether the folder holds a saved state."""
        return self._db.execute("SELECT 1 FROM meta WHERE name='format'").fetchone() is not None

    # -- load -------------------------------------------------------------------------------------

    def load(self, world: "World") -> None:
        """Fill ``world`` (built empty) from the saved state."""
        try:
            self._load(world)
        except (KeyError, TypeError, ValueError, StopIteration, sqlite3.Error) as exc:
            raise StateError(f"cannot read the sandbox state {self.path} ({exc!r}): {_FIX}") from None

    def _load(self, world: "World") -> None:
        meta = {name: json.loads(value) for name, value in self._db.execute("SELECT name, value FROM meta")}
        if meta["format"] != FORMAT:
            raise ValueError(f"format {meta['format']}, this sandbox reads format {FORMAT}")
        world.build(meta["seed"])
        world.instance = meta["instance"]
        version, internal, gauss = meta["ids"]
        world.restore_ids((version, tuple(internal), gauss))
        world.clock.resume(meta["clock"])
        world.faults.restore(meta["faults"])
        world.outbox.secret = bytes.fromhex(meta["webhookSecret"])
        rows = self._rows()
        ledger = [json.loads(body) for (body,) in self._db.execute("SELECT body FROM ledger ORDER BY seq")]
        world.accounts.load(rows, ledger)
        for part in _parts(world):
            part.load(rows)
        self._meta = {name: text(value) for name, value in meta.items()}
        self._ledger_saved = len(ledger)

    def _rows(self) -> Rows:
        """Every saved resource by kind and id (the ids' order is the order they were first saved)."""
        rows: dict[str, dict[str, Any]] = {}
        for kind, key, body in self._db.execute("SELECT kind, id, body FROM resources ORDER BY rowid"):
            rows.setdefault(kind, {})[key] = json.loads(body)
            self._written[(kind, key)] = hash(body)
        return rows

    # -- save -------------------------------------------------------------------------------------

    def save(self, world: "World", *, clock: bool = False) -> None:
        """Write what changed since the last save, in one transaction (nothing when nothing did); the clock
        with any change, every few seconds, and when ``clock`` (the last save before stopping)."""
        changed = list(self._changed(world))
        gone = [(kind, key) for kind, key, body in changed if body is None and (kind, key) in self._written]
        rows = [
            (kind, key, body)
            for kind, key, body in changed
            if body is not None and self._written.get((kind, key)) != hash(body)
        ]
        ledger = world.accounts.ledger[self._ledger_saved :]
        meta = self._meta_changes(world, clock=clock or bool(rows or gone or ledger))
        if not (rows or gone or ledger or meta):
            return
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("DELETE FROM resources WHERE kind=? AND id=?", gone)
            db.executemany(
                "INSERT INTO resources (kind, id, body) VALUES (?, ?, ?) "
                "ON CONFLICT(kind, id) DO UPDATE SET body=excluded.body",
                rows,
            )
            db.executemany(
                "INSERT OR REPLACE INTO ledger (seq, body) VALUES (?, ?)",
                [(entry["seq"], text(entry)) for entry in ledger],
            )
            db.executemany("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", meta.items())
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        for row in gone:
            del self._written[row]
        self._written.update(((kind, key), hash(body)) for kind, key, body in rows)
        self._meta.update(meta)
        self._ledger_saved += len(ledger)

    def _changed(self, world: "World") -> Iterator[tuple[str, str, str | None]]:
        """Every row each part dumps (changed since the last save; None: forgotten), as JSON text."""
        for dump in (world.accounts.dump(), *(part.dump() for part in _parts(world))):
            for kind, key, body in dump:
                yield kind, key, None if body is None else text(body)

    def _meta_changes(self, world: "World", *, clock: bool) -> dict[str, str]:
        """Meta rows whose value changed; the clock with any other change, else every few seconds."""
        values: dict[str, Any] = {
            "format": FORMAT,
            "instance": world.instance,
            "seed": world.seed,
            "faults": world.faults.to_dict(),
            "webhookSecret": world.outbox.secret.hex(),
        }
        if world.ids_unsaved or "ids" not in self._meta:
            world.ids_unsaved = False
            values["ids"] = world.ids_state()
        texts = {name: text(value) for name, value in values.items()}
        changed = {name: text for name, text in texts.items() if self._meta.get(name) != text}
        now = time.monotonic()
        if clock or changed or now - self._clock_saved >= CLOCK_EVERY:
            changed["clock"] = text(world.clock.to_dict())
            self._clock_saved = now
        return changed

    # -- reset and close --------------------------------------------------------------------------

    def wipe(self, keep: Collection[str] = ()) -> None:
        """Forget every resource, ledger entry and meta row, but the rows of the kinds in ``keep`` (of a
        part that outlives a reset, as webhooks sent do in memory)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        db.execute(f"DELETE FROM resources WHERE kind NOT IN ({','.join('?' * len(keep))})", tuple(keep))
        db.execute("DELETE FROM ledger")
        db.execute("DELETE FROM meta")
        db.execute("COMMIT")
        self._written = {key: digest for key, digest in self._written.items() if key[0] in keep}
        self._meta = {}
        self._ledger_saved = 0

    def close(self) -> None:
        """Close the file and let another sandbox use the folder."""
        self._db.close()
        self._lock.release()


_FIX = "stop the sandbox and move the folder aside, or run `mediagen sandbox reset` (uploads and media stay)"
