"""The user's kept sandbox: one background sandbox per user that outlives the process that needed it.

The first process that needs a sandbox (a client with no key) starts it detached, ``python -m
mediagen_nb.sandbox.kept``, with its state, uploads, media and log in the user's data folder
(:func:`folder`); later kernels, notebooks and ``mediagen`` commands find it through ``server.json``
there. A lock makes two processes starting at once get one sandbox. It keeps its port across restarts
when it can, so URLs in old outputs keep working (clients know it by its instance id, not its port);
one that died is started again from its state by the next process that needs it. ``mediagen sandbox
status|stop|reset`` manage it.

It answers its owner alone (``protocol/ownership.py``, ``guard.py``): the folder and every file in it
are the user's alone (0700, 0600), its secret is made there at its first start, and before anything is
sent to the server on the recorded port, :func:`prove` checks it holds that secret (a challenge only the
secret answers, the secret never sent). A server that cannot is something else (another user's process
on a freed port): one line says so, nothing is sent to it, and the kept sandbox starts on another port.
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
from filelock import FileLock

from mediagen_nb._version import __version__
from mediagen_nb.protocol import ownership
from mediagen_nb.protocol.environment import ENV_SANDBOX_HOSTS
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime import tls

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


class NotYours(KeptSandboxError):
    """The server on the recorded port did not prove it holds the user's secret: nothing is sent to it."""


@dataclass(frozen=True)
class Running:
    """The kept sandbox as found, proven the user's own: where it listens, its process, clock, identity,
    and what its requests carry (made from the secret; never shown in a repr)."""

    base_url: str
    pid: int
    time_scale: float
    instance: str  # the identity of its state: the same across restarts, new after a reset
    data_dir: Path
    version: str
    token: str = field(repr=False)  # the owner's session token of this process of it (its boot)
    demo_key: str = field(repr=False)  # the owner's own demo key (the public one does not work on it)
    agent_token: str = field(repr=False)  # what an agent client's settings hold (good at /mcp only)
    started: bool = False  # started by this call (else found running)

    @property
    def headers(self) -> dict[str, str]:
        """The header that makes a request the owner's (with the demo key, a request of its account)."""
        return {ownership.HEADER: self.token}


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


def _get(url: str, headers: dict[str, str] | None = None) -> Any:
    """GET a control of the kept sandbox on loopback (never through a proxy); its ``data``."""
    with httpx.Client(trust_env=False, timeout=INFO_TIMEOUT, verify=tls.context()) as http:
        return http.get(url, headers=headers).raise_for_status().json()["data"]


def prove(base_url: str, secret: bytes, where: Path, version: str = "") -> Running:
    """The kept sandbox at ``base_url``, once it has proven it holds ``secret`` and serves ``where``.

    A fresh challenge goes to ``GET /_sandbox/hello``; only a server that holds the secret can answer it
    (an HMAC over the challenge, the port it listens on, the folder and its boot id), and nothing else
    is sent before it has. NotYours when the server answers but not so; httpx's error when nothing
    answers at all.
    """
    port = int(base_url.rsplit(":", 1)[1])
    challenge = ownership.new_challenge()
    with httpx.Client(trust_env=False, timeout=INFO_TIMEOUT, verify=tls.context()) as http:
        try:
            hello = http.get(base_url + path("sandbox_hello"), params={"challenge": challenge})
            answer = hello.json()["data"] if hello.status_code == 200 else {}
            boot, given = str(answer["boot"]), str(answer["proof"])
        except (ValueError, KeyError, TypeError) as exc:
            raise NotYours(_not_yours(base_url)) from exc
        if not ownership.BOOT.fullmatch(boot) or not ownership.same(
            given, ownership.proof(secret, challenge, port, where, boot)
        ):
            raise NotYours(_not_yours(base_url))
        token = ownership.session_token(secret, boot)
        info = http.get(base_url + path("sandbox_info"), headers={ownership.HEADER: token})
        data = info.raise_for_status().json()["data"]
    if Path(data["dataDir"]).resolve() != where:
        raise NotYours(_not_yours(base_url))
    return Running(
        base_url,
        int(data["pid"]),
        float(data["timeScale"]),
        str(data["instance"]),
        where,
        version,
        token=token,
        demo_key=ownership.demo_key(secret),
        agent_token=ownership.agent_token(secret),
    )


def _not_yours(base_url: str) -> str:
    return (
        f"something else is listening on {base_url.removeprefix('http://')}, not your sandbox; nothing was "
        "sent to it"
    )


def _look(where: Path) -> tuple[Running | None, NotYours | None]:
    """The proven kept sandbox of ``where``, or why the server on its recorded port is not it."""
    record = _record(where)
    try:
        secret = ownership.read_secret(where)
    except ownership.NotPrivate as exc:
        raise KeptSandboxError(str(exc)) from None
    if record is None or secret is None:
        return None, None
    try:
        return prove(str(record["baseUrl"]), secret, where, str(record.get("version"))), None
    except NotYours as exc:
        return None, exc
    except (httpx.HTTPError, ValueError, KeyError, TypeError, IndexError):
        return None, None  # nothing answers there (it stopped), or not as a sandbox does


def find(where: Path | None = None) -> Running | None:
    """The kept sandbox of ``where`` (default :func:`folder`) if it runs and proves it is the user's."""
    return _look((where or folder()).resolve())[0]


def ensure(time_scale: float, where: Path | None = None) -> Running:
    """The running kept sandbox, or one started now (at ``time_scale``) from the folder's state.

    When the server on the recorded port is not the user's (it cannot prove it), one line on stderr
    says so and the kept sandbox starts on another port; nothing is sent to that server.
    """
    where = _private((where or folder()).resolve())
    with FileLock(where / START_LOCK, timeout=START_TIMEOUT, mode=ownership.PRIVATE_FILE):
        ownership.secret(where)  # made at the first start, read by the sandbox it starts
        found, other = _look(where)
        if found is None:
            older = _older_holder(where)
            if older is not None:  # an earlier version of ours, which cannot prove itself: ours goes on
                _end(older, where)
                other = None  # it was the user's own: the port is theirs again
            elif other is None:
                found = _slow(where)
        if found is not None and not _older(found.version, __version__):
            return found
        if found is not None:  # started by an older version of the package: ours goes on from its state
            _end(found.pid, where)
        if other is not None:
            print(f"mediagen_nb: {other}; your sandbox starts on another port", file=sys.stderr)
        return _spawn(where, time_scale, new_port=other is not None)


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


def _private(where: Path) -> Path:
    """The kept sandbox's folder, the user's alone (0700; the default one's parent too, the package's data
    folder, which holds the ledger); what an earlier version left more open is closed (files 0600)."""
    try:
        if where == folder().resolve():
            ownership.private_folder(where.parent)
        ownership.private_folder(where)
    except ownership.NotPrivate as exc:
        raise KeptSandboxError(str(exc)) from None
    ownership.private_tree(where)
    return where


def _older_holder(where: Path) -> int | None:
    """The pid of a kept sandbox of an earlier version holding the folder's state (it cannot prove
    itself, having no secret): the recorded process, when it holds the state's lock, is the user's own and
    runs this module. None otherwise (and where processes cannot be read: not Linux)."""
    record = _record(where)
    if record is None or not isinstance(record.get("pid"), int) or _released(where):
        return None
    pid = int(record["pid"])
    proc = Path("/proc") / str(pid)
    try:
        owner = proc.stat().st_uid
        command = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    if owner != os.getuid() or __name__.encode() not in command:
        return None
    try:
        hello = httpx.get(
            str(record["baseUrl"]) + path("sandbox_hello"), timeout=INFO_TIMEOUT, trust_env=False
        )
    except httpx.HTTPError:
        return None
    return pid if hello.status_code == 404 and "Cannot find" in hello.text else None


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


def _spawn(where: Path, time_scale: float, *, new_port: bool = False) -> Running:
    """Start the kept sandbox detached (its own session, its output in the log) and wait until it answers
    (on its recorded port unless ``new_port``: something else holds that one)."""
    previous = _record(where)
    port = int(previous["port"]) if previous and isinstance(previous.get("port"), int) else 0
    log = where / LOG
    command = [
        sys.executable,
        "-m",
        __name__,
        "--data-dir",
        str(where),
        "--port",
        str(0 if new_port else port),
    ]
    detached = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, ownership.PRIVATE_FILE)
    with os.fdopen(descriptor, "w") as output:
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
        record = _record(where)  # asked only once it has written where it listens (not the old port)
        found = find(where) if record is not None and record.get("pid") == process.pid else None
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

    lock = FileLock(where / state.LOCK, thread_local=False, mode=ownership.PRIVATE_FILE)
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
    where = _private((where or folder()).resolve())
    with FileLock(where / START_LOCK, timeout=START_TIMEOUT, mode=ownership.PRIVATE_FILE):
        found = find(where)
        if found is not None:
            _end(found.pid, where)
        return found


def reset(where: Path | None = None) -> Running | None:
    """A fresh demo account and no resources (uploads and media stay): through the running sandbox, or
    by deleting the saved state. The running sandbox after the reset, or None."""
    where = _private((where or folder()).resolve())
    with FileLock(where / START_LOCK, timeout=START_TIMEOUT, mode=ownership.PRIVATE_FILE):
        found = find(where)
        if found is not None:
            with httpx.Client(trust_env=False, timeout=INFO_TIMEOUT * 10, verify=tls.context()) as http:
                http.post(found.base_url + path("sandbox_reset"), headers=found.headers).raise_for_status()
            return find(where)
        from mediagen_nb.sandbox import state

        in_use = FileLock(where / state.LOCK, thread_local=False, mode=ownership.PRIVATE_FILE)
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
    info = _get(found.base_url + path("sandbox_info"), found.headers)
    account = _get(found.base_url + path("sandbox_account"), found.headers)
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


def _hosts() -> tuple[str, ...]:
    """Names the kept sandbox answers to besides its loopback address (``MEDIAGEN_SANDBOX_HOSTS``)."""
    from mediagen_nb.sandbox.guard import Hosts

    return Hosts.parse(os.environ.get(ENV_SANDBOX_HOSTS))


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
    from mediagen_nb.runtime import mcp_sdk
    from mediagen_nb.sandbox.server import Sandbox
    from mediagen_nb.sandbox.state import StateError

    mcp_sdk.own_process()
    if hasattr(os, "umask"):
        os.umask(0o077)  # every file it makes from here on (state, media, uploads, their index) is 0600
    where = args.data_dir.resolve()
    try:
        ownership.private_folder(where)
        secret = ownership.read_secret(where)
        if secret is None:
            raise ownership.NotPrivate(f"{where} holds no {ownership.SECRET_FILE}: the client makes it")
        hosts = _hosts()
        sandbox = Sandbox(time_scale=args.time_scale, data_dir=where, secret=secret, hosts=hosts)
    except (StateError, ownership.NotPrivate) as exc:
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
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, ownership.PRIVATE_FILE)
    with os.fdopen(descriptor, "w") as out:
        out.write(json.dumps(record, indent=1))
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
