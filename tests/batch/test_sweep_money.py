"""Sweeps and money: figures equal the sandbox's ledger, re-runs never pay twice, the ledger never stalls.

Every test reads what was charged from the sandbox's own ledger (``/_sandbox/ledger``), served on
127.0.0.1, and compares it with the frame the sweep returned.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pandas as pd
import pytest
from _shared import environment
from _wait import loop_settled, wait_until

import mediagen_nb as mg
from mediagen_nb.batch import loop
from mediagen_nb.client import AsyncClient, BudgetExceeded, Ledger, LedgerError
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

if TYPE_CHECKING:
    from conftest import Service, ServiceFactory

MODEL = "flare-1-swift"  # 1 credit a run, a fixed price: credits equal runs


def prompts(n: int, stem: str = "a harbour at dawn") -> pd.DataFrame:
    return pd.DataFrame({"prompt": [f"{stem}, take {i}" for i in range(n)]})


def sweep(client: Any, df: pd.DataFrame, ledger: Path | Ledger, **options: Any) -> pd.DataFrame:
    return df.mediagen.run(MODEL, client=client, ledger=ledger, progress=False, **options)


def client_on(service: Service, key: str | list[str], base_url: str | None = None) -> AsyncClient:
    """Another AsyncClient on the same sandbox: another key of the account, or the host spelt otherwise."""
    return AsyncClient(
        key,
        base_url=base_url or service.base_url,
        time_scale=service.sandbox.config.time_scale,
    )


def new_key(service: Service, name: str) -> str:
    return str(service.control("sandbox_keys", {"name": name})["key"])


def test_a_rerun_with_another_key_a_key_pool_or_another_host_spelling_charges_nothing(
    service: Service, tmp_path: Path
) -> None:
    """The row keys depend on what is asked, not on the key or the host's spelling: after a finished
    sweep of 30 rows, re-runs with a second key of the account (the fix for a key at its cap), a pool
    of two keys, and ``localhost`` for ``127.0.0.1`` charge nothing and return the same generations."""
    df, ledger = prompts(30), tmp_path / "ledger.sqlite"
    first = sweep(service.client, df, ledger)
    assert (first["status"] == "succeeded").all() and service.net_spent() == 30
    ids = first["generation_id"].tolist()
    second, third = new_key(service, "second"), new_key(service, "third")
    localhost = service.base_url.replace("127.0.0.1", "localhost")
    for client in (
        client_on(service, second),
        client_on(service, [second, third]),
        client_on(service, service.sandbox.demo_key, base_url=localhost),
    ):
        again = sweep(client, df, ledger)
        assert again["generation_id"].tolist() == ids
        assert again["credits"].sum() == 30 and (again["status"] == "succeeded").all()
        assert service.net_spent() == 30, "a re-run paid again"
        loop.submit(client.aclose()).result(10)
    # another machine (its own ledger) reaches the same generations through the service's idempotency
    elsewhere = sweep(client_on(service, second), df, tmp_path / "other-machine.sqlite")
    assert elsewhere["generation_id"].tolist() == ids and service.net_spent() == 30


def test_a_bad_unicode_row_is_invalid_and_the_others_run(service: Service, tmp_path: Path) -> None:
    """A lone surrogate makes its row invalid (named, never sent); the other 59 rows run; the frame's
    credits equal the sandbox's charges; nothing is charged after ``run()`` returns."""
    df = prompts(60).astype({"prompt": object})  # Arrow-backed strings (pandas 3 with pyarrow) refuse it
    df.loc[29, "prompt"] = "caf\udce9"
    out = sweep(service.client, df, tmp_path / "ledger.sqlite")
    assert out["status"].value_counts().to_dict() == {"succeeded": 59, "invalid": 1}
    bad = out.loc[29]
    assert bad["status"] == "invalid" and bad["error"].startswith(
        "prompt holds a character that cannot be sent"
    )
    assert int(out["credits"].sum()) == service.net_spent() == 59
    loop_settled(loop.background_loop())  # no start may come after run() returned
    assert service.net_spent() == 59, "charged after run() returned"


# A sweep in a process that imported polars first, interrupted by a real SIGINT once 20 rows are
# charged; it prints the statuses run() returned.
POLARS_FIRST = """
import json, os, signal, sys, threading, time
import polars  # noqa: F401  (loaded first, as in a notebook that uses both)
import httpx
import pandas as pd
import mediagen_nb  # noqa: F401
from mediagen_nb.client import AsyncClient
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig
sandbox = Sandbox(SandboxConfig(time_scale=20.0, seed=1)).start()
client = AsyncClient.for_sandbox(sandbox)
def charged():
    entries = httpx.get(sandbox.base_url + path("sandbox_ledger")).json()["data"]["entries"]
    return sum(1 for e in entries if e["kind"] == "charge")
def interrupt():
    while charged() < 20:
        time.sleep(0.05)  # real: the sweep runs on its own
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt, daemon=True).start()
rows = pd.DataFrame({"prompt": [f"a harbour at dawn, take {i}" for i in range(200)]})
out = rows.mediagen.run("flare-1-swift", client=client, ledger=sys.argv[1], progress=False)
print(json.dumps(out["status"].value_counts().to_dict()))
sandbox.stop()
"""


@pytest.mark.realtime  # a real SIGINT to another process, which must land while its sweep runs
@pytest.mark.usefixtures("ctrl_c")  # the child inherits SIGINT's disposition
def test_ctrl_c_stops_a_sweep_when_polars_is_loaded(tmp_path: Path) -> None:
    """With polars imported, a SIGINT no longer interrupted the main thread's blocked wait on the sweep:
    the Ctrl-C was raised once all 200 rows had been started and charged. Waits now wake to take it."""
    done = subprocess.run(
        [sys.executable, "-c", POLARS_FIRST, str(tmp_path / "ledger.sqlite")],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "mediagen_nb: interrupted" in done.stdout
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts.get("skipped", 0) > 100, counts


@pytest.mark.realtime  # Ctrl-C (a real signal) must land while the sweep still has rows to start
@pytest.mark.usefixtures("ctrl_c")  # a real SIGINT to this process
def test_ctrl_c_of_a_200_row_run_shows_every_charge(make_service: ServiceFactory, tmp_path: Path) -> None:
    """Ctrl-C halfway through 200 rows: the frame's credits (finished and in flight) equal the
    sandbox's ledger, no start is sent after ``run()`` returns, and the re-run completes for the rest."""
    # 20 starts a real second: 200 rows take about 10 s, and Ctrl-C comes after 20, with seconds to spare
    # on a loaded machine (a signal reaches the main thread only when it next runs)
    service = make_service(time_scale=20.0)
    df, ledger = prompts(200), tmp_path / "ledger.sqlite"
    started = threading.Event()

    def interrupt() -> None:
        wait_until(lambda: len(service.charges()) >= 20, 60, "20 rows charged")
        started.set()
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: the main thread is waiting in run()

    threading.Thread(target=interrupt, daemon=True).start()
    out = sweep(service.client, df, ledger)
    assert started.is_set()
    counts = out["status"].value_counts().to_dict()
    assert set(counts) <= {"succeeded", "processing", "skipped"}, counts
    assert counts.get("skipped", 0) > 0, "the interrupt came too late to test anything"
    charged = service.net_spent()
    assert int(out["credits"].sum()) == charged
    assert (out.loc[out["status"] == "processing", "credits"] == 1).all()  # in flight: shown as charged
    loop_settled(loop.background_loop())  # no start may come after run() returned
    assert service.net_spent() == charged, "a start was charged after run() returned"
    again = sweep(service.client, df, ledger)
    assert (again["status"] == "succeeded").all() and service.net_spent() == 200
    kept = out[out["status"] != "skipped"]
    assert again.loc[kept.index, "generation_id"].tolist() == kept["generation_id"].tolist()


def test_an_unanswered_start_is_shown_as_possibly_charged_and_resumes_free(
    service: Service, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dropped connections on every try of one start: the row is ``uncertain``, its error says it may
    have been charged and that a re-run resumes it at no cost, the summary counts it; the re-run
    resumes it with the same key and the sandbox charges that row once."""
    df, ledger = prompts(2), tmp_path / "ledger.sqlite"
    service.faults(script=["ok", "drop", "drop", "drop", "drop", "drop", "drop"], routes=["run"])
    out = sweep(service.client, df, ledger)
    uncertain = out[out["status"] == "uncertain"]
    assert len(uncertain) == 1 and uncertain["credits"].tolist() == [0]
    assert "may have started it" in uncertain["error"].iloc[0] and "at no cost" in uncertain["error"].iloc[0]
    assert "1 starts unanswered (possibly charged" in capsys.readouterr().out
    again = sweep(service.client, df, ledger)
    assert (again["status"] == "succeeded").all()
    assert service.net_spent() == 2 and max(service.charges().values()) == 1


def test_a_fully_reused_rerun_spends_nothing_on_its_progress(service: Service, tmp_path: Path) -> None:
    """The bar and the handle show credits spent now apart from rows reused from an earlier run."""
    df, ledger = prompts(12), tmp_path / "ledger.sqlite"
    sweep(service.client, df, ledger)
    handle = df.mediagen.submit(MODEL, client=service.client, ledger=ledger, progress=False)
    out = handle.result(timeout=30)
    assert handle.progress["spent"] == 0 and handle.progress["reused"] == 12
    assert handle.progress["reused_credits"] == 12 and int(out["credits"].sum()) == 12
    assert "0 credits spent now, 12 rows reused" in repr(handle)


def test_a_rerun_resumes_rows_left_running_and_records_them_in_the_sweeps_own_ledger(
    service: Service, tmp_path: Path, own_ledger: Path
) -> None:
    """Rows the ledger still shows running (as after a Ctrl-C) are resumed through the client's start
    path: the same generations, nothing charged again, shown as reused, and what they became is written
    to the sweep's own ledger (not the default one) by the reads of a client that never saw them."""
    df, ledger = prompts(6), tmp_path / "ledger.sqlite"
    first = sweep(service.client, df, ledger)
    with sqlite3.connect(ledger) as db:  # as if every row were still running when the first run stopped
        db.execute("UPDATE starts SET status='processing', urls='[]'")
    fresh = client_on(service, service.sandbox.demo_key)  # a new kernel's client: it started nothing
    handle = df.mediagen.submit(MODEL, client=fresh, ledger=ledger, progress=False)
    again = handle.result(timeout=60)
    loop.submit(fresh.aclose()).result(10)
    assert list(again["generation_id"]) == list(first["generation_id"])
    assert (again["status"] == "succeeded").all() and service.net_spent() == 6
    assert handle.progress["spent"] == 0 and handle.progress["reused"] == 6 and handle.progress["gone"] == 0
    with sqlite3.connect(ledger) as db:
        rows = db.execute("SELECT status, urls FROM starts").fetchall()
    assert len(rows) == 6 and all(status == "succeeded" and urls != "[]" for status, urls in rows)
    if own_ledger.exists():  # the process's default ledger got none of these reads
        with sqlite3.connect(own_ledger) as db:
            assert db.execute("SELECT COUNT(*) FROM starts").fetchone() == (0,)


def test_a_restarted_sandbox_never_attaches_a_row_to_another_generation(tmp_path: Path) -> None:
    """Rows in flight when a sandbox stopped, resumed on a new sandbox at the same address and with the
    same seed (so the same ids come out again): each row is started again with its key and ends with a
    generation of its own prompt, never one of another row."""
    ledger, df = tmp_path / "ledger.sqlite", prompts(6)
    with Sandbox(SandboxConfig(time_scale=600.0, seed=7)) as first:
        client = AsyncClient.for_sandbox(first)
        before = sweep(client, df, ledger)
        port = int(first.base_url.rsplit(":", 1)[1])
        loop.submit(client.aclose()).result(10)
    with sqlite3.connect(ledger) as db:  # as if they were still running when it stopped
        db.execute("UPDATE starts SET status='processing'")
    with Sandbox(SandboxConfig(time_scale=600.0, seed=7)).start(port=port) as second:
        client = AsyncClient.for_sandbox(second)
        after = sweep(client, df, ledger)
        loop.submit(client.aclose()).result(10)
        made = second.world.generations.items
        assert (after["status"] == "succeeded").all()
        for position, generation_id in enumerate(after["generation_id"]):
            assert made[generation_id].input["prompt"] == df.loc[position, "prompt"]
        assert len(made) == 6 and set(after["generation_id"]) <= set(before["generation_id"])


def test_a_locked_ledger_never_stalls_the_loop(
    service: Service, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process holds the ledger's write lock until the sweep says it waits (after SQLite's own
    second of waiting): the sweep waits with one message, the background loop keeps running (no gap
    over a second), and the sweep then finishes. (Released after a fixed 2 s instead, a loaded
    machine's sweep reached the ledger after the lock was gone and had nothing to say.)"""
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).close()
    holder = sqlite3.connect(ledger, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, as another process's long write would hold it
    gaps: list[float] = []
    beating = True

    async def heartbeat() -> None:
        last = time.monotonic()
        while beating:
            await asyncio.sleep(0.01)  # real: the heartbeat measures how long the loop is blocked
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    def release() -> None:
        wait_until(lambda: "waiting for the ledger" in stderr.getvalue(), 60, "the sweep to say it waits")
        holder.execute("ROLLBACK")

    stderr = sys.stderr  # capsys's buffer, looked at from the releasing thread
    beat = loop.submit(heartbeat())
    threading.Thread(target=release, daemon=True).start()
    try:
        out = sweep(service.client, prompts(8), ledger)
    finally:
        beating = False
        beat.result(5)
        holder.close()
    assert (out["status"] == "succeeded").all() and service.net_spent() == 8
    assert max(gaps) < 1.0, f"the event loop stalled for {max(gaps):.2f} s"
    err = capsys.readouterr().err
    assert "waiting for the ledger" in err and str(ledger) in err


def test_a_ledger_locked_too_long_refuses_before_anything_is_charged(
    service: Service, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).close()
    holder = sqlite3.connect(ledger, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LedgerError) as raised:
            sweep(service.client, prompts(4), Ledger(ledger, lock_wait=0.5))
    finally:
        holder.close()
    message = raised.value.message
    assert str(ledger) in message and "locked" in message and "ledger=" in message
    assert service.net_spent() == 0


@pytest.mark.parametrize("damage", ["not a database", "under a file"])
def test_a_broken_ledger_names_the_file_and_the_fix(service: Service, tmp_path: Path, damage: str) -> None:
    """A file that is not a ledger, or a path that cannot be a file: one error naming it, nothing charged."""
    if damage == "not a database":
        ledger = tmp_path / "ledger.sqlite"
        ledger.write_bytes(b"this is not SQLite" * 100)
    else:
        (tmp_path / "a-file").write_text("x")
        ledger = tmp_path / "a-file" / "ledger.sqlite"
    with pytest.raises(LedgerError) as raised:
        sweep(service.client, prompts(4), ledger)
    assert str(ledger) in raised.value.message and "MEDIAGEN_LEDGER" in raised.value.message
    assert "\n" not in raised.value.message and service.net_spent() == 0


def test_the_session_budget_caps_sweeps_and_calls(service: Service, tmp_path: Path) -> None:
    """``mediagen_nb.budget(10)``: a sweep whose estimate passes what is left is refused before it
    starts (naming the budget, what is spent and what it would cost); one within it runs; then a
    single call past it is refused too, and nothing refused was charged."""
    mg.budget(10)
    with pytest.raises(BudgetExceeded) as refused:
        sweep(service.client, prompts(12), tmp_path / "ledger.sqlite")
    assert refused.value.message.startswith("budget: this sweep would cost 12 credits")
    assert "0 of the session budget of 10 credits are spent" in refused.value.message
    assert service.net_spent() == 0
    done = sweep(service.client, prompts(8), tmp_path / "ledger.sqlite")
    assert (done["status"] == "succeeded").all() and mg.budget().spent == 8
    with pytest.raises(BudgetExceeded):
        sweep(service.client, prompts(4, "another"), tmp_path / "ledger.sqlite")
    with mg.Client.for_sandbox(service.sandbox) as client:
        client.run(MODEL, prompt="one more")
        client.run(MODEL, prompt="and the last")
        with pytest.raises(BudgetExceeded) as past:
            client.run(MODEL, prompt="one too many")
    assert "10 of the session budget of 10 credits are spent" in past.value.message
    assert service.net_spent() == 10 == mg.budget().spent


def test_two_sweeps_at_once_never_charge_past_the_budget(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sweeps started together under ``budget(15)``, two 5-credit rows each: each sweep's estimate
    (10) fits what is left when it is checked, as both are checked before either starts a row (the
    check is made to wait for the other). Their rows then meet at the one start path, where a row is
    held before it is sent: three rows run, the fourth is refused by the budget, and the sandbox
    charged 15, what the budget says it spent (issue 35)."""
    from mediagen_nb.batch import runner

    both_checked = threading.Barrier(2, timeout=30)
    check = runner._within_budget

    def checked_together(*args: Any) -> None:
        check(*args)
        both_checked.wait()

    monkeypatch.setattr(runner, "_within_budget", checked_together)
    mg.budget(15)
    frames: dict[str, pd.DataFrame] = {}

    def run(name: str) -> None:
        df = pd.DataFrame({"prompt": [f"{name}, take {i}" for i in range(2)]})
        frames[name] = df.mediagen.run(
            "flare-1-pro", client=service.client, ledger=tmp_path / f"{name}.sqlite", progress=False
        )

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a lighthouse", "a harbour")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(status for frame in frames.values() for status in frame["status"])
    assert statuses == ["error", "succeeded", "succeeded", "succeeded"]
    refused = pd.concat(frames.values()).query("status == 'error'")["error"].iloc[0]
    assert refused.startswith("budget: flare-1-pro would cost 5 credits") and "nothing was sent" in refused
    assert service.net_spent() == 15 == mg.budget().spent and mg.budget().held == 0


def test_the_ledger_records_intent_before_sending(service: Service, tmp_path: Path) -> None:
    """The write-ahead rule, seen from the service: when the start request arrives, its key is already
    in the ledger (read by the sandbox's request hook from the file)."""
    ledger = tmp_path / "ledger.sqlite"
    seen: list[bool] = []

    async def check(request: httpx.Request) -> None:
        if request.url.path == path("run"):
            with sqlite3.connect(ledger) as db:
                keys = {k for (k,) in db.execute("SELECT key FROM starts")}
            seen.append(request.headers["idempotency-key"] in keys)

    client = AsyncClient(
        service.sandbox.demo_key,
        base_url=service.base_url,
        time_scale=service.sandbox.config.time_scale,
        http_client=httpx.AsyncClient(event_hooks={"request": [check]}),
    )
    try:
        sweep(client, prompts(5), ledger)
    finally:
        loop.submit(client.aclose()).result(10)
    assert len(seen) >= 5 and all(seen)  # more when a start was stopped as too late for its slot
    with sqlite3.connect(ledger) as db:
        assert set(db.execute("SELECT via, status, credits FROM starts")) == {("sweep", "succeeded", 1)}
