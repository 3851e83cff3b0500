"""The user's kept sandbox: one background sandbox per user that outlives the process that needed it.

The first process that needs a sandbox (a client with no key) starts it detached, ``python -m
mediagen_nb.sandbox.kept``, with its state, uploads, media and log in the user's data folder
(:func:`folder`); later kernels, notebooks and ``mediagen`` commands find it through ``server.json``
there, checked against ``GET /_sandbox/info`` (the same process, serving the same folder). A lock makes
two processes starting at once get one sandbox. It keeps its port across restarts when it can, so URLs
in old outputs keep working (clients know it by its instance id, not its port); one that died is
started again from its state by the next process that needs it. ``mediagen sandbox status|stop|reset``
manage it.
"""

import argparse
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
from filelock import FileLock

from mediagen_nb import __version__
from mediagen_nb.protocol import tls
from mediagen_nb.protocol.paths import path

# Light on purpose: a client that finds the running sandbox loads none of the server (state.py and the
# server are imported where a sandbox is served or its state deleted).

RECORD = "server.json"  # pid, port, address, time scale and version of the running kept sandbox
LOG = "sandbox.log"  # what the last kept sandbox printed
START_LOCK = "start.lock"
START_TIMEOUT = 60.0  # real seconds a kept sandbox gets to load its state and listen
HOLDER_WAIT = START_TIMEOUT  # real seconds a sandbox holding the folder gets to answer as the kept one
STOP_TIMEOUT = 15.0  # real seconds it gets to save and end before it is killed
INFO_TIMEOUT = 3.0


class KeptSandboxError(RuntimeError):
    """The kept sandbox could not be started, reached or reset; the message names the folder and log."""


@dataclass(frozen=True)
class Running:
    """The kept sandbox as found: where it listens, its process, clock and identity."""

    base_url: str
    pid: int
    time_scale: float
    instance: str  # the identity of its state: the same across restarts, new after a reset
    data_dir: Path
    version: str
    started: bool = False  # started by this call (else found running)

    @property
    def demo_key(self) -> str:
        from mediagen_nb.sandbox.accounts import DEMO_KEY

        return DEMO_KEY


def folder() -> Path:
    """The user's kept sandbox folder: ``sandbox/`` in the user's data folder (``XDG_DATA_HOME`` on Linux)."""
    from platformdirs import user_data_path

    return user_data_path("mediagen_nb") / "sandbox"


def _record(where: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((where / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _get(url: str) -> Any:
    """GET a control of the kept sandbox on loopback (never through a proxy); its ``data``."""
    with httpx.Client(trust_env=False, timeout=INFO_TIMEOUT, verify=tls.context()) as http:
        return http.get(url).raise_for_status().json()["data"]


def find(where: Path | None = None) -> Running | None:
    """The kept sandbox of ``where`` (default :func:`folder`) if it runs and answers, else None."""
    where = (where or folder()).resolve()
    record = _record(where)
    if record is None:
        return None
    try:
        info = _get(str(record["baseUrl"]) + path("sandbox_info"))
        same = info["pid"] == record["pid"] and Path(info["dataDir"]).resolve() == where
        if not same:
            return None  # another process on that port now
        return Running(
            str(record["baseUrl"]),
            int(info["pid"]),
            float(info["timeScale"]),
            str(info["instance"]),
            where,
            str(record.get("version")),
        )
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


def ensure(time_scale: float, where: Path | None = None) -> Running:
    """The running kept sandbox, or one started now (at ``time_scale``) from the folder's state."""
    where = (where or folder()).resolve()
    where.mkdir(parents=True, exist_ok=True)
    with FileLock(where / START_LOCK, timeout=START_TIMEOUT):
        found = find(where) or _slow(where)
        if found is not None and not _older(found.version, __version__):
            return found
        if found is not None:  # started by an older version of the package: ours goes on from its state
            _end(found.pid, where)
        return _spawn(where, time_scale)


def _slow(where: Path) -> Running | None:
    """A sandbox that holds the folder's state but did not answer in time (a busy machine): waited for,
    up to HOLDER_WAIT, rather than a second one started on its state. None when none holds it."""
    deadline = time.monotonic() + HOLDER_WAIT
    while not _released(where):
        found = find(where)
        if found is not None or time.monotonic() > deadline:
            return found
        time.sleep(0.2)
    return None


def _older(version: str, than: str) -> bool:
    """Whether package version ``version`` is older than ``than`` (their leading numbers compared), so
    two versions in use at once never take turns restarting it."""

    def numbers(text: str) -> tuple[int, ...]:
        parts = []
        for part in text.split("."):
            digits = "".join(itertools.takewhile(str.isdigit, part))
            if not digits:
                break
            parts.append(int(digits))
        return tuple(parts)

    return numbers(version) < numbers(than)


def _spawn(where: Path, time_scale: float) -> Running:
    """Start the kept sandbox detached (its own session, its output in the log) and wait until it answers."""
    previous = _record(where)
    port = int(previous["port"]) if previous and isinstance(previous.get("port"), int) else 0
    log = where / LOG
    command = [sys.executable, "-m", __name__, "--data-dir", str(where), "--port", str(port)]
    detached = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    with log.open("w") as output:
        process = subprocess.Popen(
            [*command, "--time-scale", f"{time_scale:g}"],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=where,
            start_new_session=True,
            creationflags=detached,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise KeptSandboxError(f"the kept sandbox did not start: {_last_line(log)} (see {log})")
        found = find(where)
        if found is not None and found.pid == process.pid:
            return replace(found, started=True)
        time.sleep(0.05)
    process.kill()
    raise KeptSandboxError(f"the kept sandbox did not answer within {START_TIMEOUT:g} s (see {log})")


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "it printed nothing"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a child of ours that ended is reaped here)."""
    with contextlib.suppress(ChildProcessError, OSError, AttributeError):  # AttributeError: no WNOHANG
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _released(where: Path) -> bool:
    """Whether no sandbox holds the folder's state (one that ended has saved and let go of it, even while
    it waits, a zombie, for the process that started it to reap it)."""
    from mediagen_nb.sandbox import state

    lock = FileLock(where / state.LOCK, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except TimeoutError:
        return False
    lock.release()
    return True


def _end(pid: int, where: Path) -> None:
    """Ask the kept sandbox to save and end; kill it if it has not within STOP_TIMEOUT."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while _alive(pid) and not _released(where):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
            return
        time.sleep(0.05)


def stop(where: Path | None = None) -> Running | None:
    """End the kept sandbox (its state saved); what was running, or None when nothing was."""
    where = (where or folder()).resolve()
    where.mkdir(parents=True, exist_ok=True)
    with FileLock(where / START_LOCK, timeout=START_TIMEOUT):
        found = find(where)
        if found is not None:
            _end(found.pid, where)
        return found


def reset(where: Path | None = None) -> Running | None:
    """A fresh demo account and no resources (uploads and media stay): through the running sandbox, or
    by deleting the saved state. The running sandbox after the reset, or None."""
    where = (where or folder()).resolve()
    where.mkdir(parents=True, exist_ok=True)
    with FileLock(where / START_LOCK, timeout=START_TIMEOUT):
        found = find(where)
        if found is not None:
            with httpx.Client(trust_env=False, timeout=INFO_TIMEOUT * 10, verify=tls.context()) as http:
                http.post(found.base_url + path("sandbox_reset")).raise_for_status()
            return find(where)
        from mediagen_nb.sandbox import state

        in_use = FileLock(where / state.LOCK, thread_local=False)
        try:
            in_use.acquire(timeout=0)
        except TimeoutError:
            raise KeptSandboxError(
                f"another sandbox is using {where}: stop it first (mediagen sandbox stop)"
            ) from None
        try:
            for suffix in ("", "-wal", "-shm"):
                (where / (state.FILE + suffix)).unlink(missing_ok=True)
        finally:
            in_use.release()
        return None


def status(where: Path | None = None) -> dict[str, Any]:
    """What ``mediagen sandbox status`` shows: address, process, clock, folder, counts and balance."""
    where = (where or folder()).resolve()
    found = find(where)
    if found is None:
        return {"running": False, "dataDir": str(where)}
    info = _get(found.base_url + path("sandbox_info"))
    account = _get(found.base_url + path("sandbox_account"))
    return {
        "running": True,
        "baseUrl": found.base_url,
        "pid": found.pid,
        "timeScale": found.time_scale,
        "dataDir": str(where),
        "instance": found.instance,
        "version": found.version,
        "balance": account["balance"],
        "plan": account["plan"],
        "counts": info["counts"],
    }


def _stop_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    """The detached kept sandbox: serve the folder's state on loopback until stopped (SIGTERM saves)."""
    p = argparse.ArgumentParser(
        prog="python -m mediagen_nb.sandbox.kept",
        description="The user's kept sandbox, served in the background (the client starts it).",
    )
    p.add_argument("--data-dir", type=Path, required=True, help="its state, uploads, media and log")
    p.add_argument("--port", type=int, default=0, help="the port it had (taken: any free one)")
    p.add_argument("--time-scale", type=float, default=30.0, help="simulated seconds per real second")
    args = p.parse_args(argv)
    from mediagen_nb.protocol import sdk
    from mediagen_nb.sandbox.server import Sandbox
    from mediagen_nb.sandbox.state import StateError

    sdk.own_process()
    where = args.data_dir.resolve()
    try:
        sandbox = Sandbox(time_scale=args.time_scale, data_dir=where)
    except StateError as exc:
        print(f"mediagen sandbox: {exc}", flush=True)
        return 1
    try:
        sandbox.start(port=args.port)
    except OSError:
        sandbox.start(port=0)  # its old port is taken: clients know it by its instance id, not its port
    assert sandbox.base_url is not None
    record = {
        "pid": os.getpid(),
        "baseUrl": sandbox.base_url,
        "port": int(sandbox.base_url.rsplit(":", 1)[1]),
        "timeScale": args.time_scale,
        "version": __version__,
        "dataDir": str(where),
        "startedAt": time.time(),
    }
    temp = where / f".{RECORD}.{os.getpid()}"
    temp.write_text(json.dumps(record, indent=1))
    os.replace(temp, where / RECORD)
    print(f"mediagen sandbox: kept sandbox at {sandbox.base_url} (pid {os.getpid()})", flush=True)
    signal.signal(signal.SIGTERM, _stop_signal)
    try:
        sandbox.wait()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second stop does not cut the save short
        sandbox.close()
        print("mediagen sandbox: stopped, state saved", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
