"""The agent (MCP) server at ``/mcp``: the official MCP Python SDK's server over streamable HTTP.

We use the SDK's 1.x line (``mcp>=1.24,<2``): it is what agent hosts and Jupyter AI run today, its
client is the one our tests and ``mg.balance()`` drive, and 2.x cannot be installed beside it (one
import name, and it brings ``httpx2``). Hosts on older 1.x clients are served too: the SDK answers in
the protocol version they ask for (1.12's client was tried by hand; a test speaks 2025-03-26). Its
low-level ``Server`` takes our tools' schemas as written (``tools.py``); the session manager runs
stateless with JSON answers, so each HTTP request stands alone, as the service's REST requests do.

In front of the SDK, every request to ``/mcp`` is authenticated (``access.py``: the account's API keys
and agent clients' access tokens) and counted against its credential's 60 requests a minute (a key's
window is the one its REST requests fill); a refusal is the service's error body, and a 401 says where
to sign in (``WWW-Authenticate``). Its body is read as REST's bodies are (``pipeline.py``: 413 past
4 MB, 400 for NaN, nesting past 64 levels or a lone surrogate), and each tool's arguments are checked as
REST checks the same fields (``tools.py``).
"""

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from mediagen_nb._version import __version__
from mediagen_nb.protocol import messages, wire
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.agent import access, tools
from mediagen_nb.sandbox.guard import Hosts
from mediagen_nb.sandbox.pipeline import capped_body, json_body
from mediagen_nb.sandbox.responses import ServiceError, error_response

CALLER = "mediagen.caller"  # the ASGI scope key the endpoint leaves the authenticated caller under
INSTRUCTIONS = (
    "Media generation on one account shared with the REST API and the web app: generate images, video "
    "and audio from the catalog, replicate short videos, make presenter videos from a topic. Every start "
    "is charged from the account's balance; check_usage tells what is left."
)


def _server() -> "Server[Any, Request]":
    server: Server[Any, Request] = Server("mediagen sandbox", version=__version__, instructions=INSTRUCTIONS)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        request = server.request_context.request
        names = request.app.state.world.wire if request is not None else wire.DEFAULT
        return [
            types.Tool(
                name=tool.name,
                description=tool.description,
                inputSchema=tool.input_schema,
                outputSchema=tool.output_schema,
            )
            for tool in tools.spelt(names).values()
        ]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any] | types.CallToolResult:
        request = server.request_context.request
        assert request is not None, "served over HTTP"
        caller: Caller = request.scope[CALLER]
        base_url = str(request.base_url).rstrip("/")
        try:
            return await tools.call(request.app.state.world, caller, base_url, name, arguments)
        except ServiceError as exc:
            body = {
                "statusCode": exc.status,
                "message": exc.message,
                "error": messages.STATUS_NAMES.get(exc.status, "Error"),
            }
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=exc.message)],
                structuredContent=body,
                isError=True,
            )

    return server


def _replay(body: bytes, receive: Receive) -> Receive:
    """The request's body, already read and checked, given to the SDK as if it arrived now; then what
    the connection says next (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


class AgentEndpoint:
    """The ASGI app at ``/mcp``: credential and request limit, then the SDK's streamable HTTP transport."""

    def __init__(self, hosts: Hosts) -> None:
        self.server = _server()
        self.hosts = hosts
        self.manager: StreamableHTTPSessionManager | None = None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve while the sandbox's lifespan runs (the SDK's task group). A session manager runs once,
        so each start of the sandbox (a restart after stop) gets its own. The SDK's own DNS rebinding
        protection checks Host and Origin against the names the sandbox answers to (``guard.py``, which
        checks Host first)."""
        protect, hosts, origins = self.hosts.mcp_settings()
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=protect, allowed_hosts=hosts, allowed_origins=origins
        )
        manager = StreamableHTTPSessionManager(
            app=self.server, stateless=True, json_response=True, security_settings=security
        )
        async with manager.run():
            self.manager = manager
            try:
                yield
            finally:
                self.manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        world = request.app.state.world
        base_url = str(request.base_url).rstrip("/")
        try:
            manager = self.manager
            if manager is None:
                raise ServiceError(503, messages.AGENT_NOT_RUNNING)
            caller = access.authenticate(world, request.headers.get("authorization"))
            if world.requests.acquire(caller.credential) is None:
                raise ServiceError(429, messages.KEY_RATE_LIMIT if caller.key else messages.TOKEN_RATE_LIMIT)
            body = await capped_body(request)  # REST's cap on a body, and its rules of JSON
            if body.strip():
                json_body(body)
        except ServiceError as exc:
            response = error_response(exc.status, exc.message)
            if exc.status == 401:
                response.headers["WWW-Authenticate"] = access.challenge(base_url)
            await response(scope, receive, send)
            return
        scope[CALLER] = caller
        await manager.handle_request(scope, _replay(body, receive), send)
