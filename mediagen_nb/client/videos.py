"""The topic-to-video API: start a job, read it, re-cut it, and price it from the catalog where possible.

The spec says a job "is charged as the generations it runs" (script, presenter image, voice,
lip-sync, captions, b-roll, music) and publishes no price for the job itself, so
:meth:`Videos.video_estimate` prices what the catalog shows (the presenter image, the voice and
the lip-sync, at the listed prices of the spec's three-step chain), names what it cannot know, and
bounds the most a job can spend at its target length, which a start under a budget holds.
"""

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from mediagen_nb.client import errors
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.catalog import Catalog
from mediagen_nb.client.checks import checked_id
from mediagen_nb.client.core import POLL_SECONDS, Core
from mediagen_nb.client.resources import Model, ShortVideoJob, VideoOptions
from mediagen_nb.client.starts import Recorded, Start, Starts
from mediagen_nb.client.steps import START, Call, Op, Record
from mediagen_nb.protocol import limits as spec_limits
from mediagen_nb.protocol import messages, states, wire
from mediagen_nb.protocol.environment import ENV_WIRE

# The spec's typical chain (what the job runs, step by step), priced from the catalog.
CHAIN = (("presenter image", "gpt-image-2"), ("voice", "zonos2"), ("lip-sync", "infinitetalk-fast"))
UNKNOWN_PARTS = (
    "the script",
    "how long the speech runs (the target length only steers it)",
    "captions, b-roll and stills of the edit",
    "the music bed",
)
# Our bound of a job's cost (the spec gives none): the speech runs at most SPEECH_MARGIN times the
# target length, each step of the chain costs at most its listed price for that much speech when
# its model is billed by length (else its listed price), and the steps the catalog cannot price
# add at most UNPRICED_MARGIN - 1 of that again. On the sandbox a job charges about half of it at most.
SPEECH_MARGIN = 1.5
UNPRICED_MARGIN = 1.5


def most_for(model: Model, listed: int, speech_seconds: float) -> int:
    """The most one step of the chain costs: a length-billed model's listing per LISTED_MEDIA_SECONDS."""
    if model.length_billed_field is None:
        return listed
    return listed * math.ceil(speech_seconds / wire.LISTED_MEDIA_SECONDS)


@dataclass(frozen=True)
class VideoEstimate:
    """What the catalog says a topic-to-video job costs: at least, at most, and what it cannot say."""

    parts: tuple[tuple[str, str, int], ...]  # (step, model, listed credits)
    unknown: tuple[str, ...]
    seconds: float
    at_most: int  # the most the job can spend at this target length (our bound: see SPEECH_MARGIN)
    edit_at_most: int = 0  # of which the steps the catalog cannot price: what a re-edit can spend at most

    @property
    def at_least(self) -> int:
        return sum(credits for _, _, credits in self.parts)

    def __str__(self) -> str:
        known = ", ".join(f"{step} {credits} ({model}, listed)" for step, model, credits in self.parts)
        return (
            f"topic-to-video, {self.seconds:g} s: at least {self.at_least} credits from the catalog "
            f"({known or 'no step is in the catalog'}) and at most {self.at_most} (held under a "
            f"budget); not knowable before it runs: {', '.join(self.unknown)}. A job that fails is "
            "refunded in full"
        )

    def _repr_html_(self) -> str:
        from html import escape

        return f"<div>{escape(str(self))}</div>"


UNKEYED = (
    "as the service may not read its idempotency key: the start body's names are not confirmed (the [job] "
    f"table of a names file, {ENV_WIRE}, or the agent server's make_video schema confirms them)"
)


class BodyUnconfirmed(UserWarning):
    """The topic-to-video start body's names could not be confirmed: lost starts are not sent again."""


class JobDiffers(UserWarning):
    """A job's read shows what its start did not ask, or a finished job's read lacks its results."""


def _tool_schemas(core: Core) -> dict[str, Any]:
    from mediagen_nb.client.agent import tool_schemas  # the MCP SDK loads with it, on use

    return tool_schemas(core)


def _same_ask(meaning: str, wanted: Any, shown: Any) -> bool:
    """Whether a job's read shows what its start asked: a topic may be cut near 900 characters."""
    if meaning == "topic" and isinstance(wanted, str) and isinstance(shown, str):
        return wanted.strip().startswith(shown.strip()[:200]) and bool(shown.strip())
    if meaning == "seconds" and isinstance(shown, (int, float)) and not isinstance(shown, bool):
        return float(shown) == float(wanted)
    return bool(shown == wanted)


class Videos:
    """Operations of the topic-to-video API, over the core, the catalog and the paid start."""

    def __init__(self, core: Core, catalog: Catalog, starts: Starts) -> None:
        self.core, self.catalog, self.starts = core, catalog, starts
        self._asked: dict[str, dict[str, Any]] = {}  # job id -> what its start asked, by meaning
        self._warned: set[str] = set()  # jobs a read was warned of

    def video_estimate(self, seconds: float | None = None) -> Op[VideoEstimate]:
        """The least a job costs by the catalog's listed prices (lip-sync is billed by speech length),
        and the most it can spend at the target length (see SPEECH_MARGIN)."""
        length = float(seconds if seconds is not None else spec_limits.SHORT_VIDEO_SECONDS_DEFAULT)
        models = {m.id: m for m in (yield from self.catalog.models())}
        parts = tuple(
            (step, model_id, models[model_id].credits or 0) for step, model_id in CHAIN if model_id in models
        )
        speech = length * SPEECH_MARGIN
        priced = sum(most_for(models[model_id], listed, speech) for _, model_id, listed in parts)
        at_most = math.ceil(priced * UNPRICED_MARGIN)
        return VideoEstimate(parts, UNKNOWN_PARTS, length, at_most, at_most - priced)

    def make_video(
        self,
        topic: str | None = None,
        *,
        seconds: float | None = None,
        gender: str | None = None,
        look: str | None = None,
        voice: str | None = None,
        flow: str | None = None,
        captions: bool | None = None,
        music: bool | None = None,
        webhook: str | None = None,
        idempotency_key: str | None = None,
        reuse: bool = False,
        fresh: bool = False,
        ledger: "ledgers.Ledger | str | None" = None,
    ) -> Op[ShortVideoJob]:
        """Start a topic-to-video job; the idempotency key goes in the body, as the spec says.

        Under a session budget the start holds the most the job can spend at its target length
        (:attr:`VideoEstimate.at_most`) until the job ends, or is refused (BudgetExceeded, nothing
        sent) when the budget left is less.
        """
        if seconds is not None and (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not spec_limits.SHORT_VIDEO_SECONDS_MIN <= seconds <= spec_limits.SHORT_VIDEO_SECONDS_MAX
        ):
            raise errors.ValidationError(
                messages.out_of_range(
                    "seconds", spec_limits.SHORT_VIDEO_SECONDS_MIN, spec_limits.SHORT_VIDEO_SECONDS_MAX
                ),
                field="seconds",
                sent=False,
            )
        confirmed = yield from self._body_confirmed()
        names = self.core.spelling.names
        asked = {
            name: value
            for name, value in {
                names.job_topic: topic,
                names.job_seconds: seconds,
                names.job_gender: gender,
                names.job_look: look,
                names.job_voice: voice,
                names.job_flow: flow,
                names.job_captions: captions,
                names.job_music: music,
            }.items()
            if value is not None
        }

        def priced() -> Op[int | None]:
            estimate = yield from self.video_estimate(seconds)
            left, limit = self.core.budget.status().left, self.core.budget.limit
            if left is not None and estimate.at_most > left:
                raise errors.BudgetExceeded(
                    f"budget: the topic-to-video job can spend up to {estimate.at_most} credits at "
                    f"{estimate.seconds:g} s (at least {estimate.at_least}), but {left} of the session "
                    f"budget of {limit} credits are left; nothing was sent. Raise it with "
                    "mediagen_nb.budget(N) or %mediagen budget N, or ask for fewer seconds"
                )
            return estimate.at_most

        def request(key: str) -> Call:
            body = {**asked, names.job_idempotency: key}  # in the body, as the spec says
            if webhook is not None:
                body[names.job_webhook] = webhook
            return Call("POST", "job_start", START, body=body, replayable=confirmed)

        job = yield from self.starts.start(
            Start(
                ledgers.JOB,
                "the topic-to-video job",
                None,
                asked,
                request=request,
                parse=lambda data: ShortVideoJob.from_api(
                    {"status": states.SCRIPTING, "topic": topic, **data}, names
                ),
                recorded=_held_until_it_ends,
                read=self.job,
                price=priced,
                key=idempotency_key,
                reuse=reuse,
                fresh=fresh,
                ledger=ledger,
                resend=confirmed,
                unkeyed=UNKEYED,
                born=self._born,
            )
        )
        self._asked[job.id] = {
            meaning: value
            for meaning, value in (("topic", topic), ("seconds", seconds), ("voice", voice), ("flow", flow))
            if value is not None
        }
        return job

    def _born(self, job: ShortVideoJob) -> Op[str | None]:
        """When a started job was made: its start answers only its id, so it is read once (free)."""
        data = yield from self.core.send(Call("GET", "job", params={"id": checked_id(job.id, "job")}))
        created = data.get("createdAt") if isinstance(data, Mapping) else None
        return created if isinstance(created, str) else None

    def _body_confirmed(self) -> Op[bool]:
        """Whether the start body's names are settled (a names file's ``[job]``, or read once from the
        agent server's ``make_video`` schema, free); said once when they cannot be."""
        spelling = self.core.spelling
        if spelling.job_body_confirmed() or spelling.agent_asked:
            return spelling.job_body_confirmed()
        spelling.agent_asked = True
        why = ""
        try:
            schemas = yield Record(partial(_tool_schemas, self.core))
        except errors.MediagenError as exc:
            why = f"the agent server's make_video schema could not be read ({exc.message[:120]})"
        else:
            unsettled = spelling.learn_job_body(schemas.get("make_video"))
            if unsettled:
                why = f"make_video's schema does not tell {', '.join(unsettled)} apart"
        if why:
            warnings.warn(
                f"mediagen_nb: the topic-to-video start body's names are not confirmed: {why}. A start whose "
                "answer is lost is not sent again (so no job is charged twice); the [job] table of a names "
                f"file ({ENV_WIRE}; `mediagen doctor` prints it) confirms them",
                BodyUnconfirmed,
                stacklevel=2,
            )
        return spelling.job_body_confirmed()

    def job(self, job_id: str) -> Op[ShortVideoJob]:
        """Read a topic-to-video job."""
        data = yield from self.core.send(Call("GET", "job", params={"id": checked_id(job_id, "job")}))
        spelling = self.core.spelling
        job = ShortVideoJob.from_api(spelling.job_data(data), spelling.names)
        self._check(job)
        # The charge is final once the job ends (a failed job is refunded in full); until then the
        # ledger and the budget keep what the start held, the most the job can spend.
        charged = (0 if job.status == states.FAILED else job.credits_used) if job.done else None
        yield from self.core.observed(
            job.id,
            job.status or "",
            credits=charged,
            urls=(job.video_url,) if job.video_url else (),
            error=job.error,
            resource=data,
        )
        return job

    def _check(self, job: ShortVideoJob) -> None:
        """Warn once per job when a read shows what its start did not ask (the body's names were read
        otherwise), and when a finished job's read lacks its script, portrait, lip-sync or credits."""
        if job.id in self._warned:
            return
        asked = self._asked.get(job.id, {})
        names = self.core.spelling.names
        differs = [
            f"{meaning} {shown!r} (asked {wanted!r})"
            for meaning, wanted, shown in (
                ("topic", asked.get("topic"), job.topic),
                ("seconds", asked.get("seconds"), job.seconds),
                ("voice", asked.get("voice"), job.voice),
                ("flow", asked.get("flow"), job.flow),
            )
            if wanted is not None and not _same_ask(meaning, wanted, shown)
        ]
        if differs and all(d.startswith("voice ") for d in differs):
            differs = []  # alone it proves nothing: a voice not of the chosen gender falls back (the spec)
        lacking = []
        if job.status == states.DONE:
            lacking = [
                f"{label} ({wire.setting(attribute)} = {getattr(names, attribute)!r})"
                for label, attribute, value in (
                    ("script", "job_script", job.script),
                    ("presenter image", "job_portrait", job.portrait_url),
                    ("lip-synced video", "job_lipsync", job.lipsync_video_url),
                    ("credits", "job_credits", job.credits_used),
                )
                if value is None
            ]
        if not differs and not lacking:
            return
        self._warned.add(job.id)
        said = []
        if differs:
            said.append(
                f"it was made with {', '.join(differs)}: the start body's names are not the service's (set "
                f"the [job] table of a names file, {ENV_WIRE}; `mediagen doctor` prints it)"
            )
        if lacking:
            said.append(
                f"its read has no {', '.join(lacking)}: these are shown as None, not read; set the service's "
                f"names in a names file ({ENV_WIRE}); its credits come from the ledger"
            )
        warnings.warn(f"mediagen_nb: job {job.id} {job.status}: " + "; ".join(said), JobDiffers, stacklevel=3)

    def video_options(self) -> Op[VideoOptions]:
        """Voices by gender, looks, edit styles and length bounds."""
        data = yield from self.core.send(Call("GET", "job_options"))
        spelling = self.core.spelling
        return VideoOptions.from_api(spelling.options_data(data), spelling.names)

    def reedit(
        self, job_id: str, *, flow: str | None = None, captions: bool | None = None, music: bool | None = None
    ) -> Op[ShortVideoJob]:
        """Re-cut a finished video with another edit style; returns the new job.

        A re-edit runs its job's edit steps again (captions, b-roll, stills, music), which the catalog
        does not price: like every paid start it holds the most those can spend, read from the job's
        target length (:attr:`VideoEstimate.edit_at_most`), until it ends, or is refused
        (BudgetExceeded, nothing sent) when the session budget left is less. The spec gives re-edits
        no idempotency key, so after an ambiguous failure it is never resent.
        """
        body = {
            k: v for k, v in {"flow": flow, "captions": captions, "music": music}.items() if v is not None
        }
        params = {"id": checked_id(job_id, "job")}
        what = f"the re-edit of job {job_id}"

        def priced() -> Op[int | None]:
            parent = yield from self.job(job_id)  # a free read: its length bounds what the edit spends
            seconds = parent.seconds
            if not isinstance(seconds, (int, float)) or not (
                spec_limits.SHORT_VIDEO_SECONDS_MIN <= seconds <= spec_limits.SHORT_VIDEO_SECONDS_MAX
            ):
                seconds = spec_limits.SHORT_VIDEO_SECONDS_MAX  # a length it does not say: the longest
            most = (yield from self.video_estimate(seconds)).edit_at_most
            left, limit = self.core.budget.status().left, self.core.budget.limit
            if left is not None and most > left:
                raise errors.BudgetExceeded(
                    f"budget: {what} can spend up to {most} credits (the edit steps of a {seconds:g} s "
                    f"video), but {left} of the session budget of {limit} credits are left; nothing was "
                    "sent. Raise it with mediagen_nb.budget(N) or %mediagen budget N"
                )
            return most

        return (
            yield from self.starts.start(
                Start(
                    ledgers.JOB,
                    what,
                    None,
                    body,
                    request=lambda key: Call(
                        "POST", "reedit", START, params=params, body=body, replayable=False
                    ),
                    parse=lambda data: ShortVideoJob.from_api(
                        {"status": states.SCRIPTING, **data}, self.core.spelling.names
                    ),
                    recorded=_held_until_it_ends,
                    read=self.job,
                    price=priced,
                )
            )
        )

    def wait_job(
        self,
        job: ShortVideoJob | str,
        *,
        poll: float = POLL_SECONDS,
        timeout: float | None = None,
        on_update: Callable[[ShortVideoJob], None] | None = None,
    ) -> Op[ShortVideoJob]:
        """Poll until the job is done or failed."""
        job_id = job.id if isinstance(job, ShortVideoJob) else str(job)
        reused = isinstance(job, ShortVideoJob) and job.reused

        def read() -> Op[ShortVideoJob]:
            return replace((yield from self.job(job_id)), reused=reused)

        return (yield from self.core.poll(read, lambda j: j.done, poll, timeout, on_update, f"job {job_id}"))


def _held_until_it_ends(job: ShortVideoJob, answer: Any, price: int | None) -> Recorded:
    """A job's charge is known once it ends; until then the ledger (and the budget) keep the most it
    can spend, the price its start held."""
    ended = job.done and job.credits_used is not None
    return Recorded(job.status or states.SCRIPTING, (job.credits_used or 0) if ended else price or 0, ended)
