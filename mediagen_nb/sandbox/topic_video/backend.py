"""The topic-to-video backend: one request becomes script, presenter, voice, lip-sync and an edited video.

Rules the spec leaves open, chosen here (every draw is seeded by the sandbox seed; the steps and their
prices are in ``steps.py``, the script in ``script.py``, the body's choices in ``options.py``):

* Failures. One model outcome fault is drawn per step (not ``render``) at the start call, in step
  order. A failed or timed-out script, portrait, voice or lip-sync fails the job and refunds every
  credit it used. A failed or timed-out edit step is skipped: its credits are refunded, it is named in
  ``editReport.skipped`` and ``degraded`` is true. When the balance (or the key's monthly cap) cannot
  cover the next step, the job fails with ``job_out_of_credits`` naming what the remaining steps need,
  and every credit it used is refunded. A failed job's credits field is the amount refunded.
* The start call (and a re-edit) needs the balance and the cap to cover its first step.
* ``idempotencyKey`` (in the body) is kept per account for the life of the sandbox state.
* A re-edit is a new job at ``captioning`` that copies the script, voice, portrait and lip-sync of a job
  that has a lip-sync and has not failed; omitted ``flow``, ``captions`` and ``music`` keep the job's.
  It sends no webhook (the spec names none for it).
"""

from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from mediagen_nb.protocol import messages, states, wire
from mediagen_nb.sandbox import lifecycle, shape
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.media import MediaSpec
from mediagen_nb.sandbox.responses import bad_request
from mediagen_nb.sandbox.saved import Row, Rows, marked
from mediagen_nb.sandbox.topic_video import options
from mediagen_nb.sandbox.topic_video.script import ANGLES, speech_seconds, write_script
from mediagen_nb.sandbox.topic_video.steps import (
    CORE_STEPS,
    LABELS,
    MEDIA_STEPS,
    RENDER,
    SCRIPT_CREDITS,
    Step,
    core_steps,
    edit_steps,
)

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

RESOURCE = "job"  # the ledger's name for it, and its rows' in the saved state
PORTRAIT_SIZE = (288, 512)
VIDEO_SIZE = (180, 320)
ENDED = (states.DONE, states.FAILED)


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

    def to_dict(self) -> dict[str, Any]:
        """The job as saved state (``state.py``)."""
        return {
            "id": self.id,
            "caller": self.caller.to_dict(),
            "topic": self.topic,
            "seconds": self.seconds,
            "gender": self.gender,
            "look": self.look,
            "voice": self.voice,
            "flow": self.flow,
            "captions": self.captions,
            "music": self.music,
            "webhook": self.webhook,
            "baseUrl": self.base_url,
            "createdAt": self.created_at,
            "scriptText": self.script_text,
            "speechSeconds": self.speech_seconds,
            "steps": [asdict(step) for step in self.steps],
            "status": self.status,
            "updatedAt": self.updated_at,
            "script": self.script,
            "portraitUrl": self.portrait_url,
            "lipsyncUrl": self.lipsync_url,
            "videoUrl": self.video_url,
            "posterUrl": self.poster_url,
            "creditsUsed": self.credits_used,
            "editReport": self.edit_report,
            "skipped": self.skipped,
            "progressAtFailure": self.progress_at_failure,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], caller: Caller) -> "Job":
        return cls(
            id=data["id"],
            caller=caller,
            topic=data["topic"],
            seconds=data["seconds"],
            gender=data["gender"],
            look=data["look"],
            voice=data["voice"],
            flow=data["flow"],
            captions=data["captions"],
            music=data["music"],
            webhook=data["webhook"],
            base_url=data["baseUrl"],
            created_at=data["createdAt"],
            script_text=data["scriptText"],
            speech_seconds=data["speechSeconds"],
            steps=[Step(**step) for step in data["steps"]],
            status=data["status"],
            updated_at=data["updatedAt"],
            script=data["script"],
            portrait_url=data["portraitUrl"],
            lipsync_url=data["lipsyncUrl"],
            video_url=data["videoUrl"],
            poster_url=data["posterUrl"],
            credits_used=data["creditsUsed"],
            edit_report=data["editReport"],
            skipped=data["skipped"],
            progress_at_failure=data["progressAtFailure"],
            error=data["error"],
        )

    def progress(self, now: float) -> float:
        """Share of the planned step time elapsed: 1 when done, frozen when failed."""
        if self.status == states.DONE:
            return 1.0
        if self.progress_at_failure is not None:
            return self.progress_at_failure
        total = self.steps[-1].end_at - self.created_at
        return round(min(0.99, max(0.0, (now - self.created_at) / total)), 3) if total > 0 else 0.0

    def public(self, world: "World") -> dict[str, Any]:
        """The job read response, with the names the spec does not show as the world spells them."""
        names = world.wire
        answer: dict[str, Any] = {
            "jobId": self.id,
            "status": shape.word(names, self.status),
            "stage": shape.word(names, self.status),
        }
        for name, value in (
            (names.job_progress, self.progress(world.clock.now())),
            (names.job_script, self.script),
            (names.job_portrait, self.portrait_url),
            (names.job_lipsync, self.lipsync_url),
            ("videoUrl", self.video_url),
            (names.job_credits, shape.number(names, self.credits_used)),
            (names.job_edit_report, self.edit_report),
            (names.job_degraded, bool(self.skipped)),
            ("flow", self.flow),
            ("topic", self.topic),
            ("voice", self.voice),
            ("seconds", self.seconds),
            ("posterUrl", self.poster_url),
            ("error", self.error),
            ("createdAt", world.clock.iso(self.created_at)),
            ("updatedAt", world.clock.iso(self.updated_at)),
        ):
            wire.put(answer, name, value)
        return answer


class TopicVideoBackend:
    """Every short-video job of the sandbox, by id, with the account-scoped keys of their starts."""

    def __init__(self, world: "World") -> None:
        self.world = world
        self.jobs: dict[str, Job] = {}
        self.idempotency = lifecycle.Idempotency(world.clock, retention=None)
        self.unsaved: set[str] = set()  # ids of jobs made or changed since the state was saved

    def dump(self) -> Iterator[Row]:
        """The jobs made or changed since the last dump, and the keys of new starts, as saved rows."""
        yield from marked(RESOURCE, self.unsaved, self.jobs)
        yield from self.idempotency.dump(RESOURCE)

    def load(self, rows: Rows) -> None:
        """Take back the saved jobs and keys (:meth:`dump`); their callers are the accounts'."""
        caller = self.world.accounts.caller
        for data in rows.get(RESOURCE, {}).values():
            self.jobs[data["id"]] = Job.from_dict(data, caller(data["caller"]))
        self.idempotency.load(rows, RESOURCE)

    def resume(self) -> None:
        """After a restart from saved state: each running job's steps fire at their times again."""
        for job in self.jobs.values():
            if job.status not in ENDED:
                self._schedule(job)

    def _schedule(self, job: Job) -> None:
        """Advance ``job`` at each moment one of its steps starts or ends."""
        now = self.world.clock.now()
        for moment in lifecycle.moments(job.steps):
            self.world.schedule(moment - now, self._advancer(job))

    async def start(
        self, caller: Caller, body: Mapping[str, Any], *, at_capacity: bool, base_url: str
    ) -> tuple[Job, bool]:
        """``POST {topic root}``: body rules, the body's idempotency key, then cap, balance and the job."""
        names = self.world.wire
        plan = options.plan(body, names)
        if plan.webhook is not None:
            await self.world.outbox.check(plan.webhook)
        key = lifecycle.idempotency_key(body.get(names.job_idempotency), names.job_idempotency)

        async def create() -> str:
            return self._create(caller, plan, at_capacity, base_url).id

        job_id, created = await self.idempotency.once(caller.account.id, key, create)
        return self.jobs[job_id], created

    def _admit(self, caller: Caller, credits: int, at_capacity: bool, base_url: str) -> str:
        """Cap and balance checks for a job's first step, then its id (or the 503 rule's refund)."""
        lifecycle.admit(self.world.accounts, caller, credits, lifecycle.top_up_url(base_url))
        job_id = self.world.new_id()
        if at_capacity:
            lifecycle.refuse_at_capacity(self.world.accounts, caller, credits, RESOURCE, job_id)
        return job_id

    def _create(self, caller: Caller, plan: options.Plan, at_capacity: bool, base_url: str) -> Job:
        """A new job: its angle, script and speech length drawn from its id, then launched."""
        job_id = self._admit(caller, SCRIPT_CREDITS, at_capacity, base_url)
        rng = self.world.rng("job", job_id)
        topic = plan.topic or rng.choice(ANGLES)
        script = write_script(rng, topic, plan.seconds)
        speech = speech_seconds(rng, script)
        edit = plan.edit
        now = self.world.clock.now()
        job = Job(
            id=job_id,
            caller=caller,
            topic=topic,
            seconds=plan.seconds,
            gender=plan.gender,
            look=plan.look,
            voice=plan.voice,
            flow=edit.flow,
            captions=edit.captions,
            music=edit.music,
            webhook=plan.webhook,
            base_url=base_url,
            created_at=now,
            script_text=script,
            speech_seconds=speech,
            steps=core_steps(speech) + edit_steps(edit.flow, edit.captions, edit.music, speech),
            status=states.SCRIPTING,
            updated_at=now,
        )
        return self._launch(job)

    def reedit(
        self, caller: Caller, job_id: str, body: Mapping[str, Any], *, at_capacity: bool, base_url: str
    ) -> Job:
        """``POST {topic root}/{jobId}/reedit``: a new job re-cutting the lip-sync of a caller's job."""
        parent = self.job(caller, job_id)
        edit = options.edit(body, options.Edit(parent.flow, parent.captions, parent.music), options.REEDIT)
        if parent.lipsync_url is None or parent.status == states.FAILED:
            raise bad_request(messages.REEDIT_NEEDS_LIPSYNC)
        steps = edit_steps(edit.flow, edit.captions, edit.music, parent.speech_seconds)
        new_id = self._admit(caller, steps[0].credits, at_capacity, base_url)
        now = self.world.clock.now()
        job = replace(
            parent,
            id=new_id,
            caller=caller,
            flow=edit.flow,
            captions=edit.captions,
            music=edit.music,
            webhook=None,
            base_url=base_url,
            created_at=now,
            steps=steps,
            status=states.CAPTIONING,
            updated_at=now,
            video_url=None,
            poster_url=None,
            credits_used=0,
            edit_report=None,
            skipped=[],
            progress_at_failure=None,
            error=None,
        )
        return self._launch(job)

    def _launch(self, job: Job) -> Job:
        """Draw each step's model outcome, place the steps one after another, store and start the job."""
        world = self.world

        def plan_step(step: Step) -> float:
            if step.name == RENDER:
                return step.seconds
            media = job.speech_seconds if step.name in MEDIA_STEPS else 0.0
            step.outcome, runtime = lifecycle.plan(world.faults, step.seconds, media)
            return runtime

        lifecycle.lay_out(job.steps, job.created_at, plan_step)
        self.jobs[job.id] = job
        self.advance(job)
        self._schedule(job)
        return job

    def _advancer(self, job: Job) -> Callable[[], None]:
        """A timer callback that advances ``job``."""
        return lambda: self.advance(job)

    def advance(self, job: Job) -> None:
        """Apply every step event of the job whose simulated time has come, in order."""
        self.unsaved.add(job.id)
        if lifecycle.advance_steps(
            job.steps,
            self.world.clock.now(),
            lambda: job.status not in ENDED,
            lambda step: self._begin(job, step),
            lambda step: self._end(job, step),
        ):
            self._finish(job)

    def _begin(self, job: Job, step: Step) -> bool:
        """Enter the step's stage and charge it; fail the job when the cap or the balance falls short."""
        if job.status != step.stage:
            job.status, job.updated_at = step.stage, step.start_at
        if step.credits:
            needed = sum(s.credits for s in job.steps if not s.charged)
            refusal = lifecycle.charge_step(
                self.world.accounts,
                job.caller,
                step.credits,
                RESOURCE,
                job.id,
                lambda balance: messages.job_out_of_credits(needed, balance),
                step=step.name,
            )
            if refusal is not None:
                self._fail(job, refusal, step.start_at)
                return False
            job.credits_used += step.credits
        step.charged = True
        return True

    def _end(self, job: Job, step: Step) -> None:
        """Settle a finished step: its artifact, a failed job, or a skipped and refunded edit step."""
        job.updated_at = step.end_at
        if step.outcome == lifecycle.SUCCEED:
            self._artifact(job, step)
            return
        label = LABELS[step.name]
        timed_out = step.outcome == lifecycle.TIMEOUT
        if step.name in CORE_STEPS:
            cause = lifecycle.timed_out(step.start_at, step.end_at) if timed_out else "the model failed"
            error = messages.job_step_failed(label, cause)
            self._fail(job, error, step.end_at)
            return
        minutes = round((step.end_at - step.start_at) / 60, 1)
        reason = f"timed out after {minutes:g} minutes" if timed_out else "the model failed"
        self.world.accounts.refund(job.caller, step.credits, RESOURCE, job.id, step=step.name, note="skipped")
        job.credits_used -= step.credits
        job.skipped.append({"step": step.name, "reason": f"{label} {reason}; left out and refunded"})

    def _media(self, job: Job, offset: int, spec: MediaSpec) -> str:
        """The URL of one of the job's files, its seed offset from the job's (so files are reproducible)."""
        seed = self.world.rng("job media", job.id).randrange(2**31)
        return self.world.media_url(job.base_url, replace(spec, seed=seed + offset))

    def _artifact(self, job: Job, step: Step) -> None:
        """What a finished core step makes visible on the job."""
        if step.name == "script":
            job.script = job.script_text
        elif step.name == "portrait":
            spec = MediaSpec("image", f"{job.look} presenter ({job.gender})", 0, 0, *PORTRAIT_SIZE)
            job.portrait_url = self._media(job, 0, spec)
        elif step.name == "lipsync":
            spec = MediaSpec("video", job.topic[:120], job.speech_seconds, 0, *VIDEO_SIZE, "mp4", True)
            job.lipsync_url = self._media(job, 1, spec)

    def _fail(self, job: Job, error: str, at: float) -> None:
        """Fail the job at simulated time ``at`` and refund every credit it used."""
        job.progress_at_failure = job.progress(at)
        job.status, job.error, job.updated_at = states.FAILED, error, at
        if job.credits_used:
            self.world.accounts.refund(job.caller, job.credits_used, RESOURCE, job.id, note=states.FAILED)
        if job.webhook:
            self.world.outbox.send(job.webhook, {"jobId": job.id, "status": job.status, "error": job.error})

    def _finish(self, job: Job) -> None:
        """Write the video, poster and edit report; the job is done; send its webhook."""
        done = {step.name: step for step in job.steps if step.settled and step.outcome == lifecycle.SUCCEED}
        title = f"{job.flow} edit: {job.topic[:120]}"
        video = MediaSpec("video", title, job.speech_seconds, 0, *VIDEO_SIZE, "mp4", True)
        job.video_url = self._media(job, 2, video)
        job.poster_url = self._media(job, 3, MediaSpec("image", title, 0, 0, *VIDEO_SIZE))
        job.edit_report = {
            "captions": "captions" in done,
            "broll": done["broll"].count if "broll" in done else 0,
            "images": done["images"].count if "images" in done else 0,
            "music": "music" in done,
            "loudnorm": True,
            "skipped": list(job.skipped),
        }
        job.status, job.updated_at = states.DONE, job.steps[-1].end_at
        if job.webhook:
            payload = {
                "jobId": job.id,
                "status": job.status,
                "videoUrl": job.video_url,
                "creditsSpent": job.credits_used,
            }
            self.world.outbox.send(job.webhook, payload)

    def job(self, caller: Caller, job_id: str) -> Job:
        """``GET {topic root}/{jobId}``: the caller's job, advanced to now; else 404 ``Job not found``."""
        job = lifecycle.owned(self.jobs, job_id, caller, messages.JOB_NOT_FOUND)
        self.advance(job)
        return job
