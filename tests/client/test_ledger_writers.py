"""Whose row a ledger row is, and a ledger another process holds locked: waited for on the ledger's clock.

A row names the process that wrote it (``client/processes.py``): this one, one that still runs (its
start is counted there), or one that is gone (a killed kernel: whoever resumes the row sends it). A write
lock held by another process is waited for, said once, and the call goes on when it frees; past
``lock_wait`` it fails naming the file. Time here is a manual clock's: nothing sleeps.
"""

import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _locks import HeldLock, LedgerClock

from mediagen_nb.client import processes
from mediagen_nb.client.config import Where
from mediagen_nb.client.ledger import GENERATION, Ledger, LedgerError

WHERE = Where("http://localhost:8765", "http://localhost:8765", "acct")


def test_a_row_is_this_process_s_a_running_one_s_or_a_gone_one_s() -> None:
    assert processes.whose(processes.me()) == processes.THIS
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        name = processes._named(child.pid)
        assert processes.whose(name) == processes.RUNNING
        host, pid, started = name.split("/")
        if started:  # /proc: a pid handed out again (another start) names another process, which is gone
            assert processes.whose(f"{host}/{pid}/{started}0") == processes.GONE
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)
    assert processes.whose(name) == processes.GONE
    assert processes.whose(f"elsewhere-{socket.gethostname()}/{child.pid}/") == processes.RUNNING
    assert processes.whose(None) == processes.RUNNING  # a row of a ledger from before rows were named


def test_intents_name_their_writer_and_a_start_this_process_made_takes_the_row(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    assert ledger.intent("k-1", WHERE, kind=GENERATION, via="sweep", model_id="m", input={})
    assert ledger.lookup("k-1", WHERE).writer == processes.THIS  # type: ignore[union-attr]
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    with sqlite3.connect(ledger.path) as db:  # as a killed kernel left it: its writer is gone
        db.execute("UPDATE starts SET owner=? WHERE key='k-1'", (processes._named(int(gone.stdout)),))
    entry = ledger.lookup("k-1", WHERE)
    assert entry is not None and entry.writer == processes.GONE
    assert not ledger.intent("k-1", WHERE, kind=GENERATION, via="sweep", model_id="m", input={})
    ledger.started("k-1", WHERE, "gen-1", "processing", 3, made=False)  # a replay: still the writer's
    assert ledger.lookup("k-1", WHERE).writer == processes.GONE  # type: ignore[union-attr]
    ledger.started("k-1", WHERE, "gen-1", "processing", 3)  # made by this process's request
    assert ledger.lookup("k-1", WHERE).writer == processes.THIS  # type: ignore[union-attr]
    ledger.close()


def test_a_ledger_of_an_earlier_version_gains_the_writer_column(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    Ledger(path).close()
    with sqlite3.connect(path) as db:  # as an earlier version wrote it: no owner column
        db.execute("ALTER TABLE starts DROP COLUMN owner")
        db.execute(
            "INSERT INTO starts (key, instance, service, account, kind, via, status, started_at, "
            "updated_at) VALUES ('old', ?, ?, 'acct', 'generation', 'sweep', 'starting', 1, 1)",
            (WHERE.instance, WHERE.service),
        )
    for _ in range(2):
        ledger = Ledger(path)
        old = ledger.lookup("old", WHERE)
        assert old is not None and old.owner is None and old.writer == processes.RUNNING
        ledger.close()


def test_a_held_lock_is_waited_for_and_the_write_goes_on_when_it_frees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Held 45 s (past the 30 s after which a sweep used to stop starting rows): the intent waits, says
    so once, and is written when the lock frees."""
    path = tmp_path / "ledger.sqlite"
    Ledger(path).close()
    held = HeldLock(path).take()
    clock = LedgerClock(at=45.0, then=held.free)
    try:
        ledger = Ledger(path, clock=clock)
        assert ledger.intent("k-1", WHERE, kind=GENERATION, via="sweep", model_id="m", input={})
    finally:
        held.close()
    assert held.freed_at is not None and held.freed_at >= 45.0 and clock.now() < 50.0
    said = capsys.readouterr().err
    assert said.count("waiting for the ledger") == 1 and "up to 10 min" in said and str(path) in said
    assert ledger.lookup("k-1", WHERE) is not None
    ledger.close()


def test_a_lock_held_past_lock_wait_fails_naming_the_file_then_fails_at_once(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    Ledger(path).close()
    clock = LedgerClock()
    ledger = Ledger(path, lock_wait=120.0, clock=clock)
    held = HeldLock(path).take()
    try:
        with pytest.raises(LedgerError, match=r"is locked \(waited 120 s\).*ledger= or MEDIAGEN_LEDGER"):
            ledger.intent("k-1", WHERE, kind=GENERATION, via="sweep", model_id="m", input={})
        assert 120.0 <= clock.now() < 125.0  # bounded: lock_wait on the ledger's clock
        with pytest.raises(LedgerError):  # stuck: the next call does not wait again
            ledger.intent("k-2", WHERE, kind=GENERATION, via="sweep", model_id="m", input={})
        assert clock.now() < 125.0
    finally:
        held.close()
    assert ledger.intent("k-3", WHERE, kind=GENERATION, via="sweep", model_id="m", input={})  # freed
    ledger.close()
