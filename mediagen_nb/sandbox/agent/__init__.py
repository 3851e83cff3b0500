"""The service's agent (MCP) server, emulated: ``/mcp`` on the sandbox's own address.

* ``server.py``: the official MCP SDK's server over streamable HTTP, behind our credential check and
  request limit; ``tools.py``: the nine tools; ``avatars.py``: what ``create_avatar`` and
  ``avatar_say`` mean; ``usage.py``: ``check_usage``'s figures from the ledger; ``access.py``: who may
  call (API keys, and the minimal OAuth sign-in of agent clients).
* The SDK is an optional extra (``pip install 'mediagen-nb[agent]'``): without it the sandbox serves
  everything else, and ``/mcp`` answers 501 saying how to enable it. The SDK takes a second or more
  of CPU to import (it builds jsonschema's grammars), so a sandbox loads it on its first ``/mcp``
  request (:class:`Loading`), off its event loop: a sandbox no agent calls never pays for it, and
  nothing but that first request waits. A sandbox in a process of its own skips the grammar that is
  most of that cost (``runtime/mcp_sdk.py``).
"""

import asyncio
import contextlib
import importlib
import importlib.util
from collections.abc import AsyncIterator
from typing import Any, Protocol

from starlette.types import Receive, Scope, Send

from mediagen_nb.protocol import messages
from mediagen_nb.sandbox.responses import error_response


class Agent(Protocol):
    """What the app holds at ``app.state.agent``: an ASGI app with a lifespan."""

    def run(self) -> contextlib.AbstractAsyncContextManager[None]: ...

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...


def available() -> bool:
    """Whether the MCP SDK is installed (the ``agent`` extra)."""
    return importlib.util.find_spec("mcp") is not None


class Missing:
    """``/mcp`` without the SDK: a 501 that names the extra to install."""

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(501, messages.AGENT_NEEDS_EXTRA)(scope, receive, send)


class Loading:
    """``/mcp`` with the SDK: its server is imported and started on the first ``/mcp`` request and runs
    until the sandbox's lifespan ends; requests wait until it serves (or answer why it cannot)."""

    def __init__(self) -> None:
        self.endpoint: Agent | None = None
        self.ready: asyncio.Event | None = None  # set once the server runs, or could not load
        self.failure: str | None = None
        self._stop: asyncio.Event | None = None  # set while the lifespan runs
        self._task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        self._stop, self.ready, self.failure, self._task = asyncio.Event(), asyncio.Event(), None, None
        try:
            yield
        finally:
            self._stop.set()
            task, self._task = self._task, None
            if task is not None:
                if not self.ready.is_set():  # still importing: the thread finishes on its own
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self._stop = self.ready = None

    async def _serve(self, ready: asyncio.Event, stop: asyncio.Event, hosts: Any) -> None:
        try:
            module = await asyncio.to_thread(importlib.import_module, "mediagen_nb.sandbox.agent.server")
            endpoint: Agent = module.AgentEndpoint(hosts)
        except Exception as exc:  # a broken install: /mcp says so rather than waiting for ever
            self.failure = f"{messages.AGENT_FAILED}: {type(exc).__name__}: {exc}"[:300]
            ready.set()
            return
        async with endpoint.run():
            self.endpoint = endpoint
            ready.set()
            try:
                await stop.wait()
            finally:
                self.endpoint = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ready, stop = self.ready, self._stop
        if ready is not None and stop is not None:
            if self._task is None:  # the first /mcp request of this lifespan starts the server
                hosts = scope["app"].state.hosts  # the names it answers to: the SDK checks them too
                self._task = asyncio.get_running_loop().create_task(self._serve(ready, stop, hosts))
            await ready.wait()
        if self.endpoint is not None:
            await self.endpoint(scope, receive, send)
        elif self.failure is not None:
            await error_response(500, self.failure)(scope, receive, send)
        else:
            await error_response(503, messages.AGENT_NOT_RUNNING)(scope, receive, send)


def agent() -> Agent:
    """A new agent server for one sandbox app (the SDK's when installed, loaded once it is served)."""
    return Loading() if available() else Missing()


class Mount:
    """The route table's ``/mcp``: hands each request to its app's agent server."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await scope["app"].state.agent(scope, receive, send)
