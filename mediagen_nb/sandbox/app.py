"""The sandbox's ASGI app: the route table, the service's error format for unknown paths, hardened
answers (``hardening.py``), who it answers (``guard.py``), a fresh world, and (with a data folder) its
state saved before every response."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mediagen_nb.sandbox.agent import agent
from mediagen_nb.sandbox.guard import Guard, Hosts
from mediagen_nb.sandbox.hardening import Hardened
from mediagen_nb.sandbox.responses import error_response
from mediagen_nb.sandbox.routes import ROUTES
from mediagen_nb.sandbox.world import SandboxConfig, World

# Real seconds a stopping server gives webhook deliveries in flight (each is one attempt, never retried).
DRAIN_SECONDS = 2.0


async def _http_error(request: Request, exc: Exception) -> Response:
    """Unknown paths and wrong methods answer in the service's error format."""
    assert isinstance(exc, HTTPException)
    return error_response(
        exc.status_code, exc.detail if exc.status_code != 404 else "Cannot find " + request.url.path
    )


class Saving:
    """With a data folder: what a request changed is saved before its response starts (so a charge or a
    new resource is on disk before the caller hears of it), and a restored world's timers are set again."""

    def __init__(self, app: ASGIApp, world: World) -> None:
        self.app = app
        self.world = world

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.world.state is None:
            await self.app(scope, receive, send)
            return
        self.world.awake()

        async def saving(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.world.save()
            await send(message)

        await self.app(scope, receive, saving)


@asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    """A served sandbox: its saved timers set again and what they change saved every second; on shutdown,
    webhooks already sent finish their one attempt and the state is saved."""
    world: World = app.state.world
    world.awake()
    saver = asyncio.get_running_loop().create_task(world.keep_saving()) if world.state else None
    async with app.state.agent.run():
        yield
    if saver is not None:
        saver.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await saver
    await world.outbox.drain(DRAIN_SECONDS)
    world.save(clock=True)


def create_app(config: SandboxConfig | None = None) -> Starlette:
    """A new sandbox app with its own state (``app.state.world``)."""
    world = World(config or SandboxConfig())
    hosts = Hosts(world.config.hosts)
    app = Starlette(
        routes=ROUTES,
        exception_handlers={HTTPException: _http_error},
        lifespan=_lifespan,
        # Every answer: nosniff, no script, media only through a proxy; then only requests that name this
        # sandbox (and, with an owner, carry its token) reach a route; what they change is saved first.
        middleware=[Middleware(Hardened), Middleware(Guard, hosts=hosts), Middleware(Saving, world=world)],
    )
    app.state.world = world
    app.state.hosts = hosts  # the names it answers to (Sandbox.start adds its port)
    app.state.agent = agent()  # /mcp: the agent server, answering while the lifespan runs
    return app
