"""The sandbox's accounts and keys over HTTP: credentials, expiry, suspension, plans, balance, caps.

On the manual clock: a key expires and a month turns only as a test advances it, to the second.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from mediagen_nb.protocol import limits, messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

BASE = "http://sandbox.test"
RUN = path("run")
KEYS = path("sandbox_keys")
ACCOUNT = path("sandbox_account")
LEDGER = path("sandbox_ledger")
FAULTS = path("sandbox_faults")
CLOCK = path("sandbox_clock")
INFO = path("sandbox_info")
DAY = 86400
IMAGE = {"modelId": "gpt-image-2", "input": {"prompt": "a cat"}}  # 8 credits

pytestmark = pytest.mark.manual_clock


@asynccontextmanager
async def client_for(sandbox: Sandbox, authorization: str | None) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client sending ``authorization`` as the whole header (none when None)."""
    headers = {"Authorization": authorization} if authorization is not None else {}
    async with httpx.AsyncClient(
        transport=sandbox.transport(), base_url=BASE, headers=headers, timeout=30
    ) as client:
        yield client


def bearer(key: str) -> str:
    return f"Bearer {key}"


def message_of(response: httpx.Response) -> str:
    body = response.json()
    return body if isinstance(body, str) else body["message"]


async def new_key(api: httpx.AsyncClient, **options: Any) -> str:
    response = await api.post(KEYS, json=options)
    assert response.status_code == 201, response.text
    data = response.json()["data"]
    assert data["key"].startswith("pk_live_")
    return data["key"]


async def ledger(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    return (await api.get(LEDGER)).json()["data"]["entries"]


async def balance(api: httpx.AsyncClient, account: str = "demo") -> int:
    return (await api.get(ACCOUNT, params={"account": account})).json()["data"]["balance"]


async def advance(api: httpx.AsyncClient, seconds: float) -> None:
    assert (await api.post(CLOCK, json={"advance": seconds})).status_code == 200


async def seconds_to_next_month(api: httpx.AsyncClient) -> float:
    """Simulated seconds from now to 00:00 UTC on the first of next month."""
    now = datetime.fromisoformat((await api.get(INFO)).json()["data"]["now"].replace("Z", "+00:00"))
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return (datetime(year, month, 1, tzinfo=timezone.utc) - now).total_seconds()


async def run(client: httpx.AsyncClient, body: dict[str, Any] = IMAGE) -> httpx.Response:
    return await client.post(RUN, json=body)


def assert_error(response: httpx.Response, status: int, message: str) -> None:
    assert response.status_code == status, response.text
    assert response.json() == {
        "statusCode": status,
        "message": message,
        "error": messages.STATUS_NAMES[status],
    }


# ------------------------------------------------------------------------------------------ credentials


@pytest.mark.anyio
async def test_missing_credentials(sandbox: Sandbox, api: httpx.AsyncClient) -> None:
    """No Authorization header: 401 with the spec's hint; nothing charged."""
    async with client_for(sandbox, None) as anonymous:
        assert_error(await run(anonymous), 401, messages.MISSING_CREDENTIALS)
        response = await anonymous.get(path("generation", id="00000000-0000-4000-8000-000000000000"))
        assert_error(response, 401, messages.MISSING_CREDENTIALS)
        assert_error(await anonymous.post(path("estimate"), json=IMAGE), 401, messages.MISSING_CREDENTIALS)
    assert messages.MISSING_CREDENTIALS == "Missing credentials. Use: Authorization: Bearer pk_live_..."
    assert await ledger(api) == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    "header", ["", "Bearer", "Bearer    ", "Basic dXNlcjpwYXNz", "pk_live_sandbox_demo_key"]
)
async def test_malformed_header(sandbox: Sandbox, header: str) -> None:
    """A header that is not ``Bearer <key>`` is refused with 401, like a missing one."""
    async with client_for(sandbox, header) as client:
        assert_error(await run(client), 401, messages.MISSING_CREDENTIALS)


@pytest.mark.anyio
async def test_bearer_scheme_is_case_insensitive(sandbox: Sandbox) -> None:
    async with client_for(sandbox, f"bearer {sandbox.demo_key}") as client:
        assert (await run(client)).status_code == 201


@pytest.mark.anyio
@pytest.mark.parametrize("key", ["pk_live_unknown", "pk_live_sandbox_demo_key_", "sk_live_sandbox_demo_key"])
async def test_unknown_key(sandbox: Sandbox, key: str) -> None:
    async with client_for(sandbox, bearer(key)) as client:
        assert_error(await run(client), 401, messages.INVALID_KEY)


@pytest.mark.anyio
@pytest.mark.parametrize("state", ["expired", "revoked"])
async def test_expired_and_revoked_keys(sandbox: Sandbox, api: httpx.AsyncClient, state: str) -> None:
    """Keys created expired or revoked are refused on every authenticated endpoint."""
    key = await new_key(api, state=state)
    async with client_for(sandbox, bearer(key)) as client:
        assert_error(await run(client), 401, messages.INVALID_KEY)
        assert_error(await client.post(path("estimate"), json=IMAGE), 401, messages.INVALID_KEY)
        response = await client.get(path("generation", id="00000000-0000-4000-8000-000000000000"))
        assert_error(response, 401, messages.INVALID_KEY)
    assert await ledger(api) == []


@pytest.mark.anyio
async def test_key_expires_after_its_lifetime(sandbox: Sandbox, api: httpx.AsyncClient) -> None:
    """A 30-day key works on day 29 and is refused after day 30; a never-expiring key keeps working."""
    key = await new_key(api, expires="30d")
    forever = await new_key(api, expires="never")
    async with client_for(sandbox, bearer(key)) as client, client_for(sandbox, bearer(forever)) as lasting:
        assert (await run(client)).status_code == 201
        await advance(api, 29 * DAY)
        assert (await run(client)).status_code == 201
        await advance(api, 2 * DAY)
        assert_error(await run(client), 401, messages.INVALID_KEY)
        assert (await run(lasting)).status_code == 201
    assert [e["kind"] for e in await ledger(api) if e["kind"] == "charge"] == ["charge"] * 3


@pytest.mark.anyio
async def test_suspended_account(sandbox: Sandbox, api: httpx.AsyncClient) -> None:
    """A suspended account's keys get 403 on every authenticated endpoint; lifting it restores access."""
    started = (await run(api)).json()["data"]
    other_key = await new_key(api)
    await api.post(ACCOUNT, json={"suspended": True})
    assert_error(await run(api), 403, messages.SUSPENDED)
    assert_error(await api.get(path("generation", id=started["id"])), 403, messages.SUSPENDED)
    async with client_for(sandbox, bearer(other_key)) as client:
        assert_error(await run(client), 403, messages.SUSPENDED)
    async with client_for(sandbox, bearer("pk_live_unknown")) as stranger:
        assert_error(await run(stranger), 401, messages.INVALID_KEY)  # the key is checked first
    assert len(await ledger(api)) == 1
    await api.post(ACCOUNT, json={"suspended": False})
    assert (await run(api)).status_code == 201


@pytest.mark.anyio
async def test_suspension_is_per_account(sandbox: Sandbox, api: httpx.AsyncClient) -> None:
    other_key = await new_key(api, account="other")
    await api.post(ACCOUNT, json={"account": "other", "suspended": True})
    async with client_for(sandbox, bearer(other_key)) as other:
        assert_error(await run(other), 403, messages.SUSPENDED)
    assert (await run(api)).status_code == 201


@pytest.mark.anyio
@pytest.mark.parametrize("plan", ["free", "starter", "pro"])
async def test_key_creation_needs_an_api_plan(api: httpx.AsyncClient, plan: str) -> None:
    """Only Scale and Ultra can create keys; other plans get 403 asking for an upgrade."""
    await api.post(ACCOUNT, json={"account": "small", "plan": plan})
    response = await api.post(KEYS, json={"account": "small"})
    assert_error(response, 403, messages.PLAN_WITHOUT_API)
    assert "Scale plan" in messages.PLAN_WITHOUT_API and "upgrade" in messages.PLAN_WITHOUT_API
    await api.post(ACCOUNT, json={"account": "small", "plan": "ultra"})
    await new_key(api, account="small")
    await api.post(ACCOUNT, json={"plan": plan})
    assert_error(await api.post(KEYS, json={}), 403, messages.PLAN_WITHOUT_API)


@pytest.mark.anyio
async def test_catalog_endpoints_need_no_key(sandbox: Sandbox) -> None:
    """The four catalog endpoints answer without a key; a run without one does not."""
    async with client_for(sandbox, None) as anonymous:
        for endpoint in (path("models"), path("model", id="gpt-image-2"), path("openapi"), path("llms_txt")):
            response = await anonymous.get(endpoint)
            assert response.status_code == 200, (endpoint, response.text)
        assert (await run(anonymous)).status_code == 401


# --------------------------------------------------------------------------------------------- balance


@pytest.mark.anyio
async def test_balance_is_shared_by_all_keys(sandbox: Sandbox, api: httpx.AsyncClient) -> None:
    """Every key of an account spends one balance; the ledger names the key; other accounts are apart."""
    second = await new_key(api, name="second")
    other = await new_key(api, account="other")
    await api.post(ACCOUNT, json={"balance": 20})
    async with client_for(sandbox, bearer(second)) as client, client_for(sandbox, bearer(other)) as foreign:
        assert (await run(api)).status_code == 201
        assert (await run(client)).status_code == 201
        assert await balance(api) == 4
        response = await run(client)
        assert response.status_code == 400
        assert message_of(response) == messages.not_enough_credits(
            8, 4, BASE + path("sandbox_app", page="billing")
        )
        response = await run(api)
        assert message_of(response).startswith(
            "Not enough credits: this run needs 8 credits and your balance is 4."
        )
        assert (await run(foreign)).status_code == 201
    entries = await ledger(api)
    assert [(e["account"], e["credits"]) for e in entries] == [("demo", 8), ("demo", 8), ("other", 8)]
    assert entries[0]["keyId"] != entries[1]["keyId"]
    assert await balance(api) == 4
    assert await balance(api, "other") == limits.PLAN_CREDITS["scale"] - 8


# ----------------------------------------------------------------------------------------- monthly cap


@pytest.mark.anyio
async def test_cap_is_per_key(sandbox: Sandbox, api: httpx.AsyncClient) -> None:
    """One key's cap does not limit another key of the same account."""
    capped = await new_key(api, monthlyCap=10)
    async with client_for(sandbox, bearer(capped)) as client:
        assert (await run(client)).status_code == 201
        response = await run(client)
        assert response.status_code == 429 and response.json() == messages.key_cap_reached(10)
    assert (await run(api)).status_code == 201


@pytest.mark.anyio
async def test_cap_resets_next_calendar_month(sandbox: Sandbox) -> None:
    """The cap counts one calendar month: full a minute before midnight, open again after it."""
    async with client_for(sandbox, bearer(sandbox.demo_key)) as api:
        key = await new_key(api, monthlyCap=10)
        async with client_for(sandbox, bearer(key)) as client:
            await advance(api, await seconds_to_next_month(api) - 120)
            assert (await run(client)).status_code == 201
            await advance(api, 60)
            response = await run(client)
            assert response.status_code == 429 and response.json() == messages.key_cap_reached(10)
            await advance(api, 70)  # now ten seconds into next month
            assert (await run(client)).status_code == 201
            response = await run(client)
            assert response.status_code == 429 and response.json() == messages.key_cap_reached(10)
        assert [e["kind"] for e in await ledger(api)] == ["charge", "grant", "charge"]  # the plan's month


@pytest.mark.anyio
async def test_refund_gives_back_cap_room(sandbox: Sandbox, api: httpx.AsyncClient) -> None:
    """A failed run's refund no longer counts against the key's month."""
    key = await new_key(api, monthlyCap=10)
    await api.post(FAULTS, json={"modelScript": ["fail"]})
    async with client_for(sandbox, bearer(key)) as client:
        failed = (await run(client)).json()["data"]
        await advance(api, 60)
        assert (await client.get(path("generation", id=failed["id"]))).json()["data"]["status"] == "failed"
        assert (await run(client)).status_code == 201


@pytest.mark.anyio
async def test_refund_in_a_later_month_does_not_raise_that_month_cap(sandbox: Sandbox) -> None:
    """A run charged in one month and refunded in the next gives room back to the month it was charged in."""
    async with client_for(sandbox, bearer(sandbox.demo_key)) as api:
        key = await new_key(api, monthlyCap=10)
        await api.post(FAULTS, json={"modelScript": ["fail"]})
        async with client_for(sandbox, bearer(key)) as client:
            await advance(api, await seconds_to_next_month(api) - 5)
            failed = (await run(client)).json()["data"]  # charged in the old month
            await advance(api, 3600)
            read = await client.get(path("generation", id=failed["id"]))
            assert read.json()["data"]["status"] == "failed"  # refunded in the new month
            assert (await run(client)).status_code == 201  # 8 of 10 this month
            response = await run(client)
            assert response.status_code == 429, "the old month's refund raised this month's cap"
            assert response.json() == messages.key_cap_reached(10)


# ------------------------------------------------------------------------------------ plan's monthly credits


@pytest.mark.anyio
async def test_each_plans_monthly_credits_are_granted_at_the_month_turn(api: httpx.AsyncClient) -> None:
    """The spec's 3,000 (Scale) and 8,000 (Ultra) a month: added at each calendar month's turn, once per
    month however far the clock jumps, each a ledger entry; a plan without API access gets none here."""
    await api.post(ACCOUNT, json={"balance": 100})
    await advance(api, await seconds_to_next_month(api) - 1)
    assert await balance(api) == 100  # a second before the turn: nothing yet
    await advance(api, 1)  # the turn itself
    assert await balance(api) == 100 + limits.PLAN_CREDITS["scale"] == 3100
    assert (await run(api)).status_code == 201  # the balance a run is charged from has the grant
    grant, charge = await ledger(api)
    assert (grant["kind"], grant["credits"], grant["keyId"], grant["balance"]) == ("grant", 3000, None, 3100)
    assert grant["at"].endswith("-01T00:00:00.000Z") and grant["at"][:7] == grant["resourceId"]
    assert (charge["kind"], charge["balance"]) == ("charge", 3092)

    await api.post(ACCOUNT, json={"plan": "ultra"})
    await advance(api, await seconds_to_next_month(api) + 1)
    assert await balance(api) == 3092 + 8000
    await advance(api, await seconds_to_next_month(api) + 40 * DAY)  # two turns in one jump: two grants
    assert await balance(api) == 3092 + 3 * 8000
    grants = [e for e in await ledger(api) if e["kind"] == "grant"]
    months = [e["resourceId"] for e in grants]
    assert len(grants) == 4 and len(set(months)) == 4 and months == sorted(months)

    await api.post(ACCOUNT, json={"plan": "free"})
    await advance(api, await seconds_to_next_month(api) + 1)
    assert await balance(api) == 3092 + 3 * 8000
    account = (await api.get(ACCOUNT)).json()["data"]
    assert account["grantedMonth"] > months[-1]  # the month counted, with nothing granted


@pytest.mark.anyio
async def test_a_grant_is_on_the_ledger_the_moment_the_month_turns() -> None:
    """Right after the clock passes the turn, the ledger is read first (no balance read before it):
    every account's grant is there, dated the turn, before anything later; a run that fails after the
    turn is refunded after the grants, and every account agrees on one order."""
    sandbox = Sandbox(clock="manual", seed=1)
    async with client_for(sandbox, bearer(sandbox.demo_key)) as api:
        team = await new_key(api, account="team")
        await advance(api, await seconds_to_next_month(api) - 5)
        assert (await api.post(FAULTS, json={"modelScript": ["fail"]})).status_code == 200
        assert (await run(api)).status_code == 201
        await advance(api, 120)  # the run started before the turn ends after it, and fails
        entries = await ledger(api)
        kinds = [(e["kind"], e["account"]) for e in entries]
        assert kinds == [("charge", "demo"), ("grant", "demo"), ("grant", "team"), ("refund", "demo")]
        assert [e["seq"] for e in entries] == [1, 2, 3, 4]
        month = entries[1]["resourceId"]
        assert entries[1]["at"] == entries[2]["at"] == f"{month}-01T00:00:00.000Z"
        assert (await api.get(INFO)).json()["data"]["counts"]["ledgerEntries"] == 4
        async with client_for(sandbox, bearer(team)) as other:
            assert (await run(other)).status_code == 201
        assert await balance(api, "team") == 2 * limits.PLAN_CREDITS["scale"] - 8
        assert [e["kind"] for e in await ledger(api)][4:] == ["charge"]  # no second grant for anyone
        await advance(api, await seconds_to_next_month(api) + 1)  # nothing runs: only the clock moves
        assert [(e["kind"], e["account"]) for e in await ledger(api)][5:] == [
            ("grant", "demo"),
            ("grant", "team"),
        ]


def test_granted_months_survive_a_restart(tmp_path: Path) -> None:
    """A kept sandbox grants a month once: its state keeps the month granted and the ledger's grants."""
    config = SandboxConfig(clock="manual", seed=1, data_dir=tmp_path)
    with Sandbox(config) as first, httpx.Client(base_url=str(first.base_url), timeout=30) as control:
        now = datetime.fromisoformat(control.get(INFO).json()["data"]["now"].replace("Z", "+00:00"))
        control.post(CLOCK, json={"advance": (32 - now.day) * DAY}).raise_for_status()
        assert control.get(ACCOUNT).json()["data"]["balance"] == 6000
    with Sandbox(config) as again, httpx.Client(base_url=str(again.base_url), timeout=30) as control:
        headers = {"Authorization": bearer(again.demo_key)}
        assert control.post(RUN, json=IMAGE, headers=headers).status_code == 201  # refunds know no key
        assert control.get(ACCOUNT).json()["data"]["balance"] == 6000 - 8
        assert [e["kind"] for e in control.get(LEDGER).json()["data"]["entries"]] == ["grant", "charge"]
