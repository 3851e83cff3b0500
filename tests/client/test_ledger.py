"""The money ledger's rules, each on its own (``client/ledger.py``; issue 35's mutation run covers it).

An intent is written before a start is sent and belongs to whoever wrote it first; an answer fills
it; a refusal drops it, a lost answer keeps it; reads come back by key, by ask and by resource; usage
counts what was charged and what may have been. A file that cannot be used is one LedgerError naming
the file and the fix. Every test works on a ledger file of its own, with no service.
"""

import errno
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from _locks import HeldLock, LedgerClock

from mediagen_nb.client import assemble, processes
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.config import Where
from mediagen_nb.client.context import PROCESS
from mediagen_nb.client.ledger import STARTING, Entry, Ledger, LedgerError

HERE = Where("https://service.example", "https://service.example", "acct")
THERE = Where("https://service.example", "http://127.0.0.1:9", "acct")  # the same service, another instance
OTHER = Where("https://service.example", "https://service.example", "someone else")
UUID = "0b7e6a3c-2f4e-4b8a-9c1d-5e6f7a8b9c0d"


class Stepping:
    """The ledger's ``time``: each wall-clock reading a second after the last; monotonic time as it is."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def time(self) -> float:
        self.now += 1.0
        return self.now

    @staticmethod
    def monotonic() -> float:
        return time.monotonic()


@pytest.fixture(autouse=True)
def stepping(monkeypatch: pytest.MonkeyPatch) -> Stepping:
    clock = Stepping()
    monkeypatch.setattr(ledgers, "time", clock)
    return clock


@pytest.fixture
def book(tmp_path: Path) -> Iterator[Ledger]:
    made = Ledger(tmp_path / "ledger.sqlite", lock_wait=0.2)
    yield made
    made.close()


def intent(book: Ledger, key: str = "k1", where: Where = HERE, **more: Any) -> bool:
    options: dict[str, Any] = {"kind": "generation", "via": "call", "model_id": "m", "input": {"prompt": "a"}}
    return book.intent(key, where, **{**options, **more})


def rows(book: Ledger) -> list[dict[str, Any]]:
    with sqlite3.connect(book.path) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM starts ORDER BY started_at")]


# ----------------------------------------------------------------------------------------- writes


def test_an_intent_is_written_before_sending_with_all_that_is_asked(book: Ledger, stepping: Stepping) -> None:
    before = stepping.now
    assert intent(book, ask="a1", variation=2, credits=5, credits_known=False, via="sweep") is True
    [row] = rows(book)
    assert row["key"] == "k1" and (row["instance"], row["service"], row["account"]) == (
        HERE.instance,
        HERE.service,
        HERE.account,
    )
    assert (row["kind"], row["via"], row["model_id"], row["ask"], row["variation"]) == (
        "generation",
        "sweep",
        "m",
        "a1",
        2,
    )
    assert json.loads(row["input"]) == {"prompt": "a"} and row["resource_id"] is None
    assert (row["status"], row["credits"], row["credits_known"], row["urls"]) == (STARTING, 5, 0, "[]")
    assert row["error"] is None and row["elapsed_s"] is None and row["resource"] is None
    assert row["started_at"] == row["updated_at"] == before + 1
    entry = book.lookup("k1", HERE)
    assert entry is not None and entry.sent_unanswered and not entry.final and entry.trusted(HERE)


def test_a_second_intent_of_a_key_is_theirs_and_keeps_the_row(book: Ledger) -> None:
    """Another process's start in flight, or an earlier run's: False, and its id and status stay."""
    assert intent(book) is True
    book.started("k1", HERE, UUID, "processing", 5)
    first = rows(book)[0]
    assert intent(book, credits=9, model_id="other") is False
    [again] = rows(book)
    assert (again["resource_id"], again["status"], again["credits"], again["model_id"]) == (
        UUID,
        "processing",
        5,
        "m",
    )
    assert again["updated_at"] > first["updated_at"] and again["started_at"] == first["started_at"]
    assert intent(book, where=THERE) is True  # the same key on another instance is another start
    assert len(rows(book)) == 2


def test_an_intent_replacing_a_forgotten_start_takes_its_row_anew(book: Ledger) -> None:
    """The service no longer knows the row's id (a restarted sandbox): the row is this start's now."""
    intent(book)
    book.started("k1", HERE, UUID, "succeeded", 5, resource={"id": UUID})
    book.update(HERE, UUID, "succeeded", urls=["https://x/a.png"], error=None, elapsed_s=3.0)
    assert intent(book, replaces="not-its-id") is False  # another id: not the row's
    assert intent(book, replaces=UUID, credits=7, credits_known=False) is True
    [row] = rows(book)
    assert (row["resource_id"], row["status"], row["credits"], row["credits_known"]) == (None, STARTING, 7, 0)
    assert (row["urls"], row["error"], row["elapsed_s"], row["resource"]) == ("[]", None, None, None)
    assert row["started_at"] == row["updated_at"]


def test_an_answer_fills_the_intent_and_masks_a_key_it_echoes(book: Ledger) -> None:
    intent(book, credits=5, credits_known=False)
    book.unanswered("k1", HERE, "first try dropped")
    answer = {"id": UUID, "echo": "Bearer pk_live_SECRETSECRET"}
    book.started("k1", OTHER, UUID, "processing", 4, credits_known=True, resource=answer)
    [row] = rows(book)
    assert (row["resource_id"], row["status"], row["credits"], row["credits_known"]) == (
        UUID,
        "processing",
        4,
        1,
    )
    assert row["error"] is None and row["account"] == OTHER.account  # the answering connection's
    assert "SECRETSECRET" not in row["resource"] and json.loads(row["resource"])["id"] == UUID
    book.started("k1", HERE, UUID, "processing", 4, credits_known=False)  # no answer kept: the last stays
    [row] = rows(book)
    assert json.loads(row["resource"])["id"] == UUID and row["credits_known"] == 0


def test_a_lost_answer_keeps_the_intent_and_says_why(book: Ledger) -> None:
    intent(book)
    book.unanswered("k1", HERE, "no answer in time")
    entry = book.lookup("k1", HERE)
    assert entry is not None and entry.sent_unanswered and entry.error == "no answer in time"
    book.started("k1", HERE, UUID, "processing", 5)
    book.unanswered("k1", HERE, "too late")  # answered since: nothing to note
    assert rows(book)[0]["error"] is None


def test_a_refused_start_drops_its_intent_but_never_an_answered_start(book: Ledger) -> None:
    intent(book, "k1")
    intent(book, "k1", where=THERE)
    book.refused("k1", HERE)
    assert [r["instance"] for r in rows(book)] == [THERE.instance]  # only that instance's row
    intent(book, "k2")
    book.started("k2", HERE, UUID, "processing", 5)
    book.refused("k2", HERE)  # a refusal of an answered start (a second attempt) drops nothing paid
    assert {r["key"] for r in rows(book)} == {"k1", "k2"}


def test_a_replayed_start_drops_its_intent_only(book: Ledger) -> None:
    """A start the service answered with what was made before (elsewhere): nothing spent now, so its
    intent leaves the ledger; another intent stays."""
    intent(book, "k1")
    intent(book, "k2")
    book.replayed("k1", HERE)
    assert [row["key"] for row in rows(book)] == ["k2"]


def test_a_read_updates_the_row_of_its_resource_on_its_instance(book: Ledger) -> None:
    intent(book)
    book.started("k1", HERE, UUID, "processing", 5, credits_known=False)
    intent(book, where=THERE)
    book.started("k1", THERE, UUID, "processing", 5)
    book.update(HERE, UUID, "failed", credits=0, urls=["https://x/a.png"], error="boom", elapsed_s=2.5)
    here, there = rows(book)
    assert (here["status"], here["credits"], here["credits_known"], here["error"], here["elapsed_s"]) == (
        "failed",
        0,
        1,
        "boom",
        2.5,
    )
    assert json.loads(here["urls"]) == ["https://x/a.png"]
    assert (there["status"], there["credits"]) == ("processing", 5)  # another instance's row: untouched
    book.update(HERE, UUID, "failed", resource={"id": UUID, "key": "pk_live_SECRETSECRET"})
    here = rows(book)[0]
    assert (here["credits"], here["credits_known"], here["elapsed_s"], here["error"]) == (0, 1, 2.5, None)
    assert json.loads(here["urls"]) == ["https://x/a.png"] and "SECRETSECRET" not in here["resource"]
    book.update(HERE, "no-such-id", "succeeded")  # ids the ledger does not hold: nothing changes
    assert rows(book)[0]["status"] == "failed"


def test_a_read_without_a_charge_leaves_the_estimate_marked_unknown(book: Ledger) -> None:
    intent(book, credits=9, credits_known=False)
    book.started("k1", HERE, UUID, "processing", 9, credits_known=False)
    book.update(HERE, UUID, "processing")
    assert (rows(book)[0]["credits"], rows(book)[0]["credits_known"]) == (9, 0)


def test_adopt_copies_a_start_to_this_instance_and_account(book: Ledger) -> None:
    intent(book, ask="a1", variation=3, via="magic")
    book.started("k1", HERE, UUID, "succeeded", 5, resource={"id": UUID})
    book.update(HERE, UUID, "succeeded", urls=["https://x/a.png"], elapsed_s=1.5, error=None)
    entry = book.lookup("k1", HERE)
    assert entry is not None
    book.adopt(entry, Where(HERE.service, THERE.instance, "mine"))
    copied = book.lookup("k1", THERE)
    assert copied is not None and copied.instance == THERE.instance and copied.account == "mine"
    for name in ("kind", "via", "model_id", "ask", "variation", "input", "resource_id", "status", "credits"):
        assert getattr(copied, name) == getattr(entry, name), name
    assert (copied.urls, copied.elapsed_s, copied.resource, copied.started_at) == (
        entry.urls,
        entry.elapsed_s,
        entry.resource,
        entry.started_at,
    )
    assert copied.credits_known and copied.updated_at >= entry.updated_at
    book.adopt(entry, Where(HERE.service, THERE.instance, "another"))  # adopted again: only its account
    again = book.lookup("k1", THERE)
    assert again is not None and again.account == "another" and len(rows(book)) == 2


# ------------------------------------------------------------------------------------------ reads


def test_lookup_prefers_this_instance_then_the_newest(book: Ledger) -> None:
    elsewhere = Where(HERE.service, "http://localhost:1", "acct")
    intent(book, where=elsewhere)
    intent(book, where=THERE)
    found = book.lookup("k1", HERE)
    assert found is not None and found.instance == THERE.instance  # not here: the newest
    intent(book)
    found = book.lookup("k1", HERE)
    assert found is not None and found.instance == HERE.instance
    assert book.lookup("k1", Where("https://another.example", HERE.instance, "acct")) is None  # a service's
    assert book.lookup("nope", HERE) is None


def test_the_start_of_a_resource_is_found_on_its_service(book: Ledger) -> None:
    intent(book, "k1")
    book.started("k1", HERE, "id-1", "succeeded", 5)
    intent(book, "k2", where=THERE)
    book.started("k2", THERE, "id-2", "succeeded", 5)
    found = [book.of_resource(resource_id, HERE) for resource_id in ("id-1", "id-2", "id-3")]
    assert [entry.key if entry else None for entry in found] == ["k1", "k2", None]
    elsewhere = Where("https://another.example", HERE.instance, "acct")
    assert book.of_resource("id-1", elsewhere) is None


def test_the_start_of_a_resource_prefers_this_instance_then_the_newest(book: Ledger) -> None:
    """A resource's start held by this instance and by another (the same service spelt two ways, an
    adopted copy): this instance's row, as ``lookup`` prefers it, whichever was written last."""
    intent(book, "mine")
    book.started("mine", HERE, "id-1", "succeeded", 5)
    intent(book, "theirs", where=THERE)
    book.started("theirs", THERE, "id-1", "succeeded", 5)
    found = book.of_resource("id-1", HERE)
    assert found is not None and (found.key, found.instance) == ("mine", HERE.instance)
    there = book.of_resource("id-1", THERE)
    assert there is not None and (there.key, there.instance) == ("theirs", THERE.instance)


def test_an_answer_makes_the_start_this_process_s_unless_it_was_a_replay(book: Ledger) -> None:
    for key in ("made", "replayed"):
        intent(book, key)
    with sqlite3.connect(book.path) as db:
        db.execute("UPDATE starts SET owner='another process'")  # intents another process wrote
    book.started("made", HERE, "id-1", "succeeded", 5)
    book.started("replayed", HERE, "id-2", "succeeded", 0, made=False)
    owners = {row["key"]: row["owner"] for row in rows(book)}
    assert owners == {"made": processes.me(), "replayed": "another process"}


def test_entries_reads_many_keys_at_once(book: Ledger) -> None:
    keys = [f"k{n}" for n in range(1203)]  # more than one chunk of 500
    for key in keys[::2]:
        intent(book, key)
    found = book.entries([*keys, "k0"], HERE)
    assert sorted(found) == sorted(keys[::2]) and all(found[k].key == k for k in found)


def test_latest_is_the_highest_variation_of_an_ask(book: Ledger) -> None:
    intent(book, "k1", ask="a1", variation=1)
    intent(book, "k2", ask="a1", variation=2)
    intent(book, "k3", ask="a1", variation=2, where=THERE)  # the same variation, later
    intent(book, "k4", ask="a2", variation=7)
    latest = book.latest("a1", HERE)
    assert latest is not None and (latest.key, latest.variation) == ("k3", 2)
    assert book.latest("a3", HERE) is None
    assert book.latest("a1", Where("https://another.example", HERE.instance, "acct")) is None


def test_usage_counts_charges_by_model_and_path_and_sets_apart_what_may_have_been(
    book: Ledger, stepping: Stepping
) -> None:
    since = stepping.now
    for key, model, via, credits in (("k1", "a", "call", 5), ("k2", "a", "call", 5), ("k3", "b", "sweep", 3)):
        intent(book, key, model_id=model, via=via)
        book.started(key, HERE, f"id-{key}", "succeeded", credits)
    intent(book, "k4", model_id="a", credits=5)  # sent, never answered: possibly charged
    intent(book, "k5", model_id="a")
    book.started("k5", HERE, "id-k5", "failed", 5)  # failed: refunded, not counted
    intent(book, "k6", model_id="b", via="sweep")
    book.started("k6", HERE, "id-k6", "processing", 4, credits_known=False)
    intent(book, "k7", model_id=None, kind="analysis")
    book.started("k7", HERE, "id-k7", "ready", 5)
    intent(book, "k8", model_id="a", where=THERE)
    book.started("k8", THERE, "id-k8", "succeeded", 5)
    intent(book, "k9", model_id="c")
    book.started("k9", HERE, "id-k9", "succeeded", 0)  # a free start (a replay): counted at 0
    usage = book.usage(since, HERE.service)
    assert [u["credits"] for u in usage] == sorted((u["credits"] for u in usage), reverse=True)
    assert sorted(usage, key=repr) == sorted(
        [
            {
                "model": "a",
                "kind": "generation",
                "via": "call",
                "runs": 3,
                "credits": 15,
                "possibly": False,
                "credits_known": True,
            },
            {
                "model": "a",
                "kind": "generation",
                "via": "call",
                "runs": 1,
                "credits": 5,
                "possibly": True,
                "credits_known": True,
            },
            {
                "model": "analysis",
                "kind": "analysis",
                "via": "call",
                "runs": 1,
                "credits": 5,
                "possibly": False,
                "credits_known": True,
            },
            {
                "model": "b",
                "kind": "generation",
                "via": "sweep",
                "runs": 1,
                "credits": 4,
                "possibly": False,
                "credits_known": False,
            },
            {
                "model": "b",
                "kind": "generation",
                "via": "sweep",
                "runs": 1,
                "credits": 3,
                "possibly": False,
                "credits_known": True,
            },
            {
                "model": "c",
                "kind": "generation",
                "via": "call",
                "runs": 1,
                "credits": 0,
                "possibly": False,
                "credits_known": True,
            },
        ],
        key=repr,
    )
    only_there = book.usage(since, HERE.service, instance=THERE.instance)
    assert [(u["runs"], u["credits"]) for u in only_there] == [(1, 5)]
    assert book.usage(stepping.now + 60, HERE.service) == []
    assert book.usage(since, "https://another.example") == []


def test_account_usage_sets_each_start_in_its_figure_for_the_balance(
    book: Ledger, stepping: Stepping
) -> None:
    """``mediagen balance``'s figures from the ledger: each start of the account since the month's turn in
    one figure (failures left out), other accounts' answered starts apart, at the places asked only."""
    intent(book, "old")
    book.started("old", HERE, "id-old", "succeeded", 100)  # before the month: not counted
    since = stepping.now + 0.5
    for key, status, credits, known in (
        ("done", "succeeded", 5, True),  # charged
        ("ready", "ready", 2, True),  # charged (an analysis ended)
        ("busy", "processing", 4, True),  # charged, not ended: running
        ("paying", "processing", 6, False),  # charged as it runs: in flight at its estimate
        ("guessed", "succeeded", 3, False),  # charged, the service would not say: estimated
        ("failed", "failed", 50, True),  # refunded: left out
    ):
        intent(book, key)
        book.started(key, HERE, f"id-{key}", status, credits, credits_known=known)
    intent(book, "unanswered", credits=7)  # possibly charged
    intent(book, "theirs", where=OTHER)
    book.started("theirs", OTHER, "id-theirs", "succeeded", 20)
    intent(book, "theirs-running", where=OTHER)
    book.started("theirs-running", OTHER, "id-theirs-running", "processing", 1, credits_known=False)
    intent(book, "theirs-unanswered", where=OTHER, credits=30)  # another's possible charge: not theirs to say
    intent(book, "theirs-failed", where=OTHER)
    book.started("theirs-failed", OTHER, "id-theirs-failed", "failed", 40)
    intent(book, "elsewhere", where=THERE)
    book.started("elsewhere", THERE, "id-elsewhere", "succeeded", 10)  # another instance of the service
    here = {
        "charged": (4, 14),
        "estimated": (1, 3),
        "in_flight": (1, 6),
        "running": (1, 4),
        "possibly": (1, 7),
        "other_keys": (2, 21),
    }
    assert book.account_usage(since, "acct", [(HERE.service, HERE.instance)]) == here
    anywhere = {**here, "charged": (5, 24)}
    assert book.account_usage(since, "acct", [(HERE.service, None)]) == anywhere
    both = [("https://another.example", None), (HERE.service, THERE.instance), (HERE.service, HERE.instance)]
    assert book.account_usage(since, "acct", both) == anywhere
    only_there = dict.fromkeys(here, (0, 0)) | {"charged": (1, 10)}
    assert book.account_usage(since, "acct", [(HERE.service, THERE.instance)]) == only_there
    nothing = dict.fromkeys(here, (0, 0))
    assert book.account_usage(since, "acct", []) == nothing
    assert book.account_usage(stepping.now + 60, "acct", [(HERE.service, None)]) == nothing
    theirs = {**nothing, "charged": (1, 20), "in_flight": (1, 1), "possibly": (1, 30), "other_keys": (5, 20)}
    assert book.account_usage(since, "someone else", [(HERE.service, HERE.instance)]) == theirs


def test_an_intent_keeps_any_input_as_text_it_reads_back_and_none_as_none(book: Ledger) -> None:
    """What a frame hands over is not always JSON (a date, a path): it is kept as its text, never a failed
    write before a paid start; a start with no input (a job) reads back as None."""
    when = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
    intent(book, "dated", input={"prompt": "a", "at": when, "file": Path("/tmp/x.png")})
    entry = book.lookup("dated", HERE)
    assert entry is not None and entry.input == {"prompt": "a", "at": str(when), "file": "/tmp/x.png"}
    intent(book, "bare", input=None)
    bare = book.lookup("bare", HERE)
    assert bare is not None and bare.input is None


def test_account_usage_counts_a_free_start_at_nothing(book: Ledger, stepping: Stepping) -> None:
    """A start the service charged nothing for (a replay, a free model) is a run at 0 credits, however
    SQLite sums an all-zero group; a sent start whose price was never known is possibly 0 too."""
    since = stepping.now
    intent(book, "free")
    book.started("free", HERE, "id-free", "succeeded", 0)
    intent(book, "unpriced", credits=0)  # sent, never answered, no price known
    figures = book.account_usage(since, "acct", [(HERE.service, None)])
    assert (figures["charged"], figures["possibly"]) == ((1, 0), (1, 0))


def test_an_entry_says_whether_it_ended_is_unanswered_and_whose_it_is(book: Ledger) -> None:
    intent(book)
    book.started("k1", HERE, UUID, "succeeded", 5)
    entry = book.lookup("k1", HERE)
    assert entry is not None and entry.final and not entry.sent_unanswered
    assert entry.trusted(HERE) and not entry.trusted(THERE) and not entry.trusted(OTHER)
    for status, final in (("processing", False), ("failed", True), ("ready", True), ("done", True)):
        book.update(HERE, UUID, status)
        read = book.lookup("k1", HERE)
        assert read is not None and read.final is final, status
    assert isinstance(entry, Entry) and entry.urls == () and entry.input == {"prompt": "a"}


# ----------------------------------------------------------------------------- a file that cannot


def test_a_file_that_is_not_a_ledger_is_named_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(LedgerError) as raised:
        Ledger(path)
    assert raised.value.message.startswith(f"ledger {path} is not a readable ledger (")
    assert raised.value.message.endswith(
        "move it aside, or point MEDIAGEN_LEDGER (or ledger=) at another file"
    )


def test_a_folder_that_cannot_be_written_is_named_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    path = tmp_path / "a-file" / "ledger.sqlite"
    with pytest.raises(LedgerError) as raised:
        Ledger(path)
    assert raised.value.message.startswith(f"ledger {path} cannot be written (")
    assert raised.value.message.endswith(
        "make the folder writable, or point MEDIAGEN_LEDGER (or ledger=) at a writable file"
    )


def test_a_ledger_path_that_is_a_folder_cannot_be_written(tmp_path: Path) -> None:
    with pytest.raises(LedgerError) as raised:
        Ledger(tmp_path)
    assert raised.value.message.startswith(
        f"ledger {tmp_path} cannot be written (unable to open database file"
    )


def test_a_locked_ledger_waits_says_so_once_then_fails_at_once_until_a_write_gets_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process holds the file: the first call waits ``lock_wait``, saying so on stderr once; the
    next ones fail at once (a sweep stops without waiting for every row); a write that gets through
    ends that."""
    monkeypatch.setattr(ledgers, "BUSY_MS", 50)  # SQLite's own wait for each try, shortened
    book = Ledger(tmp_path / "ledger.sqlite", lock_wait=0.3)
    holder = HeldLock(book.path).take()
    try:
        with pytest.raises(LedgerError) as raised:
            intent(book)
        assert raised.value.message == (
            f"ledger {book.path} is locked (waited 0.3 s): another process holds it: let it finish, or use "
            "another file (ledger= or MEDIAGEN_LEDGER)"
        )
        said = capsys.readouterr().err
        assert said.count("waiting for the ledger") == 1 and f"(up to {book.lock_wait:g} s)" in said
        assert book._stuck
        with pytest.raises(LedgerError, match="is locked"):
            intent(book, "k2")
        assert book._busy == 0 and "waiting" not in capsys.readouterr().err  # at once: SQLite waits no more
        assert book.lookup("k1", HERE) is None  # reads go on under another's write lock
        assert book.latest("a1", HERE) is None and book.usage(0, HERE.service) == []
        assert book.of_resource("id-k1", HERE) is None
        assert book.account_usage(0, "acct", [(HERE.service, None)])["charged"] == (0, 0)
        assert book._stuck  # ... and lift nothing: the next write still fails at once
    finally:
        holder.close()
    assert intent(book, "k3") is True and not book._stuck and not book._waiting
    assert capsys.readouterr().err == ""
    book.lookup("k3", HERE)
    assert book._busy == 50  # SQLite waits for each try again
    book.close()


def test_a_locked_ledger_tries_again_after_pauses_that_double_up_to_a_second(tmp_path: Path) -> None:
    """On its manual clock (nothing sleeps): 0.05 s, then twice as long each time, up to 1 s, until
    ``lock_wait``: a lock that frees soon is seen soon, one held long costs few tries."""
    pauses: list[float] = []

    class Counting(LedgerClock):
        def sleep(self, seconds: float) -> None:
            pauses.append(round(seconds, 6))
            super().sleep(seconds)

    book = Ledger(tmp_path / "ledger.sqlite", lock_wait=4.0, clock=Counting())
    holder = HeldLock(book.path).take()
    try:
        with pytest.raises(LedgerError, match="is locked"):
            intent(book)
    finally:
        holder.close()
        book.close()
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 0.45]  # 4 s in all, the last one cut to fit


def test_a_ledger_that_waits_for_no_lock_says_locked_without_a_wait(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "ledger.sqlite", lock_wait=0)
    holder = HeldLock(book.path).take()
    try:
        with pytest.raises(LedgerError) as raised:
            intent(book)
    finally:
        holder.close()
        book.close()
    assert raised.value.message == (
        f"ledger {book.path} is locked: another process holds it: let it finish, or use "
        "another file (ledger= or MEDIAGEN_LEDGER)"
    )


def test_a_wait_is_said_in_seconds_up_to_two_minutes_then_in_minutes() -> None:
    assert [ledgers._duration(s) for s in (0.2, 90, 119.5, 120, 600)] == [
        "0.2 s",
        "90 s",
        "119.5 s",
        "2 min",
        "10 min",
    ]


def test_a_lock_released_while_waiting_lets_the_write_through(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "ledger.sqlite", lock_wait=30)
    holder = sqlite3.connect(book.path, isolation_level=None, timeout=0, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.05, lambda: (holder.execute("ROLLBACK"), holder.close()))
    release.start()  # real: another process's write ends while this one waits
    try:
        assert intent(book) is True and book.lookup("k1", HERE) is not None
    finally:
        release.join()
        book.close()


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        OSError(errno.EFBIG, "File too large"),
        sqlite3.OperationalError("database or disk is full"),
    ],
    ids=["ENOSPC", "EDQUOT", "EFBIG", "sqlite-full"],
)
def test_a_full_disk_is_named_with_the_fix(book: Ledger, error: BaseException) -> None:
    failure = book._fail(error)
    assert failure.message == (
        f"ledger {book.path}: the disk is full ({error}): free some space, or point MEDIAGEN_LEDGER "
        "(or ledger=) at a file on another disk"
    )


def test_other_failures_are_named_as_they_are(book: Ledger) -> None:
    assert book._fail(OSError(errno.EACCES, "Permission denied")).message.startswith(
        f"ledger {book.path} cannot be written ("
    )
    assert book._fail(sqlite3.OperationalError("attempt to write a readonly database")).message.startswith(
        f"ledger {book.path} cannot be written ("
    )
    assert book._fail(RuntimeError("odd")).message == f"ledger {book.path}: odd"
    full = sqlite3.OperationalError("x")
    full.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
    assert "the disk is full" in book._fail(full).message


def test_a_failing_statement_is_one_ledger_error(book: Ledger) -> None:
    with pytest.raises(LedgerError, match="no such table"):
        book._run("SELECT * FROM nothing_here")
    assert not book._stuck  # not a lock: nothing to wait for


# --------------------------------------------------------------------------------- the process's


def test_one_ledger_per_file_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PROCESS, "ledgers", {})
    path = tmp_path / "shared.sqlite"
    first = assemble.shared_ledger(path)
    assert assemble.shared_ledger(str(path)) is first and assemble.as_ledger(path) is first
    assert assemble.as_ledger(first) is first and repr(first) == f"Ledger({str(path)!r})"
    monkeypatch.setenv("MEDIAGEN_LEDGER", str(tmp_path / "default.sqlite"))
    assert assemble.as_ledger(None).path == tmp_path / "default.sqlite"
    for opened in PROCESS.ledgers.values():
        opened.close()


def test_the_path_a_start_comes_from_is_said_by_via() -> None:
    assert ledgers.current_via() == "call"
    with ledgers.via("form"):
        assert ledgers.current_via() == "form"
        with ledgers.via("sweep"):
            assert ledgers.current_via() == "sweep"
        assert ledgers.current_via() == "form"
    assert ledgers.current_via() == "call"


def test_the_assembled_engine_warns_in_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assemble.NOTICES.warn("the ledger is full")
    assert capsys.readouterr() == ("", "mediagen_nb: the ledger is full\n")
