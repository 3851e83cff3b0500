"""The embedded sandbox belongs to the user, not to one process: what one process ran, the next finds.

Issue 20's measured cases, each in real processes on a kept sandbox of the test's own data folder
(``tests/conftest.py``), its money checked on the sandbox's own ledger (``GET /_sandbox/ledger``):
a sweep re-run by a new process (a command, a second kernel) costs nothing; ``generate --no-wait``, then
``wait`` and ``download`` in other processes work; a sandbox killed mid-sweep is started again from its
state and charges nothing twice; rows from a sandbox whose state is gone are never shown as reused.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from _shared import environment, run_mediagen
from _wait import wait_until

from mediagen_nb.client import config
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import kept

ROWS = ["a paper boat", "a glass owl", "a brass key", "a wool hat", "a tin robot"]
PRICE = 3  # gpt-image-2 at quality low


def mediagen_env(scale: str = "600") -> dict[str, str]:
    """A newcomer's environment: no key, no address, the defaults for the ledger; a fast clock."""
    return environment(MEDIAGEN_TIME_SCALE=scale)


def mediagen(cwd: Path, *argv: str, scale: str = "600") -> subprocess.CompletedProcess[str]:
    return run_mediagen(*argv, env=mediagen_env(scale), cwd=cwd, timeout=180)


def charges() -> list[dict[str, Any]]:
    """The charges on the user's kept sandbox's own ledger (net of nothing: refunds are listed apart)."""
    running = kept.find()
    assert running is not None, "the kept sandbox is running"
    url = running.base_url + path("sandbox_ledger")
    entries = httpx.get(url, headers=running.headers, timeout=10, trust_env=False).json()["data"]["entries"]
    return [e for e in entries if e["kind"] == "charge"]


def summary(output: str) -> str:
    [line] = [line for line in output.splitlines() if re.match(r"mediagen_nb: \d+ rows:", line)]
    return line


def new_process() -> None:
    """This process forgets the sandbox it found and closes its clients, as a new kernel would start."""
    from mediagen_nb.batch import loop
    from mediagen_nb.client import connection
    from mediagen_nb.client.context import PROCESS

    made, made_async = PROCESS.client, PROCESS.async_client
    connection.use(None)
    PROCESS.embedded = None
    if made is not None:
        made.close()
    if made_async is not None:
        loop.submit(made_async.aclose()).result(10)


@pytest.fixture
def sheet(tmp_path: Path) -> Path:
    (tmp_path / "sheet.csv").write_text("prompt\n" + "\n".join(ROWS) + "\n")
    return tmp_path / "sheet.csv"


def sweep(sheet: Path, scale: str = "600") -> subprocess.CompletedProcess[str]:
    return mediagen(
        sheet.parent, "sweep", sheet.name, "--model=gpt-image-2", "--set", "quality=low", scale=scale
    )


KERNEL = """
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "mediagen_nb")
result = shell.run_cell(
    "import pandas as pd\\n"
    "done = pd.read_csv('sheet.csv').mediagen.run('gpt-image-2', quality='low', progress=False)",
    silent=True,
)
assert result.success, result.error_in_exec
print(list(shell.user_ns['done']['status']))
"""


def test_a_sweep_rerun_by_a_new_process_costs_nothing(sheet: Path, tmp_path: Path) -> None:
    """A kernel restart or a second terminal used to pay again: the new process had a new sandbox."""
    first = sweep(sheet)
    assert first.returncode == 0, first.stderr
    assert "started the embedded sandbox" in first.stderr  # a notice: stdout holds the result
    assert f"{len(ROWS) * PRICE} credits spent now" in summary(first.stdout)
    assert len(charges()) == len(ROWS)

    again = sweep(sheet)
    assert again.returncode == 0, again.stderr
    assert "using the embedded sandbox" in again.stderr, "the second process finds the running one"
    assert summary(again.stdout).endswith(
        f"0 credits spent now, {len(ROWS)} rows reused at no charge ({len(ROWS) * PRICE} credits earlier)"
    )
    kernel = subprocess.run(
        [sys.executable, "-c", KERNEL],
        cwd=sheet.parent,
        env={**mediagen_env(), "IPYTHONDIR": str(tmp_path / "ipython")},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert kernel.returncode == 0, kernel.stderr
    assert kernel.stdout.strip().splitlines()[-1] == str(["succeeded"] * len(ROWS))
    assert "0 credits spent now" in summary(kernel.stdout)
    assert len(charges()) == len(ROWS), "the second command and the second kernel charged nothing"


def test_generate_no_wait_then_wait_and_download_in_other_processes(tmp_path: Path) -> None:
    started = mediagen(
        tmp_path, "generate", "gpt-image-2", "prompt=a heron", "quality=low", "--no-wait", "--json"
    )
    assert started.returncode == 0, started.stderr
    generation = json.loads(started.stdout)
    assert generation["status"] == "processing"

    waited = mediagen(tmp_path, "wait", generation["id"], "--json")
    assert waited.returncode == 0, waited.stderr
    assert json.loads(waited.stdout)["status"] == "succeeded"
    saved = mediagen(tmp_path, "download", generation["id"], "out")
    assert saved.returncode == 0, saved.stderr
    files = list((tmp_path / "out").iterdir())
    assert [f.name for f in files] == [f"{generation['id']}.png"] and files[0].read_bytes()[:4] == b"\x89PNG"
    again = mediagen(tmp_path, "generate", "gpt-image-2", "prompt=a heron", "quality=low", "--json")
    assert json.loads(again.stdout)["reused"] and json.loads(again.stdout)["id"] == generation["id"]
    assert [c["resourceId"] for c in charges()] == [generation["id"]], "one generation, charged once"


@pytest.mark.realtime  # SIGKILL of another process, which must land while its sweep runs
def test_a_sandbox_killed_mid_sweep_is_started_again_from_its_state(tmp_path: Path) -> None:
    """SIGKILL the sandbox and the sweep's process while rows run; the next process starts the sandbox
    again from its state: the rows in flight finish there, and no generation is charged twice."""
    rows = [f"a clockwork bird number {n}" for n in range(12)]
    (tmp_path / "sheet.csv").write_text("prompt\n" + "\n".join(rows) + "\n")
    slow = "10"  # a 30-second image takes 3 real seconds: the sweep is caught with rows in flight
    command = [sys.executable, "-m", "mediagen_nb.cli", "sweep", "sheet.csv", "--model=gpt-image-2"]
    running = subprocess.Popen(
        [*command, "--set", "quality=low"],
        cwd=tmp_path,
        env=mediagen_env(slow),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: kept.find() is not None and len(charges()) >= 4, 60, "4 rows charged")
        before = charges()  # a window with room takes every start at once: rows are in flight now
        assert running.poll() is None and 4 <= len(before) <= len(rows), "caught mid-sweep"
        sandbox = kept.find()
        assert sandbox is not None
        os.kill(sandbox.pid, signal.SIGKILL)
    finally:
        running.kill()
        running.wait(timeout=30)

    again = sweep(tmp_path / "sheet.csv", scale=slow)
    assert again.returncode == 0, again.stderr
    assert "started the embedded sandbox" in again.stderr, "the next process started it again"
    restarted = kept.find()
    assert restarted is not None and restarted.pid != sandbox.pid and restarted.instance == sandbox.instance
    after = charges()
    ids = [c["resourceId"] for c in after]
    assert len(ids) == len(set(ids)) == len(rows), "every row charged once"
    assert {c["resourceId"] for c in before} <= set(ids), "what was charged before the kill is kept"
    assert f"{len(rows)} rows: {len(rows)} succeeded" in summary(again.stdout)


def test_rows_of_a_sandbox_whose_state_is_gone_are_started_again_never_reused(sheet: Path) -> None:
    """'540 rows reused at no charge (1620 credits earlier)' was shown while the sandbox had charged 60:
    a row the current sandbox does not know is started again, and the summary says why."""
    assert sweep(sheet).returncode == 0
    kept.stop()
    assert kept.reset() is None  # not running: its state is deleted

    again = sweep(sheet)
    assert again.returncode == 0, again.stderr
    line = summary(again.stdout)
    assert "reused" not in line
    assert f"{len(ROWS) * PRICE} credits spent now" in line
    assert f"the sandbox that ran {len(ROWS)} earlier rows is gone: they were started again" in line
    assert len(charges()) == len(ROWS), "the new state's ledger: the rows charged once, here"


def test_an_interrupted_rerun_on_a_new_state_counts_nothing_as_reused(sheet: Path) -> None:
    """Cut short before the sandbox answered for the earlier rows, a re-run counts none of them as
    reused or as credits earlier: figures come only from what the current sandbox confirms."""
    import pandas as pd

    frame = pd.read_csv(sheet)
    first = frame.mediagen.run("gpt-image-2", quality="low", progress=False)
    assert list(first["status"]) == ["succeeded"] * len(ROWS)
    kept.stop()
    kept.reset()
    new_process()  # a new kernel: it finds (here: starts) the sandbox afresh

    handle = frame.mediagen.submit("gpt-image-2", quality="low", progress=False)
    handle.cancel()
    handle.result()
    progress = handle.progress
    assert progress["reused"] == 0 and progress["reused_credits"] == 0
    assert progress["spent"] == PRICE * len(charges()), "what it shows spent is what the sandbox charged"


def test_a_kernel_whose_sandbox_died_starts_it_again_and_carries_on() -> None:
    """The process holding a client needs the sandbox next: a refused connection starts it again from its
    state, on its port, and the call goes on."""
    from mediagen_nb.client import Client

    with Client(sandbox=True) as client:
        first = client.generate("gpt-image-2", prompt="a kite", quality="low")
        dead = kept.find()
        assert dead is not None
        os.kill(dead.pid, signal.SIGKILL)
        wait_until(lambda: not kept._alive(dead.pid), 10, "the killed sandbox to be gone")
        second = client.generate("gpt-image-2", prompt="a drum", quality="low")
        assert second.status == "succeeded" and client.generation(first.id).status == "succeeded"
    again = kept.find()
    assert again is not None and again.pid != dead.pid and again.base_url == dead.base_url
    assert [c["resourceId"] for c in charges()] == [first.id, second.id]


def test_a_generate_after_a_reset_is_started_again_and_says_why(tmp_path: Path) -> None:
    made = json.loads(
        mediagen(tmp_path, "generate", "gpt-image-2", "prompt=a heron", "quality=low", "--json").stdout
    )
    assert mediagen(tmp_path, "sandbox", "reset").returncode == 0
    again = mediagen(tmp_path, "generate", "gpt-image-2", "prompt=a heron", "quality=low")
    assert again.returncode == 0, again.stderr
    assert "the sandbox that ran earlier starts of these inputs is gone" in again.stderr  # a notice
    [result] = [line for line in again.stdout.splitlines() if "gpt-image-2" in line and "credits" in line]
    new_id = result.split()[0]
    assert new_id != made["id"] and result.endswith(f"succeeded  {PRICE} credits"), result
    assert [c["resourceId"] for c in charges()] == [new_id], "the new state's ledger: this start alone"


def test_a_taken_port_gives_another_and_the_ledger_still_knows_the_sandbox() -> None:
    from mediagen_nb.client import Client

    with Client(sandbox=True) as client:
        first = client.generate("gpt-image-2", prompt="a kite", quality="low", reuse=True)
    before = kept.stop()
    assert before is not None
    port = int(before.base_url.rsplit(":", 1)[1])
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # its old connections may linger
        taken.bind(("127.0.0.1", port))
        taken.listen()
        new_process()
        with Client(sandbox=True) as client:
            assert client.base_url != before.base_url
            again = client.generate("gpt-image-2", prompt="a kite", quality="low", reuse=True)
    assert again.reused and again.id == first.id, "the same sandbox to the ledger: its instance, not its port"
    assert [c["resourceId"] for c in charges()] == [first.id]


def test_a_client_paces_itself_to_the_running_sandbox_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mediagen_nb.client import Client

    kept.ensure(600)
    monkeypatch.setenv("MEDIAGEN_TIME_SCALE", "30")
    with Client(sandbox=True) as client, Client(sandbox=True) as second:
        assert client.clock.scale == 600 == second.clock.scale
    notices = [line for line in capsys.readouterr().out.splitlines() if line.startswith("mediagen_nb:")]
    assert len(notices) == 1 and "using the embedded sandbox" in notices[0]
    assert "time x600, not the x30 asked: it was running (mediagen sandbox stop, to change it)" in notices[0]


def test_the_readme_main_job_run_twice_pays_once(tmp_path: Path) -> None:
    """`mediagen demo`, the README's first command, as a newcomer runs it: the second time costs nothing."""
    first = mediagen(tmp_path, "demo")
    assert first.returncode == 0, first.stderr
    paid = charges()
    assert sum(e["credits"] for e in paid) == 78 + 19  # the sweep's 12 rows and the chain's three steps
    for made in (
        "gallery.html",
        "sweep-results.xlsx",
        "1-gpt-image-2.png",
        "2-zonos2.wav",
        "3-infinitetalk.mp4",
    ):
        assert (tmp_path / "mediagen-demo" / made).stat().st_size > 0, made
    again = mediagen(tmp_path, "demo")
    assert again.returncode == 0, again.stderr
    assert charges() == paid
    assert "0 credits spent now, 12 rows reused at no charge (78 credits earlier)" in summary(again.stdout)
    assert "total: 0 credits spent now, 3 steps reused at no charge" in again.stdout


def faults(plan: dict[str, Any] | None = None) -> dict[str, Any]:
    """The running kept sandbox's fault plan (``GET``), or a new one (``POST``)."""
    running = kept.find()
    assert running is not None, "the kept sandbox is running"
    url = running.base_url + path("sandbox_faults")
    with httpx.Client(timeout=10, trust_env=False, headers=running.headers) as http:
        answer = http.get(url) if plan is None else http.post(url, json=plan)
    return dict(answer.raise_for_status().json()["data"])


def test_a_sandbox_killed_while_it_is_started_again_leaves_rows_uncertain_never_an_exception(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33: the kept sandbox killed mid-sweep, then again while the client started it again, made
    ``df.mediagen.run`` raise. Now the rows whose starts were sent come back ``uncertain`` (possibly
    charged, at their price), the others not started, the line after the summary says why; a run while
    it still cannot start returns the frame too; the re-run, once it can, charges each row once."""
    import pandas as pd

    monkeypatch.setenv("MEDIAGEN_TIME_SCALE", "600")
    frame = pd.DataFrame({"prompt": [f"a tin whistle number {n}" for n in range(12)]})
    first = kept.ensure(600)
    faults({"rates": {"slow": 1}, "routes": ["run"], "slowSeconds": 30})  # starts held, not yet charged
    cannot_start = True
    spawn = kept._spawn

    def killed_while_starting(where: Path, time_scale: float, *, new_port: bool = False) -> kept.Running:
        if cannot_start:
            raise kept.KeptSandboxError("the kept sandbox did not start: it was killed (see its log)")
        return spawn(where, time_scale, new_port=new_port)

    monkeypatch.setattr(kept, "_spawn", killed_while_starting)
    handle = frame.mediagen.submit("gpt-image-2", quality="low", progress=False)
    wait_until(lambda: faults()["injected"].get("slow", 0) >= 8, 30, "8 starts held by the sandbox")
    os.kill(first.pid, signal.SIGKILL)
    out = handle.result(timeout=60)  # no exception
    said = capsys.readouterr().out
    uncertain = out[out["status"] == "uncertain"]
    assert len(uncertain) == 8, out["status"].value_counts()
    others = out[out["status"] != "uncertain"]  # never sent: the sandbox could not be started for them
    assert set(others["status"]) <= {"error", "skipped"} and others["generation_id"].isna().all()
    assert others["error"].str.contains("cannot start the embedded sandbox").all()
    assert uncertain["error"].str.contains("the service may have started it and charged").all()
    assert uncertain["error"].str.contains("may have reached the service").all()
    assert handle.progress["uncertain"] == 8 and int(out["credits"].sum()) == 0
    # Its price varies by quality and the sandbox is gone: no estimate, and no start was answered.
    assert "8 starts unanswered (possibly charged at a price that could not be learnt" in summary(said)
    assert "stopped starting rows (cannot start the embedded sandbox" in said

    monkeypatch.setattr(config, "CHECK_SECONDS", 0.0)  # the sweep's first look at the sandbox: now
    again = frame.mediagen.run("gpt-image-2", quality="low", progress=False)  # it still cannot start
    assert again["error"].str.contains("cannot start the embedded sandbox").all()
    assert (again.loc[uncertain.index, "status"] == "uncertain").all()  # still possibly charged
    assert set(again.loc[others.index, "status"]) <= {"error", "skipped"}

    cannot_start = False
    kept.ensure(600)  # started again from its state, its fault plan with it: cleared before the re-run
    faults({})
    rerun = frame.mediagen.run("gpt-image-2", quality="low", progress=False)
    assert set(rerun["status"]) == {"succeeded"}
    ids = [c["resourceId"] for c in charges()]
    assert len(ids) == len(set(ids)) == len(frame), "every row charged once"
    assert int(rerun["credits"].sum()) == 3 * len(frame)
