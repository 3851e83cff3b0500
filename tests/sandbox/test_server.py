"""The Sandbox handle and the command line: real sockets on 127.0.0.1, clean starts and stops."""

import gc
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest
from _wait import wait_until

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import DEMO_KEY, Sandbox, SandboxConfig

ROOT = Path(__file__).resolve().parents[2]
START = {"modelId": "gpt-image-2", "input": {"prompt": "a paper boat", "quality": "low"}}


def _refused(url: str) -> bool:
    """True when nothing answers at ``url`` any more."""
    try:
        httpx.get(url, timeout=2)
    except httpx.TransportError:
        return True
    return False


def test_start_serves_over_real_http_and_stop_is_idempotent() -> None:
    """start() listens on a free loopback port; stop() closes it and can be called again."""
    sandbox = Sandbox(SandboxConfig(seed=1))
    assert sandbox.base_url is None
    assert sandbox.start() is sandbox
    try:
        base = sandbox.base_url
        assert base is not None and re.fullmatch(r"http://127\.0\.0\.1:\d+", base)
        assert int(base.rsplit(":", 1)[1]) > 0
        with httpx.Client(base_url=base, timeout=10) as client:
            response = client.get(path("models"))
            assert response.status_code == 200
            assert len(response.json()["data"][wire.MODELS_LIST]) == 130
            authed = client.post(
                path("estimate"), json=START, headers={"Authorization": f"Bearer {sandbox.demo_key}"}
            )
            assert authed.status_code == 200
            with pytest.raises(RuntimeError):
                sandbox.start()
    finally:
        sandbox.stop()
    assert sandbox.base_url is None
    assert _refused(base + path("models"))
    sandbox.stop()  # second stop: no error
    assert sandbox.base_url is None


def test_restart_after_stop_keeps_state() -> None:
    """A stopped sandbox can start again (new port), with its world intact."""
    sandbox = Sandbox(SandboxConfig(seed=1))
    with sandbox:
        first = sandbox.base_url
        httpx.post(first + path("sandbox_account"), json={"balance": 1234}, timeout=10)
    with sandbox:
        assert sandbox.base_url is not None
        got = httpx.get(sandbox.base_url + path("sandbox_account"), timeout=10)
        assert got.json()["data"]["balance"] == 1234


def test_stop_does_not_hang_on_a_long_poll() -> None:
    """stop() returns while a long poll is held open (on a manual clock nothing ends it but stop)."""
    sandbox = Sandbox(SandboxConfig(clock="manual", seed=1)).start()
    base, auth = sandbox.base_url, {"Authorization": f"Bearer {sandbox.demo_key}"}
    assert base is not None
    started = httpx.post(base + path("run"), json=START, headers=auth, timeout=10)
    gen_id = started.json()["data"]["id"]
    outcome: list[object] = []

    def long_poll() -> None:
        try:
            outcome.append(
                httpx.get(base + path("generation", id=gen_id), params={"wait": 55}, headers=auth, timeout=30)
            )
        except httpx.TransportError as exc:
            outcome.append(exc)

    poller = threading.Thread(target=long_poll, daemon=True)
    held_until = sandbox.world.clock.now() + 55
    poller.start()
    wait_until(lambda: held_until in sandbox.world.clock.pending(), what="the long poll's hold")
    server_thread = sandbox._thread
    assert server_thread is not None
    try:
        sandbox.stop()
    finally:
        sandbox.stop()
    assert sandbox.base_url is None and _refused(base + path("models"))
    poller.join(10)
    assert not poller.is_alive() and len(outcome) == 1  # the poll was answered or cut, not left hanging
    assert not server_thread.is_alive()


def test_busy_port_fails_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    """start() on a port in use raises OSError, leaks no socket, and the handle can start elsewhere."""
    unraisable: list[object] = []
    gc.collect()  # earlier tests' garbage is collected before the hook listens
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with Sandbox(SandboxConfig(seed=1)) as first:
        assert first.base_url is not None
        port = int(first.base_url.rsplit(":", 1)[1])
        second = Sandbox(SandboxConfig(seed=1))
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)  # an unclosed socket would now be reported
            with pytest.raises(OSError):
                second.start(port=port)
            gc.collect()
        leaks = [
            u
            for u in unraisable
            if "socket" in repr(getattr(u, "object", "")) + repr(getattr(u, "exc_value", ""))
        ]
        assert leaks == [], unraisable
        assert second.base_url is None
        with second:
            assert second.base_url is not None and second.base_url != first.base_url
        assert httpx.get(first.base_url + path("models"), timeout=10).status_code == 200


def test_context_manager() -> None:
    """``with Sandbox(...) as s`` starts, serves and stops."""
    with Sandbox(SandboxConfig(seed=2)) as sandbox:
        base = sandbox.base_url
        assert base is not None
        with httpx.Client(timeout=10) as client:
            info = client.get(base + path("sandbox_info")).json()["data"]
        assert info["seed"] == 2
    assert sandbox.base_url is None
    assert _refused(base + path("models"))


def test_client_env_points_a_client_at_the_served_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variables the sandbox gives out are the ones the client reads: it connects, at its pace."""
    from mediagen_nb.client import Client

    sandbox = Sandbox(SandboxConfig(time_scale=60, seed=1))
    with pytest.raises(RuntimeError, match="start"):
        sandbox.client_env()
    with sandbox:
        for name, value in sandbox.client_env().items():
            monkeypatch.setenv(name, value)
        with Client() as client:
            assert client.base_url == sandbox.base_url and client.clock.scale == 60
            assert client.estimate("gpt-image-2", prompt="a heron", quality="high").credits == 25


def test_repr_hides_the_demo_key() -> None:
    """repr() names where and how the sandbox runs, never the key or the webhook secret."""
    sandbox = Sandbox(SandboxConfig(seed=1, webhook_secret=b"very-secret-bytes"))
    for text in (repr(sandbox), repr(sandbox.config)):
        assert DEMO_KEY not in text and sandbox.demo_key not in text
        assert "very-secret-bytes" not in text
    with sandbox:
        assert sandbox.demo_key not in repr(sandbox)
        assert sandbox.base_url in repr(sandbox)


def _reader(stream: IO[str] | None, lines: "queue.Queue[str]") -> None:
    """Copy the child's output into ``lines`` (a thread, so reads can be bounded by time)."""
    assert stream is not None
    for line in iter(stream.readline, ""):
        lines.put(line)


@pytest.fixture
def cli_process(ctrl_c: None) -> Iterator[tuple[subprocess.Popen[str], "queue.Queue[str]"]]:
    """``python -m mediagen_nb.sandbox --port 0 --time-scale 60 --seed 3``; killed if still alive."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "mediagen_nb.sandbox", "--port", "0", "--time-scale", "60", "--seed", "3"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_reader, args=(process.stdout, lines), daemon=True).start()
    try:
        yield process, lines
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def _read_until(lines: "queue.Queue[str]", marker: str, timeout: float) -> str:
    """Collect output until a line contains ``marker`` (bounded)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        seen.append(line)
        if marker in line:
            return "".join(seen)
    raise AssertionError(f"{marker!r} not printed within {timeout}s; got: {''.join(seen)!r}")


def test_module_cli_serves_and_stops_on_sigint(
    cli_process: tuple[subprocess.Popen[str], "queue.Queue[str]"],
) -> None:
    """The CLI prints its base URL and the demo key, serves, and exits 0 soon after Ctrl-C."""
    process, lines = cli_process
    output = _read_until(lines, "Ctrl-C", timeout=30)
    found = re.search(r"http://127\.0\.0\.1:(\d+)", output)
    assert found is not None, output
    base = found.group(0)
    assert int(found.group(1)) > 0
    assert DEMO_KEY in output
    assert f"MEDIAGEN_BASE_URL={base}" in output
    assert f"MEDIAGEN_API_KEY={DEMO_KEY} " in output and "MEDIAGEN_TIME_SCALE=60 " in output
    with httpx.Client(base_url=base, timeout=10) as client:
        assert len(client.get(path("models")).json()["data"][wire.MODELS_LIST]) == 130
        info = client.get(path("sandbox_info")).json()["data"]
        assert info["seed"] == 3 and info["timeScale"] == 60
        authed = client.post(path("estimate"), json=START, headers={"Authorization": f"Bearer {DEMO_KEY}"})
        assert authed.status_code == 200
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=10) == 0
    assert _refused(base + path("models"))


def test_cli_help() -> None:
    """``mediagen sandbox --help`` exits 0 and documents the options."""
    result = subprocess.run(
        [sys.executable, "-m", "mediagen_nb.cli", "sandbox", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    for option in ("--port", "--time-scale", "--seed", "--allow-private-webhooks"):
        assert option in result.stdout


def test_cli_rejects_a_bad_time_scale() -> None:
    """A non-positive time scale is a usage error, not a traceback."""
    result = subprocess.run(
        [sys.executable, "-m", "mediagen_nb.sandbox", "--port", "0", "--time-scale", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "time-scale" in result.stderr and "Traceback" not in result.stderr


def test_drop_fault_then_idempotent_retry(served: Sandbox) -> None:
    """A dropped connection is a transport error; the retry returns the run created before the drop."""
    base = served.base_url
    assert base is not None
    with httpx.Client(base_url=base, timeout=10) as control:
        plan = control.post(path("sandbox_faults"), json={"script": ["drop"], "routes": ["run"]})
        assert plan.status_code == 200
    headers = {"Authorization": f"Bearer {served.demo_key}", "Idempotency-Key": "drop-retry-1"}
    with (
        httpx.Client(base_url=base, headers=headers, timeout=10) as client,
        pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)),
    ):
        client.post(path("run"), json=START)
    with httpx.Client(base_url=base, headers=headers, timeout=10) as client:
        retry = client.post(path("run"), json=START)
        assert retry.status_code in (200, 201), retry.text
        data = retry.json()["data"]
        ledger = client.get(path("sandbox_ledger")).json()["data"]["entries"]
        faults = client.get(path("sandbox_faults")).json()["data"]
    assert [(e["kind"], e["resourceId"]) for e in ledger] == [("charge", data["id"])]
    assert ledger[0]["credits"] == data["creditsSpent"]
    assert list(served.world.generations.items) == [data["id"]]
    assert faults["injected"] == {"drop": 1}
    assert retry.status_code == 200  # a replay, not a new start


async def _first_generation_id(sandbox: Sandbox) -> str:
    async with httpx.AsyncClient(
        transport=sandbox.transport(),
        base_url="http://sandbox.test",
        headers={"Authorization": f"Bearer {DEMO_KEY}"},
    ) as client:
        started = await client.post(path("run"), json=START)
        assert started.status_code == 201, started.text
        return str(started.json()["data"]["id"])


@pytest.mark.anyio
async def test_ids_differ_between_starts_without_a_seed() -> None:
    """Without a seed every sandbox draws its own, so a restarted one never hands out the same ids
    (a client's ledger would attach old rows to new generations); the seed drawn is shown for replay."""
    first, second = Sandbox(SandboxConfig()), Sandbox(SandboxConfig())
    first_id = await _first_generation_id(first)
    assert first_id != await _first_generation_id(second)
    info = first.world.info()
    assert info["seed"] == first.world.seed and info["seedGiven"] is False
    replay = Sandbox(SandboxConfig(seed=info["seed"]))
    assert await _first_generation_id(replay) == first_id


@pytest.mark.anyio
async def test_ids_repeat_with_the_same_explicit_seed() -> None:
    """An explicit seed replays the same ids, also after a reset."""
    one, two = Sandbox(SandboxConfig(seed=7)), Sandbox(SandboxConfig(seed=7))
    first = await _first_generation_id(one)
    assert first == await _first_generation_id(two)
    one.world.reset()
    assert await _first_generation_id(one) == first
    assert one.world.info()["seedGiven"] is True


@pytest.mark.anyio
async def test_reset_without_a_seed_draws_a_new_one() -> None:
    """A reset sandbox with no explicit seed does not repeat the ids it handed out before."""
    sandbox = Sandbox(SandboxConfig())
    first = await _first_generation_id(sandbox)
    sandbox.world.reset()
    assert await _first_generation_id(sandbox) != first
