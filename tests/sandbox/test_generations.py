"""The sandbox's generation API over HTTP: error table, start-check order, idempotency, lifecycle, limits.

On the manual clock: a generation runs, a window rolls and a time limit comes only as a test advances it.
"""

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from mediagen_nb.protocol import limits, messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, catalog

BASE = "http://sandbox.test"
RUN = path("run")
ESTIMATE = path("estimate")
KEYS = path("sandbox_keys")
ACCOUNT = path("sandbox_account")
LEDGER = path("sandbox_ledger")
FAULTS = path("sandbox_faults")
CLOCK = path("sandbox_clock")
INFO = path("sandbox_info")
SETTLE = limits.RUNTIME_HARD_SECONDS + 1  # every generation has ended this long after its start

pytestmark = pytest.mark.manual_clock


def sample(name: str) -> str:
    """URL of a sandbox sample input file."""
    return BASE + path("sandbox_samples", name=name)


def generation(gen_id: str) -> str:
    return path("generation", id=gen_id)


def message_of(response: httpx.Response) -> str:
    """The error message: a 429 body is a plain JSON string, other errors an object with ``message``."""
    body = response.json()
    return body if isinstance(body, str) else body["message"]


@asynccontextmanager
async def client_for(sandbox: Sandbox, key: str | None) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of ``sandbox`` sending ``key`` (no Authorization header when None)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(
        transport=sandbox.transport(), base_url=BASE, headers=headers, timeout=30
    ) as client:
        yield client


async def new_key(api: httpx.AsyncClient, **options: Any) -> str:
    """Create a key through the control API and return its secret."""
    response = await api.post(KEYS, json=options)
    assert response.status_code == 201, response.text
    return response.json()["data"]["key"]


async def ledger(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await api.get(LEDGER)
    assert response.status_code == 200
    return response.json()["data"]["entries"]


async def balance(api: httpx.AsyncClient, account: str = "demo") -> int:
    response = await api.get(ACCOUNT, params={"account": account})
    return response.json()["data"]["balance"]


async def advance(api: httpx.AsyncClient, seconds: float) -> None:
    response = await api.post(CLOCK, json={"advance": seconds})
    assert response.status_code == 200


async def start(api: httpx.AsyncClient, model_id: str, input: Any, **headers: str) -> dict[str, Any]:
    """Start a run that must be accepted; return its data."""
    response = await api.post(RUN, json={"modelId": model_id, "input": input}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["data"]


async def read(api: httpx.AsyncClient, gen_id: str, wait: int | None = None) -> dict[str, Any]:
    params = {"wait": str(wait)} if wait is not None else {}
    response = await api.get(generation(gen_id), params=params)
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def finish(api: httpx.AsyncClient, gen_id: str) -> dict[str, Any]:
    """Jump past the hard time limit and read the generation in its final state."""
    await advance(api, SETTLE)
    data = await read(api, gen_id)
    assert data["status"] in ("succeeded", "failed")
    return data


async def refused(
    api: httpx.AsyncClient, body: Any, status: int, message: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    """POST /v1/run must fail with ``status`` and exactly ``message``, charging nothing."""
    entries, credits = await ledger(api), await balance(api)
    response = await api.post(RUN, json=body, headers=headers or {})
    assert response.status_code == status, response.text
    assert message_of(response) == message
    if status != 429:
        assert response.json()["statusCode"] == status
        assert response.json()["error"] == messages.STATUS_NAMES[status]
    assert await ledger(api) == entries
    assert await balance(api) == credits
    return response


TALK = {"image": sample("face.png"), "audio": sample("voice.wav")}
SPEAK = {"text": "Hello there, this is my cloned voice.", "audio": sample("voice.wav")}


# ------------------------------------------------------------------------------------------ error table


@pytest.mark.anyio
async def test_unknown_model(api: httpx.AsyncClient) -> None:
    """An id outside the catalog: 400 listing every available model."""
    expected = messages.unknown_model("gpt-image-9", catalog.BY_ID)
    await refused(api, {"modelId": "gpt-image-9", "input": {"prompt": "x"}}, 400, expected)
    assert expected.startswith("Unknown model 'gpt-image-9'. Available models: gpt-image-2, ")
    await refused(api, {"input": {"prompt": "x"}}, 400, messages.unknown_model("", catalog.BY_ID))


@pytest.mark.anyio
@pytest.mark.parametrize("value", ["a cat", ["a cat"], 3, None])
async def test_input_must_be_an_object(api: httpx.AsyncClient, value: Any) -> None:
    """``input`` that is not a JSON object (or is absent) is refused."""
    await refused(api, {"modelId": "gpt-image-2", "input": value}, 400, messages.INPUT_NOT_OBJECT)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("model_id", "input", "field"),
    [
        ("gpt-image-2", {}, "prompt"),
        ("gpt-image-2", {"prompt": "   "}, "prompt"),
        ("zonos2", {"text": "hi"}, "audio"),
        ("infinitetalk", {"audio": sample("voice.wav")}, "image"),
    ],
)
async def test_missing_required_field(api: httpx.AsyncClient, model_id: str, input: Any, field: str) -> None:
    await refused(api, {"modelId": model_id, "input": input}, 400, messages.missing_field(field))


@pytest.mark.anyio
async def test_enum_mismatch(api: httpx.AsyncClient) -> None:
    """``<field> must be one of: ...`` with the schema's options, in order."""
    body = {"modelId": "gpt-image-2", "input": {"prompt": "a cat", "quality": "ultra"}}
    await refused(api, body, 400, "quality must be one of: low, medium, high")
    body = {"modelId": "infinitetalk", "input": {**TALK, "resolution": "1080p"}}
    await refused(api, body, 400, "resolution must be one of: 480p, 720p")


@pytest.mark.anyio
async def test_infinitetalk_fast_ignores_resolution(api: httpx.AsyncClient) -> None:
    """The spec: infinitetalk-fast is 480p only and ``resolution`` is ignored, not refused."""
    data = await start(api, "infinitetalk-fast", {**TALK, "resolution": "1080p"})
    assert data["creditsSpent"] == 12  # 1.5 credits a second, 8 s


@pytest.mark.anyio
@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.5/x.wav",
        "https://10.0.0.5/x.wav",
        "https://192.168.1.20/voice.mp3",
        sample("no-such-file.wav"),
        BASE + path("sandbox_media", name="0123456789abcdef0123.wav"),
    ],
)
async def test_media_not_reachable(api: httpx.AsyncClient, url: str) -> None:
    """Private addresses and unknown sandbox files cannot be downloaded."""
    body = {"modelId": "zonos2", "input": {**SPEAK, "audio": url}}
    await refused(api, body, 400, "audio URL is not reachable")


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["voice.ogg", "voice.flac", "voice", "face.png"])
async def test_unsupported_media_format(api: httpx.AsyncClient, name: str) -> None:
    """Length-billed media must be .mp3, .wav or .mp4."""
    body = {"modelId": "zonos2", "input": {**SPEAK, "audio": sample(name)}}
    await refused(api, body, 400, messages.UNSUPPORTED_MEDIA_FORMAT)


@pytest.mark.anyio
async def test_unreadable_video_duration(api: httpx.AsyncClient) -> None:
    """An MP4 without a readable duration on a video-length-billed model."""
    model = catalog.BY_ID["frame-interp-2"]
    assert model.media_field == "video" and model.pricing is not None
    body = {"modelId": "frame-interp-2", "input": {"video": sample("broken.mp4")}}
    await refused(api, body, 400, messages.UNREADABLE_VIDEO_DURATION)


@pytest.mark.anyio
async def test_prompt_moderation(api: httpx.AsyncClient) -> None:
    """A blocked whole word (any case) in a text input is rejected; a word containing it is not."""
    for prompt in ("a gore scene", "NSFW poster", "Nude, figure study"):
        body = {"modelId": "gpt-image-2", "input": {"prompt": prompt}}
        await refused(api, body, 400, messages.PROMPT_MODERATED)
    body = {"modelId": "zonos2", "input": {**SPEAK, "text": "a bloodbath tonight"}}
    await refused(api, body, 400, messages.PROMPT_MODERATED)
    await start(api, "gpt-image-2", {"prompt": "a gorgeous sunset"})


@pytest.mark.anyio
async def test_image_moderation(api: httpx.AsyncClient) -> None:
    """An image input whose URL carries the documented marker is rejected, also inside a list."""
    body = {
        "modelId": "flare-1-kontext-pro",
        "input": {"prompt": "make it blue", "image": "https://cdn.example.com/NSFW/a.png"},
    }
    await refused(api, body, 400, messages.IMAGE_MODERATED)
    images = [sample("face.png"), "https://cdn.example.com/nsfw-2.png"]
    body = {"modelId": "seedbloom-4-edit", "input": {"prompt": "combine", "input_images": images}}
    await refused(api, body, 400, messages.IMAGE_MODERATED)


@pytest.mark.anyio
async def test_not_enough_credits(api: httpx.AsyncClient) -> None:
    """The message states the price, the balance and a working top-up link."""
    await api.post(ACCOUNT, json={"balance": 5})
    top_up = BASE + path("sandbox_app", page="billing")
    body = {"modelId": "gpt-image-2", "input": {"prompt": "a cat"}}
    response = await refused(api, body, 400, messages.not_enough_credits(8, 5, top_up))
    assert message_of(response).startswith("Not enough credits")
    assert (await api.get(top_up)).status_code == 200
    await start(api, "gpt-image-2", {"prompt": "a cat", "quality": "low"})  # 3 credits fit
    assert await balance(api) == 2


@pytest.mark.anyio
async def test_invalid_and_unknown_generation_ids(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """Not a UUID: 400. Unknown UUID or another account's generation: 404."""
    for bad in ("not-a-uuid", "123", "cd613e30-d8f1-4adf-91b7"):
        response = await api.get(generation(bad))
        assert response.status_code == 400
        assert response.json() == {
            "statusCode": 400,
            "message": messages.INVALID_GENERATION_ID,
            "error": "Bad Request",
        }
    response = await api.get(generation("00000000-0000-4000-8000-000000000000"))
    assert response.status_code == 404
    assert response.json() == {
        "statusCode": 404,
        "message": messages.GENERATION_NOT_FOUND,
        "error": "Not Found",
    }

    other_key = await new_key(api, account="other")
    async with client_for(sandbox, other_key) as other:
        theirs = await start(other, "gpt-image-2", {"prompt": "a cat"})
        assert (await read(other, theirs["id"]))["id"] == theirs["id"]
    response = await api.get(generation(theirs["id"]))
    assert response.status_code == 404
    assert message_of(response) == messages.GENERATION_NOT_FOUND


@pytest.mark.anyio
async def test_model_at_capacity(api: httpx.AsyncClient) -> None:
    """An injected 503 on a start: charged and refunded in the same request, no generation."""
    await api.post(FAULTS, json={"script": ["503"], "routes": ["run"]})
    credits = await balance(api)
    response = await api.post(RUN, json={"modelId": "gpt-image-2", "input": {"prompt": "a cat"}})
    assert response.status_code == 503
    assert response.json() == {
        "statusCode": 503,
        "message": messages.AT_CAPACITY,
        "error": "Service Unavailable",
    }
    entries = await ledger(api)
    assert [(e["kind"], e["credits"]) for e in entries] == [("charge", 8), ("refund", 8)]
    assert entries[0]["resourceId"] == entries[1]["resourceId"]
    assert await balance(api) == credits
    assert (await api.get(INFO)).json()["data"]["counts"]["generations"] == 0


@pytest.mark.anyio
async def test_monthly_cap(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """A run that would take the key over its cap: 429 with the cap, a plain JSON string."""
    key = await new_key(api, monthlyCap=10)
    async with client_for(sandbox, key) as capped:
        await start(capped, "gpt-image-2", {"prompt": "a cat"})  # 8 of 10
        body = {"modelId": "gpt-image-2", "input": {"prompt": "a dog"}}
        response = await refused(capped, body, 429, "API key monthly credit limit reached (10 credits).")
        assert response.json() == messages.key_cap_reached(10)
        low = {"modelId": "gpt-image-2", "input": {"prompt": "a dog", "quality": "low"}}
        await refused(capped, low, 429, messages.key_cap_reached(10))  # 8 + 3 > 10
        swift = {"prompt": "a dog"}
        await start(capped, "flare-1-swift", swift)  # 9
        await start(capped, "flare-1-swift", swift)  # exactly 10 is allowed
        await refused(capped, {"modelId": "flare-1-swift", "input": swift}, 429, messages.key_cap_reached(10))
    await start(api, "gpt-image-2", {"prompt": "a dog"})  # the demo key has no cap


# ------------------------------------------------------------------------------------ order of checks


@pytest.mark.anyio
async def test_key_before_model(sandbox: Sandbox) -> None:
    """Check 1 (the key) precedes check 2 (the model id)."""
    async with client_for(sandbox, "pk_live_nope") as stranger:
        response = await stranger.post(RUN, json={"modelId": "nope", "input": "x"})
    assert response.status_code == 401
    assert message_of(response) == messages.INVALID_KEY


@pytest.mark.anyio
async def test_model_before_webhook_and_input(api: httpx.AsyncClient) -> None:
    """Check 2 (model) precedes check 3 (webhook, input object)."""
    expected = messages.unknown_model("nope", catalog.BY_ID)
    await refused(api, {"modelId": "nope", "input": "not an object"}, 400, expected)
    await refused(api, {"modelId": "nope", "input": {}, "webhook": "ftp://x.example/h"}, 400, expected)


@pytest.mark.anyio
async def test_webhook_before_input_object(api: httpx.AsyncClient) -> None:
    """Within check 3 the webhook is checked first, then the input's shape."""
    body = {"modelId": "gpt-image-2", "input": "not an object", "webhook": "ftp://hooks.example.com/h"}
    await refused(api, body, 400, messages.WEBHOOK_HTTPS)
    body = {"modelId": "gpt-image-2", "input": [], "webhook": "https://10.1.2.3/h"}
    await refused(api, body, 400, messages.WEBHOOK_HOST)


@pytest.mark.anyio
async def test_shape_checks_before_idempotent_replay(api: httpx.AsyncClient) -> None:
    """Checks 2 and 3 run before a used Idempotency-Key returns its generation (check 4)."""
    first = await start(api, "gpt-image-2", {"prompt": "a cat"}, **{"Idempotency-Key": "k-shape"})
    headers = {"Idempotency-Key": "k-shape"}
    await refused(
        api, {"modelId": "nope", "input": {}}, 400, messages.unknown_model("nope", catalog.BY_ID), headers
    )
    await refused(api, {"modelId": "gpt-image-2", "input": "x"}, 400, messages.INPUT_NOT_OBJECT, headers)
    replay = await api.post(RUN, json={"modelId": "gpt-image-2", "input": {}}, headers=headers)
    assert replay.is_success and replay.json()["data"]["id"] == first["id"]


@pytest.mark.anyio
async def test_replay_beats_start_limit_and_limit_beats_required(sandbox: Sandbox) -> None:
    """Check 4 (replay) wins over check 5 (60 starts a minute), which wins over check 6 (required)."""
    async with client_for(sandbox, sandbox.demo_key) as api:
        other_key = await new_key(api)
        swift = {"modelId": "flare-1-swift", "input": {"prompt": "a cat"}}
        first = await api.post(RUN, json=swift, headers={"Idempotency-Key": "k-limit"})
        assert first.status_code == 201
        async with client_for(sandbox, other_key) as second:
            for i in range(limits.STARTS_PER_ACCOUNT - 1):  # keys share the account's start limit
                client = api if i % 2 else second
                assert (await client.post(RUN, json=swift)).status_code == 201
        assert len(await ledger(api)) == limits.STARTS_PER_ACCOUNT

        await refused(api, swift, 429, messages.TOO_MANY_GENERATIONS)
        await refused(api, {"modelId": "flare-1-swift", "input": {}}, 429, messages.TOO_MANY_GENERATIONS)
        await refused(
            api, {"modelId": "zonos2", "input": {"audio": "x.ogg"}}, 429, messages.TOO_MANY_GENERATIONS
        )
        # The replay is answered even with the window full and an input that is now invalid.
        headers = {"Idempotency-Key": "k-limit"}
        replay = await api.post(RUN, json={"modelId": "flare-1-swift", "input": {}}, headers=headers)
        assert replay.is_success
        assert replay.json()["data"]["id"] == first.json()["data"]["id"]
        assert len(await ledger(api)) == limits.STARTS_PER_ACCOUNT


@pytest.mark.anyio
async def test_required_and_enum_before_media(api: httpx.AsyncClient) -> None:
    """Check 6 (required, enum) precedes check 7 (media format, reachability)."""
    bad_audio = sample("voice.ogg")
    await refused(
        api, {"modelId": "zonos2", "input": {"audio": bad_audio}}, 400, messages.missing_field("text")
    )
    body = {
        "modelId": "infinitetalk",
        "input": {"image": sample("face.png"), "audio": bad_audio, "resolution": "4k"},
    }
    await refused(api, body, 400, "resolution must be one of: 480p, 720p")


@pytest.mark.anyio
async def test_media_before_cap_before_moderation(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """Check 7 (media) precedes check 8 (key cap), which precedes check 9 (moderation)."""
    key = await new_key(api, monthlyCap=0)
    async with client_for(sandbox, key) as capped:
        body = {"modelId": "zonos2", "input": {"text": "gore", "audio": sample("voice.ogg")}}
        await refused(capped, body, 400, messages.UNSUPPORTED_MEDIA_FORMAT)
        body = {"modelId": "zonos2", "input": {"text": "gore", "audio": "http://10.0.0.5/x.wav"}}
        await refused(capped, body, 400, "audio URL is not reachable")
        body = {"modelId": "gpt-image-2", "input": {"prompt": "gore"}}
        await refused(capped, body, 429, messages.key_cap_reached(0))


@pytest.mark.anyio
async def test_moderation_before_balance(api: httpx.AsyncClient) -> None:
    """Check 9 (moderation) precedes check 10 (balance), the last one."""
    await api.post(ACCOUNT, json={"balance": 0})
    await refused(
        api, {"modelId": "gpt-image-2", "input": {"prompt": "gore"}}, 400, messages.PROMPT_MODERATED
    )
    top_up = BASE + path("sandbox_app", page="billing")
    body = {"modelId": "gpt-image-2", "input": {"prompt": "a cat"}}
    await refused(api, body, 400, messages.not_enough_credits(8, 0, top_up))


# ---------------------------------------------------------------------------------------- idempotency


@pytest.mark.anyio
async def test_idempotency_same_key_one_charge(api: httpx.AsyncClient) -> None:
    """The same key returns the same generation and charges once."""
    first = await start(api, "gpt-image-2", {"prompt": "a cat"}, **{"Idempotency-Key": "order-1"})
    again = await api.post(
        RUN,
        json={"modelId": "gpt-image-2", "input": {"prompt": "a cat"}},
        headers={"Idempotency-Key": "order-1"},
    )
    assert again.is_success
    assert again.json()["data"]["id"] == first["id"]
    assert again.json()["data"]["creditsSpent"] == 8
    assert [e["kind"] for e in await ledger(api)] == ["charge"]
    assert await balance(api) == limits.PLAN_CREDITS["scale"] - 8
    third = await start(api, "gpt-image-2", {"prompt": "a cat"}, **{"Idempotency-Key": "order-2"})
    assert third["id"] != first["id"]


@pytest.mark.anyio
async def test_idempotency_first_255_characters(api: httpx.AsyncClient) -> None:
    """Keys equal in their first 255 characters are the same key; a difference before that is not."""
    stem = "k" * (limits.IDEMPOTENCY_KEY_CHARS - 1)
    body = {"modelId": "gpt-image-2", "input": {"prompt": "a cat"}}
    a = await api.post(RUN, json=body, headers={"Idempotency-Key": stem + "X" + "tail-a"})
    b = await api.post(RUN, json=body, headers={"Idempotency-Key": stem + "X" + "tail-b-longer"})
    c = await api.post(RUN, json=body, headers={"Idempotency-Key": stem + "Y" + "tail-a"})
    assert a.status_code == 201 and b.is_success and c.status_code == 201
    assert a.json()["data"]["id"] == b.json()["data"]["id"] != c.json()["data"]["id"]
    assert len([e for e in await ledger(api) if e["kind"] == "charge"]) == 2


@pytest.mark.anyio
async def test_idempotency_is_per_account(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """Another account's use of a key does not return this account's generation."""
    mine = await start(api, "gpt-image-2", {"prompt": "a cat"}, **{"Idempotency-Key": "shared"})
    same_account_key = await new_key(api)
    async with client_for(sandbox, same_account_key) as colleague:
        replay = await colleague.post(
            RUN,
            json={"modelId": "gpt-image-2", "input": {"prompt": "a cat"}},
            headers={"Idempotency-Key": "shared"},
        )
        assert replay.is_success and replay.json()["data"]["id"] == mine["id"]
    other_key = await new_key(api, account="other")
    async with client_for(sandbox, other_key) as other:
        theirs = await start(other, "gpt-image-2", {"prompt": "a cat"}, **{"Idempotency-Key": "shared"})
    assert theirs["id"] != mine["id"]
    charges = [(e["account"], e["resourceId"]) for e in await ledger(api) if e["kind"] == "charge"]
    assert charges == [("demo", mine["id"]), ("other", theirs["id"])]
    assert await balance(api, "other") == limits.PLAN_CREDITS["scale"] - 8


@pytest.mark.anyio
async def test_concurrent_duplicate_starts(api: httpx.AsyncClient) -> None:
    """Duplicate starts in flight together with one key make one generation and one charge."""
    body = {"modelId": "zonos2", "input": SPEAK}
    responses = await asyncio.gather(
        *(api.post(RUN, json=body, headers={"Idempotency-Key": "burst"}) for _ in range(5))
    )
    assert all(r.is_success for r in responses), [r.text for r in responses]
    assert sorted(r.status_code for r in responses) == [200, 200, 200, 200, 201]
    assert len({r.json()["data"]["id"] for r in responses}) == 1
    entries = await ledger(api)
    assert [(e["kind"], e["credits"]) for e in entries] == [("charge", 4)]
    assert (await api.get(INFO)).json()["data"]["counts"]["generations"] == 1


# -------------------------------------------------------------------------------------------- lifecycle


@pytest.mark.anyio
async def test_single_url_becomes_one_item_list(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """A single URL sent to a list field (``input_images``) is a one-item list; the run succeeds."""
    model = catalog.BY_ID["seedbloom-4-edit"]
    assert model.input_schema["properties"]["input_images"]["type"] == "array"
    url = sample("face.png")
    data = await start(api, "seedbloom-4-edit", {"prompt": "add a hat", "input_images": url})
    assert sandbox.world.generations.items[data["id"]].input["input_images"] == [url]
    done = await finish(api, data["id"])
    assert done["status"] == "succeeded"
    assert done["output"]["type"] == "image" and len(done["output"]["urls"]) >= 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("model_id", "input", "kind", "content_type", "magic"),
    [
        ("gpt-image-2", {"prompt": "a red fox", "aspect_ratio": "3:2"}, "image", "image/png", b"\x89PNG"),
        ("zonos2", SPEAK, "audio", "audio/wav", b"RIFF"),
        (
            "infinitetalk-fast",
            {"image": sample("face.png"), "audio": sample("short-voice.wav")},
            "video",
            "video/mp4",
            b"ftyp",
        ),
    ],
)
async def test_lifecycle_and_outputs(
    api: httpx.AsyncClient, model_id: str, input: dict[str, Any], kind: str, content_type: str, magic: bytes
) -> None:
    """processing → succeeded with ``output {type, urls}``; each URL downloads with its content type."""
    data = await start(api, model_id, input)
    assert data["status"] == "processing" and data["output"] is None and data["error"] is None
    assert data["modelId"] == model_id and isinstance(data["creditsSpent"], int) and data["creditsSpent"] > 0
    assert data["createdAt"].endswith("Z") and "T" in data["createdAt"]
    assert "stillRunning" not in data
    done = await finish(api, data["id"])
    assert done["status"] == "succeeded" and done["error"] is None
    assert done["output"]["type"] == kind
    urls = done["output"]["urls"]
    assert urls and all(isinstance(u, str) for u in urls)
    for url in urls:
        response = await api.get(url)
        assert response.status_code == 200
        assert response.headers["content-type"].split(";")[0] == content_type
        assert magic in response.content[:12]
    assert done["creditsSpent"] == data["creditsSpent"] and done["createdAt"] == data["createdAt"]


@pytest.mark.anyio
async def test_wait_long_poll(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """``wait`` holds for its seconds and answers stillRunning on expiry for a slow job, and the final state
    the moment the job ends otherwise."""
    clock = sandbox.world.clock
    slow = await start(api, "infinitetalk", TALK)  # about 186 simulated seconds
    ends = sandbox.world.generations.items[slow["id"]].finish_at
    began = clock.now()
    waited = await read(api, slow["id"], wait=limits.WAIT_MIN_SECONDS)
    assert waited["status"] == "processing" and waited["stillRunning"] is True
    assert clock.now() - began == pytest.approx(limits.WAIT_MIN_SECONDS)  # it held its whole wait
    plain = await read(api, slow["id"])
    assert "stillRunning" not in plain
    polls = [waited]
    while polls[-1]["status"] == "processing":  # each poll holds at most 55 simulated seconds
        assert polls[-1]["stillRunning"] is True and len(polls) < 10
        polls.append(await read(api, slow["id"], wait=limits.WAIT_MAX_SECONDS))
    assert polls[-1]["status"] == "succeeded" and "stillRunning" not in polls[-1]
    assert len(polls) == 1 + math.ceil((ends - began - limits.WAIT_MIN_SECONDS) / limits.WAIT_MAX_SECONDS)
    assert clock.now() - ends == pytest.approx(0, abs=1e-3)  # answered as it ended, not at the wait's end

    quick = await start(api, "flare-1-swift", {"prompt": "a cat"})  # about 5 simulated seconds
    done = await read(api, quick["id"], wait=limits.WAIT_MAX_SECONDS)
    assert done["status"] == "succeeded" and "stillRunning" not in done
    assert clock.now() - sandbox.world.generations.items[quick["id"]].finish_at == pytest.approx(0, abs=1e-3)


@pytest.mark.anyio
@pytest.mark.parametrize("wait", ["4", "56", "0", "-5", "ten", "5.5"])
async def test_wait_out_of_range(api: httpx.AsyncClient, wait: str) -> None:
    data = await start(api, "gpt-image-2", {"prompt": "a cat"})
    response = await api.get(generation(data["id"]), params={"wait": wait})
    assert response.status_code == 400
    assert message_of(response).startswith("wait must be")


@pytest.mark.anyio
async def test_media_duration_only_on_duration_billed_runs(api: httpx.AsyncClient) -> None:
    """``mediaDurationSec`` is the measured length on duration-billed runs and absent otherwise."""
    wav = await start(api, "zonos2", SPEAK)
    assert wav["mediaDurationSec"] == pytest.approx(8.0, abs=0.05)
    mp3 = await start(api, "zonos2", {**SPEAK, "audio": sample("voice.mp3")})
    assert mp3["mediaDurationSec"] == pytest.approx(8.0, abs=0.1)
    video = await start(api, "frame-interp-2", {"video": sample("clip.mp4")})
    assert video["mediaDurationSec"] == pytest.approx(24.0, abs=0.1)
    image = await start(api, "gpt-image-2", {"prompt": "a cat"})
    speech = await start(api, "chatterbox-turbo", {"text": "hello"})
    assert "mediaDurationSec" not in image and "mediaDurationSec" not in speech
    assert (await finish(api, wav["id"]))["mediaDurationSec"] == wav["mediaDurationSec"]
    assert "mediaDurationSec" not in await read(api, image["id"])


# Expected credits; None: one credit per started second of the measured clip (0.5 a second, x2 at factor 4).
ESTIMATE_CASES: list[tuple[str, dict[str, Any], int | None]] = [
    ("gpt-image-2", {"prompt": "a cat", "quality": "low"}, 3),
    ("gpt-image-2", {"prompt": "a cat"}, 8),
    ("gpt-image-2", {"prompt": "a cat", "quality": "high"}, 25),
    ("infinitetalk", {**TALK, "resolution": "480p"}, 16),
    ("infinitetalk", TALK, 32),
    ("infinitetalk-fast", TALK, 12),
    ("zonos2", SPEAK, 4),
    ("zonos2", {**SPEAK, "audio": sample("short-voice.wav")}, 2),
    ("frame-interp-2", {"video": sample("clip.mp4"), "factor": 4}, None),
    ("seedbloom-4-edit", {"prompt": "add a hat", "input_images": [sample("face.png")]}, 3),
]


@pytest.mark.anyio
async def test_estimate_equals_charge(api: httpx.AsyncClient) -> None:
    """The estimate is the run's ``creditsSpent`` and the ledger's charge; estimates never charge."""
    for model_id, input, credits in ESTIMATE_CASES:
        entries = await ledger(api)
        response = await api.post(ESTIMATE, json={"modelId": model_id, "input": input})
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        assert data["modelId"] == model_id and isinstance(data["billing"], str) and data["billing"]
        assert await ledger(api) == entries
        run = await start(api, model_id, input)
        if credits is None:
            credits = math.ceil(run["mediaDurationSec"])
        assert data["credits"] == credits, (model_id, input)
        assert run["creditsSpent"] == credits
        assert (await ledger(api))[-1]["credits"] == credits


@pytest.mark.anyio
async def test_estimate_of_infinitetalk_resolutions(api: httpx.AsyncClient) -> None:
    """720p costs exactly twice 480p for any audio length."""
    for audio in ("voice.wav", "short-voice.wav", "voice.mp3"):
        prices = []
        for resolution in ("480p", "720p"):
            body = {
                "modelId": "infinitetalk",
                "input": {**TALK, "audio": sample(audio), "resolution": resolution},
            }
            prices.append((await api.post(ESTIMATE, json=body)).json()["data"]["credits"])
        assert prices[1] == 2 * prices[0]


@pytest.mark.anyio
async def test_estimate_falls_back_to_30_seconds(api: httpx.AsyncClient) -> None:
    """An unreadable file is priced as 30 s by the estimate while the run refuses it."""
    body = {"modelId": "frame-interp-2", "input": {"video": sample("broken.mp4")}}
    response = await api.post(ESTIMATE, json=body)
    assert response.status_code == 200
    assert response.json()["data"]["credits"] == 15  # 0.5 a second x 30 s
    body_zonos = {"modelId": "zonos2", "input": {**SPEAK, "audio": sample("missing.wav")}}
    assert (await api.post(ESTIMATE, json=body_zonos)).json()["data"]["credits"] == 15
    await refused(api, body, 400, messages.UNREADABLE_VIDEO_DURATION)
    await refused(api, body_zonos, 400, "audio URL is not reachable")
    assert await ledger(api) == []


@pytest.mark.anyio
async def test_estimate_checks_input_and_key(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """The estimate validates like the run and needs a key, but does not refuse on balance."""
    response = await api.post(ESTIMATE, json={"modelId": "gpt-image-2", "input": {"quality": "low"}})
    assert response.status_code == 400 and message_of(response) == messages.missing_field("prompt")
    response = await api.post(ESTIMATE, json={"modelId": "nope", "input": {}})
    assert message_of(response) == messages.unknown_model("nope", catalog.BY_ID)
    await api.post(ACCOUNT, json={"balance": 0})
    response = await api.post(ESTIMATE, json={"modelId": "gpt-image-2", "input": {"prompt": "a cat"}})
    assert response.status_code == 200 and response.json()["data"]["credits"] == 8
    async with client_for(sandbox, None) as anonymous:
        response = await anonymous.post(ESTIMATE, json={"modelId": "gpt-image-2", "input": {"prompt": "a"}})
    assert response.status_code == 401 and message_of(response) == messages.MISSING_CREDENTIALS


# ------------------------------------------------------------------------------------------ time limits


@pytest.mark.anyio
async def test_hang_times_out_after_15_minutes_plus_media(sandbox: Sandbox) -> None:
    """A hung run fails at 15 min + 5 s per media second, with ``Generation timed out``, refunded."""
    async with client_for(sandbox, sandbox.demo_key) as api:
        await api.post(FAULTS, json={"modelScript": ["hang", "hang"]})
        talk = await start(api, "zonos2", SPEAK)
        image = await start(api, "gpt-image-2", {"prompt": "a cat"})
        credits = await balance(api)
        limit = limits.RUNTIME_BASE_SECONDS + limits.RUNTIME_PER_MEDIA_SECOND * 8
        await advance(api, limits.RUNTIME_BASE_SECONDS - 3)
        assert (await read(api, image["id"]))["status"] == "processing"
        await advance(api, 4)
        failed_image = await read(api, image["id"])
        assert failed_image["status"] == "failed"
        assert failed_image["error"].startswith(messages.GENERATION_TIMED_OUT)
        assert (await read(api, talk["id"]))["status"] == "processing"  # 40 s more for 8 s of audio
        await advance(api, limit - limits.RUNTIME_BASE_SECONDS - 2)
        assert (await read(api, talk["id"]))["status"] == "processing"
        await advance(api, 3)
        failed = await read(api, talk["id"])
        assert failed["status"] == "failed" and failed["output"] is None
        assert failed["error"].startswith(messages.GENERATION_TIMED_OUT)
        assert failed["creditsSpent"] == 4
        refunds = {e["resourceId"]: e["credits"] for e in await ledger(api) if e["kind"] == "refund"}
        assert refunds == {talk["id"]: 4, image["id"]: 8}
        assert await balance(api) == credits + 12 == limits.PLAN_CREDITS["scale"]


@pytest.mark.anyio
async def test_long_media_hits_the_30_minute_hard_limit(sandbox: Sandbox) -> None:
    """With over 180 s of input audio, the 30-minute hard limit ends the run before 15 min + 5 s/s."""
    async with client_for(sandbox, sandbox.demo_key) as api:
        speech = await start(api, "zonos2", {**SPEAK, "text": "word " * 600})  # 3000 characters: 200 s
        spoken = await finish(api, speech["id"])
        assert spoken["status"] == "succeeded"
        long_audio = spoken["output"]["urls"][0]
        await api.post(FAULTS, json={"modelScript": ["hang"]})
        talk = await start(api, "infinitetalk-fast", {"image": sample("face.png"), "audio": long_audio})
        assert talk["mediaDurationSec"] == pytest.approx(200.0, abs=0.1)
        assert talk["creditsSpent"] == 300
        assert (
            limits.RUNTIME_BASE_SECONDS + limits.RUNTIME_PER_MEDIA_SECOND * 200 > limits.RUNTIME_HARD_SECONDS
        )
        await advance(api, limits.RUNTIME_HARD_SECONDS - 2)
        assert (await read(api, talk["id"]))["status"] == "processing"
        await advance(api, 3)
        failed = await read(api, talk["id"])
        assert failed["status"] == "failed"
        assert failed["error"].startswith(messages.GENERATION_TIMED_OUT)
        assert failed["creditsSpent"] == 300
        assert [(e["kind"], e["credits"]) for e in await ledger(api) if e["resourceId"] == talk["id"]] == [
            ("charge", 300),
            ("refund", 300),
        ]


@pytest.mark.anyio
async def test_model_failure_is_refunded(api: httpx.AsyncClient) -> None:
    """A failing model: status failed, error filled, credits refunded and ``creditsSpent`` = refund."""
    await api.post(FAULTS, json={"modelScript": ["fail"]})
    data = await start(api, "gpt-image-2", {"prompt": "a cat", "quality": "high"})
    assert data["status"] == "processing"
    failed = await finish(api, data["id"])
    assert failed["status"] == "failed" and failed["output"] is None
    assert isinstance(failed["error"], str) and failed["error"]
    assert not failed["error"].startswith(messages.GENERATION_TIMED_OUT)
    entries = [e for e in await ledger(api) if e["resourceId"] == data["id"]]
    assert [(e["kind"], e["credits"]) for e in entries] == [("charge", 25), ("refund", 25)]
    assert failed["creditsSpent"] == entries[1]["credits"]
    assert await balance(api) == limits.PLAN_CREDITS["scale"]
    ok = await start(api, "gpt-image-2", {"prompt": "a cat"})  # the script is used up
    assert (await finish(api, ok["id"]))["status"] == "succeeded"
