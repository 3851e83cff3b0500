"""Where the rolling windows of keys and accounts live, so every process that uses them shares them.

Three stores behind one ``reserve``/``pause`` interface, chosen by ``MEDIAGEN_LIMITS_URL`` (or
``limits_url=``):

- default: a small SQLite file in the user's cache folder (WAL, one short ``BEGIN IMMEDIATE``
  transaction per reservation), shared by every process of the user on this machine;
- ``redis://host:6379/0``: one Lua script per reservation, atomic across every process of every
  machine, on Redis's own clock;
- ``memory``: this process only (the behaviour before limits were shared).

A shared store that fails (Redis cannot be reached, is out of memory or a read-only replica; the
file is corrupted or held locked by another process) never fails a request and never lifts the
limits: :class:`Failover` paces on this machine's file (for Redis) or this process alone (for the
file) with one warning, and tries the shared store again a few seconds later.

Why not a library: ``limits`` and ``pyrate-limiter`` offer SQLite and Redis buckets, but both
answer "may I go now?" (a try-acquire, or a sleep-and-retry loop) over a moving window or a leaky
bucket; the spec's limits need a *reserved* slot (never ``limit`` in a window, counted when each
request may arrive), booked atomically with the account's start limiter in one step, across a pool
of keys. That is one query and one insert here, in each store.

A reservation is a timestamp: the earliest slot that fits every window of the choice, between booked
slots when a gap allows (:mod:`mediagen_nb.client.slots`). It is booked only when its slot is at most
``HORIZON`` windows ahead, so a process that dies holds no slot further ahead than that, and its stamps
leave the window by themselves one window later; a process with many rows waiting cannot book the
whole future either, so processes sharing a key take turns (fair shares). Each stamp keeps its
*spread*, how late its request may reach the service: the booking process's margin, replaced by what
the answer showed once it comes (:meth:`confirm`). Half a window of horizon leaves the answer time to
come before the stamp a window later is booked against it. Each stamp has a ticket of its own: the
requests of a burst share one slot, and each one's answer confirms its own spread alone (were the
quick first answer to set all of theirs, the next window would be booked against the slow ones as if
they too had come at once); a request that could not go in time gives its stamp back
(:meth:`release`).
"""

import hashlib
import secrets
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mediagen_nb.client.slots import Stamps, earliest

HORIZON = 0.5  # windows ahead a slot may be booked; further slots are asked for again later
RETRY = 5.0  # seconds on the fallback after the shared store failed, before it is tried again
BUSY_TIMEOUT = 10.0  # seconds SQLite waits for another process to switch a new file to WAL
RESERVE_WAIT = 2.0  # seconds a reservation waits for another's (sub-millisecond) one: longer is a fault
BUSY_PAUSES = (0.0002, 0.002)  # seconds between tries for the file's write lock: the first, the most
KEEP = 2.0  # windows a stamp is kept after its slot plus spread (one would do: no rule looks further)
CONTENDED = 100  # Redis: bookings overtaken by other processes in a row before it counts as a failure


@dataclass(frozen=True)
class Window:
    """One rolling window: ``limit`` events in ``seconds`` real seconds, for one key or account, at most
    ``burst`` of them at once (:class:`~mediagen_nb.client.slots.Stamps`; 1: an even stream)."""

    scope: str  # a hash naming the key or account and the service; never the key itself
    limit: int
    seconds: float
    burst: int = 1


@dataclass(frozen=True)
class Booking:
    """The answer to a reservation: the choice booked (None: nothing booked yet) and seconds to wait.

    ``at`` is the same moment on this machine's clock (``time.time()``): the caller waits until then,
    however long the answer took to reach it, so a request never goes earlier than its slot.
    ``stamp`` is the slot on the store's own clock, which names it to :meth:`Store.confirm`.
    ``skew`` is how much earlier than ``at`` the slot may have been on this machine's clock (Redis's
    clock is read through a round trip): a request's spread counts it. ``ticket`` tells this stamp
    from others booked at the same slot (a burst).
    """

    index: int | None
    delay: float
    at: float = 0.0
    stamp: float = 0.0
    skew: float = 0.0
    ticket: str = field(default="", compare=False)  # an identity, not part of what was booked


def scope_of(kind: str, base_url: str, identity: str) -> str:
    """The name under which a key's or an account's window is kept (a hash: the key never leaves)."""
    return hashlib.sha256(f"{kind}\0{base_url}\0{identity}".encode()).hexdigest()[:24]


def choose(
    now: float,
    choices: list[list[Window]],
    stamps: dict[Window, Stamps],
    paused: dict[Window, float],
    margin: float,
) -> tuple[int, float]:
    """The choice whose windows all fit a stamp earliest, and that slot; of choices tied on the slot
    (slots fall on one grid while windows are busy), the one with the fewest stamps in its windows,
    so a pool of keys shares its reads instead of the first key taking every tie."""
    slots = [
        earliest(max([now] + [paused[w] for w in choice]), [stamps[w] for w in choice], margin)
        for choice in choices
    ]

    def load(index: int) -> int:
        return sum(sum(1 for at in stamps[w].at if at > now - w.seconds) for w in choices[index])

    best = min(range(len(choices)), key=lambda index: (slots[index], load(index)))
    return best, slots[best]


class Store(Protocol):
    """Where windows are kept."""

    where: str
    failures: tuple[type[BaseException], ...]  # what it raises when it cannot serve (a Failover's cue)

    def reserve(self, choices: list[list[Window]], margin: float) -> Booking: ...

    def confirm(self, windows: list[Window], stamp: float, ticket: str, spread: float) -> None:
        """The request booked at ``stamp`` (its ``ticket``) in ``windows`` was answered: it reached the
        service at most ``spread`` seconds after its slot (less or more than its booked margin)."""
        ...

    def release(self, windows: list[Window], stamp: float, ticket: str) -> None:
        """The request booked at ``stamp`` (its ``ticket``) in ``windows`` was never sent: its slot is
        free."""
        ...

    def pause(self, window: Window, seconds: float) -> None: ...


class SQLiteStore:
    """Windows in one SQLite file, shared by the processes that open it (or ``:memory:``, by one)."""

    failures: tuple[type[BaseException], ...] = (sqlite3.Error, OSError)

    def __init__(self, path: str | Path, now: Callable[[], float] = time.time) -> None:
        self.where = str(path)
        self._now = now  # wall time; a client on a virtual clock keeps its own ``:memory:`` store on it
        if self.where != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT)
        self._lock = threading.Lock()
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                self._set_up()
                break
            except sqlite3.OperationalError as exc:
                # Switching a new file to WAL while another process does the same fails at once with
                # "database is locked" (SQLite's busy timeout does not cover it): try again shortly.
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    self._db.close()
                    raise
                time.sleep(0.01)

    def _set_up(self) -> None:
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=OFF")  # a lost stamp after a power cut costs nothing
            self._db.executescript(
                "CREATE TABLE IF NOT EXISTS stamps "
                "(scope TEXT NOT NULL, at REAL NOT NULL, spread REAL NOT NULL, ticket TEXT NOT NULL);"
                "CREATE INDEX IF NOT EXISTS stamps_by_scope ON stamps (scope, at);"
                "CREATE TABLE IF NOT EXISTS pauses (scope TEXT PRIMARY KEY, until REAL NOT NULL);"
            )
            self._db.execute("PRAGMA busy_timeout = 0")  # :meth:`_writing` waits for the write lock itself

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One write transaction, begun within 2 ms of another process's end (at most RESERVE_WAIT).

        SQLite's own busy handler sleeps up to 100 ms between tries, so a process that met another's
        transaction (one descheduled on a loaded machine, holding the lock) woke up tens of ms late,
        and its request late for its slot: beside a CPU hog, three processes booking on one file took
        23-55 ms at the 99th percentile, up to 233 ms (benchmarks/shared_limits.py's file cases).
        """
        with self._lock:
            pause, deadline = BUSY_PAUSES[0], time.monotonic() + RESERVE_WAIT
            while True:
                try:
                    self._db.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() >= deadline:
                        raise
                    time.sleep(pause)
                    pause = min(2 * pause, BUSY_PAUSES[1])
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def reserve(self, choices: list[list[Window]], margin: float) -> Booking:
        windows = list(dict.fromkeys(w for choice in choices for w in choice))
        with self._writing():
            now = self._now()
            for w in windows:
                old = now - KEEP * w.seconds
                self._db.execute("DELETE FROM stamps WHERE scope = ? AND at + spread < ?", (w.scope, old))
            stamps = {w: self._stamps(w) for w in windows}
            paused = {w: self._paused(w) for w in windows}
            best, slot = choose(now, choices, stamps, paused, margin)
            horizon = now + HORIZON * min(w.seconds for w in choices[best])
            if slot > horizon:
                return Booking(None, slot - horizon, now + slot - horizon)  # ask again then
            ticket = secrets.token_hex(8)
            for w in choices[best]:
                self._db.execute("INSERT INTO stamps VALUES (?, ?, ?, ?)", (w.scope, slot, margin, ticket))
        return Booking(best, max(0.0, slot - now), max(now, slot), slot, ticket=ticket)

    def _stamps(self, window: Window) -> Stamps:
        rows = self._db.execute(
            "SELECT at, spread FROM stamps WHERE scope = ? ORDER BY at", (window.scope,)
        ).fetchall()
        at, spread = [r[0] for r in rows], [r[1] for r in rows]
        return Stamps(window.limit, window.seconds, at, spread, window.burst)

    def _paused(self, window: Window) -> float:
        paused = self._db.execute("SELECT until FROM pauses WHERE scope = ?", (window.scope,)).fetchone()
        return float(paused[0]) if paused else 0.0

    def confirm(self, windows: list[Window], stamp: float, ticket: str, spread: float) -> None:
        with self._writing():
            for w in windows:
                update = "UPDATE stamps SET spread = ? WHERE scope = ? AND at = ? AND ticket = ?"
                self._db.execute(update, (max(0.0, spread), w.scope, stamp, ticket))

    def release(self, windows: list[Window], stamp: float, ticket: str) -> None:
        with self._writing():
            for w in windows:
                delete = "DELETE FROM stamps WHERE scope = ? AND at = ? AND ticket = ?"
                self._db.execute(delete, (w.scope, stamp, ticket))

    def pause(self, window: Window, seconds: float) -> None:
        until = self._now() + seconds
        with self._writing():
            self._db.execute(
                "INSERT INTO pauses VALUES (?, ?) ON CONFLICT(scope) DO UPDATE SET until = max(until, ?)",
                (window.scope, until, until),
            )


# Redis keeps, per window, its stamps (a sorted set by slot; members 'ticket:spread'), its pause, and a
# counter, which every change moves on: a booking is computed here from
# what _READ returned and written by _BOOK only if no window it uses changed meanwhile (else computed
# again), so the rules are written once, in slots.py. Redis's own clock (TIME) is every machine's.
_READ = """
local t = redis.call('TIME')
local out = {tostring(tonumber(t[1]) + tonumber(t[2]) / 1e6)}
for i = 1, #KEYS, 3 do
  out[#out + 1] = {
    redis.call('GET', KEYS[i + 1]) or '0',
    redis.call('GET', KEYS[i + 2]) or '0',
    redis.call('ZRANGE', KEYS[i], 0, -1, 'WITHSCORES'),
  }
end
return out
"""

# KEYS: per window, its stamps and counter. ARGV: slot, spread, now, ticket, then per window the counter
# it was read at and the seconds its stamps are kept.
_BOOK = """
for i = 1, #KEYS, 2 do
  if (redis.call('GET', KEYS[i + 1]) or '0') ~= ARGV[4 + i] then return 0 end
end
for i = 1, #KEYS, 2 do
  local keep = tonumber(ARGV[5 + i])
  redis.call('INCR', KEYS[i + 1])
  redis.call('ZADD', KEYS[i], ARGV[1], ARGV[4] .. ':' .. ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', tonumber(ARGV[3]) - keep)
  local ttl = math.ceil((tonumber(ARGV[1]) - tonumber(ARGV[3]) + keep) * 1000)
  redis.call('PEXPIRE', KEYS[i], ttl)
  redis.call('PEXPIRE', KEYS[i + 1], ttl)
end
return 1
"""

# KEYS: per window, its stamps and counter. ARGV: the stamp's slot, its ticket, its spread now known
# (none: the stamp is given back).
_CONFIRM = """
for i = 1, #KEYS, 2 do
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[i], ARGV[1], ARGV[1])) do
    if string.match(member, '^[^:]+') == ARGV[2] then
      redis.call('ZREM', KEYS[i], member)
      if ARGV[3] then redis.call('ZADD', KEYS[i], ARGV[1], ARGV[2] .. ':' .. ARGV[3]) end
    end
  end
  redis.call('INCR', KEYS[i + 1])
end
return 1
"""

# KEYS: the window's pause and counter. ARGV: seconds.
_PAUSE = """
local t = redis.call('TIME')
local till = tonumber(t[1]) + tonumber(t[2]) / 1e6 + tonumber(ARGV[1])
local old = tonumber(redis.call('GET', KEYS[1]) or '0')
if till > old then
  redis.call('SET', KEYS[1], tostring(till), 'PX', math.ceil(tonumber(ARGV[1]) * 1000) + 1000)
  redis.call('INCR', KEYS[2])
end
return 1
"""


def _names(window: Window) -> tuple[str, str, str]:
    """Redis keys of a window: its stamps, its pause, its counter."""
    return f"mediagen:w:{window.scope}", f"mediagen:p:{window.scope}", f"mediagen:w:{window.scope}:n"


class RedisStore:
    """Windows in Redis, shared by every machine (behind a :class:`Failover` when opened by :func:`store`)."""

    def __init__(self, url: str) -> None:
        import redis

        self.where = _without_password(url)
        # Any refusal counts: unreachable, out of memory, a read-only replica, a script error.
        self.failures: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)
        self._contended = redis.exceptions.RedisError
        self._redis = redis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
        self._read = self._redis.register_script(_READ)
        self._book = self._redis.register_script(_BOOK)
        self._confirm = self._redis.register_script(_CONFIRM)
        self._pause = self._redis.register_script(_PAUSE)

    def reserve(self, choices: list[list[Window]], margin: float) -> Booking:
        windows = list(dict.fromkeys(w for choice in choices for w in choice))
        for _ in range(CONTENDED):
            before = time.time()
            now_text, *read = self._read(keys=[name for w in windows for name in _names(w)])
            # Redis's clock is not this machine's: its "now" is read at some moment between before and
            # here, so a slot is waited for as if read at here (never early) and its spread counts the
            # rest (a late answer, a thread waiting for the GIL: else a request reached the service
            # later than its stamp said, and one a window after it came too soon, a 429).
            here, now = time.time(), float(now_text)
            skew = here - before
            spread = margin + skew
            paused = {w: float(p) for w, (p, _, _) in zip(windows, read, strict=True)}
            counters = {w: c for w, (_, c, _) in zip(windows, read, strict=True)}
            stamps = {w: _stamps(w, flat) for w, (_, _, flat) in zip(windows, read, strict=True)}
            best, slot = choose(now, choices, stamps, paused, spread)  # the spread it is booked with
            horizon = now + HORIZON * min(w.seconds for w in choices[best])
            if slot > horizon:
                return Booking(None, slot - horizon, here + slot - horizon)
            chosen, ticket = choices[best], secrets.token_hex(8)
            args: list[Any] = [repr(slot), repr(spread), repr(now), ticket]
            for w in chosen:
                args += [counters[w], KEEP * w.seconds + spread]
            keys = [name for w in chosen for name in _names(w)[::2]]
            if self._book(keys=keys, args=args):
                return Booking(best, max(0.0, slot - now), here + max(0.0, slot - now), slot, skew, ticket)
        raise self._contended(f"{CONTENDED} bookings in a row overtaken by other processes")

    def confirm(self, windows: list[Window], stamp: float, ticket: str, spread: float) -> None:
        keys = [name for w in windows for name in _names(w)[::2]]
        self._confirm(keys=keys, args=[repr(stamp), ticket, repr(max(0.0, spread))])

    def release(self, windows: list[Window], stamp: float, ticket: str) -> None:
        keys = [name for w in windows for name in _names(w)[::2]]
        self._confirm(keys=keys, args=[repr(stamp), ticket])

    def pause(self, window: Window, seconds: float) -> None:
        self._pause(keys=list(_names(window)[1:]), args=[seconds])


def _stamps(window: Window, flat: list[bytes]) -> Stamps:
    """A window's stamps from ZRANGE ... WITHSCORES (member, score, member, score ...)."""
    members, scores = flat[::2], flat[1::2]
    spread = [float(m.rsplit(b":", 1)[1]) for m in members]
    return Stamps(window.limit, window.seconds, [float(s) for s in scores], spread, window.burst)


class Failover:
    """A shared store, and where to pace while it fails: never no limits, never a failed request.

    When ``shared`` raises one of its ``failures``, this process paces on ``fallback`` (one warning
    per process) and tries ``shared`` again RETRY seconds later. One caller at a time uses ``shared``,
    so callers queued behind a slow failure see it and go to the fallback at once.
    """

    def __init__(self, shared: Store, fallback: Store) -> None:
        self.where = shared.where
        self.failures: tuple[type[BaseException], ...] = ()  # it never fails: that is its job
        self.shared = shared
        self.fallback = fallback
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._warned = False

    def _lost(self, exc: BaseException) -> None:
        self._down_until = time.monotonic() + RETRY
        if self._warned:
            return
        self._warned = True
        detail = " ".join(str(exc).split())[:160]
        alone = self.fallback.where == ":memory:"
        instead = "this process alone" if alone else f"this machine's limits ({self.fallback.where})"
        warnings.warn(
            f"mediagen_nb: lost the shared limits at {self.where} ({type(exc).__name__}: {detail}); "
            f"pacing on {instead} until they work again",
            RuntimeWarning,
            stacklevel=3,
        )

    def reserve(self, choices: list[list[Window]], margin: float) -> Booking:
        with self._lock:
            if time.monotonic() >= self._down_until:
                try:
                    return self.shared.reserve(choices, margin)
                except self.shared.failures as exc:
                    self._lost(exc)
        return self.fallback.reserve(choices, margin)

    def confirm(self, windows: list[Window], stamp: float, ticket: str, spread: float) -> None:
        """Told to both stores (the stamp is in the one that booked it): a failure only keeps the margin."""
        self.fallback.confirm(windows, stamp, ticket, spread)
        self._tell(lambda store: store.confirm(windows, stamp, ticket, spread))

    def release(self, windows: list[Window], stamp: float, ticket: str) -> None:
        """Told to both stores too: a failure only keeps the slot taken until it leaves its window."""
        self.fallback.release(windows, stamp, ticket)
        self._tell(lambda store: store.release(windows, stamp, ticket))

    def _tell(self, change: Callable[[Store], None]) -> None:
        """Make ``change`` in the shared store, unless it is failing (then it is tried again later)."""
        with self._lock:
            if time.monotonic() >= self._down_until:
                try:
                    change(self.shared)
                except self.shared.failures as exc:
                    self._lost(exc)

    def pause(self, window: Window, seconds: float) -> None:
        self.fallback.pause(window, seconds)  # also here: a pause must outlive a failing store
        self._tell(lambda store: store.pause(window, seconds))


def _without_password(url: str) -> str:
    """``url`` safe to print: any password replaced."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def open_store(url: str, machine_file: Path, machine: Callable[[], Store], variable: str) -> Store:
    """The store ``url`` names: ``memory``, Redis (failing over to ``machine()``, the machine's file), or
    a file (``""``: ``machine_file``); a file that cannot be kept is this process's alone, with one warning
    naming ``variable``. The assembler opens each once per process."""
    if url == "memory":
        return SQLiteStore(":memory:")
    if url.startswith(("redis://", "rediss://", "unix://")):
        return Failover(RedisStore(url), machine())
    path = Path(url.removeprefix("sqlite://")).expanduser() if url else machine_file
    try:
        return Failover(SQLiteStore(path), SQLiteStore(":memory:"))
    except (OSError, sqlite3.Error) as exc:
        warnings.warn(
            f"mediagen_nb: cannot keep the shared limits in {path} ({exc}); this process paces alone "
            f"(set {variable} to a writable file)",
            RuntimeWarning,
            stacklevel=3,
        )
        return SQLiteStore(":memory:")
