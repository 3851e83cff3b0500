"""Replication and topic-to-video through the client, sync (served sandbox) and async (in-process).

Every test runs once per flavor: ``Client`` over real HTTP on 127.0.0.1 and ``AsyncClient`` through the
ASGI transport, both on a sandbox at time x600, so the pipelines' minutes pass in a fraction of a second.
Requests are recorded by httpx event hooks on the transport.
"""

import inspect
import itertools
import json
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from mediagen_nb.client import (
    Analysis,
    AsyncClient,
    BadRequestError,
    Client,
    ConfigurationError,
    ReplicationRun,
    ShortVideoJob,
    StartUncertain,
    ValidationError,
    VideoOptions,
    WaitTimeout,
    settings,
)
from mediagen_nb.client.clients import BaseClient
from mediagen_nb.protocol import limits, messages, wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime.clock import SimulatedClock
from mediagen_nb.sandbox import Sandbox, SandboxConfig

TIKTOK = "https://www.tiktok.com/@a/video/123"
SHOTS = "https://www.tiktok.com/@a/video/456?list=shots"  # "shots": ready with a shot list only
REPLICATION_MODELS = (
    "seedance-2-fast-i2v",
    "kling-v2-6-std-motion-control",
    "seedance-v1-5-pro-i2v",
    "p-video",
    "seedance-2-fast-t2v",
)
WEBHOOK = "https://8.8.8.8/h"  # public and https: accepted, recorded, never delivered (no public delivery)
FACE = "https://cdn.example.com/faces/presenter.png"  # never downloaded: only moderated by its URL
TRACK = "https://127.0.0.1/_sandbox/samples/voice.mp3"  # read from the sandbox's own store, no traffic
POLL = 5.0  # service seconds between polls ("every few seconds")
WAIT = 3000.0  # service seconds a whole pipeline may take here (5 s real at x600)


@dataclass
class Traffic:
    """Requests as they left the client, with their bodies, and the answers' statuses."""

    clock: SimulatedClock  # the sandbox's: requests are stamped with its simulated time
    requests: list[tuple[float, str, str, Any]] = field(default_factory=list)  # (at, method, path, body)
    statuses: list[tuple[str, str, int]] = field(default_factory=list)
    idempotency_keys: list[tuple[str, str | None]] = field(default_factory=list)  # (path, header)

    def on_request(self, request: httpx.Request) -> None:
        body = json.loads(request.content) if request.content else None
        self.requests.append((self.clock.now(), request.method, request.url.path, body))
        self.idempotency_keys.append((request.url.path, request.headers.get("idempotency-key")))

    def on_response(self, response: httpx.Response) -> None:
        self.statuses.append((response.request.method, response.request.url.path, response.status_code))

    async def aon_request(self, request: httpx.Request) -> None:
        self.on_request(request)

    async def aon_response(self, response: httpx.Response) -> None:
        self.on_response(response)

    def to(self, method: str, endpoint_path: str) -> list[tuple[float, str, str, Any]]:
        return [r for r in self.requests if r[1] == method and r[2] == endpoint_path]

    def status_of(self, method: str, endpoint_path: str) -> list[int]:
        return [s for m, p, s in self.statuses if m == method and p == endpoint_path]


@dataclass
class Harness:
    """One client flavor on one sandbox; ``call`` runs an operation of either flavor and awaits it."""

    flavor: str
    client: BaseClient
    sandbox: Sandbox
    traffic: Traffic

    async def call(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.client, operation)(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    async def faults(self, **plan: Any) -> None:
        """Replace the sandbox's fault plan (``POST /_sandbox/faults``), over HTTP or in-process."""
        if self.sandbox.base_url is not None:
            response = httpx.post(self.sandbox.base_url + path("sandbox_faults"), json=plan, timeout=10)
        else:
            async with httpx.AsyncClient(
                transport=self.sandbox.transport(), base_url="http://sandbox.local"
            ) as api:
                response = await api.post(path("sandbox_faults"), json=plan)
        assert response.status_code == 200, response.text

    def ledger(self) -> list[dict[str, Any]]:
        return list(self.sandbox.world.accounts.ledger)

    @property
    def other_ledger(self) -> str:
        """A second client-side ledger file (another machine's), which knows none of this test's starts."""
        return str(Path(tempfile.mkdtemp(prefix="mediagen-other-")) / "ledger.sqlite")


@pytest.fixture(params=["sync", "async"])
async def h(request: pytest.FixtureRequest, spelling: wire.Names) -> AsyncIterator[Harness]:
    """A hooked ``Client`` on a served sandbox, or a hooked ``AsyncClient`` on an in-process one; both on a
    manual clock that the client steps (each poll's pause advances it), so every reading is exact."""
    sandbox = Sandbox(SandboxConfig(clock="manual", seed=1, allow_private_webhooks=True, wire=spelling))
    traffic = Traffic(sandbox.world.clock)
    if request.param == "sync":
        hooks = {"request": [traffic.on_request], "response": [traffic.on_response]}
        with (
            sandbox,
            httpx.Client(event_hooks=hooks) as http,
            Client.for_sandbox(sandbox, http_client=http) as client,
        ):
            yield Harness("sync", client, sandbox, traffic)
        return
    hooks = {"request": [traffic.aon_request], "response": [traffic.aon_response]}
    async with httpx.AsyncClient(transport=sandbox.transport(), event_hooks=hooks) as ahttp:
        yield Harness("async", AsyncClient.for_sandbox(sandbox, http_client=ahttp), sandbox, traffic)


def collector() -> tuple[list[Any], Callable[[Any], None]]:
    """A list and an ``on_update`` callback that appends to it."""
    seen: list[Any] = []
    return seen, seen.append


async def ready_analysis(h: Harness, url: str = TIKTOK) -> Analysis:
    analysis = await h.call("analyze", url)
    return await h.call("wait_analysis", analysis, poll=POLL, timeout=WAIT)


# ------------------------------------------------------------------------------- replication


@pytest.mark.anyio
async def test_analyze_and_wait_for_a_platform_link(h: Harness) -> None:
    """A TikTok link: ``analyzing`` (5 credits), polled every few service seconds until ``ready``."""
    started = await h.call("analyze", TIKTOK)
    assert isinstance(started, Analysis)
    assert started.status == "analyzing" and started.credits_spent == limits.ANALYSIS_CREDITS
    assert started.source_url == TIKTOK and started.id

    seen, on_update = collector()
    ready = await h.call("wait_analysis", started, poll=POLL, timeout=WAIT, on_update=on_update)
    assert ready.id == started.id and ready.status == "ready" and ready.error is None
    assert ready.title and ready.duration_seconds and ready.video_url and ready.poster_url
    assert ready.blueprint is not None and ready.blueprint.has_prompts
    assert ready.clip_count == len(ready.blueprint.clips) > 0
    assert ready.blueprint.aspect == "9:16"

    reads = h.traffic.to("GET", path("analysis", id=started.id))
    assert len(seen) == len(reads) >= 2  # on_update saw every reading
    assert seen[-1] == ready and all(a.status == "analyzing" for a in seen[:-1])
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(reads)]
    assert set(gaps) == {POLL}  # a read every poll, on simulated time: no busy polling
    assert h.traffic.to("POST", path("blueprint", id=started.id)) == []  # prompts were there already

    charges = [e for e in h.ledger() if e["resource"] == "analysis"]
    assert [(e["kind"], e["credits"], e["resourceId"]) for e in charges] == [("charge", 5, started.id)]


@pytest.mark.anyio
async def test_blueprint_rows(h: Harness) -> None:
    """``Blueprint.rows()``: one plain row per clip, in order, times rising, prompts filled."""
    ready = await ready_analysis(h)
    assert ready.blueprint is not None
    rows = ready.blueprint.rows()
    assert len(rows) == ready.clip_count
    assert [r["clip"] for r in rows] == list(range(len(rows)))
    assert all(set(r) == {"clip", "start", "end", "camera", "prompt"} for r in rows)
    assert rows[0]["start"] == 0
    assert all(r["start"] < r["end"] for r in rows)
    assert all(a["end"] == b["start"] for a, b in itertools.pairwise(rows))
    assert rows[-1]["end"] == pytest.approx(ready.duration_seconds, abs=0.05)
    assert all(isinstance(r["prompt"], str) and r["prompt"] for r in rows)
    cameras = [clip["camera"] for clip in ready.blueprint.clips]  # {"framing": ..., "movement": ...}
    assert [r["camera"] for r in rows] == [f"{c['framing']}, {c['movement']}" for c in cameras]  # readable


@pytest.mark.anyio
@pytest.mark.spellings
async def test_shot_list_only_analysis_builds_its_blueprint(h: Harness) -> None:
    """A "shots" link is ready with a shot list only; wait_analysis asks for the blueprint once and waits."""
    started = await h.call("analyze", SHOTS)
    seen, on_update = collector()
    ready = await h.call("wait_analysis", started, poll=POLL, timeout=WAIT, on_update=on_update)
    assert ready.status == "ready" and ready.blueprint is not None and ready.blueprint.has_prompts

    builds = h.traffic.to("POST", path("blueprint", id=started.id))
    assert len(builds) == 1
    shot_lists = [a for a in seen if a.status == "ready" and a.blueprint is not None]
    assert not shot_lists[0].blueprint.has_prompts  # the first ready reading had null prompts
    assert all(clip["prompt"] is None for clip in shot_lists[0].blueprint.clips)
    assert [r["prompt"] is None for r in shot_lists[0].blueprint.rows()] == [True] * ready.clip_count
    assert seen[-1] == ready
    assert len([e for e in h.ledger() if e["resource"] == "analysis"]) == 1  # building is free


@pytest.mark.anyio
async def test_shot_list_only_without_building(h: Harness) -> None:
    """``build_blueprint=False`` returns the shot list; replicate refuses it; one blueprint build starts."""
    started = await h.call("analyze", SHOTS)
    shot_list = await h.call("wait_analysis", started, build_blueprint=False, poll=POLL, timeout=WAIT)
    assert shot_list.status == "ready" and shot_list.blueprint is not None
    assert not shot_list.blueprint.has_prompts
    assert h.traffic.to("POST", path("blueprint", id=started.id)) == []

    with pytest.raises(BadRequestError) as raised:
        await h.call("replicate", started.id)
    assert raised.value.message.startswith(messages.STILL_READING_SHOTS)

    first = await h.call("build_blueprint", started.id)
    again = await h.call("build_blueprint", started.id)
    assert first.started is True
    assert again.started is False and again.reason


@pytest.mark.anyio
@pytest.mark.parametrize("audio", ["chunks", "original", TRACK], ids=["chunks", "original", "upload"])
async def test_replicate_with_every_field_until_done(h: Harness, audio: str) -> None:
    """Every replicate body field goes out under its spec name; the run ends done with all its URLs."""
    ready = await ready_analysis(h)
    assert ready.clip_count is not None and ready.clip_count >= 2
    run = await h.call(
        "replicate",
        ready.id,
        model_id="seedance-v1-5-pro-i2v",
        quality="low",
        accuracy="exact",
        clips=[0, 1],
        character_image=FACE,
        captions=True,
        audio=audio,
        marketing_aspect="16:9",
        webhook=WEBHOOK,
    )
    assert isinstance(run, ReplicationRun)
    assert run.id and run.analysis_id == ready.id and run.model_id == "seedance-v1-5-pro-i2v"
    assert run.status == "generating" and run.quality == "low"

    (_, _, _, body), *more = h.traffic.to("POST", path("replicate", id=ready.id))
    assert more == []
    expected_audio = {"mode": audio} if audio in ("chunks", "original") else {"mode": "upload", "url": TRACK}
    assert body == {
        "modelId": "seedance-v1-5-pro-i2v",
        "quality": "low",
        "accuracy": "exact",
        "clips": [0, 1],
        "characterImage": FACE,
        "captions": True,
        "audio": expected_audio,
        "marketingAspect": "16:9",
        "webhook": WEBHOOK,
    }

    seen, on_update = collector()
    done = await h.call("wait_replication", run, poll=POLL, timeout=WAIT, on_update=on_update)
    assert done.status == "done" and done.error is None
    assert done.total_clips == done.done_clips == 2
    assert done.output_video_url and done.compare_video_url and done.clean_output_video_url
    assert len({done.output_video_url, done.compare_video_url, done.clean_output_video_url}) == 3
    assert done.share_url and run.id in done.share_url
    reads = h.traffic.to("GET", path("replication_run", id=run.id))  # and one after the start (createdAt)
    assert seen[-1] == done and len(seen) + 1 == len(reads)
    assert all(r.status in ("generating", "stitching") or r.marketing_coming for r in seen[:-1])
    # The marketing cuts arrive after done: the wait waited for them (bounded, MEDIAGEN_MARKETING_WAIT).
    assert any(r.marketing_coming for r in seen) and not done.marketing_coming
    assert done.marketing_video_url and done.marketing_video_url_169
    assert "still coming" not in repr(done)

    stored = h.sandbox.world.replication.runs[run.id]  # what the sandbox understood from the body
    assert stored.quality == "low" and stored.accuracy == "exact" and stored.captions is True
    assert stored.audio == expected_audio and stored.marketing_aspect == "16:9"
    assert stored.webhook == WEBHOOK and [t.clips for t in stored.takes] == [(0,), (1,)]

    sent = [w for w in h.sandbox.world.outbox.sent if w["url"] == WEBHOOK]
    assert len(sent) == 1 and sent[0]["delivered"] is False
    assert json.loads(sent[0]["body"])["event"] == "replication.completed"
    takes = [e for e in h.ledger() if e["resource"] == "replication" and e["resourceId"] == run.id]
    assert [e["kind"] for e in takes] == ["charge", "charge"]


@pytest.mark.anyio
@pytest.mark.spellings
async def test_replicate_with_defaults(h: Harness) -> None:
    """No options: an empty body; the service's defaults (seedance-2-fast-i2v, medium) are reported."""
    ready = await ready_analysis(h)
    run = await h.call("replicate", ready.id, clips=[0])
    (_, _, _, body), *_ = h.traffic.to("POST", path("replicate", id=ready.id))
    assert body == {"clips": [0]}
    assert run.model_id == "seedance-2-fast-i2v"
    done = await h.call("wait_replication", run.id, poll=POLL, timeout=WAIT)
    assert done.status == "done" and done.quality == "medium" and done.clean_output_video_url is None


@pytest.mark.anyio
async def test_a_wait_that_does_not_wait_for_the_marketing_cuts_says_they_are_coming(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``MEDIAGEN_MARKETING_WAIT=0`` returns at done; a bound (``marketing=``) shorter than the cuts'
    arrival (8 s after done in the sandbox) returns when it ends; either run says its cuts are coming,
    and a read after they arrived has them. The sandbox is on the manual clock, moved to just past done,
    so the cuts cannot arrive while the bounded wait's own pauses step it (on a real clock a loaded
    machine let them arrive first)."""
    sandbox = Sandbox(SandboxConfig(clock="manual", seed=1))
    async with httpx.AsyncClient(transport=sandbox.transport(), base_url="http://sandbox.local") as http:
        client = AsyncClient.for_sandbox(sandbox, http_client=http)

        async def advance(seconds: float) -> None:
            (await http.post(path("sandbox_clock"), json={"advance": seconds})).raise_for_status()

        started = await client.analyze(TIKTOK)
        await advance(3600)
        ready = await client.wait_analysis(started, poll=POLL, timeout=WAIT)
        first, second = [await client.replicate(ready.id, clips=[clip]) for clip in (0, 1)]
        runs = sandbox.world.replication.runs
        await advance(max(runs[first.id].done_at, runs[second.id].done_at) - sandbox.world.clock.now() + 0.5)

        monkeypatch.setenv(settings.ENV_MARKETING_WAIT, "0")
        done = await client.wait_replication(first, poll=POLL, timeout=WAIT)
        assert done.status == "done" and done.marketing_coming
        assert done.marketing_video_url is None and done.marketing_video_url_169 is None
        assert repr(done).endswith(", marketing cuts still coming)") and "still coming" in done._repr_html_()

        monkeypatch.delenv(settings.ENV_MARKETING_WAIT)
        seen, on_update = collector()
        bounded = await client.wait_replication(second, poll=0.25, marketing=1, on_update=on_update)
        assert bounded.status == "done" and bounded.marketing_coming and seen[-1] is bounded
        assert len(seen) >= 2 and all(r.marketing_coming for r in seen)  # read again within the bound

        await advance(10)
        later = await client.wait_replication(first, poll=POLL, timeout=WAIT)
        assert later.marketing_video_url and later.marketing_video_url_169 and not later.marketing_coming
        await client.aclose()
    sandbox.world.reset()  # cancel the pending timers


def test_a_marketing_wait_that_is_not_a_number_of_seconds_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv(settings.ENV_MARKETING_WAIT, raw)
        with pytest.raises(ConfigurationError, match=f"{settings.ENV_MARKETING_WAIT} must be 0 or more"):
            settings.marketing_wait()
    monkeypatch.setenv(settings.ENV_MARKETING_WAIT, "12.5")
    assert settings.marketing_wait() == 12.5


@pytest.mark.anyio
async def test_replicate_unknown_model_lists_the_models(h: Harness) -> None:
    """A model outside the replication list: refused by the client with the service's message naming
    every allowed model; nothing is sent, nothing charged."""
    ready = await ready_analysis(h)
    before = h.ledger()
    with pytest.raises(ValidationError) as raised:
        await h.call("replicate", ready.id, model_id="gpt-image-2")
    error = raised.value
    assert error.sent is False and error.field == "modelId"
    assert error.message.startswith("Unknown replication model")
    assert all(model in error.message for model in REPLICATION_MODELS)
    assert h.ledger() == before
    assert h.traffic.to("POST", path("replicate", id=ready.id)) == []


@pytest.mark.anyio
async def test_replicate_before_ready_is_refused(h: Harness) -> None:
    """Replicating an analysis still ``analyzing``: ``Flow is not ready``, nothing charged."""
    started = await h.call("analyze", TIKTOK)
    with pytest.raises(BadRequestError) as raised:
        await h.call("replicate", started.id, clips=[0])
    assert raised.value.message.startswith(messages.FLOW_NOT_READY)
    assert [e["resource"] for e in h.ledger()] == ["analysis"]
    assert not h.sandbox.world.replication.runs


@pytest.mark.anyio
async def test_analyze_link_rules_and_replay(h: Harness) -> None:
    """An http or an empty link is refused by the client, with the service's words; a repeated key is
    one analysis, and a start the service answers as a replay (through another ledger) is reuse."""
    with pytest.raises(ValidationError) as raised:
        await h.call("analyze", "http://www.tiktok.com/@a/video/1")
    assert raised.value.message.startswith(messages.URL_MUST_BE_HTTPS) and raised.value.sent is False
    sent = len(h.traffic.requests)
    assert sent == 0
    with pytest.raises(ValidationError) as empty:
        await h.call("analyze", "  ")
    assert empty.value.sent is False and len(h.traffic.requests) == sent

    first = await h.call("analyze", TIKTOK, idempotency_key="analysis-1")
    second = await h.call("analyze", TIKTOK, idempotency_key="analysis-1")  # found in the ledger
    elsewhere = await h.call("analyze", TIKTOK, idempotency_key="analysis-1", ledger=h.other_ledger)
    assert second.id == first.id == elsewhere.id and second.reused and elsewhere.reused
    assert h.traffic.status_of("POST", path("analyze"))[-2:] == [201, 200]  # the service's own replay
    assert len([e for e in h.ledger() if e["kind"] == "charge"]) == 1


@pytest.mark.anyio
async def test_wait_analysis_and_replication_timeouts(h: Harness) -> None:
    """Past ``timeout`` (service seconds) the wait raises WaitTimeout carrying the last reading."""
    started = await h.call("analyze", TIKTOK)
    seen, on_update = collector()
    with pytest.raises(WaitTimeout) as raised:
        await h.call("wait_analysis", started, poll=POLL, timeout=8, on_update=on_update)
    last = raised.value.last
    assert isinstance(last, Analysis) and last.status == "analyzing" and last.id == started.id
    assert seen and seen[-1] is last

    ready = await h.call("wait_analysis", started, poll=POLL, timeout=WAIT)
    run = await h.call("replicate", ready.id, clips=[0])
    seen, on_update = collector()
    with pytest.raises(WaitTimeout) as timed_out:
        await h.call("wait_replication", run, poll=POLL, timeout=8, on_update=on_update)
    last_run = timed_out.value.last
    assert isinstance(last_run, ReplicationRun) and last_run.status == "generating"
    assert seen and seen[-1] is last_run and len(seen) <= 4
    finished = await h.call("wait_replication", run, poll=POLL, timeout=WAIT)  # the run went on
    assert finished.status == "done"


# ---------------------------------------------------------------------------- topic-to-video


@pytest.mark.anyio
@pytest.mark.spellings
async def test_make_video_with_every_option_until_done(h: Harness) -> None:
    """A 30 s karaoke video by a pixar woman with Nova's voice, no captions, no music: done with a URL."""
    options = {
        "seconds": 30,
        "gender": "woman",
        "look": "pixar",
        "voice": "Nova",
        "flow": "karaoke",
        "captions": False,
        "music": False,
    }
    job = await h.call("make_video", "why cats purr", **options, webhook=WEBHOOK)
    assert isinstance(job, ShortVideoJob) and job.id and job.status == "scripting"

    (_, _, _, body), *more = h.traffic.to("POST", path("job_start"))
    assert more == []
    names = h.sandbox.config.wire  # the body in the service's spelling
    assert body[names.job_topic] == "why cats purr" and body[names.job_webhook] == WEBHOOK
    assert {k: body[getattr(names, "job_" + k)] for k in options} == options
    assert body[names.job_idempotency]  # the client always sends one, in the body

    seen, on_update = collector()
    done = await h.call("wait_job", job, poll=POLL, timeout=WAIT, on_update=on_update)
    assert done.status == "done" and done.error is None and done.video_url
    assert done.flow == "karaoke" and done.voice == "Nova" and done.seconds == 30
    assert done.topic == "why cats purr" and done.script and done.portrait_url and done.lipsync_video_url
    assert done.progress == 1.0 and done.credits_used and done.credits_used > 0
    assert done.edit_report is not None
    assert done.edit_report["captions"] is False and done.edit_report["music"] is False
    reads = h.traffic.to("GET", path("job", id=job.id))  # and one after the start, for its createdAt
    assert seen[-1] == done and len(seen) + 1 == len(reads)
    stages = [j.status for j in seen]
    assert stages[0] == "scripting" and "animating" in stages and stages[-1] == "done"
    stored = h.sandbox.world.topic.jobs[job.id]
    assert (stored.gender, stored.look) == ("woman", "pixar")


@pytest.mark.anyio
async def test_make_video_idempotency_key_returns_the_same_job(h: Harness) -> None:
    """The same idempotency key (in the body) returns the original job, not a second charge: from the
    ledger without a request, and from the service (another machine's ledger) by the key."""
    first = await h.call("make_video", "a topic", idempotency_key="video-7")
    second = await h.call("make_video", "a topic", idempotency_key="video-7")
    elsewhere = await h.call("make_video", "a topic", idempotency_key="video-7", ledger=h.other_ledger)
    other = await h.call("make_video", "a topic", idempotency_key="video-8")
    assert second.id == first.id == elsewhere.id and other.id != first.id and second.reused
    assert h.traffic.status_of("POST", path("job_start")) == [201, 200, 201]
    assert [r[3][wire.JOB_IDEMPOTENCY] for r in h.traffic.to("POST", path("job_start"))] == [
        "video-7",
        "video-7",
        "video-8",
    ]
    assert len(h.sandbox.world.topic.jobs) == 2


@pytest.mark.anyio
@pytest.mark.spellings
async def test_video_options(h: Harness) -> None:
    """Voices by gender, looks, edit styles and the 20 to 180 s bounds."""
    options = await h.call("video_options")
    assert isinstance(options, VideoOptions)
    assert options.voices is not None
    assert "Lucy" in options.voices["woman"] and "Archer" in options.voices["man"]
    assert "Nova" in options.voices["woman"]
    assert {"creator", "newscaster", "pixar"} <= set(options.looks)
    assert {"classic", "karaoke", "broll-punch"} <= set(options.flows)
    assert options.seconds["min"] == 20 and options.seconds["max"] == 180
    assert options.seconds["default"] == 45


@pytest.mark.anyio
async def test_reedit_makes_a_new_job(h: Harness) -> None:
    """A re-edit of a finished job is a new job id, polled the same way until done with the new flow."""
    job = await h.call("make_video", "reedit me", seconds=20, flow="classic")
    done = await h.call("wait_job", job, poll=POLL, timeout=WAIT)
    assert done.status == "done"

    recut = await h.call("reedit", job.id, flow="broll-punch", music=False)
    assert isinstance(recut, ShortVideoJob) and recut.id != job.id
    (_, _, _, body), *_ = h.traffic.to("POST", path("reedit", id=job.id))
    assert body == {"flow": "broll-punch", "music": False}
    finished = await h.call("wait_job", recut, poll=POLL, timeout=WAIT)
    assert finished.status == "done" and finished.flow == "broll-punch"
    assert finished.video_url and finished.video_url != done.video_url
    assert finished.script == done.script  # the re-edit reuses the script, voice and lip-sync
    assert finished.edit_report is not None and finished.edit_report["music"] is False


@pytest.mark.anyio
@pytest.mark.parametrize("fault", ["drop", "500"])
async def test_reedit_is_not_sent_twice_after_an_ambiguous_failure(h: Harness, fault: str) -> None:
    """reedit has no idempotency key: after a broken connection or a 500 it may have started, so the
    client raises StartUncertain instead of retrying (a retry could make and charge a second job);
    503 is retried."""
    job = await h.call("make_video", "reedit once", seconds=20)
    await h.call("wait_job", job, poll=POLL, timeout=WAIT)
    await h.faults(script=[fault], routes=["reedit"])
    jobs_before = len(h.sandbox.world.topic.jobs)
    with pytest.raises(StartUncertain) as raised:
        await h.call("reedit", job.id, flow="karaoke")
    assert "may have started" in raised.value.message
    assert len(h.traffic.to("POST", path("reedit", id=job.id))) == 1
    assert len(h.sandbox.world.topic.jobs) - jobs_before == (1 if fault == "drop" else 0)
    await h.faults(script=["503"], routes=["reedit"])
    recut = await h.call("reedit", job.id, flow="karaoke")
    assert recut.id in h.sandbox.world.topic.jobs
    assert len(h.traffic.to("POST", path("reedit", id=job.id))) == 3


@pytest.mark.anyio
@pytest.mark.parametrize("seconds", [19, 19.9, 180.5, 181, 0, -30])
async def test_seconds_out_of_range_is_refused_without_a_request(h: Harness, seconds: float) -> None:
    """Target lengths outside 20..180 are refused by the client: no request, no job, nothing charged."""
    with pytest.raises(ValidationError) as raised:
        await h.call("make_video", "too short or too long", seconds=seconds)
    assert raised.value.sent is False and raised.value.field == "seconds"
    assert "20" in raised.value.message and "180" in raised.value.message
    assert h.traffic.requests == [] and not h.sandbox.world.topic.jobs and h.ledger() == []


@pytest.mark.anyio
async def test_seconds_bounds_are_accepted(h: Harness) -> None:
    """Exactly 20 and 180 seconds are allowed and sent."""
    short = await h.call("make_video", "short", seconds=20)
    long = await h.call("make_video", "long", seconds=180)
    assert short.id != long.id
    assert [r[3][wire.JOB_SECONDS] for r in h.traffic.to("POST", path("job_start"))] == [20, 180]


@pytest.mark.anyio
async def test_wait_job_timeout_carries_the_last_reading(h: Harness) -> None:
    """WaitTimeout after ``timeout`` service seconds, with the last reading, after on_update saw it."""
    job = await h.call("make_video", "a slow one", seconds=60)
    seen, on_update = collector()
    with pytest.raises(WaitTimeout) as raised:
        await h.call("wait_job", job, poll=POLL, timeout=12, on_update=on_update)
    last = raised.value.last
    assert isinstance(last, ShortVideoJob) and last.id == job.id and not last.done
    assert seen and seen[-1] is last and 1 <= len(seen) <= 5  # a read every 5 s for 12 s, then it ended
    assert len(seen) + 1 == len(h.traffic.to("GET", path("job", id=job.id)))  # + the start's own read
    assert (await h.call("wait_job", job.id, poll=POLL, timeout=WAIT)).status == "done"


# ---------------------------------------------------------------------- failures and retries


@pytest.mark.anyio
async def test_failed_analysis_is_returned_and_refunded(h: Harness) -> None:
    """A failed analysis ends the wait (no exception) with its error; its 5 credits are refunded."""
    await h.faults(modelScript=["fail"])
    started = await h.call("analyze", TIKTOK)
    failed = await h.call("wait_analysis", started, poll=POLL, timeout=WAIT)
    assert failed.status == "failed" and failed.error and failed.blueprint is None
    assert h.traffic.to("POST", path("blueprint", id=started.id)) == []
    assert [(e["kind"], e["credits"]) for e in h.ledger()] == [("charge", 5), ("refund", 5)]


@pytest.mark.anyio
async def test_failed_replication_run_is_returned(h: Harness) -> None:
    """A take the model fails: the run ends ``failed`` with the clip named; that take is refunded."""
    ready = await ready_analysis(h)
    await h.faults(modelScript=["fail"])
    run = await h.call("replicate", ready.id, clips=[0], accuracy="exact", model_id="p-video")
    failed = await h.call("wait_replication", run, poll=POLL, timeout=WAIT)
    assert failed.status == "failed" and failed.error and failed.error.startswith("Clip 0 failed")
    assert failed.output_video_url is None and failed.share_url is None
    takes = [e["kind"] for e in h.ledger() if e["resource"] == "replication"]
    assert takes == ["charge", "refund"]


@pytest.mark.anyio
async def test_failed_job_is_returned_and_refunded(h: Harness) -> None:
    """A failed core step: ``wait_job`` returns the failed job; every credit it used is refunded."""
    await h.faults(modelScript=["ok", "fail"])  # the portrait fails
    job = await h.call("make_video", "doomed", seconds=20)
    failed = await h.call("wait_job", job, poll=POLL, timeout=WAIT)
    assert failed.status == "failed" and failed.error and failed.video_url is None
    entries = [e for e in h.ledger() if e["resourceId"] == job.id]
    charged = sum(e["credits"] for e in entries if e["kind"] == "charge")
    refunded = sum(e["credits"] for e in entries if e["kind"] == "refund")
    assert charged == refunded > 0


@pytest.mark.anyio
async def test_replicate_retries_keep_one_key_and_one_run(h: Harness) -> None:
    """503 (charged and refunded) then a dropped connection on replicate: retried with one key, one run."""
    ready = await ready_analysis(h)
    await h.faults(script=["503", "drop"], routes=["replicate"])
    run = await h.call("replicate", ready.id, clips=[0], idempotency_key="replica-1")
    replicate_path = path("replicate", id=ready.id)
    keys = [k for p, k in h.traffic.idempotency_keys if p == replicate_path]
    assert keys == ["replica-1"] * 3
    statuses = h.traffic.status_of("POST", replicate_path)  # the drop has no status in-process
    assert statuses[0] == 503 and statuses[-1] == 200  # the last one replays the run (200, not 201)
    refunded = [e for e in h.ledger() if e["resource"] == "replication"]
    assert [e["kind"] for e in refunded] == ["charge", "refund", "charge"]
    assert refunded[0]["resourceId"] != run.id and refunded[2]["resourceId"] == run.id
    assert list(h.sandbox.world.replication.runs) == [run.id]
    again = await h.call("replicate", ready.id, clips=[0], idempotency_key="replica-1")
    assert again.id == run.id and len(h.sandbox.world.replication.runs) == 1


@pytest.mark.anyio
async def test_make_video_retries_reuse_the_body_key(h: Harness) -> None:
    """A dropped start of a job is retried with the same body key once the body's names are confirmed
    (the sync harness reads make_video's schema from the served sandbox's agent server): one job, one
    first-step charge. Unconfirmed (the in-process harness has no agent server to ask), the start is not
    sent again: uncertain, and one job at most."""
    await h.faults(script=["500", "drop"], routes=["job_start"])
    if h.flavor == "async":
        with pytest.warns(UserWarning, match="not confirmed"), pytest.raises(StartUncertain):
            await h.call("make_video", "retry me", seconds=20)
        assert len(h.traffic.to("POST", path("job_start"))) == 1
        assert len(h.sandbox.world.topic.jobs) <= 1
        return
    job = await h.call("make_video", "retry me", seconds=20)
    starts = h.traffic.to("POST", path("job_start"))
    assert len(starts) == 3 and len({r[3][wire.JOB_IDEMPOTENCY] for r in starts}) == 1
    assert list(h.sandbox.world.topic.jobs) == [job.id]
