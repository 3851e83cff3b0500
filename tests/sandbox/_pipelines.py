"""Helpers of the pipeline tests: moving a manual sandbox's clock by hand, and reading a resource until it
settles (stepping that clock timer by timer, or on a scaled clock bounded real-time polling)."""

from collections.abc import Callable
from typing import Any

import _wait
import httpx

from mediagen_nb.sandbox import Sandbox

POLL_SECONDS = 30.0  # real seconds a read on a scaled clock waits at most
STEPS = 1000  # timers a read on the manual clock passes at most


class SimClock:
    """A manual sandbox's clock, moved by hand to a moment (the timers it passes fire, in time order)."""

    def __init__(self, sandbox: Sandbox) -> None:
        assert sandbox.config.clock == "manual", "mark the test manual_clock"
        self.sandbox = sandbox

    @property
    def at(self) -> float:
        return self.sandbox.world.clock.now()

    def to(self, moment: float) -> None:
        self.sandbox.advance(max(0.0, moment - self.at))


async def poll(
    api: httpx.AsyncClient, sandbox: Sandbox, url: str, until: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """Every ``data`` read of ``url`` until ``until`` holds. On a manual clock each read is followed by
    a move to the sandbox's next timer, so every state is seen and no real time passes; on a scaled clock
    reads go on in real time. Bounded either way."""
    seen = []

    async def settled() -> bool:
        response = await api.get(url)
        assert response.status_code == 200, response.text
        seen.append(response.json()["data"])
        return until(seen[-1])

    if sandbox.config.clock != "manual":
        await _wait.until(settled, POLL_SECONDS, f"{url} to settle")
        return seen
    clock = sandbox.world.clock
    for _ in range(STEPS):
        if await settled():
            return seen
        due = clock.next_due()
        assert due is not None, f"{url} has not settled and nothing is due: it never will ({seen[-1]})"
        sandbox.advance(max(0.0, due - clock.now()))
    raise AssertionError(f"{url} did not settle within {STEPS} timers")
