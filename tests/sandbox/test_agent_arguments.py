"""The agent server takes what REST takes and refuses what REST refuses, field by field (issue 33): a
CRLF or non-ASCII ``idempotencyKey`` was stored and a prompt past REST's body cap was charged. Each
case goes through both doors of one sandbox, REST (in-process, so a header can carry what no HTTP
client sends) and ``/mcp`` (JSON-RPC over HTTP); the answers agree and the ledger holds the charges of
the accepted calls alone."""

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mediagen_nb.protocol import limits, messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig
from mediagen_nb.sandbox.pipeline import MAX_JSON_BYTES, MAX_JSON_DEPTH

pytestmark = pytest.mark.anyio
SPEECH = {"modelId": "qwen3-tts-flash", "input": {"text": "Hello there."}}
USE = "; use letters, digits and -_.: (ASCII only)"


@pytest.fixture(scope="module")
def both() -> Iterator[Sandbox]:
    """One served sandbox (its agent server needs serving) for the module; each test resets it."""
    with Sandbox(SandboxConfig(time_scale=600, seed=1)) as sandbox:
        yield sandbox


@pytest.fixture
def sandbox(both: Sandbox) -> Sandbox:
    both.world.reset()
    return both


async def _rest(sandbox: Sandbox, body: dict[str, Any], key: bytes | None = None) -> tuple[int, Any]:
    """``POST /v1/run`` in-process (a header as raw bytes): its status, and its message or data."""
    headers = {"Authorization": f"Bearer {sandbox.demo_key}", "Content-Type": "application/json"}
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    if key is not None:
        raw.append((b"idempotency-key", key))
    async with httpx.AsyncClient(transport=sandbox.transport(), base_url="http://sandbox.test") as api:
        answer = await api.post(
            path("run"), content=json.dumps(body, ensure_ascii=False).encode(), headers=raw
        )
    found = answer.json()
    return answer.status_code, found["data"] if answer.is_success else found["message"]


def _agent(sandbox: Sandbox, arguments: dict[str, Any]) -> tuple[int, Any]:
    """The ``generate`` tool through ``/mcp``: 201 and the generation, or the refusal's status and message
    (an error result's REST body, or the HTTP error of a body refused before any tool runs)."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "generate", "arguments": arguments},
    }
    assert sandbox.base_url is not None
    answer = httpx.post(
        sandbox.base_url + path("mcp"),
        content=json.dumps(call, ensure_ascii=False).encode(),
        headers={
            "Authorization": f"Bearer {sandbox.demo_key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        timeout=60,
    )
    if answer.status_code != 200:
        return answer.status_code, answer.json()["message"]
    result = answer.json()["result"]
    if result.get("isError"):
        return result["structuredContent"]["statusCode"], result["structuredContent"]["message"]
    return 201, result["structuredContent"]


def _charges(sandbox: Sandbox) -> list[str]:
    return [e["resourceId"] for e in sandbox.world.accounts.entries() if e["kind"] == "charge"]


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("a\r\nb", "has a line break at position 1"),
        ("tab\there", "has a control character at position 3"),
        ("clé", "has the non-ASCII character"),
    ],
)
async def test_an_idempotency_key_no_header_can_carry_is_refused_at_both_doors(
    sandbox: Sandbox, key: str, problem: str
) -> None:
    rest = await _rest(sandbox, SPEECH, key.encode())
    agent = _agent(sandbox, {**SPEECH, "idempotencyKey": key})
    assert rest[0] == agent[0] == 400
    assert rest[1].startswith(f"Idempotency-Key {problem}") and rest[1].endswith(USE)
    assert agent[1].startswith(f"idempotencyKey {problem}") and agent[1].endswith(USE)
    assert _charges(sandbox) == [] and sandbox.world.generations.idempotency.unsaved == set()


async def test_a_long_key_counts_its_first_255_characters_at_both_doors(sandbox: Sandbox) -> None:
    """One account, one key space: an agent start whose key differs from REST's past the 255th character
    is REST's start again, at no charge."""
    key = "k" * limits.IDEMPOTENCY_KEY_CHARS
    status, started = await _rest(sandbox, SPEECH, (key + "-rest").encode())
    again, replayed = _agent(sandbox, {**SPEECH, "idempotencyKey": key + "-agent"})
    assert (status, again) == (201, 201) and replayed["id"] == started["id"]
    assert _charges(sandbox) == [started["id"]]


@pytest.mark.parametrize(
    ("values", "status", "message"),
    [
        # A prompt past REST's body cap (3 million characters of "é" are 6 MB of JSON).
        (
            {"modelId": "gpt-image-2", "input": {"prompt": "é" * 3_000_000}},
            413,
            messages.body_too_large(MAX_JSON_BYTES),
        ),
        # The text lengths the service's models state.
        ({"modelId": "chatterbox-turbo", "input": {"text": "x" * 501}}, 400, messages.too_long("text", 500)),
        (
            {"modelId": "speech-02-hd", "input": {"text": "x" * 10_001, "voice_id": "Wise_Woman"}},
            400,
            messages.too_long("text", 10_000),
        ),
    ],
    ids=["body cap", "chatterbox-turbo text", "speech-02-hd text"],
)
async def test_a_field_rest_refuses_is_refused_by_the_agent_server(
    sandbox: Sandbox, values: dict[str, Any], status: int, message: str
) -> None:
    assert await _rest(sandbox, values) == (status, message)
    assert _agent(sandbox, values) == (status, message)
    assert _charges(sandbox) == []


async def test_input_nested_past_rest_s_bound_is_refused_by_the_agent_server(sandbox: Sandbox) -> None:
    nested: Any = "x"
    for _ in range(MAX_JSON_DEPTH + 1):
        nested = [nested]
    values = {"modelId": "gpt-image-2", "input": {"prompt": "a kite", "style": nested}}
    assert await _rest(sandbox, values) == (400, messages.body_too_deep(MAX_JSON_DEPTH))
    assert _agent(sandbox, values) == (400, messages.body_too_deep(MAX_JSON_DEPTH))
    assert _charges(sandbox) == []
