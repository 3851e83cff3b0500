"""A handle on one sandbox: in-process through ``httpx.ASGITransport``, or served by uvicorn on loopback."""

import asyncio
import logging
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_BASE_URL, ENV_KEY, ENV_TIME_SCALE, ENV_WIRE
from mediagen_nb.protocol.ownership import HEADER
from mediagen_nb.runtime.clock import ManualClock, SteppingClock
from mediagen_nb.sandbox.app import create_app
from mediagen_nb.sandbox.guard import IN_PROCESS
from mediagen_nb.sandbox.pipeline import DroppedConnection
from mediagen_nb.sandbox.world import SandboxConfig, World

START_TIMEOUT = 15.0
STOP_GRACE = 2.0  # real seconds in-flight requests get to finish when the sandbox stops
WAIT_POLL = 0.2  # real seconds between checks that a served sandbox still runs


class _ExpectedErrors(logging.Filter):
    """Keeps out of uvicorn's log what the sandbox does on purpose: a request cut off by ``stop()`` (its
    task cancelled) and a connection closed by an injected ``drop`` fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, (asyncio.CancelledError, DroppedConnection))


def _quiet_uvicorn_log() -> None:
    """Install the filter once, when a server first starts (not on import)."""
    log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _ExpectedErrors) for f in log.filters):
        log.addFilter(_ExpectedErrors())


class Sandbox:
    """One sandbox and its state. ``transport()`` for in-process use, ``start()`` for real HTTP.

    ``data_dir=`` keeps its state in that folder (it goes on from a state saved there; :meth:`close`
    lets another sandbox use the folder); without one it lives in memory. ``wire=`` (a names file, or
    :class:`~mediagen_nb.protocol.wire.Names`) spells the names the spec does not show otherwise;
    ``catalog=`` serves a snapshot folder of a service's catalog (``mediagen sandbox sync``).

    ``clock="manual"`` runs it on virtual time, which stands still until :meth:`advance` (or ``POST
    /_sandbox/clock``) moves it: a generation stays ``processing`` until its run time has been advanced
    past. Tests give their clients :meth:`stepping_clock` (``Client.for_sandbox`` does), so a client's
    waits move the sandbox's time instead of waiting for it.
    """

    def __init__(self, config: SandboxConfig | None = None, **options: Any) -> None:
        if config is not None and options:
            raise TypeError("give either a SandboxConfig or keyword options, not both")
        if isinstance(options.get("data_dir"), str):
            options["data_dir"] = Path(options["data_dir"])
        self.wire_file: Path | None = None  # the names file it speaks, for clients to read too
        if isinstance(options.get("wire"), (str, Path)):
            self.wire_file = Path(options["wire"]).expanduser().resolve()
            options["wire"] = wire.load(self.wire_file)[0]
        elif options.get("wire") is None:
            options.pop("wire", None)
        if isinstance(options.get("catalog"), str):
            options["catalog"] = Path(options["catalog"])
        self.config = config or SandboxConfig(**options)
        self.app = create_app(self.config)
        self.world: World = self.app.state.world
        self.demo_key = self.world.demo_key  # the public demo key, or with a secret the owner's own
        self.base_url: str | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        where = self.base_url or "in-process"
        clock = "manual" if self.config.clock == "manual" else f"time_scale={self.config.time_scale:g}"
        return f"<Sandbox {where} {clock} seed={self.world.seed}>"

    def client_env(self, key: str | None = None) -> dict[str, str]:
        """The environment that points a process's client at this served sandbox (with ``key``, else
        the demo key), at this sandbox's time scale so the client paces itself to its clock."""
        if self.base_url is None:
            raise RuntimeError("the sandbox is not served: start() it first")
        env = {
            ENV_BASE_URL: self.base_url,
            ENV_KEY: key if key is not None else self.demo_key,
            ENV_TIME_SCALE: f"{self.config.time_scale:g}",
        }
        if self.wire_file is not None:
            env[ENV_WIRE] = str(self.wire_file)
        return env

    @property
    def owner_headers(self) -> dict[str, str]:
        """The header that makes a request its owner's, for a sandbox with a secret (empty without one)."""
        owner = self.world.owner
        return {HEADER: owner.session} if owner is not None else {}

    def advance(self, seconds: float) -> None:
        """Move simulated time forward by ``seconds``; returns once the timers it passed have fired."""
        self.world.clock.advance(seconds)

    def stepping_clock(self) -> SteppingClock:
        """A clock for this manual sandbox's clients: each pause of ``s`` advances the sandbox by ``s``.

        From then on the sandbox's holds move its clock too (a long poll with ``wait=30`` advances it,
        timer by timer, until its generation settles or 30 s have passed): nothing else moves it.
        """
        clock = self.world.clock
        if not isinstance(clock, ManualClock):
            raise RuntimeError('only a sandbox on a manual clock can be stepped: Sandbox(clock="manual")')
        clock.jump_holds = True
        return SteppingClock(clock)

    def in_process(self) -> ASGIApp:
        """The app as code in this process calls it (no browser can come this way, so its requests may
        name the sandbox as they like, ``http://sandbox.test``: the Host check is for a served sandbox;
        the owner's token is still asked for)."""
        app = self.app

        async def in_process(scope: Scope, receive: Receive, send: Send) -> None:
            await app({**scope, IN_PROCESS: True}, receive, send)

        return in_process

    def transport(self) -> httpx.ASGITransport:
        """An httpx transport that calls the app directly (async clients only): :meth:`in_process`."""
        return httpx.ASGITransport(app=self.in_process())

    def start(self, port: int = 0, host: str = "127.0.0.1") -> "Sandbox":
        """Serve on ``host:port`` (0 = a free port) from a background thread; returns when listening."""
        if self._thread is not None:
            raise RuntimeError("this sandbox is already running at " + str(self.base_url))
        _quiet_uvicorn_log()
        # IPPROTO_TCP, not 0: only then does asyncio set TCP_NODELAY on accepted connections (no 40 ms stall)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()  # a busy port: do not leak the socket
            raise
        port = sock.getsockname()[1]
        self.app.state.hosts.serve(host, port)  # the names it answers to, before it answers anything
        server = uvicorn.Server(
            uvicorn.Config(
                self.app, log_level="warning", lifespan="on", timeout_keep_alive=30, date_header=False
            )
        )
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="mediagen-sandbox", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                sock.close()
                raise RuntimeError(f"the sandbox did not start on {host}:{port}")
            time.sleep(0.01)
        self._server, self._thread = server, thread
        self.base_url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (its state saved); safe to call twice."""
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(STOP_GRACE)
        if self._thread.is_alive():
            # Requests still in flight (a long poll holds up to 55 simulated seconds): do not wait for them.
            self._server.force_exit = True
            self._thread.join(START_TIMEOUT)
        self._server = self._thread = None
        self.base_url = None
        self.world.save(clock=True)

    def close(self) -> None:
        """Stop serving, save the state and let another sandbox use the data folder."""
        self.stop()
        self.world.close()

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C raises KeyboardInterrupt here, between short sleeps).

        Not ``join()``: on Python 3.11 an exception raised by a signal handler inside ``join()`` marks
        the thread stopped while it still runs, and ``stop()`` would then not wait for the server.
        """
        while self._thread is not None and self._thread.is_alive():
            time.sleep(WAIT_POLL)

    def __enter__(self) -> "Sandbox":
        return self if self.base_url else self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
