"""Shared fixtures: a fresh sandbox per test, reached over real HTTP (in-process ASGI or uvicorn)."""

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from mediagen_nb.sandbox import Sandbox, SandboxConfig

TIME_SCALE = 600.0  # ten simulated minutes per real second


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def sandbox() -> Sandbox:
    """An in-process sandbox, fast clock, loopback webhooks allowed."""
    return Sandbox(SandboxConfig(time_scale=TIME_SCALE, seed=1, allow_private_webhooks=True))


@pytest.fixture
async def api(sandbox: Sandbox) -> AsyncIterator[httpx.AsyncClient]:
    """An async client on the in-process sandbox, with the demo key."""
    async with httpx.AsyncClient(
        transport=sandbox.transport(),
        base_url="http://sandbox.test",
        headers={"Authorization": f"Bearer {sandbox.demo_key}"},
        timeout=30,
    ) as client:
        yield client


@pytest.fixture
def served() -> Iterator[Sandbox]:
    """A sandbox served by uvicorn on 127.0.0.1 (for tests that need a real socket)."""
    with Sandbox(SandboxConfig(time_scale=TIME_SCALE, seed=1, allow_private_webhooks=True)) as sandbox:
        yield sandbox
