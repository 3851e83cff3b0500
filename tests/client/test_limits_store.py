"""Where the 60-a-minute windows are kept (``client/limits_store.py``), each store's rules on their own.

A booking is the earliest slot of the even stream, taken only within half a window ahead (else it is
asked for again later); a pause keeps a key or an account quiet for every process; a late answer
stretches its stamp; stamps leave after their window; a shared store that fails paces on this
machine's (or this process's) instead, with one warning, and is tried again later. The SQLite store
runs on a stepped clock; the Redis store on a real ``redis-server`` on a socket of the test's own.
"""

import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _wait import wait_until

from mediagen_nb.client import assemble, limits_store
from mediagen_nb.client.context import PROCESS
from mediagen_nb.client.limits_store import (
    HORIZON,
    KEEP,
    Booking,
    Failover,
    SQLiteStore,
    Window,
    choose,
    scope_of,
)
from mediagen_nb.client.slots import Stamps

KEY = Window(scope_of("key", "https://service.example", "digest"), 2, 60.0)  # one slot every 30 s
ACCOUNT = Window(scope_of("account", "https://service.example", "acct"), 60, 60.0)
OTHER = Window(scope_of("key", "https://service.example", "other"), 2, 60.0)
FOUR = Window(scope_of("key", "https://service.example", "four"), 4, 60.0)  # one slot every 15 s


def places_warned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The file each warning of the test will point at, as it would without the two frames that mutmut's
    trampolines put under every call of a function it mutated (its tool's frames are skipped): so a
    mutant's ``stacklevel`` is told apart from the code's under ``.ci/mutation.py`` too."""
    places: list[str] = []
    warn = warnings.warn

    def located(message: Any, category: Any = None, stacklevel: int = 1, **rest: Any) -> None:
        frame = sys._getframe(1)
        for _ in range(stacklevel - 1):
            frame = frame.f_back  # type: ignore[assignment]
            while "/mutmut/" in frame.f_code.co_filename:
                frame = frame.f_back  # type: ignore[assignment]
        places.append(frame.f_code.co_filename)
        warn(message, category, stacklevel=stacklevel + 1, **rest)

    monkeypatch.setattr(warnings, "warn", located)
    return places


class Clock:
    """Wall time for a store, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sqlite(tmp_path: Path, clock: Clock) -> SQLiteStore:
    return SQLiteStore(tmp_path / "cache" / "limits.sqlite", now=clock)


def stamps(store: SQLiteStore, window: Window) -> list[tuple[float, float]]:
    return [
        (at, margin)
        for at, margin in store._db.execute(
            "SELECT at, spread FROM stamps WHERE scope = ? ORDER BY at, rowid", (window.scope,)
        )
    ]


# ------------------------------------------------------------------------------------- the rules


def test_a_scope_names_kind_service_and_identity_without_the_key() -> None:
    scope = scope_of("key", "https://service.example", "pk_live_secret")
    assert len(scope) == 24 and "secret" not in scope and int(scope, 16) >= 0
    assert (
        len(
            {
                scope,
                scope_of("account", "https://service.example", "pk_live_secret"),
                scope_of("key", "https://other.example", "pk_live_secret"),
                scope_of("key", "https://service.example", "pk_live_other"),
            }
        )
        == 4
    )


def test_choose_takes_the_earliest_slot_then_the_least_loaded_choice() -> None:
    now = 1000.0
    empty = {KEY: Stamps(2, 60.0, [], []), OTHER: Stamps(2, 60.0, [], [])}
    assert choose(now, [[KEY], [OTHER]], empty, {KEY: 0.0, OTHER: 0.0}, 0.0) == (0, now)
    one = {KEY: Stamps(2, 60.0, [now - 1], [0.0]), OTHER: Stamps(2, 60.0, [], [])}
    assert choose(now, [[KEY], [OTHER]], one, {KEY: 0.0, OTHER: 0.0}, 0.0) == (1, now)  # the idle key
    old = {KEY: Stamps(2, 60.0, [now - 100], [0.0]), OTHER: Stamps(2, 60.0, [now - 59], [0.0])}
    # both free now; KEY's stamp has left its window, OTHER's has not: KEY is the less loaded
    assert choose(now, [[OTHER], [KEY]], old, {KEY: 0.0, OTHER: 0.0}, 0.0) == (1, now)
    paused = {KEY: now + 50, OTHER: 0.0}
    assert choose(now, [[KEY], [OTHER]], empty, paused, 0.0) == (1, now)
    assert choose(now, [[KEY]], empty, paused, 0.0) == (0, now + 50)


def test_a_sqlite_booking_keeps_the_even_stream_and_books_only_half_a_window_ahead(
    sqlite: SQLiteStore, clock: Clock
) -> None:
    first = sqlite.reserve([[KEY]], margin=0.0)
    assert first == Booking(0, 0.0, clock.now, clock.now)
    second = sqlite.reserve([[KEY]], margin=0.25)
    assert second == Booking(0, 30.0, clock.now + 30, clock.now + 30)  # 60 s / 2: the next slot
    third = sqlite.reserve([[KEY]], margin=0.25)  # its slot (+60) is past the horizon (+30)
    assert third == Booking(None, 30.0, clock.now + 30)
    assert stamps(sqlite, KEY) == [(clock.now, 0.0), (clock.now + 30, 0.25)]
    assert HORIZON == 0.5


def test_a_sqlite_slot_in_a_gap_before_a_later_stamp_leaves_it_a_window_and_the_margin(
    sqlite: SQLiteStore, clock: Clock
) -> None:
    """One a second; a stamp another process booked 1.07 s ahead: a slot now fits before it with a margin
    of 0.05 s (1.05 s), not with 0.1 s (1.1 s), so the margin given is the one the slot is fitted with."""
    window = Window(scope_of("key", "https://service.example", "gap"), 1, 1.0)
    sqlite._db.execute("INSERT INTO stamps VALUES (?, ?, ?, ?)", (window.scope, clock.now + 1.07, 0.0, "t"))
    assert sqlite.reserve([[window]], margin=0.05) == Booking(0, 0.0, clock.now, clock.now)
    sqlite._db.execute("DELETE FROM stamps WHERE at = ?", (clock.now,))
    assert sqlite.reserve([[window]], margin=0.1).index is None  # after the later one: past the horizon


def test_a_start_books_its_key_and_the_account_together(sqlite: SQLiteStore, clock: Clock) -> None:
    booked = sqlite.reserve([[KEY, ACCOUNT], [OTHER, ACCOUNT]], margin=0.0)
    assert booked.index == 0 and stamps(sqlite, ACCOUNT) == [(clock.now, 0.0)]
    again = sqlite.reserve([[KEY, ACCOUNT], [OTHER, ACCOUNT]], margin=0.0)
    assert again.index == 1 and again.delay == 1.0  # the other key; the account's next slot, 1 s on
    assert stamps(sqlite, OTHER) == [(clock.now + 1, 0.0)] and len(stamps(sqlite, ACCOUNT)) == 2


def test_a_confirmed_spread_replaces_the_margin_of_its_stamp_only(sqlite: SQLiteStore, clock: Clock) -> None:
    first = sqlite.reserve([[KEY, ACCOUNT]], margin=0.25)
    second = sqlite.reserve([[KEY, ACCOUNT]], margin=0.25)
    sqlite.confirm([KEY, ACCOUNT], first.stamp, first.ticket, 5.0)
    sqlite.confirm([KEY], second.stamp, second.ticket, -1.0)  # an answer before its slot: no negative spread
    assert stamps(sqlite, KEY) == [(first.stamp, 5.0), (second.stamp, 0.0)]
    assert stamps(sqlite, ACCOUNT) == [(first.stamp, 5.0), (second.stamp, 0.25)]


BURST = Window(scope_of("key", "https://service.example", "burst"), 60, 60.0, burst=60)


def test_each_request_of_a_burst_confirms_its_own_spread(sqlite: SQLiteStore) -> None:
    """Three requests booked at one slot (a window with room takes them at once) are answered 0.05 s,
    0.7 s and 0.3 s after it: each stamp keeps its own spread. Were the quick answer to set all three,
    the next window would be booked as if the slow ones had come at once too (a 429 a window later)."""
    burst = [sqlite.reserve([[BURST]], margin=0.25) for _ in range(3)]
    assert len({b.stamp for b in burst}) == 1 and len({b.ticket for b in burst}) == 3
    for booking, spread in zip(burst, [0.05, 0.7, 0.3], strict=True):
        sqlite.confirm([BURST], booking.stamp, booking.ticket, spread)
    assert stamps(sqlite, BURST) == [(burst[0].stamp, 0.05), (burst[0].stamp, 0.7), (burst[0].stamp, 0.3)]
    sqlite.release([BURST], burst[1].stamp, burst[1].ticket)  # given back: that one stamp alone
    assert stamps(sqlite, BURST) == [(burst[0].stamp, 0.05), (burst[0].stamp, 0.3)]


def test_a_pause_holds_every_booking_until_it_ends_and_only_grows(sqlite: SQLiteStore, clock: Clock) -> None:
    sqlite.pause(KEY, 60.0)
    sqlite.pause(KEY, 10.0)  # a shorter pause never shortens one in force
    clock.now += 20
    assert sqlite.reserve([[KEY]], margin=0.0) == Booking(None, 10.0, clock.now + 10)  # 40 s left
    clock.now += 40
    assert sqlite.reserve([[KEY]], margin=0.0).index == 0
    assert sqlite.reserve([[OTHER]], margin=0.0).delay == 0.0  # another window: not paused


def test_stamps_leave_after_keep_windows_past_their_slot_and_spread(
    sqlite: SQLiteStore, clock: Clock
) -> None:
    booked = sqlite.reserve([[KEY]], margin=1.0)
    clock.now += KEEP * KEY.seconds + 1.0  # exactly its slot + spread + KEEP windows: still kept
    sqlite.reserve([[OTHER]], margin=0.0)
    sqlite.reserve([[KEY]], margin=0.0)
    assert (booked.stamp, 1.0) in stamps(sqlite, KEY)
    clock.now += 0.5
    sqlite.reserve([[KEY]], margin=0.0)
    assert (booked.stamp, 1.0) not in stamps(sqlite, KEY)


def test_a_reservation_that_fails_leaves_nothing_half_written(sqlite: SQLiteStore, clock: Clock) -> None:
    with pytest.raises(ValueError):
        sqlite.reserve([], margin=0.0)  # nothing to choose from
    sqlite.reserve([[KEY]], margin=0.0)  # the transaction was rolled back: the store goes on
    assert len(stamps(sqlite, KEY)) == 1


def test_two_stores_on_one_file_share_its_windows(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "limits.sqlite"
    one, two = SQLiteStore(path, now=clock), SQLiteStore(f"{path}", now=clock)
    assert one.reserve([[KEY]], margin=0.0).delay == 0.0
    assert two.reserve([[KEY]], margin=0.0).delay == 30.0
    two.pause(OTHER, 40.0)
    assert one.reserve([[OTHER]], margin=0.0).index is None
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert one.where == str(path) and SQLiteStore(":memory:").where == ":memory:"


def test_a_new_file_switched_to_wal_by_another_process_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's busy timeout does not cover the switch to WAL: "locked" is tried again shortly."""
    calls: list[int] = []
    real = SQLiteStore._set_up

    def locked_twice(self: SQLiteStore) -> None:
        calls.append(1)
        if len(calls) <= 2:
            raise sqlite3.OperationalError("database is locked")
        real(self)

    monkeypatch.setattr(SQLiteStore, "_set_up", locked_twice)
    store = SQLiteStore(tmp_path / "limits.sqlite")
    assert len(calls) == 3 and store.reserve([[KEY]], margin=0.0).index == 0
    monkeypatch.setattr(
        SQLiteStore, "_set_up", lambda self: (_ for _ in ()).throw(sqlite3.OperationalError("disk I/O error"))
    )
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        SQLiteStore(tmp_path / "other.sqlite")


def test_a_booking_takes_the_file_s_write_lock_within_2_ms_of_its_release(
    sqlite: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the write lock: the booking tries again after 0.2 ms, then twice as long
    each time up to 2 ms (never SQLite's own busy handler, which sleeps up to 100 ms between tries), and
    books as soon as the lock is free; a lock held past RESERVE_WAIT is an error (the Failover's cue)."""
    other = sqlite3.connect(tmp_path / "cache" / "limits.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 6:
            other.execute("COMMIT")  # the other process's transaction ends

    monkeypatch.setattr(limits_store.time, "sleep", pause)
    assert sqlite.reserve([[KEY]], margin=0.0).index == 0
    assert pauses == [0.0002, 0.0004, 0.0008, 0.0016, 0.002, 0.002]
    other.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(limits_store, "RESERVE_WAIT", 0.0)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        sqlite.confirm([KEY], 0.0, "t", 0.1)
    other.execute("ROLLBACK")
    other.close()


def test_a_file_locked_past_its_wait_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits_store, "BUSY_TIMEOUT", 0.05)
    monkeypatch.setattr(
        SQLiteStore,
        "_set_up",
        lambda self: (_ for _ in ()).throw(sqlite3.OperationalError("database is locked")),
    )
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        SQLiteStore(tmp_path / "limits.sqlite")


# --------------------------------------------------------------------------------------- failover


class Flaky:
    """A shared store that fails while ``down``, recording what reached it."""

    failures = (OSError,)

    def __init__(self, where: str = "redis://shared") -> None:
        self.where = where
        self.down = False
        self.seen: list[str] = []
        self.paused: list[tuple[Window, float]] = []
        self.confirmed: list[tuple[float, str, float]] = []
        self.released: list[tuple[tuple[Window, ...], float, str]] = []

    def _act(self, what: str) -> Any:
        if self.down:
            raise OSError(f"{what}:   lost\n  connection")
        self.seen.append(what)
        return Booking(0, 0.0, 1.0, 1.0)

    def reserve(self, choices: list[list[Window]], margin: float) -> Booking:
        return self._act("reserve")  # type: ignore[no-any-return]

    def confirm(self, windows: list[Window], stamp: float, ticket: str, spread: float) -> None:
        self._act("confirm")
        self.confirmed.append((stamp, ticket, spread))

    def release(self, windows: list[Window], stamp: float, ticket: str) -> None:
        self._act("release")
        self.released.append((tuple(windows), stamp, ticket))

    def pause(self, window: Window, seconds: float) -> None:
        self._act("pause")
        self.paused.append((window, seconds))


def test_a_failing_shared_store_paces_on_the_fallback_with_one_warning_then_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moments = [100.0]
    monkeypatch.setattr(limits_store.time, "monotonic", lambda: moments[0])
    shared, fallback = Flaky(), SQLiteStore(tmp_path / "machine.sqlite")
    store = Failover(shared, fallback)
    assert store.where == "redis://shared" and store.failures == ()
    assert store.reserve([[KEY]], 0.0).stamp == 1.0 and shared.seen == ["reserve"]
    shared.down = True
    places = places_warned(monkeypatch)
    with pytest.warns(RuntimeWarning) as said:
        booked = store.reserve([[KEY]], 0.0)
    assert booked.index == 0 and booked.stamp != 1.0  # the fallback's own booking
    assert str(said[0].message) == (
        "mediagen_nb: lost the shared limits at redis://shared (OSError: reserve: lost connection); "
        f"pacing on this machine's limits ({fallback.where}) until they work again"
    )
    assert places == [__file__]  # said where the caller asked for the booking
    shared.down = False
    moments[0] += limits_store.RETRY - 0.5  # not yet tried again: the fallback books
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.reserve([[KEY]], 0.0)
        store.confirm([KEY], 1.0, "t", 0.1)
        store.release([KEY], 1.0, "t")
        store.pause(KEY, 1.0)
    assert shared.seen == ["reserve"]
    moments[0] += 0.5
    store.confirm([KEY], 1.0, "t", 0.1)
    store.release([KEY], 1.0, "t")
    store.pause(KEY, 1.0)
    assert store.reserve([[KEY]], 0.0).stamp == 1.0
    assert shared.seen == ["reserve", "confirm", "release", "pause", "reserve"]
    assert shared.paused == [(KEY, 1.0)]
    shared.down = True
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per store: no second warning
        store.pause(OTHER, 40.0)
    assert fallback.reserve([[OTHER]], 0.0).index is None  # the pause reached the fallback as well
    moments[0] += limits_store.RETRY
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.confirm([KEY], 1.0, "t", 0.1)


def test_a_failover_tells_a_confirm_to_both_stores_with_its_stamp_and_ticket(tmp_path: Path) -> None:
    """The stamp is in whichever store booked it: both are told which one (slot and ticket) and its spread."""
    shared, fallback = Flaky(), SQLiteStore(tmp_path / "machine.sqlite")
    booked = fallback.reserve([[KEY]], margin=0.25)
    Failover(shared, fallback).confirm([KEY], booked.stamp, booked.ticket, 0.7)
    assert shared.confirmed == [(booked.stamp, booked.ticket, 0.7)]
    assert stamps(fallback, KEY) == [(booked.stamp, 0.7)]


def test_a_failover_tells_a_release_to_both_stores_with_its_windows_stamp_and_ticket(tmp_path: Path) -> None:
    shared, fallback = Flaky(), SQLiteStore(tmp_path / "machine.sqlite")
    kept = fallback.reserve([[KEY]], margin=0.25)
    given_back = fallback.reserve([[KEY]], margin=0.25)
    Failover(shared, fallback).release([KEY], given_back.stamp, given_back.ticket)
    assert shared.released == [((KEY,), given_back.stamp, given_back.ticket)]
    assert stamps(fallback, KEY) == [(kept.stamp, 0.25)]


def test_a_failover_to_this_process_says_so() -> None:
    store = Failover(Flaky("/cache/limits.sqlite"), SQLiteStore(":memory:"))
    store.shared.down = True  # type: ignore[attr-defined]
    with pytest.warns(RuntimeWarning) as said:
        store.pause(KEY, 1.0)
    assert str(said[0].message) == (
        "mediagen_nb: lost the shared limits at /cache/limits.sqlite (OSError: pause: lost connection); "
        "pacing on this process alone until they work again"
    )


def test_a_failover_warning_keeps_160_characters_of_the_failure() -> None:
    """A store's error can be long (a server's whole answer): the warning keeps its first 160 characters,
    its whitespace folded."""

    class Long(Flaky):
        def _act(self, what: str) -> Any:
            raise OSError("x" * 150 + "\n" + "y" * 100)

    store = Failover(Long(), SQLiteStore(":memory:"))
    with pytest.warns(RuntimeWarning) as said:
        store.pause(KEY, 1.0)
    assert f"(OSError: {'x' * 150} {'y' * 9}); pacing" in str(said[0].message)


# ----------------------------------------------------------------------------------- opening stores


def test_stores_are_opened_once_per_process_by_their_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PROCESS, "stores", {})
    memory = assemble.limits_store("memory")
    assert isinstance(memory, SQLiteStore) and memory.where == ":memory:"
    assert assemble.limits_store("memory") is memory
    path = tmp_path / "deep" / "limits.sqlite"
    for url in (str(path), f"sqlite://{path}"):
        opened = assemble.limits_store(url)
        assert isinstance(opened, Failover) and opened.where == str(path)
        assert isinstance(opened.fallback, SQLiteStore) and opened.fallback.where == ":memory:"
    monkeypatch.setenv("MEDIAGEN_LIMITS_URL", "memory")
    assert assemble.limits_store() is memory
    monkeypatch.setenv("MEDIAGEN_LIMITS_URL", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    default = assemble.limits_store()
    assert isinstance(default, Failover) and default.where.startswith(str(tmp_path / "cache"))


def test_a_limits_file_that_cannot_be_made_paces_this_process_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PROCESS, "stores", {})
    (tmp_path / "a-file").write_text("x")
    places = places_warned(monkeypatch)
    with pytest.warns(RuntimeWarning) as said:
        opened = assemble.limits_store(str(tmp_path / "a-file" / "limits.sqlite"))
    assert isinstance(opened, SQLiteStore) and opened.where == ":memory:"
    message = str(said[0].message)
    assert places == [__file__]
    assert message.startswith(
        f"mediagen_nb: cannot keep the shared limits in {tmp_path / 'a-file' / 'limits.sqlite'} ("
    )
    assert message.endswith("); this process paces alone (set MEDIAGEN_LIMITS_URL to a writable file)")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://host:6379/0", "redis://host:6379/0"),
        ("redis://:s3cret@host:6379/0", "redis://:***@host:6379/0"),
        ("rediss://user:s3cret@host/1", "rediss://user:***@host/1"),
        ("redis://user:s3cret@host:6380", "redis://user:***@host:6380"),
    ],
)
def test_a_redis_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert limits_store._without_password(url) == shown


# -------------------------------------------------------------------------------------------- Redis


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of this module on a unix socket (no port to find), stopped after it."""
    pytest.importorskip("redis", reason="the redis extra is not installed")
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (.ci/run installs it with apt-get)")
    folder = tmp_path_factory.mktemp("redis")
    socket = folder / "redis.sock"
    process = subprocess.Popen(
        [
            server,
            "--port",
            "0",
            "--unixsocket",
            str(socket),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(socket.exists, 10, "redis-server's socket")
        yield f"unix://{socket}"
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def redis(redis_url: str) -> Iterator[limits_store.RedisStore]:
    store = limits_store.RedisStore(redis_url)
    store._redis.flushall()
    yield store
    store._redis.close()


def members(store: limits_store.RedisStore, window: Window) -> list[tuple[bytes, float]]:
    return store._redis.zrange(limits_store._names(window)[0], 0, -1, withscores=True)  # type: ignore[no-any-return]


def test_a_redis_booking_keeps_the_even_stream_on_redis_s_clock(redis: limits_store.RedisStore) -> None:
    """Four a minute: slots 15 s apart (plus the spread: the margin and the read of Redis's clock), booked
    up to half a window ahead."""
    before = time.time()
    first = redis.reserve([[FOUR, ACCOUNT]], margin=0.25)
    assert first.index == 0 and first.delay == 0.0 and before <= first.at <= time.time()
    assert 0.0 < first.skew < 5.0  # the read of Redis's clock took some time
    second = redis.reserve([[FOUR, ACCOUNT]], margin=0.25)
    assert second.index == 0 and 15.0 <= second.stamp - first.stamp < 16.0
    assert 14.0 < second.delay < 16.0 and before + 14.0 < second.at < time.time() + 16.0
    third = redis.reserve([[FOUR, ACCOUNT]], margin=0.25)
    assert (third.index == 0 and 30.0 <= third.stamp - first.stamp < 31.0) or third.index is None
    stamped = members(redis, FOUR)
    assert [score for _, score in stamped][:2] == [first.stamp, second.stamp]
    assert len({m.split(b":")[0] for m, _ in stamped}) == len(stamped)  # a ticket each
    assert all(float(m.split(b":")[1]) >= 0.25 for m, _ in stamped)  # the margin and Redis's round trip
    assert len(members(redis, ACCOUNT)) == len(stamped)
    ttl = redis._redis.pttl(limits_store._names(FOUR)[0])
    assert 0 < ttl <= (31 + KEEP * 60 + 5) * 1000
    for _ in range(3):
        last = redis.reserve([[FOUR, ACCOUNT]], margin=0.25)
    assert last.index is None and 0.0 < last.delay <= 16.0  # past half a window: asked for again later


def test_a_redis_confirm_rewrites_the_spread_of_its_stamp(redis: limits_store.RedisStore) -> None:
    first = redis.reserve([[FOUR]], margin=0.25)
    second = redis.reserve([[FOUR]], margin=0.25)
    redis.confirm([FOUR], first.stamp, first.ticket, 5.0)
    redis.confirm([FOUR], second.stamp, second.ticket, -3.0)
    assert [(float(m.split(b":")[1]), s) for m, s in members(redis, FOUR)] == [
        (5.0, first.stamp),
        (0.0, second.stamp),
    ]
    assert redis._redis.get(limits_store._names(FOUR)[2]) == b"4"  # two bookings, two confirms


def test_a_redis_confirm_or_release_touches_its_ticket_alone_among_stamps_of_one_slot(
    redis: limits_store.RedisStore,
) -> None:
    """A burst's stamps share a slot (a score): a confirm rewrites its own ticket's spread, a release
    takes its own ticket's member, and the others keep theirs."""
    name = limits_store._names(BURST)[0]
    redis._redis.zadd(name, {b"a:0.25": 100.0, b"b:0.25": 100.0, b"c:0.25": 100.0})
    redis.confirm([BURST], 100.0, "b", 0.7)
    redis.release([BURST], 100.0, "c")
    assert sorted(m for m, _ in members(redis, BURST)) == [b"a:0.25", b"b:0.7"]


def test_a_redis_pause_holds_the_window_for_every_machine(redis: limits_store.RedisStore) -> None:
    redis.pause(KEY, 40.0)
    redis.pause(KEY, 5.0)  # never shortened
    held = redis.reserve([[KEY]], margin=0.0)
    assert held.index is None and held.delay == pytest.approx(10.0, abs=1.0)  # 40 s, less the horizon
    assert redis._redis.pttl(limits_store._names(KEY)[1]) > 39_000
    assert redis.reserve([[OTHER]], margin=0.0).index == 0


def test_a_redis_booking_overtaken_again_and_again_is_a_failure(
    redis: limits_store.RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits_store, "CONTENDED", 3)
    tries: list[int] = []
    redis._book = lambda keys, args: tries.append(1) or 0  # type: ignore[assignment,method-assign]
    with pytest.raises(limits_store.RedisStore(redis.where).failures[0], match="3 bookings in a row"):
        redis.reserve([[KEY]], margin=0.0)
    assert len(tries) == 3


def test_redis_stamps_are_read_back_with_their_spreads() -> None:
    flat = [b"9f2a:0.25", b"100.5", b"07c1:1.5", b"130.5"]
    assert limits_store._stamps(KEY, flat) == Stamps(2, 60.0, [100.5, 130.5], [0.25, 1.5])


def test_a_redis_url_opens_behind_a_failover_on_the_machine_s_file(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PROCESS, "stores", {})
    monkeypatch.setenv("MEDIAGEN_LIMITS_URL", str(tmp_path / "machine.sqlite"))
    opened = assemble.limits_store(redis_url)
    assert isinstance(opened, Failover) and isinstance(opened.shared, limits_store.RedisStore)
    assert opened.fallback is assemble.limits_store("") and opened.where == redis_url


def test_a_store_serves_every_thread_of_the_process(sqlite: SQLiteStore) -> None:
    booked: list[Booking] = []
    worker = threading.Thread(target=lambda: booked.append(sqlite.reserve([[KEY]], margin=0.0)))
    worker.start()
    worker.join()
    assert [b.index for b in booked] == [0]


def test_redis_urls_of_every_scheme_open_a_redis_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("redis", reason="the redis extra is not installed")
    monkeypatch.setattr(PROCESS, "stores", {})
    monkeypatch.setenv("MEDIAGEN_LIMITS_URL", str(tmp_path / "machine.sqlite"))
    for url in ("redis://127.0.0.1:1/0", "rediss://127.0.0.1:1/0", "unix:///nowhere/redis.sock"):
        opened = assemble.limits_store(url)  # nothing is asked of Redis until a booking
        assert isinstance(opened, Failover) and isinstance(opened.shared, limits_store.RedisStore)


def test_a_redis_that_stops_answering_fails_a_request_in_seconds_not_never(redis_url: str) -> None:
    """Its socket waits are bounded, so the failover paces locally instead of a request hanging."""
    store = limits_store.RedisStore(redis_url)
    options = store._redis.connection_pool.connection_kwargs
    assert (options["socket_timeout"], options["socket_connect_timeout"]) == (2.0, 2.0)
    store._redis.close()


class FixedClock:
    """Redis's clock read as one moment: ``_READ``'s answer with its time replaced."""

    def __init__(self, store: limits_store.RedisStore, now: float) -> None:
        self.read, self.now = store._read, now

    def __call__(self, keys: list[str]) -> list[Any]:
        return [repr(self.now).encode(), *self.read(keys=keys)[1:]]


def test_a_redis_booking_at_exactly_half_a_window_ahead_is_taken(redis: limits_store.RedisStore) -> None:
    redis._read = FixedClock(redis, 1000.0)  # type: ignore[assignment,method-assign]
    slots = [redis.reserve([[FOUR]], margin=0.0) for _ in range(4)]
    assert [b.index for b in slots[:3]] == [0, 0, 0]
    assert [b.stamp for b in slots[:3]] == [1000.0, 1015.0, 1030.0]  # 1030: the horizon itself
    later = slots[3]
    assert later.index is None and later.delay == 15.0 and time.time() + 14 < later.at < time.time() + 16


def test_a_redis_stamp_is_kept_a_window_after_its_slot_and_spread(redis: limits_store.RedisStore) -> None:
    redis._read = FixedClock(redis, 1000.0)  # type: ignore[assignment,method-assign]
    redis.reserve([[FOUR]], margin=5.0)
    ttl = redis._redis.pttl(limits_store._names(FOUR)[0])
    assert (KEEP * 60 + 5) * 1000 - 2000 < ttl <= (KEEP * 60 + 5 + 1) * 1000  # less what the test took
    one = Window(scope_of("key", "https://service.example", "one"), 1, 60.0)
    assert redis.reserve([[one]], margin=5.0).stamp == 1000.0
    assert redis.reserve([[one]], margin=5.0).index is None  # a window plus its spread after: 1065


# ------------------------------------------------------------------------------------- bursts

BURSTY = Window(scope_of("key", "https://service.example", "bursty"), 60, 60.0, burst=60)  # the spec's rule

# One process of two booking one bursty window at once: prints how many it booked now and how many it
# was told to ask for again later. argv: the store's url ("sqlite://<path>" on a fixed clock, or a
# redis url on Redis's), the number of bookings.
BOOKER = """
import json, sys
from mediagen_nb.client.limits_store import RedisStore, SQLiteStore, Window
url, count = sys.argv[1], int(sys.argv[2])
store = (
    SQLiteStore(url.removeprefix("sqlite://"), now=lambda: 1_800_000_000.0)
    if url.startswith("sqlite://") else RedisStore(url)
)
window = Window(sys.argv[3], 60, 60.0, burst=60)
booked = [store.reserve([[window]], margin=0.25) for _ in range(count)]
print(json.dumps([[b.index, b.delay] for b in booked]))
"""


def book_in_two_processes(url: str, each: int) -> list[list[Any]]:
    """``each`` bookings of BURSTY from each of two processes at once, through the store at ``url``."""
    import json
    import sys

    command = [sys.executable, "-c", BOOKER, url, str(each), BURSTY.scope]
    started = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        return [b for p in started for b in json.loads(p.communicate(timeout=60)[0])]
    finally:
        for p in started:
            p.kill()
            p.wait()


def test_a_burst_of_three_goes_at_once_into_an_empty_window(sqlite: SQLiteStore, clock: Clock) -> None:
    three = [sqlite.reserve([[BURSTY]], margin=0.25) for _ in range(3)]
    assert [(b.index, b.delay, b.at) for b in three] == [(0, 0.0, clock.now)] * 3


def test_the_61st_waits_until_the_first_has_left_the_window(sqlite: SQLiteStore, clock: Clock) -> None:
    """60 at once; the 61st is past half a window ahead (asked for again later); once the clock is
    near it, its slot is the first one's plus its spread plus the window."""
    first = clock.now
    booked = [sqlite.reserve([[BURSTY]], margin=0.25) for _ in range(60)]
    assert all(b.index == 0 and b.delay == 0.0 for b in booked)
    later = sqlite.reserve([[BURSTY]], margin=0.25)
    assert later.index is None and later.delay == pytest.approx(60.25 - HORIZON * 60)
    clock.now += 59.0
    sixty_first = sqlite.reserve([[BURSTY]], margin=0.25)
    assert sixty_first.index == 0 and sixty_first.stamp == pytest.approx(first + 60.25)
    assert sixty_first.delay == pytest.approx(1.25)


def test_a_burst_across_two_processes_on_one_file_keeps_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "limits.sqlite"
    SQLiteStore(path)  # made (and switched to WAL) before both processes open it
    booked = book_in_two_processes(f"sqlite://{path}", 40)
    assert sorted(tuple(b) for b in booked if b[0] is not None) == [(0, 0.0)] * 60
    assert sum(1 for b in booked if b[0] is None) == 20


def test_a_burst_across_two_processes_through_redis_keeps_the_bound(redis: limits_store.RedisStore) -> None:
    booked = book_in_two_processes(redis.where, 40)
    now = [b for b in booked if b[0] is not None]
    assert len(now) == 60 and all(b[0] == 0 and b[1] < 5.0 for b in now)  # at once (Redis's clock)
    assert sum(1 for b in booked if b[0] is None) == 20


def test_a_redis_burst_goes_at_once_into_an_empty_window(redis: limits_store.RedisStore) -> None:
    """The window's burst is read back with its stamps from Redis: three at once, none paced."""
    three = [redis.reserve([[BURSTY]], margin=0.25) for _ in range(3)]
    assert [(b.index, b.delay) for b in three] == [(0, 0.0)] * 3
    assert len(members(redis, BURSTY)) == 3


def test_a_redis_booking_never_slips_in_before_a_stamp_booked_ahead(redis: limits_store.RedisStore) -> None:
    """A start booked ahead (its account's window paused) holds its key's window: a read of that key
    asked for later waits a window after it (past half a window: asked for again), never before it."""
    one = Window(scope_of("key", "https://service.example", "one"), 1, 60.0)
    redis.pause(ACCOUNT, 20.0)
    ahead = redis.reserve([[one, ACCOUNT]], margin=0.25)
    assert ahead.index == 0 and 15.0 < ahead.delay <= 20.0
    later = redis.reserve([[one]], margin=0.25)
    assert later.index is None and len(members(redis, one)) == 1
