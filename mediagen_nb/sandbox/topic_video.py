"""The topic-to-video API: one request becomes script, presenter, voice, lip-sync and an edited video.

Rules the spec leaves open, chosen here (every draw is seeded by the sandbox seed):

* Steps, in order, each a generation charged as it starts (credits): ``script`` 2, ``portrait`` 8,
  ``voice`` 5, ``lipsync`` 1 per started second of speech; then, with ``captions`` on, the edit:
  ``captions`` 1, ``broll`` 2 per clip, ``images`` 1 per still; with ``music`` on, ``music`` 2; last a
  free ``render`` (cut, mix and loudness normalization). Stages: ``scripting`` (script), ``portrait``,
  ``animating`` (voice, lip-sync), ``captioning`` (edit, music, render).
* The edit style sets the inserts: ``classic`` a b-roll clip per 10 s of speech, ``reveal`` a still per
  12 s, ``hook-reveal`` both per 15 s, ``broll-punch`` a b-roll clip per 6 s, ``clean-punch`` and
  ``karaoke`` none. An unknown style is refused (400); an unknown look falls back to ``creator``.
* The script runs at 2.5 words a second of the target length; the speech takes 92 % to 110 % of that.
  A topic over 900 characters is cut at the sentence end nearest 900 characters within 600 to 1,200,
  else at the last space before 900. Without a topic the job picks an angle, shown as its ``topic``.
* Failures. One model outcome fault is drawn per step (not ``render``) at the start call, in step
  order. A failed or timed-out script, portrait, voice or lip-sync fails the job and refunds every
  credit it used. A failed or timed-out edit step is skipped: its credits are refunded, it is named in
  ``editReport.skipped`` and ``degraded`` is true. When the balance (or the key's monthly cap) cannot
  cover the next step, the job fails with ``job_out_of_credits`` naming what the remaining steps need,
  and every credit it used is refunded. A failed job's credits field is the amount refunded.
* The start call (and a re-edit) needs the balance and the cap to cover its first step.
* ``idempotencyKey`` is kept per account for the life of the sandbox state.
* A re-edit is a new job at ``captioning`` that copies the script, voice, portrait and lip-sync of a job
  that has a lip-sync and has not failed; omitted ``flow``, ``captions`` and ``music`` keep the job's.
  It sends no webhook (the spec names none for it).
* Simulated step times: script 20 s, portrait 30 s, voice 10 s + 0.25 s and lip-sync 40 s + 1 s per
  second of speech, captions 10 s, b-roll 10 s + 6 s a clip, stills 8 s + 3 s each, music 10 s,
  render 10 s + 0.2 s per second of speech.
"""

import asyncio
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from mediagen_nb.protocol import limits, messages, wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.media import MediaSpec
from mediagen_nb.sandbox.pipeline import Call as Ctx
from mediagen_nb.sandbox.responses import ServiceError, bad_request, not_found, ok, too_many

if TYPE_CHECKING:
    from starlette.responses import Response

    from mediagen_nb.sandbox.world import World

GENDERS = ("man", "woman")
VOICES = {
    "man": ("Archer", "Miles", "Jasper", "Theo", "Dax"),
    "woman": ("Lucy", "Nova", "Ivy", "Maren", "Sage"),
}
DEFAULT_VOICE = {"man": "Archer", "woman": "Lucy"}
LOOKS = ("creator", "newscaster", "pixar")
FLOWS = ("classic", "reveal", "hook-reveal", "broll-punch", "clean-punch", "karaoke")
DEFAULT_FLOW = "classic"
# Seconds of speech per b-roll clip and per still image; 0 = none.
FLOW_INSERTS = {
    "classic": (10.0, 0.0),
    "reveal": (0.0, 12.0),
    "hook-reveal": (15.0, 15.0),
    "broll-punch": (6.0, 0.0),
    "clean-punch": (0.0, 0.0),
    "karaoke": (0.0, 0.0),
}

SCRIPT_CREDITS = 2
PORTRAIT_CREDITS = 8
VOICE_CREDITS = 5
LIPSYNC_CREDITS_PER_SECOND = 1
CAPTIONS_CREDITS = 1
BROLL_CREDITS = 2  # per clip
IMAGE_CREDITS = 1  # per still
MUSIC_CREDITS = 2

WORDS_PER_SECOND = 2.5
CORE_STEPS = ("script", "portrait", "voice", "lipsync")
LABELS = {
    "script": "script",
    "portrait": "presenter image",
    "voice": "voiceover",
    "lipsync": "lip-sync",
    "captions": "captions",
    "broll": "b-roll",
    "images": "stills",
    "music": "music bed",
}
PORTRAIT_SIZE = (288, 512)
VIDEO_SIZE = (180, 320)

ANGLES = (
    "why most people quit new habits in the first week",
    "the one budgeting rule that actually sticks",
    "what nobody tells you about working from home",
    "how to learn anything in twenty minutes a day",
    "the science of a good night's sleep",
)
OPENERS = (
    "Here's the thing about {topic}.",
    "Let's talk about {topic}.",
    "Most people get {topic} wrong.",
    "You have probably heard about {topic}, but not like this.",
)
SENTENCES = (
    "Start small and stay consistent.",
    "The first step is easier than you think.",
    "Research keeps pointing to the same simple idea.",
    "Try it for one week and watch what changes.",
    "Most of the work happens before you even start.",
    "Write it down, because memory lies.",
    "The trick is to make it boring and automatic.",
    "Ask yourself what you would do with one extra hour.",
    "Small wins compound faster than big plans.",
    "Nobody gets this right on the first try, and that is fine.",
    "Here is the part most videos skip.",
    "Think of it like a muscle that grows with use.",
)
CLOSERS = (
    "Follow for part two.",
    "Save this for later.",
    "Tell me in the comments what you would try first.",
)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def cut_topic(topic: str) -> str:
    """A topic cut at the sentence end nearest ``TOPIC_CUT_CHARS`` (see the module rules)."""
    limit = limits.TOPIC_CUT_CHARS
    if len(topic) <= limit:
        return topic
    ends = [m.end() for m in _SENTENCE_END.finditer(topic) if limit * 2 // 3 <= m.end() <= limit * 4 // 3]
    if ends:
        return topic[: min(ends, key=lambda end: (abs(end - limit), end))]
    head = topic[:limit]
    return head.rsplit(" ", 1)[0] if " " in head else head


def write_script(rng: Any, topic: str, seconds: float) -> str:
    """A script of about ``seconds`` of speech on ``topic``; sentences repeat only after all were used."""
    subject = topic.split(".")[0].strip().rstrip("!?")
    if len(subject) > 80:
        subject = subject[:80].rsplit(" ", 1)[0]
    if subject[:2].istitle():
        subject = subject[0].lower() + subject[1:]
    lines = [rng.choice(OPENERS).format(topic=subject)]
    closer = rng.choice(CLOSERS)
    target = seconds * WORDS_PER_SECOND - len(closer.split())
    pool: list[str] = []
    while sum(len(line.split()) for line in lines) < target:
        if not pool:
            pool = rng.sample(SENTENCES, len(SENTENCES))
        lines.append(pool.pop())
    return " ".join([*lines, closer])


@dataclass
class Step:
    """One generation of a job, placed in simulated time."""

    name: str
    stage: str
    credits: int
    seconds: float  # simulated run time
    count: int = 0  # b-roll clips or stills
    outcome: str = "succeed"  # "succeed" | "fail" | "timeout"
    start_at: float = 0.0
    end_at: float = 0.0
    charged: bool = False
    settled: bool = False


@dataclass
class Job:
    """One short-video job (or re-edit): its plan, its steps in time order and what it has made so far."""

    id: str
    caller: Caller
    topic: str
    seconds: float
    gender: str
    look: str
    voice: str
    flow: str
    captions: bool
    music: bool
    webhook: str | None
    base_url: str
    created_at: float
    script_text: str
    speech_seconds: float
    steps: list[Step]
    status: str
    updated_at: float
    script: str | None = None
    portrait_url: str | None = None
    lipsync_url: str | None = None
    video_url: str | None = None
    poster_url: str | None = None
    credits_used: int = 0
    edit_report: dict[str, Any] | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)
    progress_at_failure: float | None = None
    error: str | None = None

    def progress(self, now: float) -> float:
        """Share of the planned step time elapsed: 1 when done, frozen when failed."""
        if self.status == "done":
            return 1.0
        if self.progress_at_failure is not None:
            return self.progress_at_failure
        total = self.steps[-1].end_at - self.created_at
        return round(min(0.99, max(0.0, (now - self.created_at) / total)), 3) if total > 0 else 0.0

    def public(self, world: "World") -> dict[str, Any]:
        """The job read response, with the unshown names from ``spec.fields``."""
        return {
            "jobId": self.id,
            "status": self.status,
            "stage": self.status,
            wire.JOB_PROGRESS: self.progress(world.clock.now()),
            wire.JOB_SCRIPT: self.script,
            wire.JOB_PORTRAIT: self.portrait_url,
            wire.JOB_LIPSYNC: self.lipsync_url,
            "videoUrl": self.video_url,
            wire.JOB_CREDITS: self.credits_used,
            wire.JOB_EDIT_REPORT: self.edit_report,
            wire.JOB_DEGRADED: bool(self.skipped),
            "flow": self.flow,
            "topic": self.topic,
            "voice": self.voice,
            "seconds": self.seconds,
            "posterUrl": self.poster_url,
            "error": self.error,
            "createdAt": world.clock.iso(self.created_at),
            "updatedAt": world.clock.iso(self.updated_at),
        }


def edit_steps(flow: str, captions: bool, music: bool, speech: float) -> list[Step]:
    """The ``captioning`` stage's steps for an edit style and the captions and music switches."""
    steps = []
    if captions:
        steps.append(Step("captions", "captioning", CAPTIONS_CREDITS, 10.0))
        broll_every, image_every = FLOW_INSERTS[flow]
        if broll_every:
            count = max(1, int(speech // broll_every))
            steps.append(Step("broll", "captioning", BROLL_CREDITS * count, 10.0 + 6.0 * count, count))
        if image_every:
            count = max(1, int(speech // image_every))
            steps.append(Step("images", "captioning", IMAGE_CREDITS * count, 8.0 + 3.0 * count, count))
    if music:
        steps.append(Step("music", "captioning", MUSIC_CREDITS, 10.0))
    steps.append(Step("render", "captioning", 0, 10.0 + 0.2 * speech))
    return steps


def core_steps(speech: float) -> list[Step]:
    """The steps before the edit: script, portrait, voice and lip-sync."""
    return [
        Step("script", "scripting", SCRIPT_CREDITS, 20.0),
        Step("portrait", "portrait", PORTRAIT_CREDITS, 30.0),
        Step("voice", "animating", VOICE_CREDITS, 10.0 + 0.25 * speech),
        Step("lipsync", "animating", LIPSYNC_CREDITS_PER_SECOND * math.ceil(speech), 40.0 + speech),
    ]


@dataclass(frozen=True)
class Edit:
    """The edit choices of a start or re-edit body."""

    flow: str
    captions: bool
    music: bool


def _flag(body: dict[str, Any], name: str, default: bool) -> bool:
    """A boolean body field, its default when absent."""
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_request(messages.wrong_type(name, "true or false"))
    return value


def _edit(body: dict[str, Any], default: Edit) -> Edit:
    """The edit choices of a body; absent ones come from ``default``."""
    flow = body.get(wire.JOB_FLOW)
    if flow is not None and flow not in FLOWS:
        raise bad_request(messages.not_one_of(wire.JOB_FLOW, FLOWS))
    return Edit(
        flow or default.flow,
        _flag(body, wire.JOB_CAPTIONS, default.captions),
        _flag(body, wire.JOB_MUSIC, default.music),
    )


def _seconds(value: Any) -> float:
    """The target length: 45 when absent, else a number from 20 to 180."""
    if value is None:
        return float(limits.SHORT_VIDEO_SECONDS_DEFAULT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise bad_request(messages.wrong_type(wire.JOB_SECONDS, "a number of seconds"))
    low, high = limits.SHORT_VIDEO_SECONDS_MIN, limits.SHORT_VIDEO_SECONDS_MAX
    if not low <= value <= high:
        raise bad_request(messages.out_of_range(wire.JOB_SECONDS, low, high))
    return float(value)


@dataclass(frozen=True)
class Plan:
    """A validated start body with its defaults and fallbacks applied."""

    topic: str | None
    seconds: float
    gender: str
    look: str
    voice: str
    edit: Edit
    webhook: str | None


def _outcome(world: "World") -> str:
    """The next model outcome fault as a plan: ``succeed``, ``fail`` or ``timeout`` (a hang)."""
    return {"fail": "fail", "hang": "timeout"}.get(world.faults.model_outcome() or "", "succeed")


class TopicVideo:
    """Every short-video job of the sandbox, by id and by (account, body idempotency key)."""

    def __init__(self, world: "World") -> None:
        self.world = world
        self.jobs: dict[str, Job] = {}
        self.by_idempotency: dict[tuple[str, str], str] = {}
        self._idempotency_locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def _plan(self, body: dict[str, Any]) -> Plan:
        """Every start body field's type, rule, default and fallback; the webhook is checked here too."""
        topic = body.get(wire.JOB_TOPIC)
        if topic is not None and not isinstance(topic, str):
            raise bad_request(messages.wrong_type(wire.JOB_TOPIC, "a string"))
        seconds = _seconds(body.get(wire.JOB_SECONDS))
        gender = body.get(wire.JOB_GENDER)
        gender = GENDERS[0] if gender is None else gender
        if gender not in GENDERS:
            raise bad_request(messages.not_one_of(wire.JOB_GENDER, GENDERS))
        look, voice = body.get(wire.JOB_LOOK), body.get(wire.JOB_VOICE)
        edit = _edit(body, Edit(DEFAULT_FLOW, True, True))
        webhook = body.get(wire.JOB_WEBHOOK)
        if webhook is not None:
            await self.world.outbox.check(webhook)
        return Plan(
            topic=cut_topic(topic.strip()) if topic and topic.strip() else None,
            seconds=seconds,
            gender=gender,
            look=look if look in LOOKS else "creator",
            voice=voice if voice in VOICES[gender] else DEFAULT_VOICE[gender],
            edit=edit,
            webhook=webhook,
        )

    async def start(self, ctx: Ctx) -> "Response":
        """POST {topic root}: body rules, then the body idempotency key, then cap, balance and the job."""
        body = await ctx.json()
        plan = await self._plan(body)
        raw_key = body.get(wire.JOB_IDEMPOTENCY)
        if raw_key is None:
            return ok({"jobId": self._create(ctx, plan).id}, 201)
        if not isinstance(raw_key, str) or not raw_key:
            raise bad_request(messages.wrong_type(wire.JOB_IDEMPOTENCY, "a non-empty string"))
        key = (ctx.who.account.id, raw_key)
        async with self._idempotency_locks.setdefault(key, asyncio.Lock()):
            existing = self.by_idempotency.get(key)
            if existing is not None:
                return ok({"jobId": existing}, 200)
            job = self._create(ctx, plan)
            self.by_idempotency[key] = job.id
        return ok({"jobId": job.id}, 201)

    def _admit(self, ctx: Ctx, credits: int) -> str:
        """Cap and balance checks for a job's first step, then its id; a 503 fault charges and refunds."""
        world, caller = self.world, ctx.who
        if not world.accounts.cap_allows(caller.key, credits):
            raise too_many(messages.key_cap_reached(caller.key.monthly_cap or 0))
        if caller.account.balance < credits:
            top_up = ctx.base_url + path("sandbox_app", page="billing")
            raise bad_request(messages.not_enough_credits(credits, caller.account.balance, top_up))
        job_id = world.new_id()
        if ctx.fault == "503":
            if credits:
                world.accounts.charge(caller, credits, "job", job_id)
                world.accounts.refund(caller, credits, "job", job_id, note="the job could not start")
            raise ServiceError(503, messages.AT_CAPACITY)
        return job_id

    def _create(self, ctx: Ctx, plan: Plan) -> Job:
        """A new job: its angle, script and speech length drawn from its id, then launched."""
        job_id = self._admit(ctx, SCRIPT_CREDITS)
        rng = self.world.rng("job", job_id)
        topic = plan.topic or rng.choice(ANGLES)
        script = write_script(rng, topic, plan.seconds)
        speech = round(len(script.split()) / WORDS_PER_SECOND * rng.uniform(0.92, 1.10), 1)
        edit = plan.edit
        now = self.world.clock.now()
        job = Job(
            id=job_id,
            caller=ctx.who,
            topic=topic,
            seconds=plan.seconds,
            gender=plan.gender,
            look=plan.look,
            voice=plan.voice,
            flow=edit.flow,
            captions=edit.captions,
            music=edit.music,
            webhook=plan.webhook,
            base_url=ctx.base_url,
            created_at=now,
            script_text=script,
            speech_seconds=speech,
            steps=core_steps(speech) + edit_steps(edit.flow, edit.captions, edit.music, speech),
            status="scripting",
            updated_at=now,
        )
        return self._launch(job)

    async def reedit(self, ctx: Ctx) -> "Response":
        """POST {topic root}/{jobId}/reedit: a new job re-cutting the lip-sync of a caller's job."""
        parent = self._own(ctx)
        edit = _edit(await ctx.json(), Edit(parent.flow, parent.captions, parent.music))
        if parent.lipsync_url is None or parent.status == "failed":
            raise bad_request(messages.REEDIT_NEEDS_LIPSYNC)
        steps = edit_steps(edit.flow, edit.captions, edit.music, parent.speech_seconds)
        job_id = self._admit(ctx, steps[0].credits)
        now = self.world.clock.now()
        job = replace(
            parent,
            id=job_id,
            caller=ctx.who,
            flow=edit.flow,
            captions=edit.captions,
            music=edit.music,
            webhook=None,
            base_url=ctx.base_url,
            created_at=now,
            steps=steps,
            status="captioning",
            updated_at=now,
            video_url=None,
            poster_url=None,
            credits_used=0,
            edit_report=None,
            skipped=[],
            progress_at_failure=None,
            error=None,
        )
        return ok({"jobId": self._launch(job).id}, 201)

    def _launch(self, job: Job) -> Job:
        """Draw each step's model outcome, place the steps one after another, store and start the job."""
        world = self.world
        at = job.created_at
        for step in job.steps:
            if step.name != "render":
                step.outcome = _outcome(world)
            runtime = step.seconds
            if step.outcome == "timeout":
                media = job.speech_seconds if step.name in ("voice", "lipsync") else 0.0
                limit = limits.RUNTIME_BASE_SECONDS + limits.RUNTIME_PER_MEDIA_SECOND * media
                runtime = min(limit, limits.RUNTIME_HARD_SECONDS)
            step.start_at, step.end_at = at, at + runtime
            at += runtime
        self.jobs[job.id] = job
        self.advance(job)
        now = world.clock.now()
        for moment in sorted({*(s.start_at for s in job.steps), *(s.end_at for s in job.steps)}):
            world.schedule(moment - now, self._advancer(job))
        return job

    def _advancer(self, job: Job) -> Callable[[], None]:
        """A timer callback that advances ``job``."""
        return lambda: self.advance(job)

    def advance(self, job: Job) -> None:
        """Apply every step event of the job whose simulated time has come, in order."""
        now = self.world.clock.now()
        for step in job.steps:
            if job.status in ("done", "failed"):
                return
            if step.settled:
                continue
            if not step.charged and (now < step.start_at or not self._begin(job, step)):
                return
            if now < step.end_at:
                return
            self._end(job, step)
        if job.status not in ("done", "failed"):
            self._finish(job)

    def _begin(self, job: Job, step: Step) -> bool:
        """Enter the step's stage and charge it; fail the job when the cap or the balance falls short."""
        accounts, caller = self.world.accounts, job.caller
        if job.status != step.stage:
            job.status, job.updated_at = step.stage, step.start_at
        if step.credits:
            if not accounts.cap_allows(caller.key, step.credits):
                self._fail(job, messages.key_cap_reached(caller.key.monthly_cap or 0), step.start_at)
                return False
            if caller.account.balance < step.credits:
                needed = sum(s.credits for s in job.steps if not s.charged)
                self._fail(job, messages.job_out_of_credits(needed, caller.account.balance), step.start_at)
                return False
            accounts.charge(caller, step.credits, "job", job.id, step=step.name)
            job.credits_used += step.credits
        step.charged = True
        return True

    def _end(self, job: Job, step: Step) -> None:
        """Settle a finished step: its artifact, a failed job, or a skipped and refunded edit step."""
        step.settled = True
        job.updated_at = step.end_at
        if step.outcome == "succeed":
            self._artifact(job, step)
            return
        label = LABELS[step.name]
        minutes = round((step.end_at - step.start_at) / 60, 1)
        if step.name in CORE_STEPS:
            cause = (
                messages.generation_timed_out(minutes) if step.outcome == "timeout" else "the model failed"
            )
            self._fail(
                job, f"The {label} step failed ({cause}); every credit the job used was refunded", step.end_at
            )
            return
        reason = f"timed out after {minutes:g} minutes" if step.outcome == "timeout" else "the model failed"
        self.world.accounts.refund(job.caller, step.credits, "job", job.id, step=step.name, note="skipped")
        job.credits_used -= step.credits
        job.skipped.append({"step": step.name, "reason": f"{label} {reason}; left out and refunded"})

    def _seed(self, job: Job) -> int:
        """The media seed of a job, so its files are reproducible."""
        return self.world.rng("job media", job.id).randrange(2**31)

    def _artifact(self, job: Job, step: Step) -> None:
        """What a finished core step makes visible on the job."""
        world = self.world
        if step.name == "script":
            job.script = job.script_text
        elif step.name == "portrait":
            spec = MediaSpec(
                "image", f"{job.look} presenter ({job.gender})", 0, self._seed(job), *PORTRAIT_SIZE
            )
            job.portrait_url = world.media_url(job.base_url, spec)
        elif step.name == "lipsync":
            spec = MediaSpec(
                "video", job.topic[:120], job.speech_seconds, self._seed(job) + 1, *VIDEO_SIZE, "mp4", True
            )
            job.lipsync_url = world.media_url(job.base_url, spec)

    def _fail(self, job: Job, error: str, at: float) -> None:
        """Fail the job at simulated time ``at`` and refund every credit it used."""
        job.progress_at_failure = job.progress(at)
        job.status, job.error, job.updated_at = "failed", error, at
        if job.credits_used:
            self.world.accounts.refund(job.caller, job.credits_used, "job", job.id, note="failed")
        if job.webhook:
            self.world.outbox.send(job.webhook, {"jobId": job.id, "status": job.status, "error": job.error})

    def _finish(self, job: Job) -> None:
        """Write the video, poster and edit report; the job is done; send its webhook."""
        world, seed = self.world, self._seed(job)
        done = {step.name: step for step in job.steps if step.settled and step.outcome == "succeed"}
        title = f"{job.flow} edit: {job.topic[:120]}"
        job.video_url = world.media_url(
            job.base_url, MediaSpec("video", title, job.speech_seconds, seed + 2, *VIDEO_SIZE, "mp4", True)
        )
        job.poster_url = world.media_url(job.base_url, MediaSpec("image", title, 0, seed + 3, *VIDEO_SIZE))
        job.edit_report = {
            "captions": "captions" in done,
            "broll": done["broll"].count if "broll" in done else 0,
            "images": done["images"].count if "images" in done else 0,
            "music": "music" in done,
            "loudnorm": True,
            "skipped": list(job.skipped),
        }
        job.status, job.updated_at = "done", job.steps[-1].end_at
        if job.webhook:
            payload = {
                "jobId": job.id,
                "status": job.status,
                "videoUrl": job.video_url,
                "creditsSpent": job.credits_used,
            }
            world.outbox.send(job.webhook, payload)

    def _own(self, ctx: Ctx) -> Job:
        """The caller's job named in the path, advanced to now; 404 ``Job not found`` otherwise."""
        job = self.jobs.get(ctx.request.path_params["id"])
        if job is None or job.caller.account.id != ctx.who.account.id:
            raise not_found(messages.JOB_NOT_FOUND)
        self.advance(job)
        return job

    async def read(self, ctx: Ctx) -> "Response":
        """GET {topic root}/{jobId}."""
        return ok(self._own(ctx).public(self.world))

    async def options(self, ctx: Ctx) -> "Response":
        """GET {topic root}/options: voices by gender, looks, edit styles, length bounds and defaults."""
        return ok(
            {
                wire.OPTIONS_VOICES: {gender: list(names) for gender, names in VOICES.items()},
                wire.OPTIONS_GENDERS: list(GENDERS),
                wire.OPTIONS_LOOKS: list(LOOKS),
                wire.OPTIONS_FLOWS: list(FLOWS),
                wire.OPTIONS_SECONDS: {
                    "min": limits.SHORT_VIDEO_SECONDS_MIN,
                    "max": limits.SHORT_VIDEO_SECONDS_MAX,
                    "default": limits.SHORT_VIDEO_SECONDS_DEFAULT,
                },
                wire.OPTIONS_DEFAULTS: {
                    wire.JOB_GENDER: GENDERS[0],
                    wire.JOB_LOOK: LOOKS[0],
                    wire.JOB_VOICE: dict(DEFAULT_VOICE),
                    wire.JOB_FLOW: DEFAULT_FLOW,
                    wire.JOB_CAPTIONS: True,
                    wire.JOB_MUSIC: True,
                },
            }
        )
