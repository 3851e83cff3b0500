"""The sandbox's ASGI app: every route of the service's three roots plus the ``/_sandbox/`` controls."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mediagen_nb.protocol.paths import GENERATION_ROOT, PATHS, REPLICATION_ROOT, SANDBOX_ROOT, TOPIC_ROOT
from mediagen_nb.sandbox import catalog_api, control, generations, replication, topic_video
from mediagen_nb.sandbox.responses import error_response
from mediagen_nb.sandbox.world import SandboxConfig, World

# Share-page names hold a slash (``r/<run id>``).
_CONVERTERS = {"sandbox_app": ("{page}", "{page:path}")}


def _path(name: str) -> str:
    template = PATHS[name]
    if name in _CONVERTERS:
        template = template.replace(*_CONVERTERS[name])
    return template


async def _index(request: Request) -> Response:
    """GET /: what this server is and where its roots are."""
    base = str(request.base_url).rstrip("/")
    return JSONResponse(
        {
            "service": "mediagen sandbox",
            "roots": {
                "generation": base + GENERATION_ROOT,
                "replication": base + REPLICATION_ROOT,
                "topicToVideo": base + TOPIC_ROOT,
                "sandbox": base + SANDBOX_ROOT,
            },
        }
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    """Unknown paths and wrong methods answer in the service's error format."""
    assert isinstance(exc, HTTPException)
    return error_response(
        exc.status_code, exc.detail if exc.status_code != 404 else "Cannot find " + request.url.path
    )


# Real seconds a stopping server gives webhook deliveries in flight (each is one attempt, never retried).
DRAIN_SECONDS = 2.0


@asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    """On shutdown of a served sandbox, let webhooks already sent finish their one attempt."""
    yield
    await app.state.world.outbox.drain(DRAIN_SECONDS)


def create_app(config: SandboxConfig | None = None) -> Starlette:
    """A new sandbox app with its own state (``app.state.world``)."""
    routes: list[Any] = [Route("/", _index, methods=["GET"])]
    for module in (catalog_api, generations, replication, topic_video):
        routes += [Route(_path(name), endpoint, methods=[method]) for name, method, endpoint in module.ROUTES]
    routes += [Route(_path(name), endpoint, methods=methods) for name, methods, endpoint in control.ROUTES]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error}, lifespan=_lifespan)
    app.state.world = World(config or SandboxConfig())
    return app
