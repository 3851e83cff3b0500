"""The sandbox's topic-to-video API over HTTP: options, body rules, stages, charging, refunds, re-edits."""

import json
import math
from typing import Any

import httpx
import pytest
from _pipelines import SimClock, poll

from mediagen_nb.protocol import limits, messages, wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox
from mediagen_nb.sandbox.media import measure_seconds
from mediagen_nb.sandbox.topic_video.options import FLOWS
from mediagen_nb.sandbox.topic_video.script import ANGLES
from mediagen_nb.sandbox.topic_video.steps import LIPSYNC_CREDITS_PER_SECOND

pytestmark = [pytest.mark.anyio, pytest.mark.manual_clock]

BASE = "http://sandbox.test"
HOOK = "http://127.0.0.1:9/hook"  # loopback: allowed by the test sandbox, recorded in the outbox
BILLING = BASE + path("sandbox_app", page="billing")
STAGES = ["scripting", "portrait", "animating", "captioning", "done"]
READ_FIELDS = {
    "jobId", "status", "stage", wire.JOB_PROGRESS, wire.JOB_SCRIPT, wire.JOB_PORTRAIT,
    wire.JOB_LIPSYNC, "videoUrl", wire.JOB_CREDITS, wire.JOB_EDIT_REPORT, wire.JOB_DEGRADED,
    "flow", "topic", "voice", "seconds", "posterUrl", "error", "createdAt", "updatedAt",
}  # fmt: skip


async def finished(api: httpx.AsyncClient, sandbox: Sandbox, job_id: str) -> list[dict[str, Any]]:
    return await poll(api, sandbox, path("job", id=job_id), lambda d: d["status"] in ("done", "failed"))


async def start(api: httpx.AsyncClient, **body: Any) -> str:
    response = await api.post(path("job_start"), json=body)
    assert response.status_code == 201, response.text
    assert set(response.json()["data"]) == {"jobId"}
    return response.json()["data"]["jobId"]


def entries(sandbox: Sandbox, job_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    return [
        e for e in sandbox.world.accounts.ledger if e["resourceId"] == job_id and kind in (None, e["kind"])
    ]


def balance(sandbox: Sandbox) -> int:
    return sandbox.world.accounts.accounts["demo"].balance


def message(response: httpx.Response) -> str:
    body = response.json()
    return body if isinstance(body, str) else body["message"]


def hooks_for(sandbox: Sandbox, job_id: str) -> list[dict[str, Any]]:
    bodies = [json.loads(entry["body"]) for entry in sandbox.world.outbox.sent]
    return [body for body in bodies if body.get("jobId") == job_id]


async def test_options_list_voices_looks_flows_and_bounds(api: httpx.AsyncClient) -> None:
    response = await api.get(path("job_options"))
    assert response.status_code == 200, "options is not captured by /{jobId}"
    data = response.json()["data"]
    voices = data[wire.OPTIONS_VOICES]
    assert set(voices) == {"man", "woman"} and all(len(names) >= 3 for names in voices.values())
    assert "Archer" in voices["man"] and "Lucy" in voices["woman"]
    assert data[wire.OPTIONS_LOOKS] == ["creator", "newscaster", "pixar"]
    assert {"classic", "reveal", "hook-reveal", "broll-punch", "clean-punch", "karaoke"} == set(
        data[wire.OPTIONS_FLOWS]
    )
    assert data[wire.OPTIONS_SECONDS] == {"min": 20, "max": 180, "default": 45}
    assert data[wire.OPTIONS_DEFAULTS][wire.JOB_VOICE] == {"man": "Archer", "woman": "Lucy"}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({wire.JOB_SECONDS: 19}, messages.out_of_range(wire.JOB_SECONDS, 20, 180)),
        ({wire.JOB_SECONDS: 180.5}, messages.out_of_range(wire.JOB_SECONDS, 20, 180)),
        ({wire.JOB_SECONDS: "45"}, messages.wrong_type(wire.JOB_SECONDS, "a number of seconds")),
        ({wire.JOB_SECONDS: True}, messages.wrong_type(wire.JOB_SECONDS, "a number of seconds")),
        ({wire.JOB_GENDER: "robot"}, messages.not_one_of(wire.JOB_GENDER, ("man", "woman"))),
        ({wire.JOB_FLOW: "wobble"}, messages.not_one_of(wire.JOB_FLOW, FLOWS)),
        ({wire.JOB_CAPTIONS: "yes"}, messages.wrong_type(wire.JOB_CAPTIONS, "true or false")),
        ({wire.JOB_MUSIC: 1}, messages.wrong_type(wire.JOB_MUSIC, "true or false")),
        ({wire.JOB_TOPIC: 42}, messages.wrong_type(wire.JOB_TOPIC, "a string")),
        ({wire.JOB_IDEMPOTENCY: 7}, messages.wrong_type(wire.JOB_IDEMPOTENCY, "a non-empty string")),
        ({wire.JOB_WEBHOOK: "http://10.0.0.5/hook"}, messages.WEBHOOK_HTTPS),
        ({wire.JOB_WEBHOOK: "https://printer.local/hook"}, messages.WEBHOOK_HOST),
    ],
)
async def test_start_body_rules_refuse_without_charging(
    api: httpx.AsyncClient, sandbox: Sandbox, body: dict[str, Any], expected: str
) -> None:
    response = await api.post(path("job_start"), json=body)
    assert (response.status_code, message(response)) == (400, expected)
    assert sandbox.world.accounts.ledger == [] and sandbox.world.topic.jobs == {}


async def test_defaults_fallbacks_and_topic_cut(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    plain = await start(api)
    data = (await api.get(path("job", id=plain))).json()["data"]
    assert set(data) == READ_FIELDS
    assert (data["seconds"], data["flow"], data["voice"]) == (45, "classic", "Archer")
    assert data["topic"] in ANGLES, "without a topic the service picks an angle"
    woman = await start(api, **{wire.JOB_GENDER: "woman", wire.JOB_VOICE: "Archer", wire.JOB_LOOK: "anime"})
    data = (await api.get(path("job", id=woman))).json()["data"]
    assert data["voice"] == "Lucy", "a voice of the other gender falls back to the default"
    assert sandbox.world.topic.jobs[woman].look == "creator"
    chosen = await start(api, **{wire.JOB_GENDER: "woman", wire.JOB_VOICE: "Nova", wire.JOB_LOOK: "pixar"})
    assert (await api.get(path("job", id=chosen))).json()["data"]["voice"] == "Nova"
    assert sandbox.world.topic.jobs[chosen].look == "pixar"
    sentence = "Cats sleep for most of the day because hunting takes a lot of energy. "
    long_topic = sentence * 25
    cut = (await api.get(path("job", id=await start(api, topic=long_topic)))).json()["data"]["topic"]
    assert len(long_topic) > 1500 and abs(len(cut) - limits.TOPIC_CUT_CHARS) <= len(sentence)
    assert cut.endswith("energy.") and long_topic.startswith(cut)


async def test_job_stages_fields_and_charges_step_by_step(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    clock = SimClock(sandbox)
    before = balance(sandbox)
    job_id = await start(api, topic="Why cats sleep so much", seconds=30, webhook=HOOK)
    job = sandbox.world.topic.jobs[job_id]
    steps = {step.name: step for step in job.steps}
    assert list(steps) == ["script", "portrait", "voice", "lipsync", "captions", "broll", "music", "render"]

    async def read() -> dict[str, Any]:
        return (await api.get(path("job", id=job_id))).json()["data"]

    data = await read()
    assert (data["status"], data["stage"], data[wire.JOB_CREDITS]) == ("scripting", "scripting", 2)
    assert data[wire.JOB_SCRIPT] is None and data[wire.JOB_PORTRAIT] is None and data["videoUrl"] is None
    assert data[wire.JOB_EDIT_REPORT] is None and data[wire.JOB_DEGRADED] is False
    clock.to(steps["portrait"].start_at)
    data = await read()
    assert data["status"] == "portrait" and "cats sleep so much" in data[wire.JOB_SCRIPT]
    assert data[wire.JOB_PORTRAIT] is None and data[wire.JOB_CREDITS] == 2 + 8
    clock.to(steps["voice"].start_at)
    data = await read()
    assert data["status"] == "animating" and data[wire.JOB_PORTRAIT] and data[wire.JOB_LIPSYNC] is None
    portrait = await api.get(data[wire.JOB_PORTRAIT])
    assert portrait.content.startswith(b"\x89PNG"), "the presenter image is readable during the job"
    clock.to(steps["captions"].start_at)
    data = await read()
    assert data["status"] == data["stage"] == "captioning"
    assert data[wire.JOB_LIPSYNC] and data["videoUrl"] is None
    progress = [data[wire.JOB_PROGRESS]]
    clock.to(steps["render"].start_at)
    progress.append((await read())[wire.JOB_PROGRESS])
    clock.to(steps["render"].end_at)
    done = await read()
    assert done["status"] == done["stage"] == "done" and done[wire.JOB_PROGRESS] == 1.0
    assert 0 < progress[0] < progress[1] < 1
    charges = entries(sandbox, job_id, "charge")
    assert [e["step"] for e in charges] == [
        "script",
        "portrait",
        "voice",
        "lipsync",
        "captions",
        "broll",
        "music",
    ]
    assert [e["credits"] for e in charges[:3]] == [2, 8, 5]
    assert charges[3]["credits"] == math.ceil(job.speech_seconds) * LIPSYNC_CREDITS_PER_SECOND
    assert done[wire.JOB_CREDITS] == sum(e["credits"] for e in charges) == before - balance(sandbox)
    report = done[wire.JOB_EDIT_REPORT]
    broll = steps["broll"].count
    expected = {"captions": True, "broll": broll, "images": 0, "music": True, "loudnorm": True, "skipped": []}
    assert report == expected
    assert done[wire.JOB_DEGRADED] is False and done["error"] is None and done["posterUrl"]
    assert done["createdAt"] < done["updatedAt"]
    assert hooks_for(sandbox, job_id) == [
        {
            "jobId": job_id,
            "status": "done",
            "videoUrl": done["videoUrl"],
            "creditsSpent": done[wire.JOB_CREDITS],
        }
    ]
    video = await api.get(done["videoUrl"])
    assert video.headers["content-type"] == "video/mp4"
    assert measure_seconds(video.content, ".mp4") == pytest.approx(job.speech_seconds, abs=0.2)


@pytest.mark.scaled_clock  # its subject: the fast real clock drives the whole pipeline
async def test_job_reaches_done_in_scaled_time(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    job_id = await start(api, topic="Three tips for better sleep", seconds=20, flow="reveal", music=False)
    reads = await finished(api, sandbox, job_id)
    order = [STAGES.index(read["status"]) for read in reads]
    assert order == sorted(order) and reads[-1]["status"] == "done"
    assert all(read["stage"] == read["status"] for read in reads)
    progress = [read[wire.JOB_PROGRESS] for read in reads]
    assert progress == sorted(progress) and progress[-1] == 1.0
    report = reads[-1][wire.JOB_EDIT_REPORT]
    assert report["images"] >= 1 and report["broll"] == 0 and report["music"] is False
    assert [e["step"] for e in entries(sandbox, job_id, "charge")][-1] == "images"


async def test_body_idempotency_key_returns_the_original_job(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    first = await api.post(path("job_start"), json={"topic": "Sleep", wire.JOB_IDEMPOTENCY: "job-1"})
    again = await api.post(path("job_start"), json={"topic": "Other", wire.JOB_IDEMPOTENCY: "job-1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["data"]["jobId"] == again.json()["data"]["jobId"]
    # One job started once: one charge of its first step (later steps charge on their own, in time).
    assert len(sandbox.world.topic.jobs) == 1
    assert [e.get("step") for e in sandbox.world.accounts.ledger].count("script") == 1
    other = await api.post(path("job_start"), json={"topic": "Sleep", wire.JOB_IDEMPOTENCY: "job-2"})
    assert other.status_code == 201 and other.json()["data"]["jobId"] != first.json()["data"]["jobId"]


async def test_failed_step_fails_the_job_and_refunds_everything(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    await api.post(path("sandbox_faults"), json={"modelScript": ["ok", "ok", "ok", "fail"]})
    before = balance(sandbox)
    job_id = await start(api, topic="Coffee myths", webhook=HOOK)
    data = (await finished(api, sandbox, job_id))[-1]
    assert (
        data["status"] == data["stage"] == "failed"
        and "lip-sync" in data["error"]
        and "refunded" in data["error"]
    )
    assert data["videoUrl"] is None and data[wire.JOB_LIPSYNC] is None
    ledger = entries(sandbox, job_id)
    charged = sum(e["credits"] for e in ledger if e["kind"] == "charge")
    assert [e["kind"] for e in ledger][-1] == "refund" and ledger[-1]["credits"] == charged
    assert data[wire.JOB_CREDITS] == charged and balance(sandbox) == before
    assert hooks_for(sandbox, job_id) == [{"jobId": job_id, "status": "failed", "error": data["error"]}]


async def test_hung_step_times_out_and_refunds(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    await api.post(path("sandbox_faults"), json={"modelScript": ["hang"]})
    clock = SimClock(sandbox)
    job_id = await start(api, topic="Coffee myths")
    clock.to(clock.at + limits.RUNTIME_BASE_SECONDS - 1)
    assert (await api.get(path("job", id=job_id))).json()["data"]["status"] == "scripting"
    clock.to(clock.at + 2)
    data = (await api.get(path("job", id=job_id))).json()["data"]
    assert data["status"] == "failed" and messages.GENERATION_TIMED_OUT in data["error"]
    assert [(e["kind"], e["credits"]) for e in entries(sandbox, job_id)] == [("charge", 2), ("refund", 2)]


async def test_failed_edit_step_is_skipped_and_degrades(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    await api.post(path("sandbox_faults"), json={"modelScript": ["ok", "ok", "ok", "ok", "ok", "fail"]})
    job_id = await start(api, topic="Coffee myths", seconds=20, webhook=HOOK)
    data = (await finished(api, sandbox, job_id))[-1]
    assert data["status"] == "done" and data[wire.JOB_DEGRADED] is True and data["videoUrl"]
    report = data[wire.JOB_EDIT_REPORT]
    assert report["broll"] == 0 and report["captions"] is True and report["music"] is True
    [skipped] = report["skipped"]
    assert skipped["step"] == "broll" and "refunded" in skipped["reason"]
    [refund] = entries(sandbox, job_id, "refund")
    assert refund["step"] == "broll"
    charged = sum(e["credits"] for e in entries(sandbox, job_id, "charge"))
    assert data[wire.JOB_CREDITS] == charged - refund["credits"]
    assert hooks_for(sandbox, job_id)[0]["creditsSpent"] == data[wire.JOB_CREDITS]


async def test_running_out_of_credits_partway_fails_and_refunds(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    await api.post(path("sandbox_account"), json={"balance": 20})
    job_id = await start(api, topic="Coffee myths", webhook=HOOK)
    job = sandbox.world.topic.jobs[job_id]
    data = (await finished(api, sandbox, job_id))[-1]
    needed = sum(step.credits for step in job.steps[3:])  # lip-sync onwards: 2 + 8 + 5 were paid
    assert data["status"] == "failed"
    assert data["error"] == messages.job_out_of_credits(needed, 20 - 15)
    assert [(e["kind"], e["credits"]) for e in entries(sandbox, job_id)] == [
        ("charge", 2), ("charge", 8), ("charge", 5), ("refund", 15),
    ]  # fmt: skip
    assert balance(sandbox) == 20 and data[wire.JOB_CREDITS] == 15
    assert hooks_for(sandbox, job_id) == [{"jobId": job_id, "status": "failed", "error": data["error"]}]


async def test_start_needs_balance_and_cap_and_refunds_a_503(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    await api.post(path("sandbox_account"), json={"balance": 1})
    low = await api.post(path("job_start"), json={})
    assert (low.status_code, message(low)) == (400, messages.not_enough_credits(2, 1, BILLING))
    await api.post(path("sandbox_account"), json={"balance": 500})
    capped = (await api.post(path("sandbox_keys"), json={"monthlyCap": 1})).json()["data"]["key"]
    response = await api.post(path("job_start"), json={}, headers={"Authorization": f"Bearer {capped}"})
    assert response.status_code == 429 and response.json() == messages.key_cap_reached(1)
    assert sandbox.world.accounts.ledger == []
    await api.post(path("sandbox_faults"), json={"script": ["503"], "routes": ["job_start"]})
    unavailable = await api.post(path("job_start"), json={})
    assert (unavailable.status_code, message(unavailable)) == (503, messages.AT_CAPACITY)
    assert [(e["kind"], e["credits"]) for e in sandbox.world.accounts.ledger] == [
        ("charge", 2),
        ("refund", 2),
    ]
    assert balance(sandbox) == 500 and sandbox.world.topic.jobs == {}


async def test_reedit_reuses_the_lipsync_and_charges_only_the_edit(
    api: httpx.AsyncClient, sandbox: Sandbox
) -> None:
    parent_id = await start(api, topic="Coffee myths", seconds=20)
    early = await api.post(path("reedit", id=parent_id), json={"flow": "karaoke"})
    assert (early.status_code, message(early)) == (400, messages.REEDIT_NEEDS_LIPSYNC)
    parent = (await finished(api, sandbox, parent_id))[-1]
    bad = await api.post(path("reedit", id=parent_id), json={"flow": "wobble"})
    assert (bad.status_code, message(bad)) == (400, messages.not_one_of(wire.JOB_FLOW, FLOWS))
    response = await api.post(path("reedit", id=parent_id), json={"flow": "broll-punch", "music": False})
    assert response.status_code == 201 and set(response.json()["data"]) == {"jobId"}
    child_id = response.json()["data"]["jobId"]
    assert child_id != parent_id
    reads = await finished(api, sandbox, child_id)
    assert {read["status"] for read in reads} <= {"captioning", "done"} and reads[-1]["status"] == "done"
    child = reads[-1]
    for name in (wire.JOB_SCRIPT, wire.JOB_PORTRAIT, wire.JOB_LIPSYNC, "voice", "topic", "seconds"):
        assert child[name] == parent[name], name
    assert child["flow"] == "broll-punch" and child["videoUrl"] != parent["videoUrl"]
    assert child[wire.JOB_EDIT_REPORT]["music"] is False and child[wire.JOB_EDIT_REPORT]["broll"] >= 1
    steps = [e["step"] for e in entries(sandbox, child_id, "charge")]
    assert steps == ["captions", "broll"]
    assert child[wire.JOB_CREDITS] == sum(e["credits"] for e in entries(sandbox, child_id, "charge"))


async def test_unknown_and_foreign_jobs_are_not_found(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    job_id = await start(api, topic="Coffee myths")
    created = await api.post(path("sandbox_keys"), json={"account": "other"})
    headers = {"Authorization": f"Bearer {created.json()['data']['key']}"}
    async with httpx.AsyncClient(transport=sandbox.transport(), base_url=BASE, headers=headers) as other:
        for client, wanted in ((api, "00000000-0000-4000-8000-000000000000"), (other, job_id)):
            read = await client.get(path("job", id=wanted))
            assert (read.status_code, message(read)) == (404, messages.JOB_NOT_FOUND)
            reedit = await client.post(path("reedit", id=wanted), json={})
            assert (reedit.status_code, message(reedit)) == (404, messages.JOB_NOT_FOUND)
