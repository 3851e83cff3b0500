"""Test helpers for the client tests: one harness over a sync or an async client, with a request log.

``Kit`` drives a ``Client`` on a served sandbox (real HTTP on 127.0.0.1) or an ``AsyncClient`` on an
in-process one through the same awaitable ``call``. Every request the client sends is recorded by an
httpx event hook (that observes the transport; nothing of the client is replaced).
"""

import inspect
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import httpx

from mediagen_nb.client import AsyncClient, Client
from mediagen_nb.client.clients import BaseClient
from mediagen_nb.protocol.paths import CATALOG_PATHS, PATHS, path
from mediagen_nb.sandbox import Sandbox

IN_PROCESS_URL = "http://sandbox.local"
_PATTERNS = {
    name: re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)) + "$")
    for name, template in PATHS.items()
}


def endpoint_of(request: httpx.Request) -> str | None:
    """The name in ``PATHS`` of the request's path (``generation``, ``run`` ...), or None."""
    for name, pattern in _PATTERNS.items():
        if pattern.match(request.url.path):
            return name
    return None


@dataclass
class Recorder:
    """Requests as the transport saw them (hooks run before sending, so refused connections count)."""

    requests: list[httpx.Request] = field(default_factory=list)

    def sync_hook(self, request: httpx.Request) -> None:
        self.requests.append(request)

    async def async_hook(self, request: httpx.Request) -> None:
        self.requests.append(request)

    def of(self, *endpoints: str) -> list[httpx.Request]:
        return [r for r in self.requests if endpoint_of(r) in endpoints]

    def count(self, *endpoints: str) -> int:
        return len(self.of(*endpoints))

    def non_catalog(self) -> list[httpx.Request]:
        """Every request that needs a key (catalog reads are free and unauthenticated)."""
        return [r for r in self.requests if endpoint_of(r) not in CATALOG_PATHS]

    def clear(self) -> None:
        self.requests.clear()


def query(request: httpx.Request) -> dict[str, list[str]]:
    return parse_qs(request.url.query.decode())


@dataclass
class Kit:
    """A sync or async client on one sandbox, a request recorder and the sandbox's control API."""

    flavor: str  # "sync" | "async"
    sandbox: Sandbox
    recorder: Recorder
    client: Client | AsyncClient
    transports: list[httpx.Client | httpx.AsyncClient] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.sandbox.base_url if self.flavor == "sync" else IN_PROCESS_URL  # type: ignore[return-value]

    def url(self, endpoint: str, **params: str) -> str:
        return self.base_url + path(endpoint, **params)

    def sample(self, name: str) -> str:
        """A sample input file served by the sandbox (face.png, voice.wav, clip.mp4 ...)."""
        return self.url("sandbox_samples", name=name)

    def new(self, api_key: str | list[str] | None = None, **options: Any) -> Client | AsyncClient:
        """Another client of this kit's flavor on the same sandbox and recorder (closed at teardown)."""
        options.setdefault("time_scale", self.sandbox.config.time_scale)
        if self.sandbox.config.clock == "manual":  # a test marked manual_clock: the client steps it
            options.setdefault("clock", self.sandbox.stepping_clock())
        key = api_key if api_key is not None else self.sandbox.demo_key
        made: Client | AsyncClient
        if self.flavor == "sync":
            hooks = {"request": [self.recorder.sync_hook]}
            http = httpx.Client(event_hooks=hooks)
            self.transports.append(http)
            made = Client(key, base_url=self.base_url, http_client=http, **options)
        else:
            ahooks = {"request": [self.recorder.async_hook]}
            ahttp = httpx.AsyncClient(transport=self.sandbox.transport(), event_hooks=ahooks)
            self.transports.append(ahttp)
            made = AsyncClient(key, base_url=IN_PROCESS_URL, http_client=ahttp, **options)
        return made

    async def call(self, name: str, *args: Any, client: BaseClient | None = None, **kwargs: Any) -> Any:
        """``client.<name>(...)``, awaited when the client is async."""
        result = getattr(client or self.client, name)(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    def _control(self) -> httpx.AsyncClient:
        if self.flavor == "sync":
            return httpx.AsyncClient(base_url=self.base_url, timeout=30)
        return httpx.AsyncClient(transport=self.sandbox.transport(), base_url=IN_PROCESS_URL, timeout=30)

    async def control(self, method: str, endpoint: str, body: Any = None, **params: Any) -> Any:
        """A sandbox control request (not recorded); its ``data``."""
        async with self._control() as http:
            response = await http.request(method, path(endpoint), json=body, params=params or None)
        assert response.is_success, response.text
        return response.json()["data"]

    async def create_key(self, **body: Any) -> dict[str, Any]:
        """``POST /_sandbox/keys``: the new key's record, with the secret under ``key``."""
        return dict(await self.control("POST", "sandbox_keys", body))

    def advance_clock(self, seconds: float) -> None:
        """Jump simulated time (sync flavor: ``POST /_sandbox/clock``; in-process: the same clock call)."""
        if self.flavor == "sync":
            response = httpx.post(self.url("sandbox_clock"), json={"advance": seconds}, timeout=10)
            assert response.status_code == 200, response.text
        else:
            self.sandbox.world.clock.advance(seconds)

    def ledger(self, resource_id: str | None = None) -> list[Mapping[str, Any]]:
        entries = list(self.sandbox.world.accounts.ledger)
        return [e for e in entries if resource_id is None or e["resourceId"] == resource_id]

    async def aclose(self) -> None:
        """Close the httpx clients this kit made (clients given an http_client do not own it)."""
        for http in self.transports:
            if isinstance(http, httpx.AsyncClient):
                await http.aclose()
            else:
                http.close()


@asynccontextmanager
async def open_kit(flavor: str, sandbox: Sandbox) -> AsyncIterator[Kit]:
    """A kit of ``flavor`` on ``sandbox`` (served first for the sync flavor)."""
    recorder = Recorder()
    if flavor == "sync" and sandbox.base_url is None:
        sandbox.start()
    kit = Kit(flavor, sandbox, recorder, client=None)  # type: ignore[arg-type]
    if flavor == "sync":
        http = httpx.Client(event_hooks={"request": [recorder.sync_hook]})
        kit.transports.append(http)
        kit.client = Client.for_sandbox(sandbox, http_client=http)
    else:
        hooks = {"request": [recorder.async_hook]}
        ahttp = httpx.AsyncClient(transport=sandbox.transport(), event_hooks=hooks)
        kit.transports.append(ahttp)
        kit.client = AsyncClient.for_sandbox(sandbox, http_client=ahttp)
    try:
        yield kit
    finally:
        await kit.aclose()
