"""A sweep killed with SIGKILL halfway, then run again: no double charge, started rows keep their generation,
and the re-run's figures say whose each charge is.

The sweep runs in a child process that knows the sandbox only from the environment
(MEDIAGEN_BASE_URL / MEDIAGEN_API_KEY / MEDIAGEN_TIME_SCALE, ``client=None``); the sandbox is served
by this test process, so its ledger is the witness of every charge.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import astuple
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest
from _wait import wait_until

import mediagen_nb
from mediagen_nb.client.settings import ENV_BASE_URL, ENV_KEY, ENV_TIME_SCALE

if TYPE_CHECKING:
    from conftest import Service, ServiceFactory

ROWS = 120
TIME_SCALE = 120.0  # 60 requests a simulated minute on the key: about 80 a real second, so a sweep takes ~3 s
MODEL = "flare-1-swift"
RUN_NAME = "resume-after-kill"
CHILD = textwrap.dedent(
    """
    import sys

    import pandas as pd

    import mediagen_nb  # registers df.mediagen

    rows, ledger, model, run_name = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    df = pd.DataFrame({"prompt": [f"a harbour at dawn, take {i}" for i in range(rows)]})
    out = df.mediagen.run(model, client=None, ledger=ledger, run_name=run_name, progress=False)
    print(out["status"].value_counts().to_dict())
    """
)


def frame() -> pd.DataFrame:
    """The child's frame, row for row."""
    return pd.DataFrame({"prompt": [f"a harbour at dawn, take {i}" for i in range(ROWS)]})


def child_env(service: Service) -> dict[str, str]:
    """The environment of a process that reaches the served sandbox with the demo key."""
    root = str(Path(mediagen_nb.__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDIAGEN_")}
    env.update(
        {
            ENV_BASE_URL: service.base_url,
            ENV_KEY: service.sandbox.demo_key,
            ENV_TIME_SCALE: str(TIME_SCALE),
            "PYTHONPATH": os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p),
        }
    )
    return env


def start_child(service: Service, tmp_path: Path, ledger: Path) -> subprocess.Popen[bytes]:
    script = tmp_path / "sweep.py"
    script.write_text(CHILD)
    log = (tmp_path / "child.log").open("wb")
    try:
        return subprocess.Popen(
            [sys.executable, str(script), str(ROWS), str(ledger), MODEL, RUN_NAME],
            env=child_env(service),
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    finally:
        log.close()


def charged_ids(service: Service) -> set[str]:
    return {e["resourceId"] for e in service.sandbox.world.accounts.ledger.copy() if e["kind"] == "charge"}


def ledger_generations(path: Path) -> dict[str, str]:
    """Idempotency key -> generation id, as the sweep's own SQLite ledger recorded them."""
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, resource_id FROM starts WHERE resource_id IS NOT NULL"))


@pytest.mark.timeout(120)
def test_sigkill_halfway_then_rerun_charges_each_row_once(
    make_service: ServiceFactory, tmp_path: Path
) -> None:
    service = make_service(time_scale=TIME_SCALE)
    ledger = tmp_path / "sweep.sqlite"
    child = start_child(service, tmp_path, ledger)
    try:

        def charged_a_third() -> bool:
            assert child.poll() is None, (tmp_path / "child.log").read_text()
            return len(charged_ids(service)) >= ROWS // 3

        wait_until(charged_a_third, 60, "the child to start a third of the rows")
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    before_kill = charged_ids(service)
    assert ROWS // 3 <= len(before_kill) < ROWS, "the kill must land halfway"
    recorded = ledger_generations(ledger)  # the SQLite ledger survived the kill (WAL)
    assert set(recorded.values()) <= before_kill

    out = frame().mediagen.run(MODEL, client=service.client, ledger=ledger, run_name=RUN_NAME, progress=False)
    assert (out["status"] == "succeeded").all(), out["status"].value_counts()
    ids = out["generation_id"].tolist()
    charges = service.charges()
    assert len(set(ids)) == ROWS  # one generation per row
    assert sum(charges.values()) == len(charges) == ROWS  # as many charges as generations and rows
    assert set(charges) == set(ids) == service.generation_ids()
    assert max(charges.values()) == 1  # no generation charged twice
    assert before_kill <= set(ids)  # rows started before the kill kept their generation ids
    assert ledger_generations(ledger).items() >= recorded.items()  # ...and their ledger entries
    assert service.refunds() == {}
    reused = frame().mediagen.run(
        MODEL, client=service.client, ledger=ledger, run_name=RUN_NAME, progress=False
    )
    assert reused["generation_id"].tolist() == ids and sum(service.charges().values()) == ROWS


KERNEL = textwrap.dedent(
    """
    import json, os, signal, sys

    import httpx

    from mediagen_nb.client.config import Where
    from mediagen_nb.client.ledger import GENERATION, Ledger
    from mediagen_nb.protocol.paths import path

    job = json.loads(sys.stdin.readline())
    book = Ledger(job["ledger"])
    for n, (key, model, values) in enumerate(job["starts"]):  # as a sweep does: the intent, then the send
        book.intent(key, Where(*job["where"]), kind=GENERATION, via="sweep", model_id=model, input=values)
        if n % 2 == 0:  # sent: the service makes and charges it; its answer is never recorded
            httpx.post(
                job["base"] + path("run"),
                json={"modelId": model, "input": values},
                headers={"Authorization": "Bearer " + job["key"], "Idempotency-Key": key},
            ).raise_for_status()
    if job["then"] == "die":
        os.kill(os.getpid(), signal.SIGKILL)  # a kernel killed with these starts in flight
    print("WAITING", flush=True)
    sys.stdin.readline()  # a kernel that still runs, its sweep in flight
    """
)


@pytest.mark.timeout(120)
def test_a_killed_kernel_s_unsent_starts_are_spent_now_by_the_kernel_that_sends_them(
    make_service: ServiceFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: a kernel killed with 8 starts written and not answered, the cell re-run: the new kernel
    paid for the 4 it sent itself, yet said "8 rows started by another process (counted there)". Now
    a killed kernel's start counts as spent now where the service answers it with a new generation,
    as reused where it says the killed kernel's request made it; "another process" only where that
    process still runs. Every figure is checked against the sandbox's own ledger."""
    from mediagen_nb.batch.frames import table
    from mediagen_nb.batch.plan import allowed
    from mediagen_nb.batch.runner import prepare

    service = make_service(time_scale=TIME_SCALE)
    ledger, script, rows = tmp_path / "sweep.sqlite", tmp_path / "kernel.py", 24
    script.write_text(KERNEL)
    df = frame().head(rows)
    planned = prepare(
        table(df), MODEL, None, {}, service.client, run_name=RUN_NAME, files_from=allowed(None)
    ).rows
    starts = [(row.key, MODEL, row.input) for row in planned]
    job = {"ledger": str(ledger), "base": service.base_url, "key": service.sandbox.demo_key}
    job["where"] = list(astuple(service.client.settings.where))
    kernels = []
    for then, mine in (("die", starts[:8]), ("wait", starts[8:12])):
        kernel = subprocess.Popen(
            [sys.executable, str(script)],
            env=child_env(service),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert kernel.stdin is not None
        kernel.stdin.write(json.dumps({**job, "starts": mine, "then": then}) + "\n")
        kernel.stdin.flush()
        kernels.append(kernel)
    killed, running = kernels
    try:
        assert killed.wait(60) == -signal.SIGKILL
        assert running.stdout is not None and running.stdout.readline().startswith("WAITING")
        before = service.charges()
        assert len(before) == 6  # rows 0, 2, 4, 6 by the killed kernel, 8 and 10 by the running one
        price = service.net_spent() // 6

        handle = df.mediagen.submit(
            MODEL, client=service.client, ledger=ledger, run_name=RUN_NAME, progress=False
        )
        out = handle.result(timeout=60)
    finally:
        for kernel in kernels:
            if kernel.poll() is None:
                kernel.kill()
            kernel.communicate(timeout=10)
    assert (out["status"] == "succeeded").all(), out["status"].value_counts()
    charges = service.charges()
    assert len(charges) == rows and max(charges.values()) == 1  # one generation per row, charged once
    assert set(before) <= set(out["generation_id"])  # the starts the kernels sent kept their generation
    paid_now = service.net_spent() - 6 * price
    progress = handle.progress
    assert progress["spent"] == paid_now == (rows - 6) * price  # rows 1, 3, 5, 7 and 9, 11 among them
    assert (progress["reused"], progress["reused_credits"]) == (4, 4 * price)  # the killed kernel's
    assert (progress["elsewhere"], progress["elsewhere_credits"]) == (2, 2 * price)  # the running one's
    line = next(line for line in capsys.readouterr().out.splitlines() if " rows: " in line)
    assert f"{paid_now} credits spent now, 4 rows reused at no charge ({4 * price} credits earlier)" in line
    assert (
        f"2 rows started by another process running this sweep ({2 * price} credits, counted there)" in line
    )
