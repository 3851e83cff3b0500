"""The user's kept sandbox answers its owner alone, in real processes (issue 33; the rules one by one are in
``test_owner.py``).

Each test is an attack that worked on 1644530. Another local user (``nobody``: the tests run as root here;
elsewhere these are skipped, saying why) drove a running kept sandbox, or squatted its recorded port once
it was stopped or killed and was sent the user's voice file and prompt; its folder's files were 0644 in
0755 folders. Everything listens on 127.0.0.1; every process a test starts is stopped when it ends.
"""

import hashlib
import json
import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _shared import environment, run_mediagen
from _wait import wait_until

from mediagen_nb.protocol import ownership
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import DEMO_KEY, Sandbox, SandboxConfig, kept
from mediagen_nb.sandbox.media.store import MediaStore, _sample

SCALE = 600.0
IMAGE = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse at dawn", "quality": "low"}}
SYSTEM_PYTHON = "/usr/bin/python3"  # another user cannot run this test's interpreter (it lives in /root)
OTHER_USER = "nobody"


def _other_user_can_run() -> str | None:
    """Why the tests acting as another local user cannot run here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "acting as another local user (nobody) needs root"
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"no {SYSTEM_PYTHON} for the other user to run"
    return None


as_another_user = pytest.mark.skipif(_other_user_can_run() is not None, reason=str(_other_user_can_run()))


def owner(running: kept.Running) -> dict[str, str]:
    return {"Authorization": f"Bearer {running.demo_key}", **running.headers}


def _as_nobody(code: str, *argv: str, **options: Any) -> subprocess.Popen[str]:
    """``code`` run by the system's Python as user nobody (the same as ``runuser -u nobody``)."""
    return subprocess.Popen(
        [SYSTEM_PYTHON, "-I", "-c", code, *argv],
        user=OTHER_USER,
        group=OTHER_USER if _has_group(OTHER_USER) else "nogroup",
        extra_groups=[],
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        text=True,
        **options,
    )


def _has_group(name: str) -> bool:
    import grp

    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture
def used() -> Iterator[kept.Running]:
    """The user's kept sandbox (of this test's data folder), with an upload and a generation's output read."""
    running = kept.ensure(SCALE)
    face = _sample("face.png")
    put = httpx.put(
        running.base_url + path("sandbox_upload", name="face.png"), content=face, headers=owner(running)
    )
    assert put.status_code == 201, put.text
    made = httpx.post(running.base_url + path("run"), json=IMAGE, headers=owner(running)).json()["data"]
    done = httpx.get(
        running.base_url + path("generation", id=made["id"]),
        params={"wait": 55},
        headers=owner(running),
        timeout=30,
    ).json()["data"]
    assert httpx.get(done["output"]["urls"][0]).status_code == 200, "an output is read without the token"
    yield running


def _modes(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder`` (itself included) that others may read, with its mode."""
    found = {}
    for item in [folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(item.lstat().st_mode)
        if mode != (0o700 if item.is_dir() else 0o600):
            found[str(item.relative_to(folder))] = oct(mode)
    return found


def test_the_kept_sandbox_s_folder_and_files_are_the_user_s_alone(used: kept.Running) -> None:
    folder = kept.folder()
    names = {p.relative_to(folder).as_posix() for p in folder.rglob("*")}
    for made in ("server.json", "sandbox.log", "start.lock", "state.lock", "state.sqlite", "secret"):
        assert made in names, made
    assert any(n.startswith("media/") and n.endswith(".png") for n in names), "a rendered output"
    assert "media/index.jsonl" in names and any(n.startswith("uploads/") for n in names)
    assert _modes(folder) == {} and _modes(folder.parent) == {}, "files 0600, folders 0700"
    # What an earlier version left open (0644 files in 0755 folders) is closed at the next use.
    for item in (folder, folder / "media"):
        item.chmod(0o755)
    for item in (folder / "server.json", folder / "media" / "index.jsonl", folder / "secret"):
        item.chmod(0o644)
    again = kept.ensure(SCALE)
    assert again.pid == used.pid and _modes(folder) == {}


PROBE = r"""
import json, os, sys, urllib.error, urllib.request

base, key, guessed = sys.argv[1:4]
hello = {"name": "x", "version": "1"}
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": hello}}
image = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse at dawn", "quality": "low"}}
keyed = {"Authorization": "Bearer " + key}
tries = {
    "ledger": ("GET", "/_sandbox/ledger", None, {}),
    "keys": ("POST", "/_sandbox/keys", {}, {}),
    "account": ("POST", "/_sandbox/account", {"balance": 1}, {}),
    "info": ("GET", "/_sandbox/info", None, {}),
    "uploads": ("GET", "/_sandbox/uploads", None, keyed),
    "upload by its content": ("GET", "/_sandbox/uploads/" + guessed, None, {}),
    "estimate": ("POST", "/v3/playground/v1/estimate", image, keyed),
    "run": ("POST", "/v3/playground/v1/run", image, keyed),
    "agent": ("POST", "/mcp", init, {**keyed, "Accept": "application/json, text/event-stream"}),
}
answers = {"uid": os.getuid()}
for name, (method, where, body, headers) in tries.items():
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + where, data=data, method=method, headers=headers)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            answers[name] = answer.status
    except urllib.error.HTTPError as refused:
        answers[name] = refused.code
print(json.dumps(answers))
"""


@as_another_user
def test_another_local_user_is_refused_and_nothing_changes(used: kept.Running) -> None:
    def state() -> tuple[Any, ...]:
        def read(name: str) -> Any:
            return httpx.get(used.base_url + path(name), headers=owner(used)).json()["data"]

        info = read("sandbox_info")
        return read("sandbox_account")["balance"], read("sandbox_ledger")["entries"], info["counts"]["keys"]

    before = state()
    guessed = hashlib.sha256(_sample("face.png")).hexdigest()[:32] + ".png"  # its name on 1644530
    probe = _as_nobody(
        PROBE, used.base_url, DEMO_KEY, guessed, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = probe.communicate(timeout=60)
    assert probe.returncode == 0, err
    answers = json.loads(out)
    assert answers.pop("uid") != os.getuid()
    assert answers.pop("upload by its content") == 404, "an upload's URL is not its content's digest"
    assert answers == dict.fromkeys(answers, 403), answers
    assert state() == before, "nothing changed"


SQUATTER = r"""
import hashlib, json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, pid, folder = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
canned = json.loads(sys.stdin.readline())


class Squatter(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
                if not size:
                    return b"".join(chunks)
        size = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(size) if size else b""

    def _seen(self):
        body = self._body()
        seen = {"method": self.command, "path": self.path, "sha256": hashlib.sha256(body).hexdigest()}
        print(json.dumps({**seen, "text": body.decode("latin-1")[:2000]}), flush=True)

    def _answer(self, status, body):
        raw = body.encode() if isinstance(body, str) else json.dumps({"success": True, "data": body}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        self._seen()
        route = self.path.split("?")[0]
        if route == "/_sandbox/info":  # what 1644530 trusted: the recorded pid and folder
            info = {"pid": pid, "dataDir": folder, "timeScale": 600.0, "instance": "f" * 32}
            return self._answer(200, info)
        if route in canned:
            return self._answer(200, canned[route])
        self._answer(404, {"statusCode": 404, "message": "Cannot find " + route})

    def do_HEAD(self):
        self._seen()
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_PUT(self):
        self._seen()
        url = f"http://127.0.0.1:{port}/_sandbox/uploads/0.wav"
        self._answer(201, {"url": url, "name": "0.wav", "bytes": 1})

    def do_POST(self):
        self._seen()
        self._answer(201, canned["run"])

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", port), Squatter)
print(json.dumps({"listening": port}), flush=True)
server.serve_forever()
"""


def _canned() -> dict[str, Any]:
    """What the squatter answers like a sandbox: the catalog, and a start."""
    sandbox = Sandbox(SandboxConfig(time_scale=SCALE, seed=1))
    model, models = path("model", id="zonos2"), path("models")

    async def read(where: str) -> str:
        async with httpx.AsyncClient(transport=sandbox.transport(), base_url="http://sandbox.test") as http:
            return (await http.get(where)).text

    import asyncio

    run = {
        "id": "0b8c5d1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e",
        "modelId": "zonos2",
        "status": "processing",
        "output": None,
        "error": None,
        "creditsSpent": 8,
        "createdAt": "2026-09-16T00:00:00Z",
    }
    return {model: asyncio.run(read(model)), models: asyncio.run(read(models)), "run": run}


@as_another_user
@pytest.mark.parametrize("ended", ["stop", "kill -9"])
def test_a_squatter_on_the_recorded_port_gets_no_upload_and_no_start(ended: str, tmp_path: Path) -> None:
    running = kept.ensure(SCALE)
    port = int(running.base_url.rsplit(":", 1)[1])
    if ended == "stop":
        assert kept.stop() is not None  # what mediagen sandbox stop does
    else:
        os.kill(running.pid, signal.SIGKILL)
    wait_until(lambda: not kept._alive(running.pid), 15, "the kept sandbox to end")
    squatter = _as_nobody(
        SQUATTER,
        str(port),
        str(running.pid),
        str(kept.folder().resolve()),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert squatter.stdin is not None and squatter.stdout is not None
        squatter.stdin.write(json.dumps(_canned()) + "\n")
        squatter.stdin.close()
        assert json.loads(squatter.stdout.readline()) == {"listening": port}, "it took the port"
        voice = tmp_path / "voice.wav"
        voice.write_bytes(MediaStore().read_sync("voice.wav")[0])  # type: ignore[index]
        done = run_mediagen(
            "generate",
            "zonos2",
            "text=my private words",
            "audio=./voice.wav",
            "--no-wait",
            env=environment(MEDIAGEN_TIME_SCALE="600"),
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        squatter.send_signal(signal.SIGTERM)
        squatter.wait(timeout=30)
    assert squatter.stdout is not None
    seen_text = squatter.stdout.read()
    seen = [json.loads(line) for line in seen_text.splitlines() if line.startswith('{"method"')]
    assert [(s["method"], s["path"].split("?")[0]) for s in seen] == [("GET", path("sandbox_hello"))], seen
    assert hashlib.sha256(voice.read_bytes()).hexdigest() not in {s["sha256"] for s in seen}
    assert not any("my private words" in s["text"] for s in seen)
    said = f"something else is listening on 127.0.0.1:{port}, not your sandbox; nothing was sent to it"
    assert said in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    moved = kept.find()
    assert moved is not None and moved.base_url != running.base_url, "started on another port"
    assert moved.instance == running.instance, "from its state"
    ledger = httpx.get(moved.base_url + path("sandbox_ledger"), headers=owner(moved)).json()["data"][
        "entries"
    ]
    assert [(e["kind"], e["resource"]) for e in ledger] == [("charge", "generation")], "the start went to it"


def test_mcp_config_shows_the_kept_sandbox_s_key_in_full_and_its_entry_opens_only_mcp(tmp_path: Path) -> None:
    """The kept sandbox, proven the user's own, is the one address whose key ``mcp-config`` prints in
    full (any other, even plain http on loopback, may be a tunnel to the service: test_balance.py). Its
    entry carries the owner's agent token, which opens ``/mcp`` and nothing else."""
    done = run_mediagen("mcp-config", env=environment(MEDIAGEN_TIME_SCALE="600"), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)["mcp_servers"]
    running = kept.find()
    assert running is not None and entry["url"] == running.base_url + path("mcp")
    headers = {header["name"]: header["value"] for header in entry["headers"]}
    assert headers == {"Authorization": f"Bearer {running.demo_key}", ownership.HEADER: running.agent_token}
    listed = httpx.post(
        entry["url"],
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**headers, "Accept": "application/json, text/event-stream"},
        timeout=60,  # its first /mcp loads the MCP SDK
    )
    assert listed.status_code == 200 and len(listed.json()["result"]["tools"]) == 9
    for where in (path("sandbox_ledger"), path("sandbox_info"), path("models")):
        assert httpx.get(running.base_url + where, headers=headers).status_code == 403, where
