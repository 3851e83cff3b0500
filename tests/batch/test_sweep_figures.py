"""Figures that stay true when things break: dropped answers, two processes on one sweep, a locked
ledger, a full disk.

Every figure is checked against the sandbox's own ledger (``/_sandbox/ledger``), served on 127.0.0.1.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pytest
from _locks import HeldLock, LedgerClock
from _wait import wait_until

import mediagen_nb
from mediagen_nb.client import Ledger
from mediagen_nb.client.settings import ENV_BASE_URL, ENV_KEY, ENV_TIME_SCALE

if TYPE_CHECKING:
    from conftest import Service, ServiceFactory

MODEL = "gpt-image-2"  # priced by quality (3, 8 or 25 credits): an unanswered start's price must be learnt


def frame(n: int) -> pd.DataFrame:
    qualities = ["low", "medium", "high"]
    return pd.DataFrame(
        {
            "prompt": [f"a fox in the snow, take {i}" for i in range(n)],
            "quality": [qualities[i % 3] for i in range(n)],
        }
    )


def summary(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("mediagen_nb: ") and " rows: " in line)


@pytest.mark.parametrize("rate", [0.4, 0.5, 0.7])
def test_dropped_answers_are_counted_as_possibly_charged_at_their_price(
    service: Service, tmp_path: Path, capsys: pytest.CaptureFixture[str], rate: float
) -> None:
    """The sandbox processes each request and drops the connection before its answer, at 40/50/70 %.

    The frame's credits plus what the summary calls possibly charged cover every credit the sandbox
    charged; each row shown at 0 that the sandbox charged is ``uncertain`` with a note naming its
    price; the re-run resumes those rows at no charge, and then the frame equals the ledger.
    """
    df, ledger = frame(60), tmp_path / "ledger.sqlite"
    service.set_balance(100_000)
    service.faults(rates={"drop": rate})
    handle = df.mediagen.submit(MODEL, client=service.client, ledger=ledger, progress=False)
    out = handle.result(timeout=120)
    charged = service.net_spent()
    progress = handle.progress
    uncertain = out[out["status"] == "uncertain"]
    price = {"low": 3, "medium": 8, "high": 25}
    assert progress["possibly"] == sum(price[q] for q in uncertain["quality"]) and progress["unpriced"] == 0
    assert int(out["credits"].sum()) + progress["possibly"] >= charged
    assert int(out["credits"].sum()) == progress["spent"]
    for _, row in uncertain.iterrows():
        assert row["credits"] == 0 and f"(its price: {price[row['quality']]} credits)" in row["error"]
    charged_ids = set(service.charges()) - set(service.refunds())
    shown_zero = set(out.loc[out["credits"] == 0, "generation_id"].dropna())
    assert not (shown_zero & charged_ids), "a charged generation is shown at 0"
    assert out.loc[out["credits"] == 0, "error"].notna().all(), "a row shown at 0 without a note"
    line = summary(capsys.readouterr().out)
    if len(uncertain):
        assert (
            f"{len(uncertain)} starts unanswered (possibly charged up to {progress['possibly']} credits"
            in line
        )
    if rate == 0.7:
        assert len(uncertain) > 0, "70 % drops left no start unanswered: nothing was tested"

    service.faults(rates={})
    again = df.mediagen.submit(MODEL, client=service.client, ledger=ledger, progress=False)
    rerun = again.result(timeout=120)
    assert (rerun["status"] == "succeeded").all()
    assert service.net_spent() == charged, "the re-run paid again"
    assert int(rerun["credits"].sum()) == charged
    assert again.progress["spent"] == 0 and again.progress["reused_credits"] == charged
    assert max(service.charges().values()) == 1


ROWS = 150
TIME_SCALE = 120.0
CHILD = textwrap.dedent(
    """
    import sys
    import pandas as pd
    import mediagen_nb  # registers df.mediagen

    ledger, rows = sys.argv[1], int(sys.argv[2])
    df = pd.DataFrame({"prompt": [f"a harbour at dawn, take {i}" for i in range(rows)]})
    print("READY", flush=True)
    sys.stdin.readline()  # both start their sweeps at once, when told
    handle = df.mediagen.submit("flare-1-swift", ledger=ledger, run_name="shared", progress=False)
    out = handle.result()
    print("PROGRESS", dict(handle.progress))
    print("SHOWN", int(out["credits"].sum()))
    """
)


def child_env(service: Service) -> dict[str, str]:
    root = str(Path(mediagen_nb.__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDIAGEN_") or k == "MEDIAGEN_LIMITS_URL"}
    env.update(
        {
            ENV_BASE_URL: service.base_url,
            ENV_KEY: service.sandbox.demo_key,
            ENV_TIME_SCALE: f"{service.sandbox.config.time_scale:g}",
            "PYTHONPATH": os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p),
        }
    )
    return env


def parsed(out: str, tag: str) -> Any:
    line = next(line for line in out.splitlines() if line.startswith(tag + " "))
    return ast.literal_eval(line.removeprefix(tag + " "))


@pytest.mark.timeout(180)
def test_two_processes_on_one_sweep_each_claim_only_their_own_starts(
    make_service: ServiceFactory, tmp_path: Path
) -> None:
    """Two processes run the same sweep (same run name, same ledger file) at the same moment: each
    says "spent now" only for the starts it made; the rest are reused or started by the other, so the
    two figures add up to what the sandbox charged (before: 405 + 450 = 855 against 450)."""
    service = make_service(time_scale=TIME_SCALE)
    ledger, script = tmp_path / "ledger.sqlite", tmp_path / "sweep.py"
    script.write_text(CHILD)
    children = [
        subprocess.Popen(
            [sys.executable, str(script), str(ledger), str(ROWS)],
            env=child_env(service),
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    for child in children:  # wait until both have imported everything
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith("READY"), line + child.stdout.read()[-3000:]
    for child in children:  # go
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    outs = []
    for child in children:
        out, _ = child.communicate(timeout=150)
        assert child.returncode == 0, out[-3000:]
        outs.append(out)
    charged = service.net_spent()
    assert charged == ROWS and max(service.charges().values()) == 1
    progress = [parsed(out, "PROGRESS") for out in outs]
    assert sum(p["spent"] for p in progress) == charged, progress
    for out, p in zip(outs, progress, strict=True):
        assert parsed(out, "SHOWN") == p["credits"] == charged  # every row shows its charge
        assert p["spent"] + p["reused_credits"] + p["elsewhere_credits"] == charged
        if p["elsewhere"]:
            assert f"{p['elsewhere']} rows started by another process running this sweep" in summary(out)
    assert sum(p["elsewhere"] for p in progress) > 0, "the two sweeps never overlapped: nothing was tested"


def locked_after_20_rows(service: Service, held: HeldLock) -> threading.Thread:
    """A thread that takes ``held`` once the sandbox has charged 20 rows, as another process's long write
    would take the ledger's write lock mid-sweep."""

    def lock() -> None:
        wait_until(lambda: len(service.charges()) >= 20, 60, "20 rows charged")
        held.take()

    locker = threading.Thread(target=lock, daemon=True)
    locker.start()
    return locker


def test_a_ledger_locked_for_a_while_is_waited_for_and_the_sweep_goes_on(
    make_service: ServiceFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process holds the ledger's write lock 45 s (on the ledger's manual clock) from the 20th
    row: the sweep waits with one line and goes on starting rows when it frees (before: it stopped
    after 30 s, 92 of 150 rows skipped); its re-run calls none of its rows another process's."""
    service = make_service(time_scale=60.0)  # 60 starts a real second: 120 rows take about 2 s
    path, df = tmp_path / "ledger.sqlite", frame(120).assign(quality="low")  # 3 credits a row
    Ledger(path).close()
    held = HeldLock(path)
    locker = locked_after_20_rows(service, held)
    clock = LedgerClock(at=45.0, then=held.free)
    try:
        handle = df.mediagen.submit(
            MODEL, client=service.client, ledger=Ledger(path, clock=clock), progress=False
        )
        out = handle.result(timeout=120)
    finally:
        locker.join(60)
        held.close()
    assert held.freed_at is not None and held.freed_at >= 45.0, "the lock was never waited 45 s for"
    printed = capsys.readouterr()
    assert printed.err.count("waiting for the ledger") == 1
    assert (out["status"] == "succeeded").all(), out["status"].value_counts()
    assert int(out["credits"].sum()) == handle.progress["spent"] == service.net_spent() == 3 * 120
    assert max(service.charges().values()) == 1

    again = df.mediagen.submit(MODEL, client=service.client, ledger=path, progress=False)
    rerun = again.result(timeout=120)
    assert rerun["generation_id"].tolist() == out["generation_id"].tolist()
    assert again.progress["spent"] == again.progress["elsewhere"] == 0
    assert "another process" not in summary(capsys.readouterr().out)


def test_a_ledger_locked_too_long_stops_starting_and_names_the_rows_charged(
    make_service: ServiceFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process takes the ledger's write lock after 20 rows and keeps it: the sweep waits for
    it with one message, up to ``lock_wait`` on the ledger's clock, then stops starting rows; every row
    the sandbox charged shows its charge (none is an ``error`` at 0), the line after the summary names
    them and their credits, and the re-run, once the lock is gone, starts the rest, pays for nothing
    twice, and calls none of the first pass's rows another process's (this process wrote them)."""
    service = make_service(time_scale=60.0)  # 60 starts a real second: 120 rows take about 2 s
    path, df = tmp_path / "ledger.sqlite", frame(120).assign(quality="low")  # 3 credits a row
    Ledger(path).close()
    held = HeldLock(path)
    locker = locked_after_20_rows(service, held)
    try:
        out = df.mediagen.run(
            MODEL,
            client=service.client,
            ledger=Ledger(path, lock_wait=60.0, clock=LedgerClock()),
            progress=False,
        )
    finally:
        locker.join(60)
        charged = service.net_spent()
        held.close()
    printed = capsys.readouterr()
    assert printed.err.count("waiting for the ledger") == 1
    counts = out["status"].value_counts().to_dict()
    assert counts.get("skipped", 0) > 0 and counts.get("succeeded", 0) >= 20, counts
    assert int(out["credits"].sum()) == charged
    started = set(service.charges())
    assert set(out.loc[out["credits"] > 0, "generation_id"]) == started
    refused = out[out["status"] == "error"]
    assert refused["generation_id"].isna().all() and (refused["credits"] == 0).all()
    assert refused["error"].str.contains("is locked").all()
    assert out.loc[out["status"] == "skipped", "error"].str.contains("is locked").all()
    stop = next(line for line in printed.out.splitlines() if "stopped starting rows" in line)
    rows = out.index[out["credits"] > 0].tolist()
    assert f"{len(rows)} rows were charged ({charged} credits: rows {', '.join(map(str, rows[:30]))}" in stop
    assert f"{counts['skipped']} rows were not started" in stop

    again = df.mediagen.submit(MODEL, client=service.client, ledger=path, progress=False)
    rerun = again.result(timeout=120)
    assert (rerun["status"] == "succeeded").all()
    assert service.net_spent() == 3 * 120 and max(service.charges().values()) == 1
    kept = out[out["credits"] > 0]
    assert rerun.loc[kept.index, "generation_id"].tolist() == kept["generation_id"].tolist()
    assert again.progress["elsewhere"] == 0 and again.progress["spent"] == 3 * 120 - charged
    assert "another process" not in summary(capsys.readouterr().out)


FULL_DISK_CHILD = textwrap.dedent(
    """
    import os, sys
    import pandas as pd
    import mediagen_nb  # registers df.mediagen
    from mediagen_nb.client import Ledger

    folder, room = sys.argv[1], int(sys.argv[2])
    ledger = os.path.join(folder, "ledger.sqlite")
    Ledger(ledger).close()
    with open(os.path.join(folder, "filler"), "wb", buffering=0) as filler:  # the disk fills up
        try:
            while True:
                filler.write(b"x" * 4096)
        except OSError:
            pass
    os.truncate(os.path.join(folder, "filler"), os.path.getsize(os.path.join(folder, "filler")) - room)
    df = pd.DataFrame({"prompt": [f"a quiet street, take {i}" for i in range(100)]})
    out = df.mediagen.run("flare-1-swift", ledger=ledger, progress=False)
    print("SHOWN", int(out["credits"].sum()))
    print("STATUSES", out["status"].value_counts().to_dict())
    """
)


@pytest.mark.timeout(120)
def test_a_full_disk_says_the_disk_is_full(service: Service, tmp_path: Path) -> None:
    """The ledger's disk fills up mid-sweep (a 2 MB tmpfs in a mount namespace of the child's own,
    nothing mounted for anyone else): the error says the disk is full, not that the ledger is
    unreadable, the sweep stops starting rows, and every row charged shows its charge."""
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-rm", "true"], capture_output=True).returncode:
        pytest.skip("no unprivileged mount namespace here (unshare -rm) to mount a small tmpfs in")
    folder, script = tmp_path / "small-disk", tmp_path / "sweep.py"
    folder.mkdir()
    script.write_text(FULL_DISK_CHILD)
    mount = 'mount -t tmpfs -o size=2m tmpfs "$1" && exec "$2" "$3" "$1" 655360'  # 640 KB left for the ledger
    child = subprocess.run(
        [unshare, "-rm", "sh", "-c", mount, "sh", str(folder), sys.executable, str(script)],
        env=child_env(service),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert child.returncode == 0, child.stdout[-2000:] + child.stderr[-2000:]
    said = child.stdout + child.stderr
    assert "the disk is full" in said and "move it aside" not in said
    statuses = parsed(child.stdout, "STATUSES")
    assert statuses.get("skipped", 0) > 0 and statuses.get("succeeded", 0) > 0, statuses
    assert parsed(child.stdout, "SHOWN") == service.net_spent()
    assert "stopped starting rows (ledger" in child.stdout
