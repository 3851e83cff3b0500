"""The user's kept sandbox: started detached by the first process that needs it, found by the next,
started again from its state after it died, and managed by ``mediagen sandbox status|stop|reset``.

Every test keeps its sandbox in a folder of its own and stops what it started (SIGTERM, then SIGKILL
after ``kept.STOP_TIMEOUT``); everything listens on 127.0.0.1 only.
"""

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _shared import call_mediagen
from _wait import wait_until

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import DEMO_KEY, kept

SCALE = 600.0
IMAGE = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse at dawn", "quality": "low"}}
HEADERS = {"Authorization": f"Bearer {DEMO_KEY}"}


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A kept sandbox folder of this test; its sandbox is stopped at the end."""
    folder = tmp_path / "kept"
    yield folder
    kept.stop(folder)


def owner(running: kept.Running) -> dict[str, str]:
    """What the owner's requests carry: its demo key (the public one does not work there) and its token."""
    return {"Authorization": f"Bearer {running.demo_key}", **running.headers}


def data(method: str, url: str, **options: Any) -> Any:
    response = httpx.request(method, url, timeout=30, trust_env=False, **options)
    assert response.is_success, response.text
    return response.json()["data"]


def sandbox_cli(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``mediagen sandbox ARGV --data-dir FOLDER``, called in this process as a process of its own would
    run it (``_shared.call_mediagen``): what it says and does to the kept sandbox, not the interpreter."""
    done = call_mediagen("sandbox", *argv, "--data-dir", str(folder), env=dict(os.environ), cwd=Path.cwd())
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def gone(pid: int) -> bool:
    return wait_until(lambda: not kept._alive(pid), 10, f"process {pid} to end")


def test_two_processes_starting_at_once_get_one_sandbox(home: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from mediagen_nb.sandbox import kept; "
        "r = kept.ensure(600, Path(sys.argv[1])); print(r.pid, r.started, r.base_url)"
    )
    starting = [
        subprocess.Popen([sys.executable, "-c", code, str(home)], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    answers = [process.communicate(timeout=90)[0].split() for process in starting]
    assert len({pid for pid, _, _ in answers}) == 1, answers
    assert sorted(started for _, started, _ in answers) == ["False", "False", "True"], "one started it"
    running = kept.find(home)
    assert running is not None and str(running.pid) == answers[0][0]


def test_a_killed_sandbox_is_started_again_from_its_state_on_its_port(home: Path) -> None:
    first = kept.ensure(SCALE, home)
    assert first.started
    run = first.base_url + path("run")
    made = data("POST", run, json=IMAGE, headers={**owner(first), "Idempotency-Key": "one"})
    os.kill(first.pid, signal.SIGKILL)
    assert gone(first.pid) and kept.find(home) is None

    second = kept.ensure(SCALE, home)
    assert second.started and second.pid != first.pid
    assert second.base_url == first.base_url, "the same port, so URLs in old outputs keep working"
    assert second.instance == first.instance, "the same state: clients trust what it started"
    assert second.demo_key == first.demo_key and second.token != first.token, "a token per process"
    read = data(
        "GET", second.base_url + path("generation", id=made["id"]) + "?wait=55", headers=owner(second)
    )
    assert read["status"] == "succeeded"
    again = httpx.post(run, json=IMAGE, headers={**owner(second), "Idempotency-Key": "one"}, trust_env=False)
    assert again.status_code == 200 and again.json()["data"]["id"] == made["id"]
    stale = httpx.post(run, json=IMAGE, headers={**owner(first), "Idempotency-Key": "two"}, trust_env=False)
    assert stale.status_code == 403, "the token of the killed process is worth nothing now"
    charges = [
        e for e in data("GET", second.base_url + path("sandbox_ledger"), headers=owner(second))["entries"]
    ]
    assert [(e["kind"], e["resourceId"]) for e in charges] == [("charge", made["id"])], "charged once"


def test_status_stop_and_reset_manage_it(home: Path) -> None:
    assert "not running" in sandbox_cli(home, "status").stdout
    running = kept.ensure(SCALE, home)
    data("POST", running.base_url + path("run"), json=IMAGE, headers=owner(running))

    shown = json.loads(sandbox_cli(home, "status", "--json").stdout)
    assert shown["running"] and shown["pid"] == running.pid and shown["baseUrl"] == running.base_url
    assert shown["timeScale"] == SCALE and shown["dataDir"] == str(home.resolve())
    assert shown["balance"] == 3000 - 3 and shown["counts"]["generations"] == 1
    text = sandbox_cli(home, "status").stdout
    assert running.base_url in text and f"pid {running.pid}" in text and "balance: 2,997 credits" in text

    assert "fresh demo account" in sandbox_cli(home, "reset").stdout
    after = json.loads(sandbox_cli(home, "status", "--json").stdout)
    assert after["instance"] != shown["instance"] and after["pid"] == running.pid
    assert after["balance"] == 3000 and after["counts"]["generations"] == 0

    stopped = sandbox_cli(home, "stop").stdout
    assert f"stopped the kept sandbox at {running.base_url}" in stopped and gone(running.pid)
    assert kept.find(home) is None and (home / "state.sqlite").is_file(), "stopped, its state kept"
    assert "not running" in sandbox_cli(home, "stop").stdout

    again = kept.ensure(SCALE, home)
    data("POST", again.base_url + path("run"), json=IMAGE, headers=owner(again))
    kept.stop(home)
    sandbox_cli(home, "reset")  # not running: its saved state is deleted
    fresh = kept.ensure(SCALE, home)
    assert fresh.instance != after["instance"]
    assert data("GET", fresh.base_url + path("sandbox_account"), headers=owner(fresh))["balance"] == 3000


@pytest.mark.usefixtures("ctrl_c")  # the served sandbox gets a real SIGINT
def test_a_served_sandbox_with_a_data_dir_goes_on_from_its_state(tmp_path: Path) -> None:
    """``mediagen sandbox --data-dir DIR``: served in the foreground, stopped with Ctrl-C, served again."""

    command = [sys.executable, "-m", "mediagen_nb.cli", "sandbox", "--port", "0", "--time-scale", "600"]

    def serve() -> tuple[subprocess.Popen[str], str]:
        process = subprocess.Popen([*command, "--data-dir", str(tmp_path)], stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert found is not None, first
        return process, found.group(0)

    process, base = serve()
    made = data("POST", base + path("run"), json=IMAGE, headers=HEADERS)
    before = data("GET", base + path("sandbox_info"))
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 0  # it saves its state first

    process, base = serve()
    try:
        assert data("GET", base + path("sandbox_info"))["instance"] == before["instance"]
        read = data("GET", base + path("generation", id=made["id"]) + "?wait=55", headers=HEADERS)
        assert (
            read["status"] == "succeeded" and data("GET", base + path("sandbox_account"))["balance"] == 2997
        )
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)  # it saves its state first


def test_a_folder_held_by_another_sandbox_is_never_served_twice(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandbox serving the folder's state that does not answer as the kept one is waited for, then the
    start is refused naming the folder: never a second sandbox on the same state."""
    monkeypatch.setattr(kept, "HOLDER_WAIT", 1.0)  # the start after it keeps its full time (a busy CI)
    from mediagen_nb.sandbox import Sandbox

    served = Sandbox(time_scale=SCALE, data_dir=home)  # serving the folder, not as the kept one
    with served, pytest.raises(kept.KeptSandboxError, match="another sandbox is using"):
        kept.ensure(SCALE, home)
    assert kept.ensure(SCALE, home).started, "free again: the kept sandbox starts on its state"


EARLIER_VERSION = """
import json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from filelock import FileLock

folder = Path(sys.argv[1])
held = FileLock(folder / "state.lock", thread_local=False)
held.acquire()  # it serves the folder's state


class Earlier(BaseHTTPRequestHandler):
    def do_GET(self):  # an earlier version has no /_sandbox/hello, and could not prove itself
        body = json.dumps({"statusCode": 404, "message": "Cannot find " + self.path, "error": "Not Found"})
        self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Earlier)
port = server.server_address[1]
record = {"pid": os.getpid(), "baseUrl": f"http://127.0.0.1:{port}", "port": port, "version": "0.0.1"}
(folder / "server.json").write_text(json.dumps(record))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print(port, flush=True)
server.serve_forever()
"""


def test_a_kept_sandbox_of_an_earlier_version_is_ended_and_ours_takes_its_port(home: Path) -> None:
    """An earlier version's kept sandbox (no secret, no /_sandbox/hello) holding the folder's state, the
    user's own process: after an upgrade it is stopped and the new one goes on from its state, on its port
    (never "something else is listening")."""
    home.mkdir(parents=True)
    earlier = subprocess.Popen(
        [sys.executable, "-c", EARLIER_VERSION, str(home), "mediagen_nb.sandbox.kept"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert earlier.stdout is not None
        port = int(earlier.stdout.readline())
        running = kept.ensure(SCALE, home)
        assert earlier.wait(timeout=30) == 0, "it was asked to end"
        assert running.started and running.base_url == f"http://127.0.0.1:{port}"
    finally:
        if earlier.poll() is None:
            earlier.kill()
            earlier.wait()
