"""The sandbox's replication API over HTTP: link rules, analyses, blueprints, runs, charging and webhooks."""

import itertools
import json
import math
from typing import Any

import httpx
import pytest
from _pipelines import SimClock, poll

from mediagen_nb.protocol import limits, messages, wire
from mediagen_nb.protocol import replication as replication_rules
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, catalog, pricing
from mediagen_nb.sandbox.media import measure_seconds
from mediagen_nb.sandbox.replication import takes
from mediagen_nb.sandbox.replication.backend import MARKETING_DELAY_SECONDS
from mediagen_nb.sandbox.replication.blueprint import HARD_FADE

pytestmark = [pytest.mark.anyio, pytest.mark.manual_clock]

BASE = "http://sandbox.test"
CLIP = "https://sandbox.test/_sandbox/samples/clip.mp4"  # 24 s, 9:16; the sandbox reads its own files
TIKTOK = "https://www.tiktok.com/@demo/video/7301"  # a platform link: nothing to download
SHOTS = "https://www.tiktok.com/@demo/video/shots-7301"  # the word "shots": shot list only
HOOK = "http://127.0.0.1:9/hook"  # loopback: allowed by the test sandbox, recorded in the outbox
BILLING = BASE + path("sandbox_app", page="billing")


async def analyze(api: httpx.AsyncClient, url: str = CLIP, **headers: str) -> httpx.Response:
    return await api.post(path("analyze"), json={"url": url}, headers=headers)


async def ready(api: httpx.AsyncClient, sandbox: Sandbox, url: str = CLIP) -> dict[str, Any]:
    """A ready analysis whose clip prompts are written (building the blueprint when needed)."""
    response = await analyze(api, url)
    assert response.status_code == 201, response.text
    analysis_id = response.json()["data"]["analysisId"]
    where = path("analysis", id=analysis_id)
    data = (await poll(api, sandbox, where, lambda d: d["status"] != "analyzing"))[-1]
    assert data["status"] == "ready", data
    if data["blueprint"]["clips"][0]["prompt"] is None:
        built = await api.post(path("blueprint", id=analysis_id))
        assert built.json()["data"][wire.BLUEPRINT_STARTED] is True
        data = (await poll(api, sandbox, where, lambda d: d["blueprint"]["clips"][0]["prompt"] is not None))[
            -1
        ]
    return data


async def replicate(
    api: httpx.AsyncClient, analysis_id: str, body: dict[str, Any], **headers: str
) -> httpx.Response:
    return await api.post(path("replicate", id=analysis_id), json=body, headers=headers)


async def finished_run(api: httpx.AsyncClient, sandbox: Sandbox, run_id: str) -> list[dict[str, Any]]:
    return await poll(
        api, sandbox, path("replication_run", id=run_id), lambda d: d["status"] in ("done", "failed")
    )


def entries(sandbox: Sandbox, resource_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in sandbox.world.accounts.ledger
        if e["resourceId"] == resource_id and kind in (None, e["kind"])
    ]


def balance(sandbox: Sandbox) -> int:
    return sandbox.world.accounts.accounts["demo"].balance


def message(response: httpx.Response) -> str:
    body = response.json()
    return body if isinstance(body, str) else body["message"]


def webhook_bodies(sandbox: Sandbox) -> list[dict[str, Any]]:
    return [json.loads(entry["body"]) for entry in sandbox.world.outbox.sent]


async def other_client(api: httpx.AsyncClient, sandbox: Sandbox) -> httpx.AsyncClient:
    """A client with a key of another account."""
    created = await api.post(path("sandbox_keys"), json={"account": "other"})
    secret = created.json()["data"]["key"]
    return httpx.AsyncClient(
        transport=sandbox.transport(), base_url=BASE, headers={"Authorization": f"Bearer {secret}"}
    )


# ------------------------------------------------------------------------------------------ analyze


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (None, messages.missing_field("url")),
        ("http://www.tiktok.com/@a/video/1", messages.URL_MUST_BE_HTTPS),
        ("https://vimeo.com/12345", messages.UNSUPPORTED_LINK),
        ("https://www.youtube.com/@somechannel", messages.UNSUPPORTED_LINK),
        ("https://example.com/video.gif", messages.UNSUPPORTED_LINK),
        ("https://www.tiktok.com/@a/photo/7301", messages.PHOTO_POST),
        ("https://www.instagram.com/p/photoC0ffee/", messages.PHOTO_POST),
        ("https://sandbox.test/_sandbox/samples/long.mp4", messages.video_too_long(150)),
        ("https://sandbox.test/_sandbox/samples/broken.mp4", messages.UNREADABLE_VIDEO_DURATION),
        ("https://sandbox.test/_sandbox/samples/missing.mp4", messages.media_not_reachable("video")),
    ],
)
async def test_analyze_refuses_bad_links_without_charging(
    api: httpx.AsyncClient, sandbox: Sandbox, url: str | None, expected: str
) -> None:
    response = await api.post(path("analyze"), json={} if url is None else {"url": url})
    assert (response.status_code, message(response)) == (400, expected)
    assert sandbox.world.accounts.ledger == []
    assert sandbox.world.replication.analyses == {}


async def test_platform_length_is_simulated_and_long_word_is_too_long(api: httpx.AsyncClient) -> None:
    response = await analyze(api, "https://www.youtube.com/shorts/long-day-vlog")
    assert response.status_code == 400
    assert message(response).startswith("That video is") and message(response).endswith(
        "long; the limit is two minutes"
    )
    for url in (
        TIKTOK,
        "https://vm.tiktok.com/ZMabc/",
        "https://youtu.be/dQw4w9WgXcQ",
        "https://www.youtube.com/watch?v=abc123",
        "https://www.instagram.com/reel/C0ffee/",
        "https://www.instagram.com/p/C0ffee/",
    ):
        assert (await analyze(api, url)).status_code == 201, url


async def test_analysis_goes_ready_with_every_field(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    started = await analyze(api)
    assert started.status_code == 201
    data = started.json()["data"]
    assert data == {"analysisId": data["analysisId"], "status": "analyzing", "creditsSpent": 5}
    assert [(e["kind"], e["credits"]) for e in entries(sandbox, data["analysisId"])] == [("charge", 5)]
    where = path("analysis", id=data["analysisId"])
    reads = await poll(api, sandbox, where, lambda d: d["status"] != "analyzing")
    last = reads[-1]
    # A read while it analyzes has no blueprint yet (on a loaded machine even the first read may come
    # after it ended: the start's own answer above is the analyzing state every time).
    during = [read for read in reads if read["status"] == "analyzing"]
    assert all(read["blueprint"] is None and read["clipCount"] is None for read in during)
    assert set(last) == {
        "analysisId", "status", "title", "durationSeconds", "clipCount", "sourceUrl",
        "videoUrl", "posterUrl", "blueprint", "error",
    }  # fmt: skip
    assert last["status"] == "ready" and last["error"] is None
    assert last["durationSeconds"] == pytest.approx(24.0, abs=0.1)
    assert last["sourceUrl"] == CLIP and last["videoUrl"] == CLIP and last["title"] == "clip"
    poster = await api.get(last["posterUrl"])
    assert poster.headers["content-type"] == "image/png" and poster.content.startswith(b"\x89PNG")
    blueprint = last["blueprint"]
    assert {"clips", "styleBible", "soundtrack", "aspect", "shots", "speakers", "characters"} <= set(
        blueprint
    )
    assert blueprint["aspect"] == "9:16"
    clips = blueprint["clips"]
    assert last["clipCount"] == len(clips) == len(blueprint["shots"]) >= 4
    assert clips[0]["start"] == 0 and clips[-1]["end"] == pytest.approx(last["durationSeconds"], abs=0.01)
    for before, after in itertools.pairwise(clips):
        assert before["end"] == after["start"]
    for clip in clips:
        assert {"start", "end", "prompt", "camera", "beats", "onScreenText", "overlays", "keyframes"} <= set(
            clip
        )
        assert isinstance(clip["prompt"], str) or clip["prompt"] is None
        assert set(clip["camera"]) == {"framing", "movement"}
        assert len(clip["beats"]) == math.ceil(clip["end"] - clip["start"])
        assert clip["transition"] in ("cut", HARD_FADE)
        assert "layout" not in clip or clip["layout"]["type"] == "split-screen"
    again = (await api.get(where)).json()["data"]
    assert again == last, "a ready analysis reads the same every time"


async def test_platform_analysis_stores_an_mp4_of_its_length(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    data = await ready(api, sandbox, "https://www.youtube.com/watch?v=abc123")
    assert data["blueprint"]["aspect"] == "16:9"
    assert limits.SOURCE_VIDEO_MAX_SECONDS >= data["durationSeconds"] >= 12
    video = await api.get(data["videoUrl"])
    assert video.headers["content-type"] == "video/mp4"
    assert measure_seconds(video.content, ".mp4") == pytest.approx(data["durationSeconds"], abs=0.2)


async def test_analyze_idempotency_key_returns_the_original_for_24_hours(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    first = await analyze(api, **{"Idempotency-Key": "once"})
    again = await analyze(api, "https://www.tiktok.com/@x/video/1", **{"Idempotency-Key": "once"})
    assert first.status_code == 201 and again.status_code == 200
    analysis_id = first.json()["data"]["analysisId"]
    assert again.json()["data"]["analysisId"] == analysis_id
    assert len(sandbox.world.replication.analyses) == 1
    assert [e["credits"] for e in sandbox.world.accounts.ledger] == [5]
    other = await analyze(api, **{"Idempotency-Key": "twice"})
    assert other.json()["data"]["analysisId"] != analysis_id
    sandbox.advance(limits.IDEMPOTENCY_RETENTION_SECONDS - 1)
    kept = await analyze(api, **{"Idempotency-Key": "once"})
    assert kept.status_code == 200 and kept.json()["data"]["analysisId"] == analysis_id
    sandbox.advance(2)  # past the 24 hours
    expired = await analyze(api, **{"Idempotency-Key": "once"})
    assert expired.status_code == 201 and expired.json()["data"]["analysisId"] != analysis_id
    assert [e["credits"] for e in sandbox.world.accounts.ledger] == [5, 5, 5]


async def test_analysis_failure_is_refunded(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    await api.post(path("sandbox_faults"), json={"modelScript": ["fail"]})
    before = balance(sandbox)
    analysis_id = (await analyze(api)).json()["data"]["analysisId"]
    assert balance(sandbox) == before - 5
    data = (await poll(api, sandbox, path("analysis", id=analysis_id), lambda d: d["status"] != "analyzing"))[
        -1
    ]
    assert data["status"] == "failed" and "refunded" in data["error"] and data["blueprint"] is None
    assert [(e["kind"], e["credits"]) for e in entries(sandbox, analysis_id)] == [
        ("charge", 5),
        ("refund", 5),
    ]
    assert balance(sandbox) == before


async def test_hung_analysis_times_out_and_is_refunded(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    await api.post(path("sandbox_faults"), json={"modelScript": ["hang"]})
    clock = SimClock(sandbox)
    analysis_id = (await analyze(api)).json()["data"]["analysisId"]
    where = path("analysis", id=analysis_id)
    clock.to(clock.at + limits.RUNTIME_BASE_SECONDS - 1)
    assert (await api.get(where)).json()["data"]["status"] == "analyzing"
    clock.to(clock.at + limits.RUNTIME_PER_MEDIA_SECOND * 25)
    data = (await api.get(where)).json()["data"]
    assert data["status"] == "failed" and "timed out" in data["error"]
    assert [e["kind"] for e in entries(sandbox, analysis_id)] == ["charge", "refund"]


async def test_analyze_503_is_charged_and_refunded_in_the_same_request(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    await api.post(path("sandbox_faults"), json={"script": ["503"], "routes": ["analyze"]})
    before = balance(sandbox)
    response = await analyze(api)
    assert (response.status_code, message(response)) == (503, messages.AT_CAPACITY)
    assert [(e["kind"], e["credits"]) for e in sandbox.world.accounts.ledger] == [
        ("charge", 5),
        ("refund", 5),
    ]
    assert balance(sandbox) == before and sandbox.world.replication.analyses == {}
    assert (await analyze(api)).status_code == 201


async def test_analyze_balance_and_key_cap(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    await api.post(path("sandbox_account"), json={"balance": 4})
    low = await analyze(api)
    assert (low.status_code, message(low)) == (400, messages.not_enough_credits(5, 4, BILLING))
    await api.post(path("sandbox_account"), json={"balance": 100})
    capped = (await api.post(path("sandbox_keys"), json={"monthlyCap": 4})).json()["data"]["key"]
    response = await api.post(
        path("analyze"), json={"url": CLIP}, headers={"Authorization": f"Bearer {capped}"}
    )
    assert response.status_code == 429 and response.json() == messages.key_cap_reached(4)
    assert sandbox.world.accounts.ledger == []


async def test_unknown_and_foreign_ids_are_not_found(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    data = await ready(api, sandbox)
    run = await replicate(api, data["analysisId"], {"clips": [0]})
    run_id = run.json()["data"]["runId"]
    async with await other_client(api, sandbox) as other:
        for client in (api, other):
            unknown = "00000000-0000-4000-8000-000000000000"
            analysis_id = unknown if client is api else data["analysisId"]
            for method, where in (
                ("GET", path("analysis", id=analysis_id)),
                ("POST", path("blueprint", id=analysis_id)),
                ("POST", path("replicate", id=analysis_id)),
            ):
                response = await client.request(method, where, json={})
                assert (response.status_code, message(response)) == (404, messages.FLOW_NOT_FOUND)
            response = await client.get(path("replication_run", id=unknown if client is api else run_id))
            assert (response.status_code, message(response)) == (404, messages.RUN_NOT_FOUND)


# ----------------------------------------------------------------------------------------- blueprint


async def test_shot_list_only_analysis_needs_the_blueprint_built(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    analysis_id = (await analyze(api, SHOTS)).json()["data"]["analysisId"]
    where = path("analysis", id=analysis_id)
    early = await api.post(path("blueprint", id=analysis_id))
    assert (
        early.json()["data"][wire.BLUEPRINT_STARTED] is False and early.json()["data"][wire.BLUEPRINT_REASON]
    )
    not_ready = await replicate(api, analysis_id, {})
    assert (not_ready.status_code, message(not_ready)) == (400, messages.FLOW_NOT_READY)
    data = (await poll(api, sandbox, where, lambda d: d["status"] != "analyzing"))[-1]
    assert data["status"] == "ready"
    assert all(clip["prompt"] is None for clip in data["blueprint"]["clips"])
    assert (
        len(data["blueprint"]["shots"]) == data["clipCount"] and data["blueprint"]["shots"][0]["description"]
    )
    reading = await replicate(api, analysis_id, {})
    assert (reading.status_code, message(reading)) == (400, messages.STILL_READING_SHOTS)
    started = await api.post(path("blueprint", id=analysis_id))
    assert started.status_code == 200 and started.json()["data"] == {wire.BLUEPRINT_STARTED: True}
    building = (await api.post(path("blueprint", id=analysis_id))).json()["data"]
    assert building[wire.BLUEPRINT_STARTED] is False and "being built" in building[wire.BLUEPRINT_REASON]
    built = (await poll(api, sandbox, where, lambda d: d["blueprint"]["clips"][0]["prompt"] is not None))[-1]
    assert all(isinstance(clip["prompt"], str) and clip["prompt"] for clip in built["blueprint"]["clips"])
    done = (await api.post(path("blueprint", id=analysis_id))).json()["data"]
    assert done == {
        wire.BLUEPRINT_STARTED: False,
        wire.BLUEPRINT_REASON: "The blueprint is already built",
    }
    assert (await replicate(api, analysis_id, {"clips": [0]})).status_code == 201


# -------------------------------------------------------------------------------------------- runs


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        ({"modelId": "veo-3"}, 400, messages.unknown_replication_model(catalog.REPLICATION_MODELS)),
        ({"quality": "ultra"}, 400, "quality must be one of: low, medium, high"),
        ({"accuracy": "perfect"}, 400, "accuracy must be one of: fast, balanced, exact"),
        ({"clips": [0, 999]}, 400, messages.CLIP_OUT_OF_RANGE),
        ({"clips": [-1]}, 400, messages.CLIP_OUT_OF_RANGE),
        ({"clips": "all"}, 400, messages.wrong_type("clips", "a non-empty list of clip indexes")),
        ({"characterImage": "https://img.example/nsfw-face.png"}, 400, messages.IMAGE_MODERATED),
        (
            {"characterImage": "http://img.example/face.png"},
            400,
            "characterImage must be an https URL of an image",
        ),
        ({"captions": "yes"}, 400, messages.wrong_type("captions", "true or false")),
        ({"audio": {"mode": "remix"}}, 400, "audio.mode must be one of: chunks, original, upload"),
        ({"audio": "original"}, 400, messages.wrong_type("audio", 'an object such as {"mode": "chunks"}')),
        ({"audio": {"mode": "upload"}}, 400, "audio.url must be an https URL of an .mp3, .wav or .mp4 file"),
        (
            {"audio": {"mode": "upload", "url": "https://sandbox.test/_sandbox/samples/gone.mp3"}},
            400,
            "audio URL is not reachable",
        ),
        (
            {"audio": {"mode": "upload", "url": "https://sandbox.test/x.ogg"}},
            400,
            messages.UNSUPPORTED_MEDIA_FORMAT,
        ),
        ({"marketingAspect": "1:1"}, 400, "marketingAspect must be one of: 9:16, 16:9"),
        ({"webhook": "http://10.0.0.5/hook"}, 400, messages.WEBHOOK_HTTPS),
        ({"webhook": "https://printer.local/hook"}, 400, messages.WEBHOOK_HOST),
    ],
)
async def test_replicate_body_rules(
    api: httpx.AsyncClient, sandbox: Sandbox, body: dict[str, Any], status: int, expected: str
) -> None:
    analysis_id = (await ready(api, sandbox, TIKTOK))["analysisId"]
    before = len(sandbox.world.accounts.ledger)
    response = await replicate(api, analysis_id, body)
    assert (response.status_code, message(response)) == (status, expected)
    assert len(sandbox.world.accounts.ledger) == before and sandbox.world.replication.runs == {}


async def test_run_states_outputs_charges_and_webhook(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    analysis = await ready(api, sandbox)
    clock = SimClock(sandbox)
    body = {
        "accuracy": "exact",
        "captions": True,
        "audio": {"mode": "chunks"},
        "webhook": HOOK,
        "quality": "low",
    }
    started = await replicate(api, analysis["analysisId"], body)
    assert started.status_code == 201
    assert started.json()["data"] == {
        "runId": started.json()["data"]["runId"],
        "modelId": "seedance-2-fast-i2v",
    }
    run_id = started.json()["data"]["runId"]
    run = sandbox.world.replication.runs[run_id]
    where = path("replication_run", id=run_id)

    async def read() -> dict[str, Any]:
        return (await api.get(where)).json()["data"]

    data = await read()
    assert set(data) == {
        "id", "analysisId", "modelId", "quality", "status", "totalClips", "doneClips", "outputVideoUrl",
        "compareVideoUrl", "cleanOutputVideoUrl", "marketingVideoUrl", "marketingVideoUrl169", "shareUrl",
        "error", "createdAt",
    }  # fmt: skip
    assert data["status"] == "generating" and data["doneClips"] == 0 and data["quality"] == "low"
    assert data["totalClips"] == analysis["clipCount"] and data["analysisId"] == analysis["analysisId"]
    assert all(data[k] is None for k in ("outputVideoUrl", "compareVideoUrl", "shareUrl", "error"))
    assert [e["clips"] for e in entries(sandbox, run_id, "charge")] == [[0]], (
        "only the first take is charged yet"
    )
    for index, take in enumerate(run.takes[:-1]):
        clock.to(take.end_at)
        data = await read()
        assert (data["status"], data["doneClips"]) == ("generating", index + 1)
        assert len(entries(sandbox, run_id, "charge")) == index + 2
    clock.to(run.takes[-1].end_at)
    data = await read()
    assert (data["status"], data["doneClips"]) == ("stitching", analysis["clipCount"])
    assert data["outputVideoUrl"] is None
    clock.to(run.done_at)
    done = await read()
    assert done["status"] == "done" and done["error"] is None
    assert done["shareUrl"] == BASE + path("sandbox_app", page=f"r/{run_id}")
    assert done["outputVideoUrl"] and done["compareVideoUrl"] and done["cleanOutputVideoUrl"]
    assert done["marketingVideoUrl"] is None and done["marketingVideoUrl169"] is None, (
        "marketing cuts come later"
    )
    clock.to(run.done_at + MARKETING_DELAY_SECONDS)
    later = await read()
    assert later["marketingVideoUrl"] and later["marketingVideoUrl169"]
    assert len({later["marketingVideoUrl"], later["marketingVideoUrl169"], later["outputVideoUrl"]}) == 3
    charges = entries(sandbox, run_id, "charge")
    assert [e["clips"] for e in charges] == [[i] for i in range(analysis["clipCount"])]
    assert entries(sandbox, run_id, "refund") == []
    assert all(e["credits"] == take.credits for e, take in zip(charges, run.takes, strict=True))
    assert {e["modelId"] for e in charges} == {"seedance-2-fast-i2v"}
    [hook] = [w for w in sandbox.world.outbox.sent if json.loads(w["body"]).get("id") == run_id]
    assert hook["url"] == HOOK and hook["headers"]["User-Agent"] == "Service-Webhook/1"
    assert json.loads(hook["body"]) == {**done, "event": "replication.completed"}
    output = await api.get(done["outputVideoUrl"])
    assert output.headers["content-type"] == "video/mp4"
    assert measure_seconds(output.content, ".mp4") == pytest.approx(analysis["durationSeconds"], abs=0.2)


@pytest.mark.scaled_clock  # its subject: the fast real clock drives the whole pipeline
async def test_run_reaches_done_in_scaled_time(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    analysis = await ready(api, sandbox)
    run_id = (await replicate(api, analysis["analysisId"], {"clips": [1, 2]})).json()["data"]["runId"]
    reads = await finished_run(api, sandbox, run_id)
    order = ["generating", "stitching", "done"]
    statuses = [order.index(r["status"]) for r in reads]
    assert statuses == sorted(statuses) and reads[-1]["status"] == "done"
    assert reads[-1]["totalClips"] == reads[-1]["doneClips"] == 2 and reads[-1]["cleanOutputVideoUrl"] is None
    assert reads[-1]["quality"] == "medium"
    later = (
        await poll(
            api, sandbox, path("replication_run", id=run_id), lambda d: d["marketingVideoUrl"] is not None
        )
    )[-1]
    assert later["marketingVideoUrl169"] is not None


def flat(takes: list[list[int]]) -> list[int]:
    return [index for take in takes for index in take]


def takes_of(sandbox: Sandbox, run_id: str) -> list[list[int]]:
    return [e["clips"] for e in entries(sandbox, run_id, "charge")]


async def test_accuracy_packs_clips_into_takes(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    analysis = await ready(api, sandbox)
    clips = analysis["blueprint"]["clips"]
    run_ids = {}
    for accuracy in replication_rules.ACCURACIES:
        response = await replicate(api, analysis["analysisId"], {"accuracy": accuracy})
        run_ids[accuracy] = response.json()["data"]["runId"]
    kling = await replicate(
        api, analysis["analysisId"], {"accuracy": "fast", "modelId": "kling-v2-6-std-motion-control"}
    )
    picked = await replicate(api, analysis["analysisId"], {"accuracy": "fast", "clips": [3, 0, 2]})
    for run_id in [*run_ids.values(), kling.json()["data"]["runId"], picked.json()["data"]["runId"]]:
        assert (await finished_run(api, sandbox, run_id))[-1]["status"] == "done"
    everyone = list(range(len(clips)))
    exact, fast, balanced = (takes_of(sandbox, run_ids[a]) for a in ("exact", "fast", "balanced"))
    assert exact == [[i] for i in everyone]
    assert takes_of(sandbox, kling.json()["data"]["runId"]) == exact, "a single-shot model ignores accuracy"
    assert flat(fast) == flat(balanced) == everyone
    assert len(fast) <= len(balanced) < len(exact)
    for take in fast + balanced:
        assert take == list(range(take[0], take[-1] + 1)) and len(take) <= takes.TAKE_MAX_CLIPS
        assert clips[take[-1]]["end"] - clips[take[0]]["start"] <= takes.TAKE_MAX_SECONDS
    for take in balanced:
        assert all(clips[i]["transition"] != HARD_FADE for i in take[1:]), "hard fades stay seams"
    assert any(len(take) > 1 for take in fast)
    picked_takes = takes_of(sandbox, picked.json()["data"]["runId"])
    assert picked_takes[0] == [0] and flat(picked_takes) == [0, 2, 3]
    fast_run = sandbox.world.replication.runs[run_ids["fast"]]
    assert [e["credits"] for e in entries(sandbox, run_ids["fast"])] == [t.credits for t in fast_run.takes]


async def test_failed_clip_is_refunded_and_fails_the_run(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    analysis = await ready(api, sandbox)
    await api.post(path("sandbox_faults"), json={"modelScript": ["ok", "fail"]})
    body = {"accuracy": "exact", "clips": [0, 1, 2], "webhook": HOOK}
    run_id = (await replicate(api, analysis["analysisId"], body)).json()["data"]["runId"]
    data = (await finished_run(api, sandbox, run_id))[-1]
    assert (
        data["status"] == "failed"
        and data["error"].startswith("Clip 1 failed")
        and "refunded" in data["error"]
    )
    assert data["doneClips"] == 1 and data["totalClips"] == 3 and data["outputVideoUrl"] is None
    ledger = [(e["kind"], e["clips"]) for e in entries(sandbox, run_id)]
    assert ledger == [("charge", [0]), ("charge", [1]), ("refund", [1])], "clip 2 never starts"
    [payload] = [b for b in webhook_bodies(sandbox) if b.get("id") == run_id]
    assert payload["status"] == "failed" and payload["event"] == "replication.completed"
    assert payload["error"] == data["error"]


async def test_hung_clip_times_out_and_is_refunded(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    analysis = await ready(api, sandbox)
    await api.post(path("sandbox_faults"), json={"modelScript": ["hang"]})
    clock = SimClock(sandbox)
    run_id = (await replicate(api, analysis["analysisId"], {"clips": [0]})).json()["data"]["runId"]
    clock.to(clock.at + limits.RUNTIME_BASE_SECONDS - 1)
    assert (await api.get(path("replication_run", id=run_id))).json()["data"]["status"] == "generating"
    clock.to(clock.at + limits.RUNTIME_HARD_SECONDS)
    data = (await api.get(path("replication_run", id=run_id))).json()["data"]
    assert data["status"] == "failed" and messages.GENERATION_TIMED_OUT in data["error"]
    assert [e["kind"] for e in entries(sandbox, run_id)] == ["charge", "refund"]


async def test_balance_running_out_mid_run_fails_the_remaining_clips(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    analysis = await ready(api, sandbox)
    clock = SimClock(sandbox)
    body = {"accuracy": "exact", "clips": [0, 1, 2], "webhook": HOOK}
    run_id = (await replicate(api, analysis["analysisId"], body)).json()["data"]["runId"]
    run = sandbox.world.replication.runs[run_id]
    await api.post(path("sandbox_account"), json={"balance": 3})
    clock.to(run.takes[0].end_at)
    data = (await api.get(path("replication_run", id=run_id))).json()["data"]
    needed = run.takes[1].credits + run.takes[2].credits
    assert data["status"] == "failed" and data["doneClips"] == 1
    assert data["error"] == messages.not_enough_credits(needed, 3, BILLING)
    assert [(e["kind"], e["clips"]) for e in entries(sandbox, run_id)] == [("charge", [0])]
    assert balance(sandbox) == 3
    assert [b["status"] for b in webhook_bodies(sandbox) if b.get("id") == run_id] == ["failed"]


async def test_replicate_start_needs_balance_and_cap_and_refunds_a_503(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    analysis_id = (await ready(api, sandbox))["analysisId"]
    base = len(sandbox.world.accounts.ledger)
    model = catalog.BY_ID["seedance-2-fast-i2v"]
    clip = sandbox.world.replication.analyses[analysis_id].blueprint["clips"][0]
    price = pricing.price(model, takes.take_input(model, "medium", clip["end"] - clip["start"]), None)
    await api.post(path("sandbox_account"), json={"balance": 1})
    low = await replicate(api, analysis_id, {"clips": [0]})
    assert (low.status_code, message(low)) == (400, messages.not_enough_credits(price, 1, BILLING))
    await api.post(path("sandbox_account"), json={"balance": 1000})
    capped = (await api.post(path("sandbox_keys"), json={"monthlyCap": 1})).json()["data"]["key"]
    response = await replicate(api, analysis_id, {}, Authorization=f"Bearer {capped}")
    assert response.status_code == 429 and response.json() == messages.key_cap_reached(1)
    assert len(sandbox.world.accounts.ledger) == base
    await api.post(path("sandbox_faults"), json={"script": ["503"], "routes": ["replicate"]})
    unavailable = await replicate(api, analysis_id, {"clips": [0]})
    assert (unavailable.status_code, message(unavailable)) == (503, messages.AT_CAPACITY)
    charge, refund = sandbox.world.accounts.ledger[base:]
    assert (charge["kind"], refund["kind"], charge["credits"]) == ("charge", "refund", refund["credits"])
    assert balance(sandbox) == 1000 and sandbox.world.replication.runs == {}


async def test_replicate_idempotency_key(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    analysis_id = (await ready(api, sandbox))["analysisId"]
    first = await replicate(api, analysis_id, {"clips": [0]}, **{"Idempotency-Key": "run-1"})
    again = await replicate(api, analysis_id, {"clips": [0]}, **{"Idempotency-Key": "run-1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["data"] == again.json()["data"]
    assert len(sandbox.world.replication.runs) == 1
    run_id = first.json()["data"]["runId"]
    await finished_run(api, sandbox, run_id)
    assert len(entries(sandbox, run_id, "charge")) == 1
    other = await replicate(api, analysis_id, {"clips": [0]}, **{"Idempotency-Key": "run-2"})
    assert other.status_code == 201 and other.json()["data"]["runId"] != run_id
