"""Helpers of the pipeline tests: a frozen simulated clock, and bounded polling of a resource."""

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from mediagen_nb.sandbox import Sandbox

POLL_LIMIT = 400
POLL_SECONDS = 30.0


class SimClock:
    """Stops the sandbox's simulated clock so a test moves it by hand (timers then change nothing)."""

    def __init__(self, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
        self.at = sandbox.world.clock.now()
        monkeypatch.setattr(sandbox.world.clock, "now", lambda: self.at)

    def to(self, moment: float) -> None:
        self.at = max(self.at, moment)


async def poll(
    api: httpx.AsyncClient, url: str, until: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """Every ``data`` read of ``url`` until ``until`` holds; bounded in count and in time."""
    seen = []
    deadline = time.monotonic() + POLL_SECONDS
    for _ in range(POLL_LIMIT):
        response = await api.get(url)
        assert response.status_code == 200, response.text
        seen.append(response.json()["data"])
        if until(seen[-1]):
            return seen
        assert time.monotonic() < deadline, f"{url} did not settle: {seen[-1]}"
        await asyncio.sleep(0.01)
    raise AssertionError(f"{url} did not settle after {POLL_LIMIT} reads: {seen[-1]}")
