"""One ``max_credits`` for every process of a run (Ray actors, Daft workers), kept where the limits are.

A run's processes each start their own rows, so a per-process budget would let N of them spend N times
the limit. Here every row's credits are held under the row's Idempotency-Key in the store the limiters
share (:mod:`mediagen_nb.client.limits_store`: the machine's file, or Redis across machines): a batch
holds all its rows at once or none of them, a row already held (a retried task, a speculative copy, a
re-run) is not counted twice, and the answers replace the holds with the charges (a refused or refunded
row frees its hold; an unanswered one keeps it, as it may have been charged).

Why not the limits' own windows: they book timestamps, not amounts; and why not the session budget
(:mod:`mediagen_nb.client.spending`): it is one process's. A store that cannot be reached never lets a
row start unchecked: the batch is refused, naming the store.
"""

import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from mediagen_nb.client import settings
from mediagen_nb.client.errors import BudgetExceeded, ConfigurationError
from mediagen_nb.client.limits_store import BUSY_TIMEOUT, RESERVE_WAIT, _without_password

KEEP = 24 * 3600.0  # real seconds a budget is kept after its last change (a run's re-runs find it)


class Holds(Protocol):
    """Where a run's holds are kept: every key's credits, per budget name."""

    where: str

    def hold(self, name: str, limit: int, credits: Mapping[str, int]) -> int | None:
        """Hold ``credits`` (by key) under ``name`` if they fit ``limit``: None when held, else what is
        held already. Keys held before keep their credits and add nothing."""
        ...

    def settle(self, name: str, credits: Mapping[str, int]) -> None:
        """Each key's credits now (its charge); 0 frees it."""
        ...

    def held(self, name: str) -> int:
        """Credits held and charged under ``name``."""
        ...


class SQLiteHolds:
    """Holds in one SQLite file (WAL, one short ``BEGIN IMMEDIATE`` transaction a batch), or in memory."""

    def __init__(self, path: str | Path) -> None:
        self.where = str(path)
        if self.where != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS budget_holds (budget TEXT NOT NULL, key TEXT NOT NULL, "
                "credits INTEGER NOT NULL, at REAL NOT NULL, PRIMARY KEY (budget, key))"
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(RESERVE_WAIT * 1000)}")

    def _total(self, name: str) -> int:
        row = self._db.execute("SELECT COALESCE(SUM(credits), 0) FROM budget_holds WHERE budget = ?", (name,))
        return int(row.fetchone()[0])

    def hold(self, name: str, limit: int, credits: Mapping[str, int]) -> int | None:
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("DELETE FROM budget_holds WHERE at < ?", (now - KEEP,))
                known = "SELECT 1 FROM budget_holds WHERE budget = ? AND key = ?"
                new = {
                    k: c for k, c in credits.items() if self._db.execute(known, (name, k)).fetchone() is None
                }
                total = self._total(name)
                if total + sum(new.values()) > limit:
                    self._db.execute("ROLLBACK")
                    return total
                self._db.executemany(
                    "INSERT INTO budget_holds VALUES (?, ?, ?, ?)",
                    [(name, k, c, now) for k, c in new.items()],
                )
                self._db.execute("UPDATE budget_holds SET at = ? WHERE budget = ?", (now, name))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return None

    def settle(self, name: str, credits: Mapping[str, int]) -> None:
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for key, value in credits.items():
                    if value:
                        self._db.execute(
                            "INSERT INTO budget_holds VALUES (?, ?, ?, ?) ON CONFLICT(budget, key) "
                            "DO UPDATE SET credits = excluded.credits, at = excluded.at",
                            (name, key, value, now),
                        )
                    else:
                        self._db.execute("DELETE FROM budget_holds WHERE budget = ? AND key = ?", (name, key))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def held(self, name: str) -> int:
        with self._lock:
            return self._total(name)


# KEYS: the budget's hash (key -> credits) and its total. ARGV: limit, seconds kept, then key, credits ...
_HOLD = """
local new, added = {}, 0
for i = 3, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then
    new[#new + 1] = i
    added = added + tonumber(ARGV[i + 1])
  end
end
local total = tonumber(redis.call('GET', KEYS[2]) or '0')
if total + added > tonumber(ARGV[1]) then return total end
for _, i in ipairs(new) do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('INCRBY', KEYS[2], added)
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return -1
"""

# KEYS: the budget's hash and its total. ARGV: seconds kept, then key, credits ...
_SETTLE = """
for i = 2, #ARGV, 2 do
  local old = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  local now = tonumber(ARGV[i + 1])
  if now == 0 then redis.call('HDEL', KEYS[1], ARGV[i]) else redis.call('HSET', KEYS[1], ARGV[i], now) end
  redis.call('INCRBY', KEYS[2], now - old)
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 1
"""


class RedisHolds:
    """Holds in Redis, shared by every machine: one Lua script a batch."""

    def __init__(self, url: str) -> None:
        import redis

        self.where = _without_password(url)
        self._redis = redis.Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=5.0)
        self._hold = self._redis.register_script(_HOLD)
        self._settle = self._redis.register_script(_SETTLE)

    @staticmethod
    def _keys(name: str) -> list[str]:
        return [f"mediagen:b:{name}", f"mediagen:b:{name}:total"]

    def hold(self, name: str, limit: int, credits: Mapping[str, int]) -> int | None:
        args: list[Any] = [limit, int(KEEP)] + [x for pair in credits.items() for x in pair]
        total = int(self._hold(keys=self._keys(name), args=args))
        return None if total < 0 else total

    def settle(self, name: str, credits: Mapping[str, int]) -> None:
        args: list[Any] = [int(KEEP)] + [x for pair in credits.items() for x in pair]
        self._settle(keys=self._keys(name), args=args)

    def held(self, name: str) -> int:
        return int(self._redis.get(self._keys(name)[1]) or 0)


_lock = threading.Lock()
_opened: dict[str, Holds] = {}


def holds(url: str | None = None) -> Holds:
    """The holds at ``url`` (default: ``MEDIAGEN_LIMITS_URL``, else the machine's limits file), opened once.

    ``memory`` is refused: a budget kept in one process is not the run's.
    """
    wanted = url if url is not None else settings.limits_url()
    if wanted == "memory":
        raise ConfigurationError(
            f"max_credits: {settings.ENV_LIMITS_URL} is 'memory', so each process would keep a budget of its "
            "own; leave it unset (this machine's file) or set it to redis://... (every machine)"
        )
    with _lock:
        if wanted not in _opened:
            if wanted.startswith(("redis://", "rediss://", "unix://")):
                _opened[wanted] = RedisHolds(wanted)
            else:
                path = (
                    Path(wanted.removeprefix("sqlite://")).expanduser() if wanted else settings.limits_path()
                )
                _opened[wanted] = SQLiteHolds(path)
        return _opened[wanted]


class SharedBudget:
    """``max_credits`` for every process of one run, named ``name`` (made once, where the run is defined)."""

    def __init__(self, name: str, limit: int, url: str | None = None) -> None:
        self.name = name
        self.limit = limit
        self._url = url

    def _holds(self) -> Holds:
        return holds(self._url)

    def _where(self) -> str:
        """Where the holds are kept, as the messages name it (the URL, else the machine's file)."""
        return _without_password(self._url or settings.limits_url() or str(settings.limits_path()))

    def hold(self, credits: Mapping[str, int], what: str) -> None:
        """Hold every row's credits (by Idempotency-Key) or none; BudgetExceeded (nothing sent) when they
        do not fit, or when the store cannot answer."""
        try:
            store = self._holds()
            already = store.hold(self.name, self.limit, credits)
        except Exception as exc:  # sqlite3, redis or OS errors: an unchecked start is never made
            raise BudgetExceeded(
                f"max_credits: the run's budget at {self._where()} cannot be read ({type(exc).__name__}: "
                f"{exc}); nothing was started"
            ) from None
        if already is not None:
            raise BudgetExceeded(
                f"max_credits: {what} would cost {sum(credits.values())} credits, but only "
                f"{max(0, self.limit - already)} of max_credits={self.limit} are left ({already} spent or "
                "held by the run's workers); none of its rows was started"
            )

    def settle(self, credits: Mapping[str, int]) -> None:
        """The rows' charges now (0: refused, skipped or refunded, which frees the hold)."""
        if credits:
            self._holds().settle(self.name, credits)

    def held(self) -> int:
        """Credits spent or held by the run so far."""
        return self._holds().held(self.name)
