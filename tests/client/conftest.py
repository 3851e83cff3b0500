"""Shared client fixtures: a sync client on a served sandbox and an async client on an in-process one.

``kit`` runs a test with each: a sync client on a served sandbox, and an async client on an in-process
one (``tests/client/_kit.py``).

Each fixture is built on the root conftest's sandbox fixture, so a test that also asks for that
fixture gets the same sandbox: ``sandbox_client`` with ``served`` (uvicorn on 127.0.0.1,
time x600, seed 1, loopback webhooks allowed), ``async_client`` with ``sandbox`` (in-process ASGI,
same options). The sandbox is also reachable as the client's ``sandbox`` attribute.
"""

from collections.abc import AsyncIterator, Iterator

import pytest
from _kit import Kit, open_kit

from mediagen_nb.client import AsyncClient, Client
from mediagen_nb.sandbox import Sandbox


@pytest.fixture(params=["sync", "async"])
async def kit(request: pytest.FixtureRequest) -> AsyncIterator[Kit]:
    """A sync client on a served sandbox, or an async client on an in-process one (time x600)."""
    sandbox: Sandbox = request.getfixturevalue("served" if request.param == "sync" else "sandbox")
    async with open_kit(request.param, sandbox) as made:
        yield made


@pytest.fixture
def sandbox_client(served: Sandbox) -> Iterator[Client]:
    """``Client.for_sandbox`` on the served sandbox; closed after the test (the sandbox is stopped too)."""
    client = Client.for_sandbox(served)
    client.sandbox = served  # type: ignore[attr-defined]
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
async def async_client(sandbox: Sandbox) -> AsyncIterator[AsyncClient]:
    """``AsyncClient.for_sandbox`` on the in-process sandbox (ASGI transport); closed after the test."""
    client = AsyncClient.for_sandbox(sandbox)
    client.sandbox = sandbox  # type: ignore[attr-defined]
    try:
        yield client
    finally:
        await client.aclose()
