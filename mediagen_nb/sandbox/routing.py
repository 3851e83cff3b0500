"""The request pipeline every service endpoint shares: key, rate limit, injected faults, error bodies."""

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mediagen_nb.protocol import messages
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.responses import ServiceError, bad_request, error_response, too_many

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

# Start calls charge before a 503 fault and refund in the same request; elsewhere a 503 is plain.
START_ROUTES = frozenset({"run", "analyze", "replicate", "job_start", "reedit"})


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


@dataclass
class Ctx:
    """One request as a handler sees it."""

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

    async def body(self) -> dict[str, Any]:
        """The JSON object body; a 400 naming the problem otherwise."""
        raw = await self.request.body()
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except ValueError:
            raise bad_request("Request body must be valid JSON") from None
        if not isinstance(body, dict):
            raise bad_request("Request body must be a JSON object")
        return body


Handler = Callable[[Ctx], Awaitable[Response]]


def service_endpoint(
    route: str, *, authenticated: bool = True
) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    """Wrap a handler in check 1 (key and request limit), fault injection and error rendering."""

    def wrap(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            world: World = request.app.state.world
            fault = None
            try:
                caller = None
                if authenticated:
                    caller = world.accounts.authenticate(request.headers.get("authorization"))
                    if world.requests.acquire(caller.key.id) is None:
                        raise too_many(messages.KEY_RATE_LIMIT)
                fault = world.faults.draw(route)
                if fault == "slow":
                    await asyncio.sleep(world.faults.slow_seconds)
                if fault == "429":
                    raise too_many(messages.KEY_RATE_LIMIT)
                if fault == "500":
                    raise ServiceError(500, messages.SERVER_ERROR)
                if fault == "503" and route not in START_ROUTES:
                    raise ServiceError(503, messages.AT_CAPACITY)
                response = await handler(Ctx(world, request, caller, fault))
            except ServiceError as exc:
                response = error_response(exc.status, exc.message)
            return DroppedResponse() if fault == "drop" else response

        endpoint.__name__ = handler.__name__
        endpoint.__doc__ = handler.__doc__
        return endpoint

    return wrap


def delegate(route: str, service: str, method: str) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of ``route``: the shared pipeline, then ``world.<service>.<method>(ctx)``."""

    async def handler(ctx: Ctx) -> Response:
        return await getattr(getattr(ctx.world, service), method)(ctx)

    handler.__name__ = route
    handler.__doc__ = f"{route}: world.{service}.{method}"
    return service_endpoint(route)(handler)
