"""Every generation-API operation of Client and AsyncClient against a real sandbox, and its errors.

Each test runs twice: a sync ``Client`` over real HTTP on 127.0.0.1 and an ``AsyncClient`` in-process.
Requests are counted with an httpx event hook on the client's own transport.
"""

import json
import math
import uuid
from typing import Any

import httpx
import pytest
from _kit import Kit, open_kit, query
from _shared import unused_port
from _wait import PauseLog

from mediagen_nb.client import (
    AsyncClient,
    AuthenticationError,
    CapacityError,
    Client,
    ConnectionFailed,
    Estimate,
    Generation,
    GenerationFailed,
    GenerationTimedOut,
    InsufficientCreditsError,
    KeyCapReachedError,
    Model,
    ModerationError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ShortVideoJob,
    ValidationError,
    WaitTimeout,
)
from mediagen_nb.client.core import CONNECT_RETRIES
from mediagen_nb.client.resources import ReplicationRun
from mediagen_nb.client.retry import NO_RETRY
from mediagen_nb.protocol import messages
from mediagen_nb.sandbox import Sandbox

IMAGE = {"prompt": "a paper boat on a pond", "quality": "low"}  # gpt-image-2, 3 credits, ~30 s
pytestmark = pytest.mark.anyio


# --------------------------------------------------------------------------------------------- catalog


@pytest.mark.spellings
async def test_models_are_the_catalog_and_are_cached(kit: Kit) -> None:
    """130 Model records (72/41/17); a second call sends nothing; refresh=True reads again, keyless."""
    models = await kit.call("models")
    assert len(models) == 130 and all(isinstance(m, Model) for m in models)
    kinds = [m.output_type for m in models]
    assert (kinds.count("video"), kinds.count("image"), kinds.count("audio")) == (72, 41, 17)
    gpt = next(m for m in models if m.id == "gpt-image-2")
    assert gpt.required == ("prompt",) and gpt.pricing is not None and "quality" in gpt.varies_by
    assert kit.recorder.count("models") == 1
    again = await kit.call("models")
    assert [m.id for m in again] == [m.id for m in models]
    assert kit.recorder.count("models") == 1, "the second call must come from the cache"
    await kit.call("models", refresh=True)
    assert kit.recorder.count("models") == 2
    assert all("authorization" not in r.headers for r in kit.recorder.requests), "catalog needs no key"


async def test_model_detail_has_example_only_when_one_exists(kit: Kit) -> None:
    """model(id) carries ``example`` for a model that has one and None otherwise; unknown id is 404."""
    with_example: Model | None = None
    without: Model | None = None
    for listed in (await kit.call("models"))[:130]:
        detail = await kit.call("model", listed.id)
        assert isinstance(detail, Model) and detail.id == listed.id
        if detail.example is not None and with_example is None:
            with_example = detail
        if detail.example is None and without is None:
            without = detail
        if with_example and without:
            break
    assert with_example is not None and without is not None
    assert with_example.example is not None
    assert with_example.example["output"]["type"] in ("image", "video", "audio")
    assert str(with_example.example["output"]["url"]).startswith(kit.base_url)
    reads = kit.recorder.count("model")
    assert (await kit.call("model", with_example.id)) is with_example, "cached per client"
    assert kit.recorder.count("model") == reads
    with pytest.raises(NotFoundError) as raised:
        await kit.call("model", "no-such-model")
    assert raised.value.status == 404 and raised.value.message.startswith("Model not found")


async def test_openapi_document_and_llms_txt(kit: Kit) -> None:
    doc = await kit.call("openapi")
    assert isinstance(doc, dict) and str(doc["openapi"]).startswith("3.1.")
    assert "Input_gpt-image-2" in doc["components"]["schemas"]
    assert any(p.endswith("/run") for p in doc["paths"])
    text = await kit.call("llms_txt")
    assert isinstance(text, str) and "gpt-image-2" in text and "zonos2" in text
    assert kit.recorder.non_catalog() == []


# ------------------------------------------------------------------------------------------ generations


@pytest.mark.spellings
async def test_estimate_equals_the_charge_of_the_run(kit: Kit) -> None:
    """An estimate charges nothing and equals the run's creditsSpent (flat-by-option and length-billed)."""
    cases: list[tuple[str, dict[str, Any]]] = [
        ("gpt-image-2", {"prompt": "a lighthouse", "quality": "high"}),
        ("zonos2", {"text": "Hello there, friends.", "audio": kit.sample("voice.wav")}),
    ]
    for model_id, values in cases:
        before = len(kit.ledger())
        estimate = await kit.call("estimate", model_id, values)
        assert isinstance(estimate, Estimate) and estimate.model_id == model_id and estimate.billing
        assert len(kit.ledger()) == before, "an estimate never charges"
        started = await kit.call("run", model_id, values)
        assert isinstance(started, Generation)
        assert started.status == "processing" and started.output is None and started.error is None
        assert started.credits_spent == estimate.credits > 0
        [charge] = kit.ledger(started.id)
        assert charge["kind"] == "charge" and charge["credits"] == started.credits_spent
    assert kit.recorder.count("estimate") == 2 and kit.recorder.count("run") == 2


@pytest.mark.manual_clock
async def test_generation_reads_with_and_without_wait(kit: Kit) -> None:
    """generation(id) reads once; generation(id, wait=55) holds until the run ends (one read for a run
    shorter than 55 s); a bad wait is refused before sending."""
    started = await kit.call("run", "gpt-image-2", IMAGE)
    now = await kit.call("generation", started.id)
    assert now.id == started.id and now.status == "processing"  # no time has passed
    assert query(kit.recorder.of("generation")[-1]) == {}
    ends = kit.sandbox.world.generations.items[started.id].finish_at
    assert ends - kit.sandbox.world.clock.now() < 55
    current = await kit.call("generation", started.id, wait=55)
    assert query(kit.recorder.of("generation")[-1]) == {"wait": ["55"]}
    assert kit.sandbox.world.clock.now() - ends == pytest.approx(0, abs=1e-3)  # answered as it ended
    assert current.status == "succeeded" and current.url and current.output_type == "image"
    assert current.credits_spent == started.credits_spent and current.elapsed_s is not None
    sent = len(kit.recorder.requests)
    with pytest.raises(ValidationError) as raised:
        await kit.call("generation", started.id, wait=3)
    assert raised.value.sent is False and raised.value.field == "wait"
    assert len(kit.recorder.requests) == sent


async def test_wait_long_polls_until_succeeded(kit: Kit) -> None:
    started = await kit.call("run", "gpt-image-2", IMAGE)
    updates: list[Generation] = []
    done = await kit.call("wait", started, on_update=updates.append)
    assert done.status == "succeeded" and done.url and updates[-1] is done
    reads = kit.recorder.of("generation")
    assert reads and all(query(r)["wait"] == ["55"] for r in reads), "wait never short-polls"


@pytest.mark.spellings
async def test_generate_runs_waits_and_reports_updates(kit: Kit) -> None:
    updates: list[Generation] = []
    result = await kit.call("generate", "gpt-image-2", IMAGE, on_update=updates.append)
    assert result.status == "succeeded" and result.output_type == "image" and result.url
    assert updates[0].status == "processing" and updates[-1] is result
    assert kit.recorder.count("run") == 1
    assert all("wait" in query(r) for r in kit.recorder.of("generation"))


async def test_generate_raises_generation_failed_on_a_model_failure(kit: Kit) -> None:
    await kit.control("POST", "sandbox_faults", {"modelScript": ["fail"]})
    with pytest.raises(GenerationFailed) as raised:
        await kit.call("generate", "gpt-image-2", IMAGE)
    assert not isinstance(raised.value, GenerationTimedOut)
    failed = raised.value.generation
    assert failed.status == "failed" and failed.error and not failed.timed_out
    assert failed.id in str(raised.value)
    assert [e["kind"] for e in kit.ledger(failed.id)] == ["charge", "refund"]


async def test_generate_raises_timed_out_on_a_hang(kit: Kit) -> None:
    """A hung run meets its time limit (clock advanced 2000 s): GenerationTimedOut, refunded."""
    await kit.control("POST", "sandbox_faults", {"modelScript": ["hang"]})
    updates: list[Generation] = []

    def on_update(generation: Generation) -> None:
        if not updates:
            kit.advance_clock(2000)
        updates.append(generation)

    with pytest.raises(GenerationTimedOut) as raised:
        await kit.call("generate", "gpt-image-2", IMAGE, on_update=on_update)
    failed = raised.value.generation
    assert isinstance(raised.value, GenerationFailed)
    assert failed.timed_out and str(failed.error).startswith(messages.GENERATION_TIMED_OUT)
    assert updates[0].status == "processing" and updates[-1].status == "failed"
    assert [e["kind"] for e in kit.ledger(failed.id)] == ["charge", "refund"]


async def test_wait_timeout_keeps_the_last_reading(kit: Kit) -> None:
    await kit.control("POST", "sandbox_faults", {"modelScript": ["hang"]})
    started = await kit.call("run", "gpt-image-2", IMAGE)
    with pytest.raises(WaitTimeout) as raised:
        await kit.call("wait", started, timeout=20)
    assert isinstance(raised.value.last, Generation) and raised.value.last.status == "processing"
    holds = [int(query(r).get("wait", ["0"])[0]) for r in kit.recorder.of("generation")]
    assert 1 <= len(holds) <= 5 and sum(holds) <= 20 and all(h == 0 or 5 <= h <= 20 for h in holds)


@pytest.mark.parametrize("timeout", [2, 7])
async def test_a_wait_ends_on_time_without_asking_the_service_to_hold_past_it(kit: Kit, timeout: int) -> None:
    """The service holds a read 5 to 55 s: a timeout of 2 s never asks for 5 (issue 20: it took 6 s).
    What is left under 5 s is waited by the client, then read once without a hold."""
    await kit.control("POST", "sandbox_faults", {"modelScript": ["hang"]})
    started = await kit.call("run", "gpt-image-2", IMAGE)
    kit.recorder.clear()
    with pytest.raises(WaitTimeout):
        await kit.call("wait", started, timeout=timeout)
    holds = [int(query(r).get("wait", ["0"])[0]) for r in kit.recorder.of("generation")]
    assert sum(holds) <= timeout and 1 <= len(holds) <= 2  # one hold at most, then one read at most
    assert all(h == 0 or h >= 5 for h in holds) and (timeout >= 5 or holds == [0] * len(holds))


@pytest.mark.parametrize("flavor", ["sync", "async"])
async def test_slow_model_wait_needs_few_long_polls(flavor: str) -> None:
    """infinitetalk on a zonos2 voice at time x60: at most 1 + ceil(T/55) reads, each with ``wait``."""
    sandbox = Sandbox(time_scale=60, seed=1)
    try:
        async with open_kit(flavor, sandbox) as kit:
            text = "Thanks for watching. Today we look at three small habits that make mornings calm. " * 2
            voice = await kit.call(
                "generate", "zonos2", text=text.strip(), audio=kit.sample("voice.wav"), timeout=600
            )
            assert voice.output_type == "audio" and voice.url
            kit.recorder.clear()
            updates: list[Generation] = []
            talk = await kit.call(
                "generate",
                "infinitetalk",
                image=kit.sample("face.png"),
                audio=voice.url,
                resolution="480p",
                on_update=updates.append,
                timeout=1800,
            )
            assert talk.status == "succeeded" and talk.output_type == "video"
            assert talk.media_duration_sec and talk.media_duration_sec > 5
            state = sandbox.world.generations.items[talk.id]
            simulated = state.finish_at - state.created_at
            assert simulated > 55 * 2, "the run must be long enough to need several polls"
            reads = kit.recorder.of("generation")
            assert all(query(r).get("wait") == ["55"] for r in reads), "never a read without wait"
            assert 2 <= len(reads) <= 1 + math.ceil(simulated / 55)
            assert len(updates) == len(reads) + 1
    finally:
        sandbox.stop()


# ---------------------------------------------------------------------------------------------- errors


async def test_bad_key_is_an_authentication_error_not_retried(kit: Kit) -> None:
    client = kit.new("pk_live_" + uuid.uuid4().hex)
    with pytest.raises(AuthenticationError) as raised:
        await kit.call("generation", str(uuid.uuid4()), client=client)
    error = raised.value
    assert (error.status, error.message, error.retryable) == (401, messages.INVALID_KEY, False)
    assert kit.recorder.count("generation") == 1


async def test_suspended_account_is_permission_denied(kit: Kit) -> None:
    await kit.control("POST", "sandbox_account", {"suspended": True})
    with pytest.raises(PermissionDeniedError) as raised:
        await kit.call("run", "gpt-image-2", IMAGE)
    assert (raised.value.status, raised.value.message) == (403, messages.SUSPENDED)
    assert kit.recorder.count("run") == 1 and kit.ledger() == []


async def test_unknown_generation_is_not_found(kit: Kit) -> None:
    with pytest.raises(NotFoundError) as raised:
        await kit.call("generation", str(uuid.uuid4()))
    assert (raised.value.status, raised.value.message) == (404, messages.GENERATION_NOT_FOUND)
    sent = len(kit.recorder.non_catalog())
    with pytest.raises(ValidationError) as invalid:  # refused here, with the service's own words
        await kit.call("generation", "not-a-uuid")
    assert invalid.value.message.startswith(messages.INVALID_GENERATION_ID) and invalid.value.sent is False
    assert len(kit.recorder.non_catalog()) == sent


@pytest.mark.parametrize(
    ("model_id", "values", "field", "message"),
    [
        ("gpt-image-2", {"quality": "low"}, "prompt", messages.missing_field("prompt")),
        (
            "gpt-image-2",
            {"prompt": "x", "quality": "ultra"},
            "quality",
            messages.not_one_of("quality", ["low", "medium", "high"]),
        ),
        ("gpt-image-2", "a paper boat", "input", messages.INPUT_NOT_OBJECT),
        (
            "kiwi-image-edit",
            {"prompt": "x", "input_images": []},
            "input_images",
            messages.too_few_items("input_images", 1),
        ),
        (
            "kiwi-image-edit",
            {"prompt": "x", "input_images": ["https://8.8.8.8/a.png"] * 4},
            "input_images",
            messages.too_many_items("input_images", 3),
        ),
    ],
)
async def test_service_side_validation_error(
    kit: Kit, model_id: str, values: Any, field: str, message: str
) -> None:
    """validate=False: the sandbox refuses (400) and the error is a ValidationError with sent=True."""
    with pytest.raises(ValidationError) as raised:
        await kit.call("run", model_id, values, validate=False)
    error = raised.value
    assert (error.status, error.message, error.field, error.sent) == (400, message, field, True)
    assert kit.recorder.count("run") == 1 and kit.ledger() == []


async def test_moderation_errors(kit: Kit) -> None:
    with pytest.raises(ModerationError) as raised:
        await kit.call("run", "gpt-image-2", prompt="a gore scene", quality="low")
    assert raised.value.message == messages.PROMPT_MODERATED and raised.value.status == 400
    with pytest.raises(ModerationError) as image:
        await kit.call(
            "run", "kiwi-image-edit", prompt="make it blue", input_images=["https://8.8.8.8/nsfw.png"]
        )
    assert image.value.message == messages.IMAGE_MODERATED
    assert kit.ledger() == []


async def test_insufficient_credits_parses_needed_balance_and_link(kit: Kit) -> None:
    await kit.control("POST", "sandbox_account", {"balance": 2})
    with pytest.raises(InsufficientCreditsError) as raised:
        await kit.call("run", "gpt-image-2", IMAGE)
    error = raised.value
    assert (error.status, error.needed, error.balance) == (400, 3, 2)
    assert error.top_up_url == kit.url("sandbox_app", page="billing")
    assert kit.ledger() == []


async def test_rate_limit_429_plain_string_body(kit: Kit) -> None:
    started = await kit.call("run", "gpt-image-2", IMAGE)
    await kit.control("POST", "sandbox_faults", {"script": ["429"], "routes": ["generation"]})
    with pytest.raises(RateLimitError) as raised:
        await kit.call("generation", started.id, client=kit.new(retry=NO_RETRY))
    error = raised.value
    assert error.body == messages.KEY_RATE_LIMIT, "the 429 body is a plain JSON string"
    assert (error.status, error.message, error.scope, error.retryable) == (
        429,
        messages.KEY_RATE_LIMIT,
        "key",
        True,
    )


async def test_key_cap_reached_is_parsed_and_not_retried(kit: Kit) -> None:
    capped = await kit.create_key(name="capped", monthlyCap=2)
    with pytest.raises(KeyCapReachedError) as raised:
        await kit.call("run", "gpt-image-2", IMAGE, client=kit.new(capped["key"]))
    error = raised.value
    assert (error.status, error.cap, error.retryable) == (429, 2, False)
    assert not isinstance(error, RateLimitError)
    assert kit.recorder.count("run") == 1, "a spent cap is not retried (it resets next month)"
    assert kit.ledger() == []


async def test_server_and_capacity_errors_are_retryable(kit: Kit) -> None:
    client = kit.new(retry=NO_RETRY)
    started = await kit.call("run", "gpt-image-2", IMAGE)
    await kit.control("POST", "sandbox_faults", {"script": ["500"], "routes": ["generation"]})
    with pytest.raises(ServerError) as server:
        await kit.call("generation", started.id, client=client)
    assert (server.value.status, server.value.retryable) == (500, True)
    await kit.control("POST", "sandbox_faults", {"script": ["503"], "routes": ["run"]})
    with pytest.raises(CapacityError) as capacity:
        await kit.call("run", "gpt-image-2", IMAGE, client=client)
    error = capacity.value
    assert (error.status, error.retryable) == (503, True) and error.message == messages.AT_CAPACITY
    refused = [e for e in kit.ledger() if e["resourceId"] != started.id]
    assert [e["kind"] for e in refused] == ["charge", "refund"], "charged and refunded in the same request"


async def test_connection_failure_is_retried_then_raised(kit: Kit) -> None:
    """A closed loopback port: ConnectionFailed within seconds (two quick retries, nothing was sent),
    naming the address and the setting to check."""
    base_url = f"http://127.0.0.1:{unused_port()}"
    recorder = kit.recorder
    client: Client | AsyncClient
    paced = PauseLog()
    options: dict[str, Any] = {"time_scale": 6000, "clock": paced}
    if kit.flavor == "sync":
        http = httpx.Client(event_hooks={"request": [recorder.sync_hook]})
        kit.transports.append(http)
        client = Client("pk_live_offline", base_url=base_url, http_client=http, **options)
    else:
        ahttp = httpx.AsyncClient(event_hooks={"request": [recorder.async_hook]})
        kit.transports.append(ahttp)
        client = AsyncClient("pk_live_offline", base_url=base_url, http_client=ahttp, **options)
    with pytest.raises(ConnectionFailed) as raised:
        await kit.call("generation", str(uuid.uuid4()), client=client)
    assert paced.pauses == list(CONNECT_RETRIES)  # two short waits between the three tries, no more
    error = raised.value
    assert not error.retryable and error.status is None and error.sent is False
    assert base_url in error.message and "MEDIAGEN_BASE_URL" in error.message
    assert recorder.count("generation") == 3


# --------------------------------------------------------------------------- client-side validation

WEB = "https://8.8.8.8"  # a public host; nothing is ever sent there
CLIENT_REFUSALS = [
    pytest.param("gpt-image-2", {"quality": "low"}, "prompt", messages.missing_field("prompt"), id="missing"),
    pytest.param(
        "gpt-image-2",
        {"prompt": "x", "quality": "ultra"},
        "quality",
        messages.not_one_of("quality", ["low", "medium", "high"]),
        id="enum",
    ),
    pytest.param(
        "gpt-image-2", {"prompt": 5}, "prompt", messages.wrong_type("prompt", "a string"), id="type"
    ),
    pytest.param(
        "infinitetalk",
        {"image": f"{WEB}/f.png", "audio": f"{WEB}/a.wav", "seed": "x"},
        "seed",
        messages.wrong_type("seed", "an integer"),
        id="integer",
    ),
    pytest.param(
        "flare-1-pro",
        {"prompt": "x", "num_inference_steps": 0},
        "num_inference_steps",
        messages.out_of_range("num_inference_steps", 1, 50),
        id="minimum",
    ),
    pytest.param(
        "flare-1-pro",
        {"prompt": "x", "guidance_scale": 10.5},
        "guidance_scale",
        messages.out_of_range("guidance_scale", 1.0, 10.0),
        id="maximum",
    ),
    pytest.param(
        "kiwi-image-edit",
        {"prompt": "x", "input_images": [f"{WEB}/a.png"] * 4},
        "input_images",
        messages.too_many_items("input_images", 3),
        id="max-items",
    ),
    pytest.param(
        "kiwi-image-edit",
        {"prompt": "x", "input_images": []},
        "input_images",
        messages.too_few_items("input_images", 1),
        id="min-items",
    ),
    pytest.param(
        "no-such-model",
        {"prompt": "x"},
        "modelId",
        "Unknown model 'no-such-model'. Available models: ",
        id="unknown-model",
    ),
    pytest.param(
        "zonos2",
        {"text": "Hi", "audio": f"{WEB}/voice.ogg"},
        "audio",
        messages.UNSUPPORTED_MEDIA_FORMAT,
        id="media-format",
    ),
    pytest.param("gpt-image-2", "a paper boat", "input", messages.INPUT_NOT_OBJECT, id="not-object"),
]


@pytest.mark.parametrize(("model_id", "values", "field", "message"), CLIENT_REFUSALS)
@pytest.mark.parametrize("operation", ["run", "estimate", "generate"])
async def test_client_refuses_before_any_request(
    kit: Kit, operation: str, model_id: str, values: Any, field: str, message: str
) -> None:
    """Refused by the client: no keyed request at all, nothing charged, ``sent`` False."""
    await kit.call("models")
    with pytest.raises(ValidationError) as raised:
        await kit.call(operation, model_id, values)
    error = raised.value
    assert error.message.startswith(message) and error.field == field
    assert error.sent is False and error.status is None  # refused here: no HTTP status
    assert kit.recorder.non_catalog() == [], "nothing but the catalog may be read"
    assert kit.ledger() == [] and kit.sandbox.world.requests.count("key_demo") == 0


async def test_single_url_to_a_list_field_is_sent_as_a_one_item_list(kit: Kit) -> None:
    models = await kit.call("models")
    edit = next(m for m in models if "input_images" in m.list_fields and "input_images" in m.required)
    face = kit.sample("face.png")
    started = await kit.call("run", edit.id, prompt="make the sky orange", input_images=face)
    [request] = kit.recorder.of("run")
    body = json.loads(request.content)
    assert body == {"modelId": edit.id, "input": {"prompt": "make the sky orange", "input_images": [face]}}
    assert kit.sandbox.world.generations.items[started.id].input["input_images"] == [face]


# -------------------------------------------------------------------------------------------- resources


async def test_resources_show_readable_reprs_and_typed_html(kit: Kit) -> None:
    """Generation reprs and notebook HTML by output type: <img>, <audio controls>, <video controls>."""
    image = await kit.call("generate", "gpt-image-2", IMAGE)
    audio = await kit.call("generate", "zonos2", text="Hello!", audio=kit.sample("voice.wav"))
    video = await kit.call(
        "generate", "infinitetalk-fast", image=kit.sample("face.png"), audio=kit.sample("voice.wav")
    )
    shown = repr(image)
    assert shown.startswith("Generation(") and image.id in shown and "'succeeded'" in shown
    assert "model_id='gpt-image-2'" in shown and image.url in shown
    html_image, html_audio, html_video = image._repr_html_(), audio._repr_html_(), video._repr_html_()
    assert f'<img src="{image.url}"' in html_image and "<video" not in html_image
    assert "<audio" in html_audio and " controls" in html_audio and audio.url in html_audio
    assert "<video" in html_video and " controls" in html_video and video.url in html_video
    model = await kit.call("model", "gpt-image-2")
    assert repr(model).startswith("Model(id='gpt-image-2'") and "quality" in model._repr_html_()


def test_html_escapes_script_and_quotes_and_refuses_javascript_urls() -> None:
    hostile = 'https://x.test/a.png?"><script>alert(1)</script>'
    generation = Generation.from_api(
        {
            "id": "9b2f6c1e-3d4a-4e5f-8a6b-7c8d9e0f1a2b",
            "modelId": "<script>alert('m')</script>",
            "status": "failed",
            "output": {"type": "image", "urls": [hostile, "javascript:alert(2)", " JavaScript:alert(3)"]},
            "error": '<script>alert("e")</script> & "quotes"',
            "creditsSpent": 3,
        }
    )
    page = generation._repr_html_()
    assert "<script" not in page and "javascript:" not in page.lower()
    assert "&lt;script&gt;" in page and "&quot;" in page
    assert 'src="https://x.test/a.png?&quot;&gt;&lt;script&gt;' in page
    model = Model.from_api(
        {
            "id": "m",
            "outputType": "image",
            "credits": 3,
            "description": "<script>x</script>",
            "previewUrl": "javascript:alert(1)",
            "input_schema": {},
        }
    )
    assert "<script" not in model._repr_html_() and "javascript:" not in model._repr_html_()
    job = ShortVideoJob.from_api({"jobId": "j", "topic": "<script>t</script>", "videoUrl": "javascript:x"})
    assert "<script" not in job._repr_html_() and "javascript:" not in job._repr_html_()


def test_unknown_fields_are_kept_in_extra() -> None:
    generation = Generation.from_api(
        {
            "id": "9b2f6c1e-3d4a-4e5f-8a6b-7c8d9e0f1a2b",
            "modelId": "m",
            "status": "processing",
            "creditsSpent": 1,
            "queuePosition": 4,
        }
    )
    assert generation.extra == {"queuePosition": 4} and generation.credits_spent == 1
    model = Model.from_api(
        {"id": "m", "outputType": "audio", "credits": 2, "input_schema": {}, "pricing": None, "tags": ["new"]}
    )
    assert model.extra == {"tags": ["new"]} and model.pricing is None
    run = ReplicationRun.from_api({"runId": "r", "modelId": "p-video", "region": "eu"})
    assert (run.id, run.extra) == ("r", {"region": "eu"})
    job = ShortVideoJob.from_api({"jobId": "j", "status": "done", "creditsSpent": 37})
    assert job.extra == {"creditsSpent": 37}
