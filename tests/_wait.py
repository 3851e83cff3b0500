"""The one "wait until" of the tests, for what only real time settles: another thread, process or server."""

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mediagen_nb.runtime.clock import RealClock

T = TypeVar("T")
POLL = 0.01  # real seconds between looks


def wait_until(
    predicate: Callable[[], T], timeout: float = 15.0, what: str = "the condition", poll: float = POLL
) -> T:
    """Look at ``predicate()`` every ``poll`` seconds until it is truthy and return it; after ``timeout``
    real seconds, fail saying ``what`` was awaited (a generous bound for a loaded machine, never a speed
    claim). A look that costs more than a glance (a request) takes a longer ``poll``."""
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}, in vain")
        time.sleep(poll)  # real: another thread or process is doing the work looked for
    return found


async def until(
    predicate: Callable[[], Awaitable[T]], timeout: float = 15.0, what: str = "the condition"
) -> T:
    """:func:`wait_until` for a coroutine predicate, letting the test's event loop run between looks."""
    deadline = time.monotonic() + timeout
    while not (found := await predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}, in vain")
        await asyncio.sleep(POLL)  # real: a server on another thread or loop is doing the work
    return found


def loop_settled(loop: asyncio.AbstractEventLoop, timeout: float = 15.0) -> None:
    """Wait until ``loop`` (on another thread) runs no task but this look: nothing scheduled there can
    start more work, so what has not happened by now never will."""

    async def others() -> set[asyncio.Task[Any]]:
        return asyncio.all_tasks() - {asyncio.current_task()}

    def idle() -> bool:
        return not asyncio.run_coroutine_threadsafe(others(), loop).result(timeout)

    wait_until(idle, timeout, "the loop's tasks to end")


async def turns(count: int = 10) -> None:
    """Let the running event loop go round ``count`` times (tasks reach their next wait); no time passes."""
    for _ in range(count):
        await asyncio.sleep(0)  # one turn of the loop, not a wait on time


class PauseLog(RealClock):
    """The wall clock, noting every pause a client asks of it: tests assert on the waits a client chose
    (how many, how long), never on how long the machine took."""

    def __init__(self) -> None:
        self.pauses: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        super().sleep(seconds)

    async def wait(self, seconds: float) -> None:
        self.pauses.append(seconds)
        await super().wait(seconds)
