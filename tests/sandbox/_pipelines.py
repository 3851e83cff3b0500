"""Helpers of the pipeline tests: a frozen simulated clock, and bounded polling of a resource."""

from collections.abc import Callable
from typing import Any

import _wait
import httpx
import pytest

from mediagen_nb.sandbox import Sandbox

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
    """Every ``data`` read of ``url`` until ``until`` holds; bounded in time."""
    seen = []

    async def settled() -> bool:
        response = await api.get(url)
        assert response.status_code == 200, response.text
        seen.append(response.json()["data"])
        return until(seen[-1])

    await _wait.until(settled, POLL_SECONDS, f"{url} to settle")
    return seen
