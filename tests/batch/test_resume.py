"""A sweep killed with SIGKILL halfway, then run again: no double charge, started rows keep their generation.

The sweep runs in a child process that knows the sandbox only from the environment
(MEDIAGEN_BASE_URL / MEDIAGEN_API_KEY / MEDIAGEN_TIME_SCALE, ``client=None``); the sandbox is served
by this test process, so its ledger is the witness of every charge.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
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
