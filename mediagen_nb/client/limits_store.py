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
bucket; the spec's limits need a *reserved* slot in an even stream (at least window/limit apart, and
never ``limit`` in a window), booked atomically with the account's start limiter in one step, across
a pool of keys. That is one query and one insert here, in each store.

A reservation is a timestamp. It is booked only when its slot is at most ``HORIZON`` windows ahead,
so a process that dies holds no slot further ahead than that, and its stamps leave the window by
themselves one window later; a process with many rows waiting cannot book the whole future either,
so processes sharing a key take turns (fair shares).
"""

import hashlib
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mediagen_nb.client import settings
from mediagen_nb.client.context import PROCESS

HORIZON = 1.0  # windows ahead a slot may be booked; further slots are asked for again later
RETRY = 5.0  # seconds on the fallback after the shared store failed, before it is tried again
BUSY_TIMEOUT = 10.0  # seconds SQLite waits for another process to switch a new file to WAL
RESERVE_WAIT = 2.0  # seconds a reservation waits for another's (sub-millisecond) one: longer is a fault


@dataclass(frozen=True)
class Window:
    """One rolling window: ``limit`` events in ``seconds`` real seconds, for one key or account."""

    scope: str  # a hash naming the key or account and the service; never the key itself
    limit: int
    seconds: float


@dataclass(frozen=True)
class Booking:
    """The answer to a reservation: the choice booked (None: nothing booked yet) and seconds to wait.

    ``at`` is the same moment on this machine's clock (``time.time()``): the caller waits until then,
    however long the answer took to reach it, so a request never goes earlier than its slot.
    """

    index: int | None
    delay: float
    at: float = 0.0


def scope_of(kind: str, base_url: str, identity: str) -> str:
    """The name under which a key's or an account's window is kept (a hash: the key never leaves)."""
    return hashlib.sha256(f"{kind}\0{base_url}\0{identity}".encode()).hexdigest()[:24]


def slot_after(
    now: float, paused: float, recent: list[tuple[float, float]], window: Window, margin: float
) -> float:
    """The first time an event may go, given the window's most recent (slot, margin) stamps, newest first.

    Each stamp keeps the margin of the process that booked it: a slot a window after another
    process's stamp allows for the larger of the two latency spreads (that process may send late).
    """
    slot = max(now, paused)
    if recent:
        at, theirs = recent[0]
        slot = max(slot, at + (window.seconds + max(margin, theirs)) / window.limit)
    if len(recent) >= window.limit:
        at, theirs = recent[window.limit - 1]
        slot = max(slot, at + window.seconds + max(margin, theirs))
    return slot


class Store(Protocol):
    """Where windows are kept."""

    where: str
    failures: tuple[type[BaseException], ...]  # what it raises when it cannot serve (a Failover's cue)

    def reserve(self, choices: list[list[Window]], margin: float) -> Booking: ...

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
                "CREATE TABLE IF NOT EXISTS slots (scope TEXT NOT NULL, at REAL NOT NULL, margin REAL);"
                "CREATE INDEX IF NOT EXISTS slots_by_scope ON slots (scope, at);"
                "CREATE TABLE IF NOT EXISTS pauses (scope TEXT PRIMARY KEY, until REAL NOT NULL);"
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(RESERVE_WAIT * 1000)}")

    def reserve(self, choices: list[list[Window]], margin: float) -> Booking:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                now = self._now()
                slots = [max(self._slot(w, now, margin) for w in choice) for choice in choices]
                best = min(range(len(choices)), key=slots.__getitem__)
                horizon = now + HORIZON * min(w.seconds for w in choices[best])
                if slots[best] > horizon:
                    self._db.execute("COMMIT")
                    return Booking(None, slots[best] - horizon, horizon)
                for w in choices[best]:
                    self._db.execute("INSERT INTO slots VALUES (?, ?, ?)", (w.scope, slots[best], margin))
                    old = now - 2 * (w.seconds + margin)
                    self._db.execute("DELETE FROM slots WHERE scope = ? AND at < ?", (w.scope, old))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return Booking(best, max(0.0, slots[best] - now), max(now, slots[best]))

    def _slot(self, window: Window, now: float, margin: float) -> float:
        recent = [
            (at, theirs)
            for (at, theirs) in self._db.execute(
                "SELECT at, margin FROM slots WHERE scope = ? ORDER BY at DESC LIMIT ?",
                (window.scope, window.limit),
            )
        ]
        paused = self._db.execute("SELECT until FROM pauses WHERE scope = ?", (window.scope,)).fetchone()
        return slot_after(now, paused[0] if paused else 0.0, recent, window, margin)

    def pause(self, window: Window, seconds: float) -> None:
        until = self._now() + seconds
        with self._lock:
            self._db.execute(
                "INSERT INTO pauses VALUES (?, ?) ON CONFLICT(scope) DO UPDATE SET until = max(until, ?)",
                (window.scope, until, until),
            )


# KEYS: per window, its stamps (a sorted set) and its pause. ARGV: margin, the number of choices,
# then per choice the number of its windows and, per window, its KEYS index, limit and seconds.
# Redis's own clock (TIME) is the one clock of every machine.
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local margin = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local pos = 3
local best, best_slot, best_windows, best_span = nil, nil, nil, nil
for c = 1, n do
  local m = tonumber(ARGV[pos]); pos = pos + 1
  local slot, windows, shortest = now, {}, nil
  for j = 1, m do
    local k, limit, seconds = tonumber(ARGV[pos]), tonumber(ARGV[pos + 1]), tonumber(ARGV[pos + 2])
    pos = pos + 3
    local span = seconds + margin
    local s = math.max(now, tonumber(redis.call('GET', KEYS[2 * k]) or '0'))
    local recent = redis.call('ZREVRANGE', KEYS[2 * k - 1], 0, limit - 1, 'WITHSCORES')
    local count = #recent / 2
    -- a member is 'slot:n:margin': the margin of the process that booked it (it may send that late)
    if count > 0 then
      local theirs = tonumber(string.match(recent[1], ':([^:]+)$')) or 0
      s = math.max(s, tonumber(recent[2]) + (seconds + math.max(margin, theirs)) / limit)
    end
    if count >= limit then
      local theirs = tonumber(string.match(recent[2 * limit - 1], ':([^:]+)$')) or 0
      s = math.max(s, tonumber(recent[2 * limit]) + seconds + math.max(margin, theirs))
    end
    slot = math.max(slot, s)
    windows[#windows + 1] = {KEYS[2 * k - 1], span}
    if shortest == nil or seconds < shortest then shortest = seconds end
  end
  if best_slot == nil or slot < best_slot then
    best, best_slot, best_windows, best_span = c, slot, windows, shortest
  end
end
local horizon = now + tonumber(ARGV[#ARGV]) * best_span
if best_slot > horizon then return {-1, tostring(best_slot - horizon)} end
for _, w in ipairs(best_windows) do
  local id = redis.call('INCR', w[1] .. ':n')
  redis.call('ZADD', w[1], best_slot, tostring(best_slot) .. ':' .. id .. ':' .. tostring(margin))
  redis.call('ZREMRANGEBYSCORE', w[1], '-inf', now - 2 * w[2])
  redis.call('PEXPIRE', w[1], math.ceil((best_slot - now + 2 * w[2]) * 1000))
  redis.call('PEXPIRE', w[1] .. ':n', math.ceil((best_slot - now + 2 * w[2]) * 1000))
end
return {best - 1, tostring(math.max(0, best_slot - now))}
"""

_PAUSE = """
local t = redis.call('TIME')
local till = tonumber(t[1]) + tonumber(t[2]) / 1e6 + tonumber(ARGV[1])
local old = tonumber(redis.call('GET', KEYS[1]) or '0')
if till > old then
  redis.call('SET', KEYS[1], tostring(till), 'PX', math.ceil(tonumber(ARGV[1]) * 1000) + 1000)
end
return 1
"""


class RedisStore:
    """Windows in Redis, shared by every machine (behind a :class:`Failover` when opened by :func:`store`)."""

    def __init__(self, url: str) -> None:
        import redis

        self.where = _without_password(url)
        # Any refusal counts: unreachable, out of memory, a read-only replica, a script error.
        self.failures: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)
        self._redis = redis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
        self._reserve = self._redis.register_script(_RESERVE)
        self._pause = self._redis.register_script(_PAUSE)

    def reserve(self, choices: list[list[Window]], margin: float) -> Booking:
        windows = list(dict.fromkeys(w for choice in choices for w in choice))
        keys = [name for w in windows for name in (f"mediagen:w:{w.scope}", f"mediagen:p:{w.scope}")]
        args: list[Any] = [margin, len(choices)]
        for choice in choices:
            args.append(len(choice))
            for w in choice:
                args += [windows.index(w) + 1, w.limit, w.seconds]
        args.append(HORIZON)
        index, delay = self._reserve(keys=keys, args=args)
        booked = int(index)  # Redis's clock is not this machine's: its delay counts from now
        return Booking(booked if booked >= 0 else None, float(delay), time.time() + float(delay))

    def pause(self, window: Window, seconds: float) -> None:
        self._pause(keys=[f"mediagen:p:{window.scope}"], args=[seconds])


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

    def pause(self, window: Window, seconds: float) -> None:
        self.fallback.pause(window, seconds)  # also here: a pause must outlive a failing store
        with self._lock:
            if time.monotonic() >= self._down_until:
                try:
                    self.shared.pause(window, seconds)
                except self.shared.failures as exc:
                    self._lost(exc)


def _without_password(url: str) -> str:
    """``url`` safe to print: any password replaced."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


_stores_lock = threading.RLock()  # opening a Redis store opens its fallback under it


def store(url: str | None = None) -> Store:
    """The store at ``url`` (default: ``MEDIAGEN_LIMITS_URL``, else the machine's file), one per process."""
    wanted = url if url is not None else settings.limits_url()
    with _stores_lock:
        if wanted not in PROCESS.stores:
            PROCESS.stores[wanted] = _open(wanted)
        return PROCESS.stores[wanted]


def _open(url: str) -> Store:
    if url == "memory":
        return SQLiteStore(":memory:")
    if url.startswith(("redis://", "rediss://", "unix://")):
        return Failover(RedisStore(url), store(""))
    path = Path(url.removeprefix("sqlite://")).expanduser() if url else settings.limits_path()
    try:
        return Failover(SQLiteStore(path), SQLiteStore(":memory:"))
    except (OSError, sqlite3.Error) as exc:
        warnings.warn(
            f"mediagen_nb: cannot keep the shared limits in {path} ({exc}); this process paces alone "
            f"(set {settings.ENV_LIMITS_URL} to a writable file)",
            RuntimeWarning,
            stacklevel=3,
        )
        return SQLiteStore(":memory:")
