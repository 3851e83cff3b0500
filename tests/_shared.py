"""Small things several test modules need: a WAV of quiet sound, a free loopback port, an S3 server,
``mediagen`` run in a process of its own with a newcomer's environment (or called in this one as a process
of its own would run it), a snippet in a fresh Python, and a redis-server on loopback.

Importable from any test module (``from _shared import wav``), as ``_hostile.py`` is.
"""

import dataclasses
import io
import os
import shutil
import socket
import subprocess
import sys
import warnings
import wave
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, TextIO

import httpx
import pytest
from _wait import wait_until

from mediagen_nb.client.transport import SentLate


def wav(seconds: float) -> bytes:
    """A real WAV file of ``seconds`` of quiet sound (8 kHz, mono, 16-bit): media any length meter reads."""
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(8000)
        sound.writeframes(b"\x01\x00" * int(8000 * seconds))
    return out.getvalue()


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment(**settings: str) -> dict[str, str]:
    """This process's environment without any ``MEDIAGEN_`` variable (a newcomer's), with ``settings``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("MEDIAGEN_")}, **settings}


def run_mediagen(
    *argv: str, env: dict[str, str], cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``mediagen ARGV`` in a process of its own; a Python traceback in what it printed fails the test."""
    done = subprocess.run(
        [sys.executable, "-m", "mediagen_nb.cli", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def call_mediagen(*argv: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``mediagen ARGV`` called in this process (``mediagen_nb.cli.main``), as :func:`run_mediagen` runs it
    in a process of its own: the same environment (exactly ``env``) and folder, what it printed on
    standard output and error, the exit status (``SystemExit``'s too), and the same check that no Python
    traceback was printed. A process costs 0.5-1 CPU-s of interpreter and imports per command; where the
    test is about what a command does and says, not the process, this costs none of it.

    The command starts from what a new process has: none of this process's connection, ledgers, budget,
    limits stores, sign-ins or lines said once (``mediagen_nb.client.context.PROCESS`` and the caches
    beside it), Python's default warning filters, warnings printed on its standard error; what it opened
    is closed after it, and this process's state put back. An exception the command does not turn into
    an exit status (a bug: a process would print its traceback) is raised here. What stays a process's
    own: the ledger rows it writes name this process as their writer, which never ends (a sweep resumes
    a gone writer's start, not a running one's), and logging goes to this process's handlers; a test of
    those, of signals, or of what a process loads, runs :func:`run_mediagen`.
    """
    from mediagen_nb.cli import main

    out, err = io.StringIO(), io.StringIO()
    with as_a_new_process(env, cwd, err), redirect_stdout(out), redirect_stderr(err):
        try:
            code: Any = main(list(argv))
        except SystemExit as ended:  # argparse's --help and --version, as the interpreter ends a process
            code = ended.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    done = subprocess.CompletedProcess(["mediagen", *argv], code or 0, out.getvalue(), err.getvalue())
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


# CPython's warning filters in a process started without -W or PYTHONWARNINGS (pytest adds its own).
DEFAULT_FILTERS = [
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
]


@contextmanager
def as_a_new_process(env: dict[str, str], cwd: Path, stderr: TextIO) -> Iterator[None]:
    """This process as a new one would start a command: environment ``env``, folder ``cwd``, none of the
    state the toolkit keeps per process, Python's default warning filters with warnings printed on
    ``stderr``. Everything is put back after (what the command opened is closed first)."""
    from mediagen_nb.client import shared_budget
    from mediagen_nb.client.context import PROCESS, Context
    from mediagen_nb.client.resources import fields
    from mediagen_nb.runtime.mcp_sdk import IRI_GRAMMAR

    kept = {f.name: getattr(PROCESS, f.name) for f in dataclasses.fields(Context)}
    said, holds = set(fields._SAID), dict(shared_budget._opened)
    environ, folder, iri = dict(os.environ), os.getcwd(), sys.modules.get(IRI_GRAMMAR, ABSENT)
    fresh = Context()
    for name in kept:
        setattr(PROCESS, name, getattr(fresh, name))
    fields._SAID.clear()
    shared_budget._opened.clear()
    _set_environ(env)  # only what differs: threads of this process (a served sandbox) may read it
    os.chdir(cwd)
    try:
        with warnings.catch_warnings():  # also forgets what was warned once (the registries)
            warnings.resetwarnings()
            for action, category, module in reversed(DEFAULT_FILTERS):
                warnings.filterwarnings(action, category=category, module=module)

            def show(message: Any, category: Any, filename: str, lineno: int, *_: Any, **__: Any) -> None:
                stderr.write(warnings.formatwarning(message, category, filename, lineno))

            warnings.showwarning = show
            yield
    finally:
        try:
            _close_made(PROCESS)
        finally:
            for name, value in kept.items():
                setattr(PROCESS, name, value)
            fields._SAID.clear()
            fields._SAID.update(said)
            shared_budget._opened.clear()
            shared_budget._opened.update(holds)
            if iri is ABSENT:  # doctor, balance, sandbox: jsonschema's IRI grammar absent (sdk.py)
                sys.modules.pop(IRI_GRAMMAR, None)
            os.chdir(folder)
            _set_environ(environ)


ABSENT = object()


def _set_environ(wanted: dict[str, str]) -> None:
    for name in [n for n in os.environ if n not in wanted]:
        del os.environ[name]
    for name, value in wanted.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _close_made(state: Any) -> None:
    """Close the clients and ledgers a command made (a process would end with them)."""
    if state.client is not None:
        state.client.close()
    if state.async_client is not None:
        from mediagen_nb.batch import loop

        loop.submit(state.async_client.aclose()).result(10)
    for ledger in state.ledgers.values():
        ledger.close()


def fresh_python(code: str, cwd: Path | None = None) -> str:
    """What ``code`` printed, run in a fresh interpreter (what it imports, from nothing); it must exit 0."""
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def moto_s3() -> Iterator[str]:
    """A real S3-compatible server (moto) on a free loopback port, with no bucket: its endpoint URL.

    The test is skipped when moto's server or s3fs is not installed. Where local files go is reset after.
    """
    server_mode = pytest.importorskip(
        "moto.server", reason="moto (with flask) is not installed: pip install -e '.[dev]'"
    )
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    from mediagen_nb.client import uploads

    port = unused_port()
    server = server_mode.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        uploads.uploads(None)
        server.stop()


def start_redis(port: int, folder: Path) -> subprocess.Popen[bytes]:
    """A redis-server at ``port`` on loopback (nothing saved), listening; skips where there is none."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (.ci/run installs it with apt-get)")
    process = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def listening() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False

    try:
        wait_until(listening, 10, "redis-server to listen")
    except AssertionError:
        process.kill()
        raise
    return process


class Written(httpx.AsyncHTTPTransport):
    """httpx's own transport, telling ``seen`` each request it writes to the socket: a request the client
    stopped before a byte left (too late for its slot: ``SentLate``) never reached the service and is
    not told, where httpx's request hook (called before any of that) would count it."""

    def __init__(self, seen: Callable[[httpx.Request], None], **options: Any) -> None:
        super().__init__(**options)
        self.seen = seen

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await super().handle_async_request(request)
        except SentLate:
            raise
        except BaseException:
            self.seen(request)  # it may have been written (a broken connection): count it
            raise
        self.seen(request)
        return response
