"""The sandbox's fault injection over HTTP: 429, 500, 503, slow, drop, scripts, seeded rates, config."""

import asyncio
import re
from typing import Any

import httpx
import pytest
from _wait import turns

from mediagen_nb.protocol import limits, messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox

RUN = path("run")
ESTIMATE = path("estimate")
LEDGER = path("sandbox_ledger")
FAULTS = path("sandbox_faults")
RESET = path("sandbox_reset")
CLOCK = path("sandbox_clock")
INFO = path("sandbox_info")
IMAGE = {"modelId": "gpt-image-2", "input": {"prompt": "a cat"}}  # 8 credits
SWIFT = {"modelId": "flare-1-swift", "input": {"prompt": "a cat"}}  # 1 credit


async def configure(api: httpx.AsyncClient, **plan: Any) -> dict[str, Any]:
    """Replace the fault plan; return the plan as the sandbox describes it."""
    response = await api.post(FAULTS, json=plan)
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def ledger(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    return (await api.get(LEDGER)).json()["data"]["entries"]


async def generation_count(api: httpx.AsyncClient) -> int:
    return (await api.get(INFO)).json()["data"]["counts"]["generations"]


async def balance(api: httpx.AsyncClient) -> int:
    return (await api.get(path("sandbox_account"))).json()["data"]["balance"]


@pytest.mark.anyio
async def test_injected_429_is_a_plain_string(api: httpx.AsyncClient) -> None:
    """An injected 429 answers a bare JSON string, charges nothing, and is used up."""
    await configure(api, script=["429"], routes=["run"])
    response = await api.post(RUN, json=IMAGE)
    assert response.status_code == 429
    assert response.json() == messages.KEY_RATE_LIMIT
    assert response.headers["content-type"].startswith("application/json")
    assert "retry-after" not in response.headers
    assert await ledger(api) == [] and await generation_count(api) == 0
    assert (await api.post(RUN, json=IMAGE)).status_code == 201
    assert (await api.get(FAULTS)).json()["data"]["injected"] == {"429": 1}


@pytest.mark.anyio
async def test_injected_500_is_an_error_object(api: httpx.AsyncClient) -> None:
    """An injected 500 answers the service's error object and charges nothing."""
    await configure(api, script=["500"], routes=["run"])
    response = await api.post(RUN, json=IMAGE)
    assert response.status_code == 500
    assert response.json() == {
        "statusCode": 500,
        "message": messages.SERVER_ERROR,
        "error": "Internal Server Error",
    }
    assert await ledger(api) == [] and await generation_count(api) == 0


@pytest.mark.anyio
async def test_routes_limit_where_faults_land(api: httpx.AsyncClient) -> None:
    """A scripted fault waits for a request to a listed endpoint; others pass untouched."""
    await configure(api, script=["500"], routes=["estimate"])
    assert (await api.post(RUN, json=IMAGE)).status_code == 201
    assert (await api.post(ESTIMATE, json=IMAGE)).status_code == 500
    assert (await api.post(ESTIMATE, json=IMAGE)).status_code == 200


@pytest.mark.anyio
async def test_503_on_run_refunds_and_retry_creates_one(api: httpx.AsyncClient) -> None:
    """A 503 start is charged and refunded in the same request; the retry with the key creates one."""
    await configure(api, script=["503"], routes=["run"])
    headers = {"Idempotency-Key": "retry-503"}
    response = await api.post(RUN, json=IMAGE, headers=headers)
    assert response.status_code == 503
    assert response.json()["message"] == messages.AT_CAPACITY
    entries = await ledger(api)
    assert [(e["kind"], e["credits"]) for e in entries] == [("charge", 8), ("refund", 8)]
    assert entries[0]["resourceId"] == entries[1]["resourceId"]
    assert await generation_count(api) == 0
    assert await balance(api) == limits.PLAN_CREDITS["scale"]
    lost = await api.get(path("generation", id=entries[0]["resourceId"]))
    assert lost.status_code == 404 and lost.json()["message"] == messages.GENERATION_NOT_FOUND

    retry = await api.post(RUN, json=IMAGE, headers=headers)
    assert retry.status_code == 201
    again = await api.post(RUN, json=IMAGE, headers=headers)
    assert again.is_success and again.json()["data"]["id"] == retry.json()["data"]["id"]
    assert await generation_count(api) == 1
    charges = [e for e in await ledger(api) if e["kind"] == "charge"]
    assert len(charges) == 2 and charges[-1]["resourceId"] == retry.json()["data"]["id"]
    assert await balance(api) == limits.PLAN_CREDITS["scale"] - 8


@pytest.mark.anyio
async def test_503_on_reads_is_plain(api: httpx.AsyncClient) -> None:
    """Away from start calls a 503 is a refusal with nothing to charge or refund."""
    started = (await api.post(RUN, json=IMAGE)).json()["data"]
    await configure(api, script=["503"], routes=["generation"])
    response = await api.get(path("generation", id=started["id"]))
    assert response.status_code == 503 and response.json()["message"] == messages.AT_CAPACITY
    assert [e["kind"] for e in await ledger(api)] == ["charge"]


@pytest.mark.anyio
async def test_slow_response() -> None:
    """A ``slow`` fault holds the response ``slowSeconds`` on the sandbox's clock (simulated seconds on a
    manual clock): it is answered when that much time has been advanced, not before; the next at once."""
    box = Sandbox(clock="manual", seed=1)
    key = {"Authorization": f"Bearer {box.demo_key}"}
    async with httpx.AsyncClient(
        transport=box.transport(), base_url="http://sandbox.test", headers=key
    ) as api:
        await configure(api, script=["slow"], routes=["estimate"], slowSeconds=0.4)
        slow = asyncio.create_task(api.post(ESTIMATE, json=IMAGE))
        held_from = box.world.clock.now()
        await turns()  # the request reaches its hold
        assert box.world.clock.next_due() == pytest.approx(held_from + 0.4)
        box.advance(0.3)
        await asyncio.wait([slow], timeout=0)  # one turn of the loop for the request: still held
        assert not slow.done()
        box.advance(0.1)
        response = await slow
        assert response.status_code == 200 and response.json()["data"]["credits"] == 8
        assert (await api.post(ESTIMATE, json=IMAGE)).status_code == 200  # no fault: no hold, no advance
        assert box.world.clock.now() == pytest.approx(held_from + 0.4)


@pytest.mark.anyio
async def test_drop_after_processing(api: httpx.AsyncClient) -> None:
    """A dropped start is processed: the retry with its Idempotency-Key returns that generation."""
    await configure(api, script=["drop"], routes=["run"])
    headers = {"Idempotency-Key": "retry-drop"}
    with pytest.raises(httpx.RemoteProtocolError):
        await api.post(RUN, json=IMAGE, headers=headers)
    entries = await ledger(api)
    assert [(e["kind"], e["credits"]) for e in entries] == [("charge", 8)]
    retry = await api.post(RUN, json=IMAGE, headers=headers)
    assert retry.is_success
    assert retry.json()["data"]["id"] == entries[0]["resourceId"]
    assert await ledger(api) == entries
    assert await generation_count(api) == 1


@pytest.mark.anyio
async def test_drop_on_a_read(api: httpx.AsyncClient) -> None:
    """A dropped read raises the transport error; reading again works."""
    started = (await api.post(RUN, json=IMAGE)).json()["data"]
    await configure(api, script=["drop"], routes=["generation"])
    with pytest.raises(httpx.RemoteProtocolError):
        await api.get(path("generation", id=started["id"]))
    assert (await api.get(path("generation", id=started["id"]))).status_code == 200


async def _statuses(api: httpx.AsyncClient, count: int) -> list[int]:
    return [(await api.post(ESTIMATE, json=IMAGE)).status_code for _ in range(count)]


@pytest.mark.anyio
async def test_script_replays_identically(api: httpx.AsyncClient) -> None:
    """A script runs in order (``ok`` = no fault), then requests are clean; replaying gives the same."""
    plan = {"script": ["429", "ok", "500", "503", "ok", "429"], "routes": ["estimate"], "seed": 5}
    await configure(api, **plan)
    first = await _statuses(api, 8)
    assert first == [429, 200, 500, 503, 200, 429, 200, 200]
    assert (await api.get(FAULTS)).json()["data"]["injected"] == {"429": 2, "500": 1, "503": 1}
    assert (await api.post(RESET)).status_code == 200
    await configure(api, **plan)
    assert await _statuses(api, 8) == first


@pytest.mark.anyio
async def test_rates_reproducible_with_seed(api: httpx.AsyncClient) -> None:
    """Random HTTP faults follow the seed: the same seed gives the same sequence, another seed another."""
    plan = {"rates": {"500": 0.3, "429": 0.2}, "routes": ["estimate"]}
    await configure(api, **plan, seed=42)
    first = await _statuses(api, 20)
    assert {200, 429, 500} <= set(first)
    await api.post(RESET)
    await configure(api, **plan, seed=42)
    assert await _statuses(api, 20) == first
    await api.post(RESET)
    await configure(api, **plan, seed=43)
    assert await _statuses(api, 20) != first


@pytest.mark.anyio
async def test_model_outcomes_reproducible(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """Model failure rates follow the seed too; after a reset a replay gets the same ids and outcomes."""

    async def session() -> list[tuple[str, str]]:
        await configure(api, rates={"fail": 0.5}, routes=["run"], seed=7)
        ids = [(await api.post(RUN, json=SWIFT)).json()["data"]["id"] for _ in range(8)]
        await api.post(CLOCK, json={"advance": limits.RUNTIME_HARD_SECONDS + 1})
        return [(i, (await api.get(path("generation", id=i))).json()["data"]["status"]) for i in ids]

    first = await session()
    assert {status for _, status in first} == {"succeeded", "failed"}
    refunds = [e["resourceId"] for e in await ledger(api) if e["kind"] == "refund"]  # as the runs ended
    assert sorted(refunds) == sorted(i for i, status in first if status == "failed")
    await api.post(RESET)
    assert await session() == first


@pytest.mark.anyio
async def test_model_script(api: httpx.AsyncClient) -> None:
    """``modelScript`` decides the next generations' outcomes in order."""
    await configure(api, modelScript=["fail", "ok", "hang"])
    ids = [(await api.post(RUN, json=SWIFT)).json()["data"]["id"] for _ in range(4)]
    await api.post(CLOCK, json={"advance": limits.RUNTIME_HARD_SECONDS + 1})
    reads = [(await api.get(path("generation", id=i))).json()["data"] for i in ids]
    assert [r["status"] for r in reads] == ["failed", "succeeded", "failed", "succeeded"]
    assert reads[2]["error"].startswith(messages.GENERATION_TIMED_OUT)
    assert not reads[0]["error"].startswith(messages.GENERATION_TIMED_OUT)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("plan", "field"),
    [
        ({"rates": [0.5]}, "rates"),
        ({"rates": {"boom": 0.1}}, "rates.boom"),
        ({"rates": {"500": 1.5}}, "rates.500"),
        ({"rates": {"503": -0.1}}, "rates.503"),
        ({"rates": {"fail": True}}, "rates.fail"),
        ({"rates": {"500": "0.1"}}, "rates.500"),
        ({"rates": {"500": 0.6, "503": 0.6}}, "rates"),
        ({"rates": {"fail": 0.7, "hang": 0.7}}, "rates"),
        ({"script": ["boom"]}, "script"),
        ({"script": "500"}, "script"),
        ({"script": ["fail"]}, "script"),
        ({"modelScript": ["500"]}, "modelScript"),
        ({"modelScript": {"fail": 1}}, "modelScript"),
        ({"routes": "run"}, "routes"),
        ({"routes": [1]}, "routes"),
        ({"routes": ["runs"]}, "routes"),
        ({"slowSeconds": -1}, "slowSeconds"),
        ({"slowSeconds": 61}, "slowSeconds"),
        ({"slowSeconds": "2"}, "slowSeconds"),
        ({"seed": "x"}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": False}, "seed"),
    ],
)
async def test_config_errors_name_the_field(api: httpx.AsyncClient, plan: dict[str, Any], field: str) -> None:
    """A bad fault plan is a 400 whose message starts with the field; the plan in force is kept."""
    kept = await configure(api, script=["500"], routes=["estimate"])
    response = await api.post(FAULTS, json=plan)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["statusCode"] == 400 and body["error"] == "Bad Request"
    assert re.match(re.escape(field) + r"\b", body["message"]), body
    assert (await api.get(FAULTS)).json()["data"] == kept


@pytest.mark.anyio
async def test_valid_plan_is_described(api: httpx.AsyncClient) -> None:
    """The plan reads back as configured; an empty body clears it."""
    described = await configure(
        api,
        rates={"500": 0.1, "fail": 0.2},
        script=["slow", "ok"],
        modelScript=["hang"],
        routes=["run", "generation"],
        slowSeconds=0.5,
        seed=9,
    )
    assert described["rates"] == {"500": 0.1, "fail": 0.2}
    assert described["script"] == ["slow", "ok"] and described["modelScript"] == ["hang"]
    assert described["routes"] == ["generation", "run"] and described["slowSeconds"] == 0.5
    cleared = await configure(api)
    assert cleared["rates"] == {} and cleared["script"] == [] and cleared["routes"] is None
