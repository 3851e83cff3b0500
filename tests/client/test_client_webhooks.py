"""WebhookInbox with a sync and an async client: ignore strangers, confirm by reading, answer repeats.

Webhooks go to https://8.8.8.8/hook, a public address the sandbox accepts and records in its outbox
(``GET /_sandbox/webhooks``) without sending anything; the tests feed those real bodies to the inbox.
"""

import inspect
import json
import uuid
from typing import Any

import pytest
from _kit import Kit, endpoint_of, query

from mediagen_nb.client import Generation, ReplicationRun, ShortVideoJob, WebhookInbox

HOOK = "https://8.8.8.8/hook"  # public: accepted and recorded, never delivered (no public delivery)
IMAGE = {"prompt": "a paper boat on a pond", "quality": "low"}
TIKTOK = "https://www.tiktok.com/@demo/video/7301"
pytestmark = pytest.mark.anyio


async def receive(kit: Kit, inbox: WebhookInbox, body: Any) -> Any:
    """``inbox.receive(body)``: awaitable with the async client (always), plain with the sync one."""
    result = inbox.receive(body)
    assert inspect.isawaitable(result) == (kit.flavor == "async")
    return await result if inspect.isawaitable(result) else result


async def outbox_body(kit: Kit, key: str, ident: str) -> str:
    """The raw body of the one recorded webhook whose ``key`` is ``ident``."""
    hooks = (await kit.control("GET", "sandbox_webhooks"))["webhooks"]
    found = [h for h in hooks if json.loads(h["body"]).get(key) == ident]
    assert len(found) == 1, hooks
    assert found[0]["url"] == HOOK and found[0]["delivered"] is False, "recorded, not sent off the machine"
    return str(found[0]["body"])


async def test_unknown_ids_and_empty_bodies_are_ignored_without_a_request(kit: Kit) -> None:
    started = await kit.call("run", "gpt-image-2", IMAGE)
    inbox = WebhookInbox(kit.client, expected=[started])
    kit.recorder.clear()
    stranger = str(uuid.uuid4())
    bodies: list[Any] = [
        json.dumps({"id": stranger, "modelId": "gpt-image-2", "status": "succeeded", "output": None}),
        {"event": "replication.completed", "id": stranger, "status": "done"},
        json.dumps({"jobId": stranger, "status": "done", "videoUrl": "https://8.8.8.8/v.mp4"}).encode(),
        {},
        "[1, 2]",
        b"not json at all",
    ]
    for body in bodies:
        assert await receive(kit, inbox, body) is None
    assert kit.recorder.requests == [], "nothing is read for an id the inbox does not expect"


async def test_generation_webhook_is_confirmed_by_a_read_once(kit: Kit) -> None:
    started = await kit.call("run", "gpt-image-2", IMAGE, webhook=HOOK)
    finished = await kit.call("wait", started)
    body = await outbox_body(kit, "id", started.id)
    assert json.loads(body)["status"] == "succeeded"
    inbox = WebhookInbox(kit.client)
    inbox.expect(started.id)
    kit.recorder.clear()
    confirmed = await receive(kit, inbox, body)
    assert isinstance(confirmed, Generation) and confirmed.id == started.id
    assert confirmed.status == "succeeded" and confirmed.url == finished.url
    [read] = kit.recorder.requests
    assert endpoint_of(read) == "generation" and started.id in read.url.path and query(read) == {}
    assert read.headers["authorization"] == f"Bearer {kit.sandbox.demo_key}", "read with our own key"
    again = await receive(kit, inbox, body.encode())
    assert again is confirmed and len(kit.recorder.requests) == 1, "a repeat is answered without a read"


async def test_failed_generation_webhook_is_confirmed_as_failed(kit: Kit) -> None:
    await kit.control("POST", "sandbox_faults", {"modelScript": ["fail"]})
    started = await kit.call("run", "gpt-image-2", IMAGE, webhook=HOOK)
    await kit.call("wait", started)
    body = await outbox_body(kit, "id", started.id)
    inbox = WebhookInbox(kit.client, expected=[started])
    kit.recorder.clear()
    confirmed = await receive(kit, inbox, json.loads(body))
    assert isinstance(confirmed, Generation) and confirmed.status == "failed" and confirmed.error
    assert await receive(kit, inbox, body) is confirmed and len(kit.recorder.requests) == 1


async def test_replication_and_job_payloads_route_to_their_reads(kit: Kit) -> None:
    """A ``replication.completed`` body reads the run, a ``jobId`` body reads the job; real bodies too."""
    analysis = await kit.call("wait_analysis", await kit.call("analyze", TIKTOK), timeout=3600)
    assert analysis.status == "ready"
    # The job first: its start reads the agent server's make_video schema (once a process), time in
    # which a run started before it could end and be answered from memory.
    job = await kit.call("make_video", "Three tips for better sleep", seconds=20, music=False, webhook=HOOK)
    run = await kit.call("replicate", analysis.id, clips=[0], quality="low", webhook=HOOK)
    inbox = WebhookInbox(kit.client, expected=[run, job])
    kit.recorder.clear()

    shaped_run = {"event": "replication.completed", "id": run.id, "modelId": run.model_id, "status": "done"}
    confirmed_run = await receive(kit, inbox, shaped_run)
    assert isinstance(confirmed_run, ReplicationRun) and confirmed_run.id == run.id
    shaped_job = {"jobId": job.id, "status": "done", "videoUrl": "https://8.8.8.8/v.mp4", "creditsSpent": 1}
    confirmed_job = await receive(kit, inbox, json.dumps(shaped_job))
    assert isinstance(confirmed_job, ShortVideoJob) and confirmed_job.id == job.id
    assert [endpoint_of(r) for r in kit.recorder.requests] == ["replication_run", "job"]
    assert run.id in kit.recorder.requests[0].url.path and job.id in kit.recorder.requests[1].url.path

    done_run = await kit.call("wait_replication", run, timeout=36000)
    done_job = await kit.call("wait_job", job, timeout=36000)
    assert done_run.status == "done" and done_job.status == "done"
    run_body = await outbox_body(kit, "id", run.id)
    job_body = await outbox_body(kit, "jobId", job.id)
    assert json.loads(run_body)["event"] == "replication.completed"
    kit.recorder.clear()
    real_run = await receive(kit, inbox, run_body)
    real_job = await receive(kit, inbox, job_body)
    assert isinstance(real_run, ReplicationRun) and real_run.status == "done"
    assert real_run.output_video_url == done_run.output_video_url
    assert isinstance(real_job, ShortVideoJob) and real_job.status == "done"
    assert real_job.video_url == done_job.video_url
    assert [endpoint_of(r) for r in kit.recorder.requests] == ["replication_run", "job"]
    assert await receive(kit, inbox, run_body) is real_run
    assert await receive(kit, inbox, job_body) is real_job
    assert len(kit.recorder.requests) == 2, "finished runs and jobs are answered from memory"
