"""The service's agent (MCP) server, emulated: ``/mcp`` on the sandbox's own address.

* ``server.py``: the official MCP SDK's server over streamable HTTP, behind our credential check and
  request limit; ``tools.py``: the nine tools; ``avatars.py``: what ``create_avatar`` and
  ``avatar_say`` mean; ``usage.py``: ``check_usage``'s figures from the ledger; ``access.py``: who may
  call (API keys, and the minimal OAuth sign-in of agent clients).
* The SDK is an optional extra (``pip install 'mediagen-nb[agent]'``): without it the sandbox serves
  everything else, and ``/mcp`` answers 501 saying how to enable it. Nothing here loads the SDK until
  a sandbox app is made.
"""

import contextlib
import importlib.util
from collections.abc import AsyncIterator
from typing import Protocol

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


def agent() -> Agent:
    """A new agent server for one sandbox app (the SDK's when installed)."""
    if not available():
        return Missing()
    from mediagen_nb.sandbox.agent.server import AgentEndpoint

    return AgentEndpoint()


class Mount:
    """The route table's ``/mcp``: hands each request to its app's agent server."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await scope["app"].state.agent(scope, receive, send)
