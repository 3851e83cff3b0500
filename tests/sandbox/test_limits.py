"""The request and start limits over HTTP: rolling 60-second windows per key and per account.

On the manual clock: a window moves only as a test advances it.
"""

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox

ESTIMATE = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse at dusk"}}
START = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse at dusk", "quality": "low"}}
RATE_HEADER_WORDS = ("ratelimit", "rate-limit", "retry-after", "x-ratelimit")


pytestmark = pytest.mark.manual_clock


@pytest.fixture
async def client(sandbox: Sandbox) -> AsyncIterator[httpx.AsyncClient]:
    """A keyless client on the sandbox; each call passes its key."""
    async with httpx.AsyncClient(
        transport=sandbox.transport(), base_url="http://sandbox.test", timeout=30
    ) as c:
        yield c


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _new_key(client: httpx.AsyncClient, name: str, account: str = "demo") -> str:
    response = await client.post(path("sandbox_keys"), json={"name": name, "account": account})
    assert response.status_code == 201, response.text
    return response.json()["data"]["key"]


async def _advance(client: httpx.AsyncClient, seconds: float) -> None:
    response = await client.post(path("sandbox_clock"), json={"advance": seconds})
    assert response.status_code == 200, response.text


async def _estimates(client: httpx.AsyncClient, key: str, count: int) -> list[int]:
    """Status codes of ``count`` sequential authenticated requests."""
    return [
        (await client.post(path("estimate"), json=ESTIMATE, headers=_auth(key))).status_code
        for _ in range(count)
    ]


async def _ledger(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    return (await client.get(path("sandbox_ledger"))).json()["data"]["entries"]


def _assert_key_limit_refusal(response: httpx.Response) -> None:
    """429, body exactly the JSON string, and no Retry-After or rate-limit headers."""
    assert response.status_code == 429
    assert response.content.strip() == b'"API key rate limit exceeded"'
    assert response.json() == messages.KEY_RATE_LIMIT
    for name in response.headers:
        assert not any(word in name.lower() for word in RATE_HEADER_WORDS), name


@pytest.mark.anyio
async def test_sixty_requests_then_refused_until_the_window_moves(
    client: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    """60 pass, the 61st is a bare 429; still refused at +58 s; free again past the 60 s mark."""
    key = sandbox.demo_key
    assert await _estimates(client, key, 60) == [200] * 60
    _assert_key_limit_refusal(await client.post(path("estimate"), json=ESTIMATE, headers=_auth(key)))
    # Polls count too, and are refused the same way.
    _assert_key_limit_refusal(await client.get(path("generation", id=str(uuid.uuid4())), headers=_auth(key)))
    await _advance(client, 58)
    _assert_key_limit_refusal(await client.post(path("estimate"), json=ESTIMATE, headers=_auth(key)))
    await _advance(client, 3)
    assert await _estimates(client, key, 60) == [200] * 60
    _assert_key_limit_refusal(await client.post(path("estimate"), json=ESTIMATE, headers=_auth(key)))


@pytest.mark.anyio
async def test_window_rolls_rather_than_refills(client: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """Requests staggered 30/20/10 across the window free up in the same steps as they age out."""
    key = sandbox.demo_key
    assert await _estimates(client, key, 30) == [200] * 30  # t = 0
    await _advance(client, 20)
    assert await _estimates(client, key, 20) == [200] * 20  # t = 20
    await _advance(client, 20)
    assert await _estimates(client, key, 10) == [200] * 10  # t = 40
    assert await _estimates(client, key, 1) == [429]
    await _advance(client, 18)  # t = 58: nothing has aged out yet
    assert await _estimates(client, key, 1) == [429]
    await _advance(client, 3)  # t = 61: the first 30 have left
    assert await _estimates(client, key, 31) == [200] * 30 + [429]
    await _advance(client, 20)  # t = 81: the 20 from t = 20 have left
    assert await _estimates(client, key, 21) == [200] * 20 + [429]
    await _advance(client, 20)  # t = 101: the 10 from t = 40 have left
    assert await _estimates(client, key, 11) == [200] * 10 + [429]


@pytest.mark.anyio
async def test_limit_is_per_key(client: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """A second key of the same account has its own 60 requests."""
    other = await _new_key(client, "second")
    assert await _estimates(client, sandbox.demo_key, 61) == [200] * 60 + [429]
    assert await _estimates(client, other, 61) == [200] * 60 + [429]
    assert await _estimates(client, sandbox.demo_key, 1) == [429]


async def _start(
    client: httpx.AsyncClient, key: str, body: dict[str, Any] = START, **headers: str
) -> httpx.Response:
    return await client.post(path("run"), json=body, headers={**_auth(key), **headers})


@pytest.mark.anyio
async def test_sixty_starts_per_account_across_keys(client: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """30 + 30 starts on two keys, then a third key (with request budget) gets ``Too many generations``."""
    first, second, third = sandbox.demo_key, await _new_key(client, "b"), await _new_key(client, "c")
    for key in (first, second):
        for _ in range(30):
            response = await _start(client, key)
            assert response.status_code == 201, response.text
    before = await _ledger(client)
    assert [e["kind"] for e in before] == ["charge"] * 60
    refused = await _start(client, third)
    assert refused.status_code == 429
    assert refused.json() == messages.TOO_MANY_GENERATIONS
    assert "retry-after" not in refused.headers
    # The third key still has request budget: its non-start requests pass.
    assert await _estimates(client, third, 5) == [200] * 5
    assert await _ledger(client) == before  # 429s charge nothing
    # Another account is not affected.
    foreign = await _new_key(client, "elsewhere", account="other")
    assert (await _start(client, foreign)).status_code == 201
    await _advance(client, 61)
    assert (await _start(client, third)).status_code == 201


@pytest.mark.anyio
async def test_refused_starts_do_not_use_start_budget(client: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """Starts refused by later checks (missing field, bad enum) release their place in the window."""
    keys = [sandbox.demo_key] + [await _new_key(client, f"k{i}") for i in range(3)]
    missing = {"modelId": "gpt-image-2", "input": {"quality": "low"}}
    bad_enum = {"modelId": "gpt-image-2", "input": {"prompt": "x", "quality": "ultra"}}
    for i in range(50):
        response = await _start(client, keys[0], missing if i % 2 else bad_enum)
        assert response.status_code == 400, response.text
    statuses = Counter()
    for key in keys[1:3]:
        for _ in range(30):
            statuses[(await _start(client, key)).status_code] += 1
    assert statuses == {201: 60}
    refused = await _start(client, keys[3])
    assert refused.status_code == 429 and refused.json() == messages.TOO_MANY_GENERATIONS
    assert len(await _ledger(client)) == 60


@pytest.mark.anyio
async def test_idempotent_replays_are_not_starts(client: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """29 replays of one Idempotency-Key return the same generation and leave 59 starts to use."""
    first, second, third = sandbox.demo_key, await _new_key(client, "b"), await _new_key(client, "c")
    created = await _start(client, first, **{"Idempotency-Key": "same-start"})
    assert created.status_code == 201
    gen_id = created.json()["data"]["id"]
    for _ in range(29):
        replay = await _start(client, first, **{"Idempotency-Key": "same-start"})
        assert replay.status_code == 200 and replay.json()["data"]["id"] == gen_id
    for _ in range(59):
        response = await _start(client, second)
        assert response.status_code == 201, response.text
    refused = await _start(client, third)
    assert refused.status_code == 429 and refused.json() == messages.TOO_MANY_GENERATIONS
    # A replay after the start window is full still returns the generation (check 4 precedes check 5).
    replay = await _start(client, third, **{"Idempotency-Key": "same-start"})
    assert replay.status_code == 200 and replay.json()["data"]["id"] == gen_id
    ledger = await _ledger(client)
    assert len(ledger) == 60 and all(e["kind"] == "charge" for e in ledger)
    assert sum(1 for e in ledger if e["resourceId"] == gen_id) == 1


@pytest.mark.anyio
async def test_key_limit_refusals_charge_nothing(client: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """Starts refused by the key's request limit are not charged and not started."""
    key = sandbox.demo_key
    for _ in range(60):
        assert (await _start(client, key)).status_code == 201
    balance = (await client.get(path("sandbox_account"))).json()["data"]["balance"]
    for _ in range(5):
        _assert_key_limit_refusal(await _start(client, key))
    assert len(await _ledger(client)) == 60
    assert (await client.get(path("sandbox_account"))).json()["data"]["balance"] == balance
    assert len(sandbox.world.generations.items) == 60


@pytest.mark.anyio
async def test_concurrent_requests_exactly_sixty_pass(client: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """100 concurrent requests on one key: exactly 60 succeed and 40 get the key-limit 429."""
    responses = await asyncio.gather(
        *(client.post(path("estimate"), json=ESTIMATE, headers=_auth(sandbox.demo_key)) for _ in range(100))
    )
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 60, 429: 40}
    for response in responses:
        if response.status_code == 429:
            assert response.json() == messages.KEY_RATE_LIMIT


@pytest.mark.anyio
async def test_concurrent_starts_exactly_sixty_start(client: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """100 concurrent starts over two keys: exactly 60 generations start and are charged."""
    keys = [sandbox.demo_key, await _new_key(client, "b")]
    responses = await asyncio.gather(*(_start(client, keys[i % 2]) for i in range(100)))
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {201: 60, 429: 40}
    assert {r.json() for r in responses if r.status_code == 429} == {messages.TOO_MANY_GENERATIONS}
    assert len(await _ledger(client)) == 60


def test_served_sandbox_under_threads(served: Sandbox) -> None:
    """80 requests from 16 threads over real HTTP: exactly 60 OK (200), the rest the key-limit 429."""
    url = served.base_url + path("estimate")
    with httpx.Client(headers=_auth(served.demo_key), timeout=30) as http:

        def one(_: int) -> tuple[int, bytes]:
            response = http.post(url, json=ESTIMATE)
            return response.status_code, response.content

        with ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(one, range(80)))
    assert Counter(status for status, _ in results) == {200: 60, 429: 20}
    assert {content for status, content in results if status == 429} == {b'"API key rate limit exceeded"'}
