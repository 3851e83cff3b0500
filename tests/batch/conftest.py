"""Batch fixtures: a served sandbox (real HTTP on 127.0.0.1) and an AsyncClient whose requests are recorded.

Batch work runs on the process's background loop (``mediagen_nb.batch.loop``), so every client here is
created in the test thread (httpx opens its pool lazily) and closed on that background loop. Each test
gets its own sandbox; nothing is shared between tests but the background loop itself.
"""

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from _shared import Written

import mediagen_nb  # noqa: F401  (registers df.mediagen)
from mediagen_nb.batch import loop
from mediagen_nb.client import AsyncClient, settings
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.paths import CATALOG_PATHS, PATHS, path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

TIME_SCALE = 600.0  # ten simulated minutes per real second
POOL = httpx.Limits(max_connections=None, max_keepalive_connections=64)  # as the client's own pool


def endpoint_of(request: httpx.Request) -> str | None:
    """The ``PATHS`` name of a request's path (``run``, ``estimate``, ``generation`` ...), or None."""
    parts = request.url.path.rstrip("/").split("/")
    for name, template in PATHS.items():
        want = template.split("/")
        if len(want) == len(parts) and all(
            w.startswith("{") or w == p for w, p in zip(want, parts, strict=True)
        ):
            return name
    return None


@dataclass
class Service:
    """One served sandbox, a recorded AsyncClient on it, and its control API (never recorded)."""

    sandbox: Sandbox
    client: AsyncClient
    requests: list[httpx.Request] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        assert self.sandbox.base_url is not None
        return self.sandbox.base_url

    def sample(self, name: str) -> str:
        """A sample input served by the sandbox (face.png, voice.wav, short-voice.wav, clip.mp4 ...)."""
        return self.base_url + path("sandbox_samples", name=name)

    def count(self, *endpoints: str) -> int:
        """Recorded requests to these endpoints (retries included)."""
        return sum(1 for r in list(self.requests) if endpoint_of(r) in endpoints)

    def keyed(self) -> list[httpx.Request]:
        """Recorded requests that need a key: everything but catalog reads."""
        return [r for r in list(self.requests) if endpoint_of(r) not in CATALOG_PATHS]

    def bodies(self, endpoint: str) -> list[dict[str, Any]]:
        """JSON bodies of the recorded requests to ``endpoint``."""
        return [json.loads(r.content) for r in list(self.requests) if endpoint_of(r) == endpoint]

    def control(self, name: str, body: dict[str, Any] | None = None) -> Any:
        """``POST`` (with a body) or ``GET`` a ``/_sandbox/`` endpoint; its ``data``."""
        url = self.base_url + path(name)
        with httpx.Client(timeout=30) as http:
            response = http.post(url, json=body) if body is not None else http.get(url)
        assert response.is_success, response.text
        return response.json()["data"]

    def set_balance(self, credits: int) -> None:
        self.control("sandbox_account", {"balance": credits})

    def faults(self, **plan: Any) -> dict[str, Any]:
        return dict(self.control("sandbox_faults", plan))

    def ledger(self) -> list[dict[str, Any]]:
        """Every charge and refund the sandbox recorded."""
        return list(self.control("sandbox_ledger")["entries"])

    def charges(self) -> Counter[str]:
        """Charges per resource id (a generation id, or the id of a start refunded at once)."""
        return Counter(e["resourceId"] for e in self.ledger() if e["kind"] == "charge")

    def refunds(self) -> Counter[str]:
        return Counter(e["resourceId"] for e in self.ledger() if e["kind"] == "refund")

    def net_spent(self) -> int:
        """Credits charged less credits refunded."""
        return sum(e["credits"] * (1 if e["kind"] == "charge" else -1) for e in self.ledger())

    def generation_ids(self) -> set[str]:
        """Ids of every generation the sandbox started (a 503 start refunded at once makes none)."""
        return set(self.sandbox.world.generations.items)

    def generation_input(self, generation_id: str) -> dict[str, Any]:
        return dict(self.sandbox.world.generations.items[generation_id].input)


ServiceFactory = Callable[..., Service]


@pytest.fixture
def make_service(spelling: wire.Names) -> Iterator[ServiceFactory]:
    """Build served sandboxes with recorded clients; all are closed and stopped after the test.

    They spell the names the spec does not show as the test's ``spelling`` (ours unless it is marked)."""
    made: list[tuple[Sandbox, httpx.AsyncClient]] = []

    def build(time_scale: float = TIME_SCALE, seed: int = 1) -> Service:
        sandbox = Sandbox(SandboxConfig(time_scale=time_scale, seed=seed, wire=spelling)).start()
        service_requests: list[httpx.Request] = []
        http = httpx.AsyncClient(transport=Written(service_requests.append, limits=POOL))
        made.append((sandbox, http))
        client = AsyncClient.for_sandbox(sandbox, http_client=http, time_scale=sandbox.config.time_scale)
        return Service(sandbox, client, service_requests)

    yield build
    for sandbox, http in made:
        try:
            loop.submit(http.aclose()).result(10)
        finally:
            sandbox.stop()


@pytest.fixture
def service(make_service: ServiceFactory) -> Service:
    """A served sandbox (time x600, seed 1, 3,000 demo credits) and a recorded client on it."""
    return make_service()


Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(service: Service, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """``mediagen sweep`` in-process on the served sandbox: (exit code, stdout, stderr), never a traceback."""
    from mediagen_nb.batch.cli import main

    monkeypatch.setenv(settings.ENV_BASE_URL, service.base_url)
    monkeypatch.setenv(settings.ENV_KEY, service.sandbox.demo_key)
    monkeypatch.setenv(settings.ENV_TIME_SCALE, str(service.sandbox.config.time_scale))

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        return code, out, err

    return run
