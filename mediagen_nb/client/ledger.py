"""The money ledger: every paid start, written before it is sent, and what became of it.

One SQLite file in WAL mode, shared by every path (magic, form, call, sweep, CLI) and every process
of the user (default: the user's data folder; ``MEDIAGEN_LEDGER`` or ``ledger=`` choose another).
A start is written as an *intent* (its Idempotency-Key, what is asked, where) before the request
leaves, then gets its resource id and charge when the answer arrives, and its status and outputs
as reads come back. So a Ctrl-C, a crash, a kernel restart or a double click never pays twice: the
next attempt finds the key and resumes. Rows are per (key, instance): the same ask on two services
is two rows, and the same service spelt two ways (``localhost``, ``127.0.0.1``) is one.

Every row names the process that wrote it (:mod:`.processes`), so a start left unanswered by a process
that is gone (a killed kernel) is told from one another process is sending right now.

Every call may block on SQLite (another process may hold the file), so async callers run it in a
thread (the engine's ``Record`` step). A write lock another process holds is waited for (up to
``lock_wait``, saying so once): a sweep goes on when it frees. A file that stays locked longer, is
read-only or is not a ledger raises one :class:`LedgerError` naming the file and the fix, before
anything is charged.
"""

import errno
import json
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mediagen_nb.client import processes
from mediagen_nb.client.config import Where
from mediagen_nb.client.errors import MediagenError, mask
from mediagen_nb.client.ledger_schema import (  # noqa: F401  (the kinds of start, named here)
    ANALYSIS,
    COLUMNS,
    GENERATION,
    JOB,
    REPLICATION,
    SCHEMA,
    add_columns,
    import_sweep_rows,
)
from mediagen_nb.client.settings import ENV_LEDGER, ledger_path
from mediagen_nb.protocol import states
from mediagen_nb.runtime.clock import REAL, Clock

LOCK_WAIT = 600.0  # seconds a call waits for another process's write lock before giving up
LOCK_NOTICE = 1.0  # after this long, say (once) that we are waiting and for what
BUSY_MS = 100  # SQLite's own wait for a lock, per statement; longer waits are the ledger's, on its clock
PAUSES = (0.05, 1.0)  # seconds between tries while locked: the first, doubling up to the last

T = TypeVar("T")

# Kinds of paid starts, and the paths they come from (``via``): the columns of ``usage``.
VIAS = ("call", "magic", "form", "sweep", "cli", "replication", "topic-to-video")
STARTING = "starting"  # the ledger's own status: written before sending, no answer read yet
_VIA: ContextVar[str] = ContextVar("mediagen_via", default="call")


@contextmanager
def via(path: str) -> Iterator[None]:
    """Starts made inside are recorded as coming from ``path`` (``magic``, ``form``, ``sweep`` ...)."""
    token = _VIA.set(path)
    try:
        yield
    finally:
        _VIA.reset(token)


def current_via() -> str:
    """The path the current start comes from (``call`` unless a layer said otherwise)."""
    return _VIA.get()


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _answer(resource: Any) -> str | None:
    """A server's answer as the ledger keeps it: JSON, with any API key the server echoed masked."""
    text = _json(resource)
    return None if text is None else mask(text)


class LedgerError(MediagenError):
    """The ledger file cannot be read or written; nothing was sent or charged because of it."""


@dataclass(frozen=True)
class Entry:
    """What the ledger knows of one start."""

    key: str
    instance: str
    service: str
    account: str
    kind: str
    via: str
    model_id: str | None
    ask: str | None
    variation: int
    input: Any
    resource_id: str | None
    status: str
    credits: int
    credits_known: bool
    urls: tuple[str, ...]
    error: str | None
    elapsed_s: float | None
    resource: Any  # the last wire object read of it (a Generation's data, ...), or None
    started_at: float
    updated_at: float
    owner: str | None = None  # the process that wrote it (processes.me()); None in older ledgers

    @property
    def final(self) -> bool:
        return self.status in states.FINAL

    @property
    def sent_unanswered(self) -> bool:
        """Written before sending, with no answer recorded: it may or may not have started."""
        return self.status == STARTING

    @property
    def writer(self) -> str:
        """Whose row it is: ``processes.THIS``, ``GONE`` (its process has ended) or ``RUNNING``."""
        return processes.whose(self.owner)

    def trusted(self, where: Where) -> bool:
        """Reusable without asking the service: same instance and account, so its id is surely valid."""
        return self.instance == where.instance and self.account == where.account

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> "Entry":
        values = list(row)
        values[9] = json.loads(values[9]) if values[9] is not None else None
        values[13] = bool(values[13])
        values[14] = tuple(json.loads(values[14]))
        values[17] = json.loads(values[17]) if values[17] is not None else None
        return cls(*values)


def _duration(seconds: float) -> str:
    """``10 min``, ``45 s``: how long a wait may last, for a message."""
    return f"{seconds / 60:g} min" if seconds >= 120 else f"{seconds:g} s"


def _disk_full(exc: BaseException) -> bool:
    """SQLite's or the system's "no space left" (a full disk, a quota, a file size limit)."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL" or "disk is full" in str(exc)


class Ledger:
    """The ledger at ``path`` (default: ``MEDIAGEN_LEDGER``, else the user's own)."""

    def __init__(
        self, path: str | Path | None = None, *, lock_wait: float = LOCK_WAIT, clock: Clock = REAL
    ) -> None:
        """Open (or create) the ledger; ``lock_wait``: seconds of ``clock`` to wait for another process's
        write lock before a call fails."""
        self.path = Path(path).expanduser() if path is not None else ledger_path()
        self.lock_wait = lock_wait
        self.clock = clock
        self._lock = threading.Lock()
        self._waiting = False  # another process holds the file: said once, until a call gets through
        self._stuck = False  # a call waited lock_wait in vain: the next ones try once, until one succeeds
        self._busy = BUSY_MS if clock is REAL else 0  # SQLite's own wait for a lock, in ms (the connection's)
        self._db = self._attempt(self._open)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # -- SQLite with one clear error --------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        busy = BUSY_MS / 1000 if self.clock is REAL else 0.0  # SQLite's own wait is on real time
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=busy)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across a process crash
            db.executescript(SCHEMA)
            add_columns(db)
            import_sweep_rows(db)
            db.execute("BEGIN IMMEDIATE")  # can we write? (a lock held elsewhere shows now, not mid-start)
            db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    def _fail(self, exc: BaseException) -> LedgerError:
        text = str(exc)
        if _disk_full(exc):
            return LedgerError(
                f"ledger {self.path}: the disk is full ({text}): free some space, or point {ENV_LEDGER} "
                "(or ledger=) at a file on another disk"
            )
        if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
            fix = "another process holds it: let it finish, or use another file (ledger= or MEDIAGEN_LEDGER)"
            held = f" (waited {self.lock_wait:g} s)" if self._stuck and self.lock_wait else ""
            return LedgerError(f"ledger {self.path} is locked{held}: {fix}")
        if "readonly" in text or isinstance(exc, OSError) or "unable to open" in text:
            return LedgerError(
                f"ledger {self.path} cannot be written ({text}): make the folder writable, "
                f"or point {ENV_LEDGER} (or ledger=) at a writable file"
            )
        if isinstance(exc, sqlite3.DatabaseError):
            return LedgerError(
                f"ledger {self.path} is not a readable ledger ({text}): move it aside, "
                f"or point {ENV_LEDGER} (or ledger=) at another file"
            )
        return LedgerError(f"ledger {self.path}: {text}")

    def _attempt(self, fn: Callable[[], T], *, write: bool = True) -> T:
        """Run ``fn``, waiting up to ``lock_wait`` (on the ledger's clock) for another process's write
        lock, and saying so once, so a sweep goes on starting rows when the lock frees.

        Once a call has waited in vain, the next ones try once and fail at once (a sweep stops
        starting rows without waiting again for every row), until a write gets through (reads
        go on under another's write lock, so they say nothing of it).
        """
        began = self.clock.monotonic()
        limit = 0.0 if self._stuck else self.lock_wait
        pause = PAUSES[0]
        while True:
            try:
                result = fn()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise self._fail(exc) from None
                waited = self.clock.monotonic() - began
                if waited >= limit:
                    self._stuck = True
                    raise self._fail(exc) from None
                if waited >= min(LOCK_NOTICE, limit / 2) and not self._waiting:
                    self._waiting = True
                    print(
                        f"mediagen_nb: waiting for the ledger {self.path}: another process holds its write "
                        f"lock; going on when it frees (up to {_duration(self.lock_wait)})",
                        file=sys.stderr,
                    )
                self.clock.sleep(min(pause, limit - waited))
                pause = min(pause * 2, PAUSES[1])
            except (sqlite3.Error, OSError) as exc:
                raise self._fail(exc) from None
            else:
                if write:
                    self._waiting = self._stuck = False
                return result

    def _execute(self, sql: str, args: Iterable[Any]) -> sqlite3.Cursor:
        """One statement; SQLite itself waits BUSY_MS for a lock (real time: on another clock, every wait
        is the ledger's), or not at all once stuck."""
        busy = 0 if self._stuck or self.clock is not REAL else BUSY_MS
        if busy != self._busy:
            self._db.execute(f"PRAGMA busy_timeout = {busy}")
            self._busy = busy
        return self._db.execute(sql, tuple(args))

    def _run(self, sql: str, args: Iterable[Any] = (), *, write: bool = True) -> list[tuple[Any, ...]]:
        def go() -> list[tuple[Any, ...]]:
            with self._lock:
                return self._execute(sql, args).fetchall()

        return self._attempt(go, write=write)

    def _changed(self, sql: str, args: Iterable[Any] = ()) -> int:
        """Run a write; the number of rows it changed."""

        def go() -> int:
            with self._lock:
                return self._execute(sql, args).rowcount

        return self._attempt(go)

    # -- writes --------------------------------------------------------------------------------------

    def intent(
        self,
        key: str,
        where: Where,
        *,
        kind: str,
        via: str,
        model_id: str | None,
        input: Any,
        ask: str | None = None,
        variation: int = 1,
        credits: int = 0,
        credits_known: bool = True,
        replaces: str | None = None,
    ) -> bool:
        """Write a start before it is sent; True when this call wrote it (the start is this process's).

        A row already there (an earlier run's, or another process's start in flight) keeps its id,
        status and writer: False. Deciding it is one atomic write, so two processes sending the same
        start never both write it; whose charge it is, the service's answer says (:meth:`started`).
        ``replaces``: the row's resource id, which the service no longer knows (a restarted sandbox):
        the row is written anew, as this start's.
        """
        now = time.time()
        fresh = (STARTING, credits, int(credits_known), now, now, processes.me())  # status ... owner
        written = self._changed(
            f"INSERT INTO starts ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, '[]', "
            "NULL, NULL, NULL, ?, ?, ?) ON CONFLICT(key, instance) DO NOTHING",
            (
                key,
                where.instance,
                where.service,
                where.account,
                kind,
                via,
                model_id,
                ask,
                variation,
                _json(input),
                *fresh,
            ),
        )
        if not written and replaces is not None:
            written = self._changed(
                "UPDATE starts SET resource_id=NULL, status=?, credits=?, credits_known=?, urls='[]', "
                "error=NULL, elapsed_s=NULL, resource=NULL, started_at=?, updated_at=?, owner=? "
                "WHERE key=? AND instance=? AND resource_id=?",
                (*fresh, key, where.instance, replaces),
            )
        if not written:
            self._run("UPDATE starts SET updated_at=? WHERE key=? AND instance=?", (now, key, where.instance))
        return written > 0

    def started(
        self,
        key: str,
        where: Where,
        resource_id: str,
        status: str,
        credits: int,
        *,
        credits_known: bool = True,
        resource: Mapping[str, Any] | None = None,
        made: bool = True,
    ) -> None:
        """The answer of a start: its resource id and charge, owned by this connection's account.

        ``made``: this process's request made it (the service's answer was no replay), so the row is
        this process's start from now on, whoever wrote its intent.
        """
        self._run(
            "UPDATE starts SET resource_id=?, status=?, credits=?, credits_known=?, error=NULL, account=?, "
            "resource=COALESCE(?, resource), updated_at=?, owner=CASE WHEN ? THEN ? ELSE owner END "
            "WHERE key=? AND instance=?",
            (
                resource_id,
                status,
                credits,
                int(credits_known),
                where.account,
                _answer(resource),
                time.time(),
                int(made),
                processes.me(),
                key,
                where.instance,
            ),
        )

    def adopt(self, entry: Entry, where: Where) -> None:
        """Copy an earlier start to this instance and account, once this connection has read it fine."""
        now = time.time()
        self._run(
            f"INSERT INTO starts ({COLUMNS}) VALUES ({', '.join('?' * 21)}) "
            "ON CONFLICT(key, instance) DO UPDATE SET account=excluded.account, "
            "updated_at=excluded.updated_at",
            (
                entry.key,
                where.instance,
                where.service,
                where.account,
                entry.kind,
                entry.via,
                entry.model_id,
                entry.ask,
                entry.variation,
                _json(entry.input),
                entry.resource_id,
                entry.status,
                entry.credits,
                int(entry.credits_known),
                json.dumps(list(entry.urls)),
                entry.error,
                entry.elapsed_s,
                _answer(entry.resource),
                entry.started_at,
                now,
                entry.owner,
            ),
        )

    def unanswered(self, key: str, where: Where, error: str) -> None:
        """A start whose answer never came (it may have started): keep it resumable, note why."""
        self._run(
            "UPDATE starts SET error=?, updated_at=? WHERE key=? AND instance=? AND status=?",
            (error, time.time(), key, where.instance, STARTING),
        )

    def refused(self, key: str, where: Where) -> None:
        """A start the service refused (nothing charged): drop the intent so usage never counts it."""
        self._run(
            "DELETE FROM starts WHERE key=? AND instance=? AND status=?",
            (key, where.instance, STARTING),
        )

    def replayed(self, key: str, where: Where) -> None:
        """A start the service answered with what was made before it was sent (its key's start made
        elsewhere: another machine, a colleague): nothing was spent now, so the intent is dropped and
        usage and balance never count it (whoever started it counts it; sent again, it is a replay again)."""
        self.refused(key, where)

    def update(
        self,
        where: Where,
        resource_id: str,
        status: str,
        *,
        credits: int | None = None,
        urls: Iterable[str] | None = None,
        error: str | None = None,
        elapsed_s: float | None = None,
        resource: Mapping[str, Any] | None = None,
    ) -> None:
        """What a read of ``resource_id`` returned (a no-op for ids the ledger does not hold).

        ``credits`` given is what the service says it charged: the row's charge is then known.
        """
        self._run(
            "UPDATE starts SET status=?, credits=COALESCE(?, credits), "
            "credits_known=CASE WHEN ? IS NULL THEN credits_known ELSE 1 END, urls=COALESCE(?, urls), "
            "error=?, elapsed_s=COALESCE(?, elapsed_s), resource=COALESCE(?, resource), updated_at=? "
            "WHERE resource_id=? AND instance=?",
            (
                status,
                credits,
                credits,
                json.dumps(list(urls)) if urls is not None else None,
                error,
                elapsed_s,
                _answer(resource),
                time.time(),
                resource_id,
                where.instance,
            ),
        )

    # -- reads ---------------------------------------------------------------------------------------

    def lookup(self, key: str, where: Where) -> Entry | None:
        """The row of ``key`` on this service: this instance's first, else the newest."""
        found = self.entries([key], where)
        return found.get(key)

    def entries(self, keys: Iterable[str], where: Where) -> dict[str, Entry]:
        """Rows of ``keys`` on this service, by key (this instance's row preferred, else the newest)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Entry] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._run(
                f"SELECT {COLUMNS} FROM starts WHERE service=? AND key IN ({marks}) "
                "ORDER BY instance=? , started_at",
                (where.service, *chunk, where.instance),
                write=False,
            )
            for row in rows:  # later rows win: this instance's last, then the newest
                found[row[0]] = Entry.from_row(row)
        return found

    def of_resource(self, resource_id: str, where: Where) -> Entry | None:
        """The start that made ``resource_id`` (a generation, analysis, run or job) on this service: this
        instance's row first, as :meth:`lookup` prefers it, then the newest."""
        rows = self._run(
            f"SELECT {COLUMNS} FROM starts WHERE service=? AND resource_id=? "
            "ORDER BY instance=? DESC, started_at DESC LIMIT 1",
            (where.service, resource_id, where.instance),
            write=False,
        )
        return Entry.from_row(rows[0]) if rows else None

    def latest(self, ask: str, where: Where) -> Entry | None:
        """The newest variation of a single start's ask on this service."""
        rows = self._run(
            f"SELECT {COLUMNS} FROM starts WHERE service=? AND ask=? "
            "ORDER BY variation DESC, started_at DESC LIMIT 1",
            (where.service, ask),
            write=False,
        )
        return Entry.from_row(rows[0]) if rows else None

    def usage(self, since: float, service: str, instance: str | None = None) -> list[dict[str, Any]]:
        """Runs and credits since ``since`` (Unix time) on ``service`` by model and path, without failures.

        Starts sent but never answered are counted apart, as possibly charged, and so are starts whose
        charge the service does not report (their credits are the start's estimate). ``instance`` keeps
        the starts of one state of it (a sandbox's, since its last reset).
        """
        rows = self._run(
            "SELECT model_id, kind, via, status, COUNT(*), SUM(credits), MIN(credits_known) FROM starts "
            "WHERE service=? AND started_at>=? AND status!=? AND (? IS NULL OR instance=?) "
            "GROUP BY model_id, kind, via, status=?, credits_known ORDER BY SUM(credits) DESC",
            (service, since, states.FAILED, instance, instance, STARTING),
            write=False,
        )
        return [
            {
                "model": model or kind,
                "kind": kind,
                "via": via,
                "runs": runs,
                "credits": int(credits or 0),
                "possibly": status == STARTING,
                "credits_known": bool(known),
            }
            for model, kind, via, status, runs, credits, known in rows
        ]

    def account_usage(
        self, since: float, account: str, places: Iterable[tuple[str, str | None]]
    ) -> dict[str, tuple[int, int]]:
        """Runs and credits of ``account``'s starts since ``since`` (Unix time), without failures, at
        ``places``: (service, instance or None for any) pairs, every spelling of one service.

        By figure: ``charged`` (what the service said it charged, or will not say: ``estimated`` of
        those), ``in_flight`` (work the service charges as it runs, not ended: its start's estimate),
        ``running`` (charged starts not ended yet), ``possibly`` (starts never answered), and
        ``other_keys``: starts at the same places made as another account (other keys: an earlier key
        of the same account, or another account's), answered or in flight.
        """
        pairs = list(places)
        where = " OR ".join("(service=? AND (? IS NULL OR instance=?))" for _ in pairs) or "0"
        final = ",".join("?" * len(states.FINAL))
        rows = self._run(
            "SELECT account=?, CASE WHEN status=? THEN 'possibly' "
            f"WHEN credits_known=0 AND status NOT IN ({final}) THEN 'in_flight' ELSE 'charged' END, "
            f"status IN ({final}), credits_known, COUNT(*), SUM(credits) FROM starts "
            f"WHERE started_at>=? AND status!=? AND ({where}) GROUP BY 1, 2, 3, 4",
            (
                account,
                STARTING,
                *sorted(states.FINAL),
                *sorted(states.FINAL),
                since,
                states.FAILED,
                *(value for service, instance in pairs for value in (service, instance, instance)),
            ),
            write=False,
        )
        names = ("charged", "estimated", "in_flight", "running", "possibly", "other_keys")
        figures = dict.fromkeys(names, (0, 0))

        def add(name: str, runs: int, credits: int) -> None:
            figures[name] = (figures[name][0] + runs, figures[name][1] + credits)

        for mine, figure, ended, known, runs, credits in rows:
            credits = int(credits or 0)
            if not mine:
                if figure != "possibly":
                    add("other_keys", runs, credits)
                continue
            add(figure, runs, credits)
            if figure == "charged" and not known:
                add("estimated", runs, credits)
            if figure == "charged" and not ended:
                add("running", runs, credits)
        return figures

    def close(self) -> None:
        with self._lock:
            self._db.close()
