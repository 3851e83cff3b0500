"""The sandbox's ASGI app: the route table, the service's error format for unknown paths, hardened
answers (``hardening.py``), a fresh world."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

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


@asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    """On shutdown of a served sandbox, let webhooks already sent finish their one attempt."""
    yield
    await app.state.world.outbox.drain(DRAIN_SECONDS)


def create_app(config: SandboxConfig | None = None) -> Starlette:
    """A new sandbox app with its own state (``app.state.world``)."""
    app = Starlette(
        routes=ROUTES,
        exception_handlers={HTTPException: _http_error},
        middleware=[Middleware(Hardened)],  # every answer: nosniff, no script; media only through a proxy
        lifespan=_lifespan,
    )
    app.state.world = World(config or SandboxConfig())
    return app
