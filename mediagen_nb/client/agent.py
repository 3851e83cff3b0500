"""The service's agent (MCP) server from the client's side: its address, the credential, ``check_usage``.

``check_usage`` is the only place the service tells what an account has left (the REST API has no
balance endpoint), so the client calls that one tool, through the official MCP SDK's own client (its
1.x line, the ``agent`` extra; imported only here, on use). The credential is the client's API key,
booked on the key's request limiter like any request (the call makes three), or, where the agent
server wants OAuth, the access token of a sign-in (``signin.py``) or ``MEDIAGEN_AGENT_TOKEN``.
Sync callers get the same call run on an event loop of its own thread, so a notebook's running loop
is never in the way.
"""

import asyncio
import json
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from mediagen_nb.client import errors
from mediagen_nb.client.config import OWNER_HEADER, BearerAuth, Secret, Settings, on_this_machine
from mediagen_nb.client.core import Core
from mediagen_nb.client.settings import ENV_MCP_URL
from mediagen_nb.client.steps import Op, Pause, Record
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime import tls
from mediagen_nb.runtime.clock import Clock

T = TypeVar("T")
REQUESTS_PER_CALL = (
    3  # initialize, the initialized notification, the tool call (stateless: no GET, no DELETE)
)
TIMEOUT = 60.0
EXTRA = "pip install 'mediagen-nb[agent]'"


@dataclass(frozen=True)
class Usage:
    """``check_usage``'s five fields, as the service tells them."""

    remaining_credits: int
    month_credits: int
    month_runs: int
    month_api_runs: int
    top_up_url: str

    @classmethod
    def parse(cls, data: Any) -> "Usage":
        """The tool's structured result, each field checked; ServiceResponseError names what is wrong."""
        if not isinstance(data, dict):
            raise errors.ServiceResponseError("check_usage answered no structured result")
        fields: dict[str, Any] = {}
        for name, attribute, kind in (
            ("remainingCredits", "remaining_credits", int),
            ("monthCredits", "month_credits", int),
            ("monthRuns", "month_runs", int),
            ("monthApiRuns", "month_api_runs", int),
            ("topUpUrl", "top_up_url", str),
        ):
            value = data.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                wanted = "a whole number" if kind is int else "text"
                raise errors.ServiceResponseError(
                    errors.mask(f"check_usage: {name} is {value!r}, not {wanted}")[:200], field=name
                )
            fields[attribute] = value
        return cls(**fields)


def mcp_url(where: Settings, configured: str | None) -> str:
    """The agent server's address: ``configured`` (``MEDIAGEN_MCP_URL``), else a sandbox's own ``/mcp``."""
    if configured:
        if urlsplit(configured).scheme != "https" and not on_this_machine(configured):
            raise errors.ConfigurationError(
                f"{ENV_MCP_URL} must be an https URL (or http on this machine), not {configured!r}"
            )
        return configured.rstrip("/")
    if where.sandbox or on_this_machine(where.base_url):
        return where.base_url + path("mcp")
    raise errors.ConfigurationError(
        f"no agent (MCP) server address: set {ENV_MCP_URL} to the service's (the spec's "
        "{mcp_url}; the REST API has no balance endpoint, only its check_usage tool tells what is left)"
    )


def _drive(op: Op[T], clock: Clock) -> T:
    """Run ``op`` (limiter bookings: Record and Pause steps) in this thread, pausing on ``clock``."""
    reply: Any = None
    while True:
        try:
            step = op.send(reply)
        except StopIteration as done:
            result: T = done.value
            return result
        reply = None
        if isinstance(step, Record):
            reply = step.fn()
        elif isinstance(step, Pause):
            clock.sleep(step.seconds)


def _in_own_thread(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mediagen-agent") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _sdk() -> tuple[Any, Any]:
    """The MCP SDK's client session and streamable HTTP transport; the extra to install when it is absent."""
    try:
        from mcp import ClientSession
        from mcp.client import streamable_http
    except ImportError:
        raise errors.ConfigurationError(f"the agent server is read through the MCP SDK: {EXTRA}") from None
    return ClientSession, streamable_http


def check_usage(core: Core) -> Usage:
    """``check_usage`` on the agent server of ``core``'s service, with its key or a signed-in token."""
    return _on_agent(core, ask_usage)


def tool_schemas(core: Core) -> dict[str, Any]:
    """Each tool's input schema as the agent server lists it (``tools/list``, free), by tool name: where
    the service shows the names of the topic-to-video start body (``make_video``'s arguments)."""
    return _on_agent(core, ask_tools)


def _on_agent(core: Core, ask: Callable[..., Coroutine[Any, Any, T]]) -> T:
    """``ask(url, credential)`` on the agent server of ``core``'s service, with its key (booked on the key's
    request limiter) or a signed-in token, on an event loop of its own thread."""
    url = mcp_url(core.settings, core.parts.mcp_url())
    _sdk()  # before any request is booked
    token = core.parts.agent_token(url)
    owner = core.settings.owner_token if url.startswith(core.settings.base_url + "/") else None
    if token is not None:
        return _in_own_thread(lambda: ask(url, token, owner=owner))

    def keyed() -> T:
        key = _drive(core.requests("mcp", REQUESTS_PER_CALL), core.clock)
        result: T = asyncio.run(ask(url, key, with_key=True, owner=owner))
        return result

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mediagen-agent") as pool:
        return pool.submit(keyed).result()


async def ask_usage(
    url: str,
    credential: Secret,
    *,
    with_key: bool = False,
    owner: Callable[[], Secret | None] | None = None,
) -> Usage:
    """``check_usage`` on a fresh MCP session; every failure is one of our errors, naming the server.
    ``owner`` gives the owner's token of a sandbox that answers its owner alone."""
    tool = "check_usage"
    result = await _session(url, credential, with_key, owner, lambda session: session.call_tool(tool, {}))
    if result.isError:
        text = result.content[0].text if result.content and hasattr(result.content[0], "text") else tool
        status = (result.structuredContent or {}).get("statusCode")
        raise errors.from_response(status if isinstance(status, int) else 500, _json(text))
    return Usage.parse(result.structuredContent)


async def ask_tools(
    url: str,
    credential: Secret,
    *,
    with_key: bool = False,
    owner: Callable[[], Secret | None] | None = None,
) -> dict[str, Any]:
    """``tools/list`` on a fresh MCP session: each tool's input schema by name."""
    listed = await _session(url, credential, with_key, owner, lambda session: session.list_tools())
    return {tool.name: tool.inputSchema for tool in listed.tools if isinstance(tool.inputSchema, dict)}


async def _session(
    url: str,
    credential: Secret,
    with_key: bool,
    owner: Callable[[], Secret | None] | None,
    ask: Callable[[Any], Any],
) -> Any:
    """``ask(session)`` on a fresh MCP session; every failure is one of our errors, naming the server.
    ``owner`` gives the owner's token of a sandbox that answers its owner alone."""
    client_session, streamable_http = _sdk()
    unreadable: list[Exception] = []

    async def stop_on_failure(message: Any) -> None:
        """What the transport could not read (an answer that is not MCP) ends the session at once; left to
        the SDK, the request would wait for an answer that never comes."""
        if isinstance(message, Exception):
            unreadable.append(message)
            raise message

    auth = BearerAuth(credential, owner)
    try:
        async with (
            httpx.AsyncClient(
                auth=auth, timeout=TIMEOUT, follow_redirects=False, verify=tls.context()
            ) as http,
            streamable_http.streamable_http_client(url, http_client=http) as (read, write, _),
            client_session(read, write, message_handler=stop_on_failure) as session,
        ):
            await session.initialize()
            return await ask(session)
    except BaseException as exc:  # the SDK's task groups wrap what went wrong
        raise _failure(unreadable[0] if unreadable else exc, url, with_key) from None


def _json(text: str) -> bytes:
    return json.dumps({"message": text}).encode()


def _leaves(exc: BaseException) -> list[BaseException]:
    nested = getattr(exc, "exceptions", None)
    if not nested:
        return [exc]
    return [leaf for inner in nested for leaf in _leaves(inner)]


def _failure(exc: BaseException, url: str, with_key: bool) -> BaseException:
    """What went wrong in one line: the server's refusal, an address that cannot be reached, a bad answer."""
    for leaf in _leaves(exc):
        if isinstance(leaf, httpx.HTTPStatusError):
            answer = leaf.response
            try:
                answer.read()
                raw = answer.content
            except (httpx.HTTPError, RuntimeError):
                raw = b""
            if not raw:  # the SDK streamed the answer and closed it unread
                raw = _json(f"the agent server at {url} answered {answer.status_code}")
            error = errors.from_response(answer.status_code, raw)
            if answer.status_code == 401 and with_key:
                return errors.AuthenticationError(
                    401,
                    f"the agent server at {url} refused the API key ({error.message}); if it wants an OAuth "
                    "sign-in instead: mediagen_nb.sign_in() (%mediagen sign-in, mediagen sign-in): open its "
                    "link, then paste the code back",
                )
            return error
        if isinstance(leaf, httpx.TransportError):
            return errors.ConnectionFailed(f"cannot reach the agent server at {url}: {type(leaf).__name__}")
        if isinstance(leaf, (KeyboardInterrupt, asyncio.CancelledError, errors.MediagenError)):
            return leaf
    leaf = _leaves(exc)[0]
    said = errors.mask(f"{type(leaf).__name__}: {(str(leaf).splitlines() or [''])[0]}")[:200]
    return errors.ServiceResponseError(f"the agent server at {url} answered what MCP does not allow ({said})")


def jupyter_ai_entry(
    url: str, credential: str, name: str = "mediagen", owner: str | None = None
) -> dict[str, Any]:
    """Jupyter AI's ``.jupyter/mcp_settings.json`` entry for the agent server (an HTTP server with a bearer
    header: its settings have no reference to an environment variable, so the value is the credential);
    ``owner``: the owner's agent token of a sandbox that answers its owner alone."""
    headers = [{"name": "Authorization", "value": f"Bearer {credential}"}]
    if owner is not None:
        headers.append({"name": OWNER_HEADER, "value": owner})
    return {"type": "http", "name": name, "url": url, "headers": headers}
