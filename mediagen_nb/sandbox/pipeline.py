"""The request pipeline every endpoint shares: key, rate limit, injected faults, error bodies, and bounds.

A handler sees one request as an :class:`Incoming`; this module is the only place that draws HTTP faults,
so the backends get what a fault means as a plain argument (``at_capacity``) and never the fault. It
is also the one place that caps a JSON body (before reading it whole) and that keeps web pages of
other sites away from the ``/_sandbox/`` controls.
"""

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mediagen_nb.protocol import messages
from mediagen_nb.sandbox import nesting
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.lifecycle import idempotency_key
from mediagen_nb.sandbox.responses import ServiceError, bad_request, error_response, too_many

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

MAX_JSON_DEPTH = nesting.MAX_DEPTH  # deeper bodies are refused before any handler
# No JSON body of the service or of a control comes near this (a 10,000-character prompt is 10 kB); a
# larger one is refused from its Content-Length, or as soon as that much has arrived, and never kept.
MAX_JSON_BYTES = 4 * 2**20


class DroppedConnection(httpx.RemoteProtocolError):
    """Raised mid-response by a ``drop`` fault: over HTTP the socket closes with the body incomplete;
    in-process (``httpx.ASGITransport``) the client sees this same transport error."""


class DroppedResponse(Response):
    """Starts a response, sends part of it, then drops the connection."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", b"256")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b'{"success": true, "da', "more_body": True})
        raise DroppedConnection("Server disconnected without completing the response (injected drop fault)")


def _not_a_number(literal: str) -> float:
    raise ValueError(f"{literal} is not a JSON number")


def _finite(literal: str) -> float:
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{literal} is too large a number")
    return value


def _check_tree(body: Any) -> None:
    """Refuse bodies nested deeper than ``MAX_JSON_DEPTH`` and strings that are not Unicode text."""
    stack: list[tuple[Any, int]] = [(body, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise bad_request(messages.body_too_deep(MAX_JSON_DEPTH))
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise bad_request(messages.BODY_NOT_TEXT) from None
        elif isinstance(value, dict):
            stack.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


def declared_length(request: Request) -> int | None:
    """The body length the request declares (``Content-Length``), None when it declares none."""
    declared = request.headers.get("content-length", "")
    return int(declared) if declared.isdigit() else None


async def capped_body(request: Request, limit: int = MAX_JSON_BYTES) -> bytes:
    """The request's body, refused with a 413 as soon as it is declared or read past ``limit`` bytes."""
    declared = declared_length(request)
    if declared is not None and declared > limit:
        raise ServiceError(413, messages.body_too_large(limit))
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ServiceError(413, messages.body_too_large(limit))
        chunks.append(chunk)
    return b"".join(chunks)


async def json_object(request: Request) -> dict[str, Any]:
    """The request's JSON object body (``{}`` when empty); a 400 (413 past the cap) naming the problem."""
    raw = await capped_body(request)
    if not raw.strip():
        return {}
    body = json_body(raw)
    if not isinstance(body, dict):
        raise bad_request(messages.BODY_NOT_OBJECT)
    return body


def json_body(raw: bytes) -> Any:
    """A JSON body as every body the sandbox takes is read (REST's and the agent server's): NaN and
    Infinity, nesting past ``MAX_JSON_DEPTH`` and lone surrogates refused with a 400 naming them."""
    try:
        body = json.loads(raw, parse_constant=_not_a_number, parse_float=_finite)
    except RecursionError:
        raise bad_request(messages.body_too_deep(MAX_JSON_DEPTH)) from None
    except ValueError as exc:  # also bad UTF-8 and integers too long to read
        raise bad_request(messages.body_not_json(_reason(exc))) from None
    _check_tree(body)
    return body


def _reason(exc: ValueError) -> str:
    """The first clause of a JSON parse error, without the position noise of long inputs."""
    return str(exc).split(":", 1)[0][:120] or type(exc).__name__


@dataclass(frozen=True)
class Incoming:
    """One service request as a handler sees it: the world, the request, who made it, the fault drawn."""

    world: "World"
    request: Request
    caller: Caller | None
    fault: str | None

    @property
    def base_url(self) -> str:
        return str(self.request.base_url).rstrip("/")

    @property
    def who(self) -> Caller:
        assert self.caller is not None, "authenticated endpoint"
        return self.caller

    @property
    def at_capacity(self) -> bool:
        """A ``503`` fault on a start: the model cannot take the job after the charge."""
        return self.fault == "503"

    def path(self, name: str) -> str:
        return str(self.request.path_params[name])

    def idempotency_key(self) -> str | None:
        """The ``Idempotency-Key`` header (an empty one is none), checked as every door checks a key."""
        return idempotency_key(self.request.headers.get("idempotency-key") or None, "Idempotency-Key")

    async def json(self) -> dict[str, Any]:
        return await json_object(self.request)


Handler = Callable[[Incoming], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]


def service_endpoint(
    route: str, handler: Handler, *, authenticated: bool = True, start: bool = False
) -> Endpoint:
    """``handler`` behind check 1 (key and request limit), fault injection and error rendering.

    ``route`` is the endpoint's name in ``protocol.paths`` (what a fault plan's ``routes`` lists). On a
    ``start`` route a ``503`` fault reaches the handler as :attr:`Incoming.at_capacity`, so the backend can
    charge and refund in the same request as the spec describes; elsewhere it is a plain 503.
    """

    async def endpoint(request: Request) -> Response:
        world: World = request.app.state.world
        fault = None
        try:
            caller = None
            if authenticated:
                caller = world.accounts.authenticate(request.headers.get("authorization"))
                if world.requests.acquire(caller.credential) is None:
                    raise too_many(messages.KEY_RATE_LIMIT)
            fault = world.faults.draw(route)
            if fault == "slow":
                await world.clock.wait(world.faults.slow_seconds * world.clock.scale)
            if fault == "429":
                raise too_many(messages.KEY_RATE_LIMIT)
            if fault == "500":
                raise ServiceError(500, messages.SERVER_ERROR)
            if fault == "503" and not start:
                raise ServiceError(503, messages.AT_CAPACITY)
            response = await handler(Incoming(world, request, caller, fault))
        except ServiceError as exc:
            response = error_response(exc.status, exc.message)
        if fault == "drop":
            return DroppedResponse()
        # The service's clock, as every origin server with one says it (RFC 9110): the time its answers'
        # createdAt are written in, so a client can tell a start created before it asked (a replay).
        response.headers["date"] = formatdate(world.clock.now(), usegmt=True)
        return response

    endpoint.__name__ = handler.__name__
    endpoint.__doc__ = handler.__doc__
    return endpoint


# Sandbox controls change money and keys; a web page of another site must never drive them (its
# script could reset a balance with a form post). Browsers say where a request comes from.
OTHER_SITES = frozenset({"cross-site", "same-site"})
FROM_ANOTHER_SITE = (
    "Sandbox controls refuse requests from web pages of other sites; call them from code "
    "(httpx, curl) or open them from the sandbox's own address"
)


def from_another_site(request: Request) -> bool:
    """A browser request made by a page of another site (``Sec-Fetch-Site``), or from another origin.

    Code (httpx, curl) sends neither header, so it is never refused; a page's request to its own
    origin says ``same-origin`` (and an ``Origin`` equal to the sandbox's own address).
    """
    if request.headers.get("sec-fetch-site", "").lower() in OTHER_SITES:
        return True
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
    return origin is not None and origin.lower().rstrip("/") != own


def control_endpoint(handler: Endpoint, *, key: bool = False, browsers: bool = False) -> Endpoint:
    """A ``/_sandbox/`` handler whose refusals render like the service's (no faults, no request limit).

    With ``key`` the account's key is required (the spec's 401s); unless ``browsers``, a request from
    a web page of another site is refused (403). Media reads take ``browsers=True``: pages of any site
    show them in ``<img>``, ``<audio>`` and ``<video>``.
    """

    async def endpoint(request: Request) -> Response:
        try:
            if not browsers and from_another_site(request):
                raise ServiceError(403, FROM_ANOTHER_SITE)
            if key:
                request.app.state.world.accounts.authenticate(request.headers.get("authorization"))
            return await handler(request)
        except ServiceError as exc:
            return error_response(exc.status, exc.message)

    endpoint.__name__ = handler.__name__
    endpoint.__doc__ = handler.__doc__
    return endpoint
