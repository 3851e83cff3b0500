"""One account through every door: agent and REST starts share its 60 starts a minute, and ``check_usage``'s
figures match the sandbox's ledger across REST, agent (key and token) and web-app runs, and a month turn."""

import asyncio
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import httpx
import pytest
from _agent import advance, agent, balance, call, ledger, refusal, sign_in

from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

pytestmark = pytest.mark.anyio
RUN = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse", "quality": "low"}}  # 3 credits


@pytest.fixture
def slow() -> Iterator[Sandbox]:
    """A served sandbox on the manual clock: its windows and month move only when a test advances it."""
    with Sandbox(SandboxConfig(clock="manual", seed=3)) as sandbox:
        yield sandbox


def _key(base: str, name: str) -> str:
    made = httpx.post(base + path("sandbox_keys"), json={"name": name})
    assert made.status_code == 201, made.text
    key: str = made.json()["data"]["key"]
    return key


def _rest(base: str, key: str, body: dict[str, Any] = RUN) -> httpx.Response:
    return httpx.post(base + path("run"), json=body, headers={"Authorization": f"Bearer {key}"})


def _app_run(base: str, credits: int, *, failed: bool = False) -> dict[str, Any]:
    made = httpx.post(base + path("sandbox_app_runs"), json={"credits": credits, "failed": failed})
    assert made.status_code == 201, made.text
    run: dict[str, Any] = made.json()["data"]
    return run


async def test_agent_and_rest_starts_share_the_account_s_60_a_minute(slow: Sandbox) -> None:
    base = slow.base_url
    assert base is not None
    rest_key, agent_key = _key(base, "rest"), _key(base, "agent")
    assert [_rest(base, rest_key).status_code for _ in range(40)] == [201] * 40
    async with agent(base, agent_key) as session:
        for _ in range(20):
            await call(session, "generate", RUN)
        over = await refusal(session, "generate", RUN)
        assert (over["statusCode"], over["message"]) == (429, messages.TOO_MANY_GENERATIONS)
        refused = _rest(base, rest_key)
        assert refused.status_code == 429 and refused.json() == messages.TOO_MANY_GENERATIONS
        assert len(ledger(base)) == 60 and balance(base) == 3000 - 60 * 3  # the refusals charged nothing
        advance(base, 60)
        await call(session, "generate", RUN)
    assert _rest(base, rest_key).status_code == 201
    assert httpx.get(base + path("sandbox_info")).json()["data"]["counts"]["startsOverLimit"] == 2


def _seconds_to_next_month(base: str) -> float:
    now = datetime.fromisoformat(
        httpx.get(base + path("sandbox_info")).json()["data"]["now"].replace("Z", "+00:00")
    )
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    first = datetime(year, month, 1, tzinfo=timezone.utc)
    return (first - now).total_seconds() + 3600  # an hour into the next month


def _month_ledger(base: str, month: str) -> tuple[int, int]:
    """Credits net of refunds, and runs not wholly refunded, of ``month`` in the sandbox's ledger."""
    by_run: dict[str, list[dict[str, Any]]] = {}
    for entry in ledger(base):
        if entry["kind"] == "grant":
            continue  # a month's plan credits are no run
        by_run.setdefault(entry["resourceId"], []).append(entry)
    credits = runs = 0
    for entries in by_run.values():
        if entries[0]["at"][:7] != month:
            continue
        net = sum(e["credits"] if e["kind"] == "charge" else -e["credits"] for e in entries)
        if not any(e["kind"] == "refund" for e in entries) or net:
            credits, runs = credits + net, runs + 1
    return credits, runs


async def test_check_usage_matches_the_ledger_across_rest_agent_web_app_and_a_month_turn(
    slow: Sandbox,
) -> None:
    base = slow.base_url
    assert base is not None
    key = slow.demo_key
    assert _rest(base, key).status_code == 201  # REST, with a key: 3
    assert _rest(base, key).status_code == 201  # 3
    httpx.post(base + path("sandbox_faults"), json={"modelScript": ["fail"]})
    failing = _rest(base, key).json()["data"]["id"]  # fails later: refunded, left out
    httpx.post(base + path("sandbox_faults"), json={"script": ["503"], "routes": ["run"]})
    assert _rest(base, key).status_code == 503  # charged and refunded at once: left out
    _app_run(base, 10)  # the web app: 10
    _app_run(base, 7, failed=True)  # refunded: left out
    token = sign_in(base)
    async with agent(base, token) as by_token:
        await call(by_token, "generate", RUN)  # an access token: 3, not an API run
    async with agent(base, key) as by_key:
        await call(by_key, "generate", RUN)  # the agent server with a key: 3, an API run
        advance(base, 3600)  # every generation ends; the failing one fails and is refunded
        failed = httpx.get(base + path("generation", id=failing), headers={"Authorization": f"Bearer {key}"})
        assert failed.json()["data"]["status"] == "failed"
        usage = await call(by_key, "check_usage", {})
        month = httpx.get(base + path("sandbox_info")).json()["data"]["now"][:7]
        assert _month_ledger(base, month) == (22, 5)
        assert usage == {
            "remainingCredits": balance(base),
            "monthCredits": 22,
            "monthRuns": 5,
            "monthApiRuns": 3,
            "topUpUrl": base + path("sandbox_app", page="billing"),
        }
        assert usage["remainingCredits"] == 3000 - 22

        advance(base, _seconds_to_next_month(base))  # a new calendar month
        turned = await call(by_key, "check_usage", {})
        assert (turned["monthCredits"], turned["monthRuns"], turned["monthApiRuns"]) == (0, 0, 0)
        # what is left carries over, and the Scale plan's 3,000 monthly credits arrive with the turn
        assert turned["remainingCredits"] == 3000 - 22 + 3000
        await call(by_key, "generate", RUN)
        _app_run(base, 4)
        now = await call(by_key, "check_usage", {})
        next_month = httpx.get(base + path("sandbox_info")).json()["data"]["now"][:7]
        assert next_month != month and _month_ledger(base, next_month) == (7, 2)
        assert (now["monthCredits"], now["monthRuns"], now["monthApiRuns"]) == (7, 2, 1)
        assert now["remainingCredits"] == balance(base) == 3000 - 22 + 3000 - 7


def test_a_web_app_run_needs_the_balance_and_says_its_fields() -> None:
    with Sandbox(SandboxConfig(time_scale=600, seed=1)) as sandbox:
        base = sandbox.base_url
        assert base is not None
        httpx.post(base + path("sandbox_account"), json={"balance": 5})
        short = httpx.post(base + path("sandbox_app_runs"), json={"credits": 6})
        assert short.status_code == 400 and short.json()["message"].startswith("Not enough credits")
        wrong = httpx.post(base + path("sandbox_app_runs"), json={"credits": "6"})
        assert wrong.status_code == 400 and "credits must be" in wrong.json()["message"]
        made = _app_run(base, 5)
        (entry,) = ledger(base)
        assert (entry["via"], entry["keyId"], entry["resourceId"], entry["credits"]) == (
            "app",
            None,
            made["id"],
            5,
        )


@pytest.mark.parametrize("limit", ["monthly cap", "balance"])
async def test_agent_and_rest_starts_at_once_never_charge_past_the_cap_or_the_balance(
    served: Sandbox, limit: str
) -> None:
    """Three agent ``generate`` calls and three REST starts at once, of 3 credits each, with room for
    two (a key's Monthly credit cap of 7, or a balance of 7): two are charged, the four others refused
    with the spec's message, and nothing else moves (issue 35: the budget under concurrency, from the
    agent's door too)."""
    base = served.base_url
    assert base is not None
    body = {"name": "shared"} | ({"monthlyCap": 7} if limit == "monthly cap" else {})
    made = httpx.post(base + path("sandbox_keys"), json=body)
    assert made.status_code == 201, made.text
    key = made.json()["data"]["key"]
    if limit == "balance":
        assert httpx.post(base + path("sandbox_account"), json={"balance": 7}).status_code == 200
    before = balance(base)
    headers = {"Authorization": f"Bearer {key}"}
    async with agent(base, key) as session, httpx.AsyncClient(headers=headers, timeout=30) as rest:
        answers = await asyncio.gather(
            *(session.call_tool("generate", RUN) for _ in range(3)),
            *(rest.post(base + path("run"), json=RUN) for _ in range(3)),
        )
    agent_ok = [not a.isError for a in answers[:3]]
    rest_ok = [a.status_code == 201 for a in answers[3:]]
    assert sum(agent_ok) + sum(rest_ok) == 2
    refused = [a.structuredContent["message"] for a in answers[:3] if a.isError]
    bodies = [a.json() for a in answers[3:] if a.status_code != 201]
    refused += [body if isinstance(body, str) else body["message"] for body in bodies]  # 429s: a string
    wanted = messages.key_cap_reached(7) if limit == "monthly cap" else "Not enough credits"
    assert len(refused) == 4 and all(message.startswith(wanted) for message in refused)
    charges = [e for e in ledger(base) if e["kind"] == "charge"]
    assert [e["credits"] for e in charges] == [3, 3] and balance(base) == before - 6
