"""An async request imports nothing once the client is warm: no module search on the hot path.

httpcore and httpx import ``sniffio`` inside every async lock, event and request. anyio 4.12 stopped
bringing it, and a failed import is not cached, so each of those calls searched sys.path again: a fifth
of the CPU of the in-process client and batch tests (encode/httpcore#1103). The package depends on
sniffio itself now; this checks, for real HTTP (httpcore's pool) and in-process ASGI (httpx's
transport), that after a warm-up no request asks an import finder for anything.
"""

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType

import pytest

from mediagen_nb.client import AsyncClient
from mediagen_nb.sandbox import Sandbox

pytestmark = pytest.mark.anyio


class Searches:
    """A finder first on ``sys.meta_path`` that finds nothing and notes each module it was asked for."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        self.names.append(name)
        return None


@contextmanager
def searches() -> Iterator[list[str]]:
    """The names of the modules Python searched for inside the block (an import already done is not one)."""
    finder = Searches()
    sys.meta_path.insert(0, finder)
    try:
        yield finder.names
    finally:
        sys.meta_path.remove(finder)


async def estimates(client: AsyncClient, count: int) -> None:
    for number in range(count):
        await client.estimate("gpt-image-2", prompt=f"a fox {number}", quality="low")


@pytest.mark.parametrize("where", ["served", "in-process"])
async def test_warm_async_requests_search_for_no_module(where: str, request: pytest.FixtureRequest) -> None:
    sandbox: Sandbox = request.getfixturevalue("served" if where == "served" else "sandbox")
    client = AsyncClient.for_sandbox(sandbox)
    try:
        await estimates(client, 3)  # the first requests load what the client loads lazily
        with searches() as names:
            await estimates(client, 20)
    finally:
        await client.aclose()
    assert names == [], f"searched on every request: {sorted(set(names))}"
