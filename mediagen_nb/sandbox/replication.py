"""The replication API: a short video becomes a shot-by-shot blueprint, then a replica rendered take by take.

Rules the spec leaves open, chosen here (every draw is seeded by the sandbox seed):

* Links. TikTok: ``tiktok.com/@user/video/<id>``, ``tiktok.com/t/<code>``, ``vm.``/``vt.tiktok.com/<code>``.
  YouTube: ``youtube.com/watch?v=<id>``, ``youtube.com/shorts/<id>``, ``youtu.be/<id>``. Instagram:
  ``instagram.com/reel/<id>``, ``/reels/<id>``, ``/p/<id>``. Any other https URL must be a direct file
  whose path ends in ``.mp4``, ``.mov`` or ``.webm``.
* Photo posts: a TikTok link with a ``photo`` path segment (``tiktok.com/@user/photo/<id>``) and an
  Instagram ``/p/<id>`` whose id contains ``photo`` (any case).
* Length. A direct file is downloaded and measured (``.mp4``/``.mov`` as the service meters MP4s, ``.webm``
  by its container); one that cannot be downloaded is refused with ``video URL is not reachable``, one
  whose length cannot be read with ``Could not read the video duration``. A platform video's length is
  drawn from its URL: 12 to 90 seconds, or 125 to 600 seconds (refused as too long) when the URL's path
  or query has the word ``long``. TikTok, Shorts, Reels and direct files are 9:16 unless a direct file's
  frames say otherwise; YouTube watch and youtu.be links are 16:9.
* Shot list only: an analysis of a URL with the word ``shots`` in its path or query, and of one in four
  other URLs (seeded by the URL), is ``ready`` with every clip ``prompt`` null until
  ``POST .../blueprint`` has written them. Building the blueprint is free.
* Seams: each clip's ``transition`` (a blueprint member of our choosing) is ``cut`` or ``hard-fade``; the
  first clip's is ``cut``.
* Takes. ``seedance-2-fast-i2v`` and ``seedance-2-fast-t2v`` are multi-shot: ``fast`` packs up to 3
  consecutive selected clips, 12 seconds at most (Seedance 2's longest generation), into one take;
  ``balanced`` packs the same way but starts a new take at every ``hard-fade``; ``exact`` renders one take
  per clip. The other models render one take per clip whatever the accuracy.
* Price of a take: ``pricing.price`` of the model with ``duration`` set to the take's length (rounded up to
  a length the model accepts) and ``resolution`` set by quality: ``low`` the lowest option, ``medium`` the
  model's default, ``high`` the highest. Takes render one after another, each charged as it starts.
* Failures. A take the model fails, or that meets the generation time limit, is refunded and fails the
  run; takes already rendered stay charged and later takes never start. When the balance (or the key's
  monthly cap) cannot cover the next take, the run fails with the ``Not enough credits`` (or key cap)
  message naming what the remaining takes need, and those clips are never rendered. The start call
  itself needs the balance and the cap to cover the first take.
* Model outcome faults are drawn by the start call: one for an analysis, one per take in take order.
* Simulated timing: analysis 20 s + 0.75 s per source second; blueprint build 15 s + 2 s per clip; a take
  the model's run time (``catalog.simulated_runtime``); stitching 10 s + 0.25 s per second of replica;
  the marketing cuts arrive 8 s after ``done``. Idempotency-Keys are kept 24 simulated hours.
"""

import asyncio
import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

import av

from mediagen_nb.protocol import limits, messages, schema, wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import catalog, fetch, moderation, pricing
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.media import MediaSpec, measure_seconds
from mediagen_nb.sandbox.pipeline import Call as Ctx
from mediagen_nb.sandbox.responses import ServiceError, bad_request, not_found, ok, too_many

if TYPE_CHECKING:
    from starlette.responses import Response

    from mediagen_nb.sandbox.world import World

DEFAULT_MODEL = catalog.REPLICATION_MODELS[0]
MULTI_SHOT_MODELS = frozenset({"seedance-2-fast-i2v", "seedance-2-fast-t2v"})
QUALITIES = ("low", "medium", "high")
ACCURACIES = ("fast", "balanced", "exact")
AUDIO_MODES = ("chunks", "original", "upload")
MARKETING_ASPECTS = ("9:16", "16:9")
HARD_FADE = "hard-fade"
TAKE_MAX_CLIPS = 3
TAKE_MAX_SECONDS = 12.0
VIDEO_EXTENSIONS = (".mp4", ".mov", ".webm")

PLATFORM_SECONDS = (12.0, 90.0)
LONG_PLATFORM_SECONDS = (125.0, 600.0)
SHOTS_ONLY_SHARE = 0.25
ANALYSIS_BASE_SECONDS, ANALYSIS_PER_SECOND = 20.0, 0.75
BLUEPRINT_BASE_SECONDS, BLUEPRINT_PER_CLIP = 15.0, 2.0
STITCH_BASE_SECONDS, STITCH_PER_SECOND = 10.0, 0.25
MARKETING_DELAY_SECONDS = 8.0
SIZES = {"9:16": (180, 320), "16:9": (320, 180)}

_WORD = re.compile(r"[a-z]+")


# ------------------------------------------------------------------------------------------ source links


@dataclass(frozen=True)
class Source:
    """An accepted analyze link: which platform (None for a direct file) and its frame shape."""

    url: str
    platform: str | None
    aspect: str


def _words(url: str) -> set[str]:
    """The lower-case words of a URL's path and query, for the ``long`` and ``shots`` rules."""
    parts = urlsplit(url)
    return set(_WORD.findall(unquote(parts.path + " " + parts.query).lower()))


def classify(url: Any) -> Source:
    """The link rules of ``POST /v1/analyze`` that need no download."""
    if url is None or (isinstance(url, str) and not url.strip()):
        raise bad_request(messages.missing_field("url"))
    if not isinstance(url, str):
        raise bad_request(messages.wrong_type("url", "a string"))
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme.lower() != "https":
        raise bad_request(messages.URL_MUST_BE_HTTPS)
    host = (parts.hostname or "").lower()
    for prefix in ("www.", "m."):
        host = host.removeprefix(prefix)
    segments = [s for s in unquote(parts.path).split("/") if s]
    first = segments[0].lower() if segments else ""
    if host in ("tiktok.com", "vm.tiktok.com", "vt.tiktok.com"):
        if "photo" in (s.lower() for s in segments):
            raise bad_request(messages.PHOTO_POST)
        video = len(segments) >= 3 and first.startswith("@") and segments[1].lower() == "video"
        short = (host != "tiktok.com" and len(segments) >= 1) or (first == "t" and len(segments) >= 2)
        if video or short:
            return Source(url, "tiktok", "9:16")
    elif host in ("youtube.com", "youtu.be"):
        if host == "youtu.be" and segments:
            return Source(url, "youtube", "16:9")
        if first == "shorts" and len(segments) >= 2:
            return Source(url, "youtube", "9:16")
        if first == "watch" and parse_qs(parts.query).get("v"):
            return Source(url, "youtube", "16:9")
    elif host == "instagram.com" and len(segments) >= 2:
        if first == "p" and "photo" in segments[1].lower():
            raise bad_request(messages.PHOTO_POST)
        if first in ("reel", "reels", "p"):
            return Source(url, "instagram", "9:16")
    if schema.url_extension(url) in VIDEO_EXTENSIONS:
        return Source(url, None, "9:16")
    raise bad_request(messages.UNSUPPORTED_LINK)


def _probe(data: bytes, ext: str) -> tuple[float | None, str | None]:
    """Length (``.mp4``/``.mov`` as the service meters MP4, ``.webm`` by container) and frame shape."""
    seconds = measure_seconds(data, ".mp4") if ext in (".mp4", ".mov") else None
    aspect = None
    try:
        with av.open(io.BytesIO(data)) as container:
            if seconds is None and ext == ".webm" and container.duration:
                seconds = container.duration / av.time_base
            if container.streams.video:
                stream = container.streams.video[0]
                aspect = "16:9" if stream.width > stream.height else "9:16"
    except (av.FFmpegError, ValueError, OSError):
        pass
    return seconds, aspect


# ------------------------------------------------------------------------------------------- blueprint

SUBJECTS = (
    "a creator in a cream hoodie",
    "a barista with rolled sleeves",
    "a runner in a neon jacket",
    "a chef in a white apron",
    "a student with round glasses",
    "a small terrier",
    "a skincare bottle on marble",
    "a pair of white sneakers",
)
SETTINGS = (
    "a sunlit kitchen",
    "a busy street at dusk",
    "a minimalist bedroom",
    "a neon-lit arcade",
    "a park in autumn",
    "a studio with a seamless backdrop",
)
ACTIONS = (
    "looks straight into the lens",
    "points at the text above",
    "picks the product up",
    "laughs and turns away",
    "walks toward the camera",
    "holds up two options",
    "reacts with surprise",
    "demonstrates the trick",
)
BEATS = ("hold", "gesture", "reveal", "glance", "step", "pause", "point", "smile")
FRAMINGS = ("extreme close-up", "close-up", "medium shot", "wide shot", "over-the-shoulder")
MOVEMENTS = ("static", "handheld", "push-in", "pull-out", "pan left", "pan right", "tilt up", "orbit")
CAPTIONS = (
    "Wait for it",
    "3 things nobody tells you",
    "Day 1 vs day 30",
    "POV: you finally tried it",
    "Save this",
)
OVERLAYS = ("emoji", "arrow", "progress bar", "sticker", "zoom ring")
GRADES = ("warm film", "cool teal", "high-contrast", "pastel", "natural")
LIGHTING = ("soft window light", "hard flash", "golden hour", "ring light", "neon practicals")
MUSIC = ("upbeat lo-fi", "trap beat", "acoustic guitar", "synth pop", "trending sound")
TITLES = (
    "3 morning habits that changed everything",
    "I tried this for 30 days",
    "The trick nobody shows you",
    "Before you buy this, watch",
    "How I edit in 5 minutes",
    "This changed how I cook",
)


def _cuts(rng: Any, duration: float) -> list[tuple[float, float]]:
    """Clip bounds covering ``duration``: 1.5 to 5.5 seconds each, no sliver at the end."""
    bounds: list[tuple[float, float]] = []
    start = 0.0
    while duration - start > 0.05:
        end = round(min(duration, start + rng.uniform(1.5, 5.5)), 2)
        if duration - end < 1.0:
            end = round(duration, 2)
        bounds.append((round(start, 2), end))
        start = end
    return bounds


def build_blueprint(rng: Any, duration: float, aspect: str) -> tuple[dict[str, Any], list[str]]:
    """A deterministic blueprint for a source video, and every clip's prompt (also in the clips)."""
    subject, setting = rng.choice(SUBJECTS), rng.choice(SETTINGS)
    style = {
        "grade": rng.choice(GRADES),
        "lighting": rng.choice(LIGHTING),
        "lens": rng.choice(("24mm", "35mm", "50mm", "phone wide")),
        "palette": rng.sample(("cream", "teal", "coral", "black", "sage", "gold", "lilac"), 3),
        "pacing": rng.choice(("fast cuts", "steady", "slow build")),
    }
    clips: list[dict[str, Any]] = []
    shots: list[dict[str, Any]] = []
    prompts: list[str] = []
    for index, (start, end) in enumerate(_cuts(rng, duration)):
        framing, movement, action = rng.choice(FRAMINGS), rng.choice(MOVEMENTS), rng.choice(ACTIONS)
        description = f"{framing} of {subject} who {action}, in {setting}"
        prompt = f"{description}; {movement} camera; {style['grade']} grade, {style['lighting']}"
        length = end - start
        clip: dict[str, Any] = {
            "index": index,
            "start": start,
            "end": end,
            "transition": HARD_FADE if index and rng.random() < 0.25 else "cut",
            "prompt": prompt,
            "camera": {"framing": framing, "movement": movement},
            "beats": [
                {"t": round(start + second, 2), "action": rng.choice(BEATS)}
                for second in range(math.ceil(length))
            ],
            "onScreenText": (
                [
                    {
                        "text": rng.choice(CAPTIONS),
                        "start": start,
                        "end": end,
                        "position": rng.choice(("top", "center")),
                    }
                ]
                if rng.random() < 0.5
                else []
            ),
            "overlays": (
                [{"type": rng.choice(OVERLAYS), "start": start, "end": round(start + length / 2, 2)}]
                if rng.random() < 0.3
                else []
            ),
            "keyframes": [
                {"t": start, "description": f"{framing}: {subject} in {setting}"},
                {"t": end, "description": f"{subject} {action}"},
            ],
        }
        if rng.random() < 0.15:
            clip["layout"] = {
                "type": "split-screen",
                "direction": rng.choice(("top-bottom", "left-right")),
                "panels": [f"{subject} reacting", f"close-up of {rng.choice(SUBJECTS)}"],
            }
        clips.append(clip)
        shots.append({"index": index, "start": start, "end": end, "description": description})
        prompts.append(prompt)
    blueprint = {
        "clips": clips,
        "styleBible": style,
        "soundtrack": {
            "music": rng.choice(MUSIC),
            "bpm": rng.randint(80, 140),
            "voiceover": rng.random() < 0.7,
        },
        "aspect": aspect,
        "shots": shots,
        "speakers": [{"id": "S1", "description": f"{subject}, speaking to camera"}],
        "characters": [{"id": "C1", "description": subject}],
    }
    return blueprint, prompts


# -------------------------------------------------------------------------------------------- analyses


@dataclass
class Analysis:
    """One analysis: its source, its planned outcome and what it has produced so far."""

    id: str
    caller: Caller
    source: Source
    seconds: float
    aspect: str
    base_url: str
    created_at: float
    ready_at: float
    outcome: str  # "succeed" | "fail" | "timeout"
    shots_only: bool
    status: str = "analyzing"
    title: str | None = None
    video_url: str | None = None
    poster_url: str | None = None
    blueprint: dict[str, Any] | None = None
    prompts: list[str] = field(default_factory=list)  # written into the clips once the blueprint is built
    build_at: float | None = None  # when a POST .../blueprint build finishes
    error: str | None = None

    @property
    def shot_list_only(self) -> bool:
        """Ready with clip prompts still null (the blueprint is not written yet)."""
        return self.blueprint is not None and any(clip["prompt"] is None for clip in self.blueprint["clips"])

    def public(self) -> dict[str, Any]:
        """The Analysis resource of the spec's table."""
        ready = self.status == "ready"
        return {
            "analysisId": self.id,
            "status": self.status,
            "title": self.title,
            "durationSeconds": round(self.seconds, 2) if ready else None,
            "clipCount": len(self.blueprint["clips"]) if self.blueprint else None,
            "sourceUrl": self.source.url,
            "videoUrl": self.video_url,
            "posterUrl": self.poster_url,
            "blueprint": self.blueprint,
            "error": self.error,
        }


# ------------------------------------------------------------------------------------------------ runs


@dataclass
class Take:
    """One generation of a run: consecutive clips rendered together."""

    clips: tuple[int, ...]
    seconds: float
    credits: int
    input: dict[str, Any]  # what the take is priced and timed by
    start_at: float = 0.0
    end_at: float = 0.0
    outcome: str = "succeed"  # "succeed" | "fail" | "timeout"
    charged: bool = False
    settled: bool = False


@dataclass
class Run:
    """One replication run: its takes in time order and the outputs produced so far."""

    id: str
    analysis: Analysis
    caller: Caller
    model: catalog.ModelSpec
    quality: str
    accuracy: str
    takes: list[Take]
    captions: bool
    audio: dict[str, Any] | None
    marketing_aspect: str
    webhook: str | None
    base_url: str
    created_at: float
    status: str = "generating"
    done_clips: int = 0
    output_video_url: str | None = None
    compare_video_url: str | None = None
    clean_output_video_url: str | None = None
    marketing_video_url: str | None = None
    marketing_video_url_169: str | None = None
    share_url: str | None = None
    error: str | None = None

    @property
    def total_clips(self) -> int:
        """Clips in this run."""
        return sum(len(take.clips) for take in self.takes)

    @property
    def seconds(self) -> float:
        """Length of the replica: the selected clips' total."""
        return sum(take.seconds for take in self.takes)

    @property
    def stitch_seconds(self) -> float:
        """Simulated time stitching takes."""
        return STITCH_BASE_SECONDS + STITCH_PER_SECOND * self.seconds

    @property
    def done_at(self) -> float:
        """Simulated time the run is done, if no take fails."""
        return self.takes[-1].end_at + self.stitch_seconds

    def public(self, world: "World") -> dict[str, Any]:
        """The Replication run resource of the spec's table (also the webhook body, plus ``event``)."""
        return {
            "id": self.id,
            "analysisId": self.analysis.id,
            "modelId": self.model.id,
            "quality": self.quality,
            "status": self.status,
            "totalClips": self.total_clips,
            "doneClips": self.done_clips,
            "outputVideoUrl": self.output_video_url,
            "compareVideoUrl": self.compare_video_url,
            "cleanOutputVideoUrl": self.clean_output_video_url,
            "marketingVideoUrl": self.marketing_video_url,
            "marketingVideoUrl169": self.marketing_video_url_169,
            "shareUrl": self.share_url,
            "error": self.error,
            "createdAt": world.clock.iso(self.created_at),
        }


def pack(
    clips: list[dict[str, Any]], selected: list[int], accuracy: str, multi_shot: bool
) -> list[list[int]]:
    """The takes of a run: groups of consecutive selected clips per the accuracy rules above."""
    takes: list[list[int]] = []
    for index in selected:
        current = takes[-1] if takes else None
        joins = (
            current is not None
            and multi_shot
            and accuracy != "exact"
            and current[-1] == index - 1
            and len(current) < TAKE_MAX_CLIPS
            and clips[index]["end"] - clips[current[0]]["start"] <= TAKE_MAX_SECONDS
            and not (accuracy == "balanced" and clips[index]["transition"] == HARD_FADE)
        )
        if joins and current is not None:
            current.append(index)
        else:
            takes.append([index])
    return takes


def take_input(model: catalog.ModelSpec, quality: str, seconds: float) -> dict[str, Any]:
    """The input a take is priced and timed by: its length and the quality's resolution."""
    props = model.input_schema["properties"]
    values: dict[str, Any] = {}
    duration = props.get("duration")
    if duration is not None:
        wanted = math.ceil(seconds - 1e-6)
        if "enum" in duration:
            values["duration"] = min(
                (o for o in duration["enum"] if o >= wanted), default=max(duration["enum"])
            )
        else:
            values["duration"] = min(max(wanted, duration["minimum"]), duration["maximum"])
    resolution = props.get("resolution")
    if resolution is not None and "enum" in resolution:
        options = resolution["enum"]
        values["resolution"] = {"low": options[0], "high": options[-1]}.get(
            quality, resolution.get("default")
        )
    return values


# ------------------------------------------------------------------------------------------- the service


class Idempotency:
    """Idempotency-Keys of one kind of start, per account, kept 24 hours of simulated time."""

    def __init__(self, world: "World") -> None:
        self.world = world
        self.records: dict[tuple[str, str], tuple[str, float]] = {}
        self.locks: dict[tuple[str, str], asyncio.Lock] = {}

    def lock(self, key: tuple[str, str]) -> asyncio.Lock:
        """Serializes concurrent starts with one key, so only one of them creates."""
        return self.locks.setdefault(key, asyncio.Lock())

    def get(self, key: tuple[str, str]) -> str | None:
        """The id started with ``key`` within the retention, or None."""
        record = self.records.get(key)
        if record is None or self.world.clock.now() - record[1] > limits.IDEMPOTENCY_RETENTION_SECONDS:
            return None
        return record[0]

    def put(self, key: tuple[str, str], resource_id: str) -> None:
        """Remember that ``key`` started ``resource_id`` now."""
        self.records[key] = (resource_id, self.world.clock.now())


def _outcome(world: "World") -> str:
    """The next model outcome fault as a plan: ``succeed``, ``fail`` or ``timeout`` (a hang)."""
    return {"fail": "fail", "hang": "timeout"}.get(world.faults.model_outcome() or "", "succeed")


def _top_up(base_url: str) -> str:
    """The web app's billing page, named by the ``Not enough credits`` message."""
    return base_url + path("sandbox_app", page="billing")


def _idempotency_key(ctx: Ctx) -> tuple[str, str] | None:
    """The request's Idempotency-Key, scoped to the caller's account, or None."""
    raw = ctx.request.headers.get("idempotency-key")
    return (ctx.who.account.id, raw) if raw else None


def _choice(body: dict[str, Any], name: str, options: tuple[str, ...], default: str) -> str:
    """An enum body field, its default when absent; the spec's ``<field> must be one of`` otherwise."""
    value = body.get(name)
    if value is None:
        return default
    if value not in options:
        raise bad_request(messages.not_one_of(name, options))
    return value


def _take_note(run: Run, take: Take) -> dict[str, Any]:
    """Ledger extras of a take's charge or refund: the model and the clips it renders."""
    return {"modelId": run.model.id, "clips": list(take.clips)}


def _https(value: Any) -> bool:
    """An https URL with a host."""
    if not isinstance(value, str):
        return False
    parts = urlsplit(value.strip())
    return parts.scheme.lower() == "https" and bool(parts.hostname)


@dataclass(frozen=True)
class RunRequest:
    """A validated replicate body."""

    model: catalog.ModelSpec
    quality: str
    accuracy: str
    clips: list[int] | None
    character_image: str | None
    captions: bool
    audio: dict[str, Any] | None
    marketing_aspect: str
    webhook: str | None


class Replication:
    """Every analysis and replication run of the sandbox."""

    def __init__(self, world: "World") -> None:
        self.world = world
        self.analyses: dict[str, Analysis] = {}
        self.runs: dict[str, Run] = {}
        self.analysis_keys = Idempotency(world)
        self.run_keys = Idempotency(world)

    # --- analyses

    async def analyze(self, ctx: Ctx) -> "Response":
        """POST /v1/analyze: link rules, then the Idempotency-Key, then length, cap, balance and charge."""
        source = classify((await ctx.json()).get("url"))
        key = _idempotency_key(ctx)
        if key is None:
            return await self._create_analysis(ctx, source, None)
        async with self.analysis_keys.lock(key):
            existing = self.analysis_keys.get(key)
            if existing is not None:
                return ok(self._started(self.analyses[existing]), 200)
            return await self._create_analysis(ctx, source, key)

    @staticmethod
    def _started(analysis: Analysis) -> dict[str, Any]:
        """The analyze answer, also for a replayed Idempotency-Key."""
        return {"analysisId": analysis.id, "status": analysis.status, "creditsSpent": limits.ANALYSIS_CREDITS}

    async def _measure(self, source: Source) -> tuple[float, str]:
        """The source's length in seconds and frame shape: measured for a file, drawn for a platform link."""
        if source.platform is None:
            try:
                data = await fetch.download(source.url, self.world.own_file)
            except fetch.Unreachable:
                raise bad_request(messages.media_not_reachable("video")) from None
            seconds, aspect = await asyncio.to_thread(_probe, data, schema.url_extension(source.url))
            if seconds is None:
                raise bad_request(messages.UNREADABLE_VIDEO_DURATION)
            return seconds, aspect or source.aspect
        rng = self.world.rng("source", source.url)
        low, high = LONG_PLATFORM_SECONDS if "long" in _words(source.url) else PLATFORM_SECONDS
        return round(rng.uniform(low, high), 1), source.aspect

    async def _create_analysis(self, ctx: Ctx, source: Source, key: tuple[str, str] | None) -> "Response":
        world, caller = self.world, ctx.who
        seconds, aspect = await self._measure(source)
        if seconds > limits.SOURCE_VIDEO_MAX_SECONDS:
            raise bad_request(messages.video_too_long(seconds))
        credits = limits.ANALYSIS_CREDITS
        if not world.accounts.cap_allows(caller.key, credits):
            raise too_many(messages.key_cap_reached(caller.key.monthly_cap or 0))
        if caller.account.balance < credits:
            raise bad_request(
                messages.not_enough_credits(credits, caller.account.balance, _top_up(ctx.base_url))
            )
        analysis_id = world.new_id()
        world.accounts.charge(caller, credits, "analysis", analysis_id)
        if ctx.fault == "503":
            world.accounts.refund(caller, credits, "analysis", analysis_id, note="analysis could not start")
            raise ServiceError(503, messages.AT_CAPACITY)
        outcome = _outcome(world)
        runtime = ANALYSIS_BASE_SECONDS + ANALYSIS_PER_SECOND * seconds
        if outcome == "timeout":
            runtime = limits.RUNTIME_BASE_SECONDS + limits.RUNTIME_PER_MEDIA_SECOND * seconds
        now = world.clock.now()
        shots_only = "shots" in _words(source.url)
        shots_only = shots_only or world.rng("shots", source.url).random() < SHOTS_ONLY_SHARE
        analysis = Analysis(
            analysis_id,
            caller,
            source,
            seconds,
            aspect,
            ctx.base_url,
            now,
            now + runtime,
            outcome,
            shots_only,
        )
        self.analyses[analysis_id] = analysis
        if key is not None:
            self.analysis_keys.put(key, analysis_id)
        world.schedule(runtime, lambda: self.settle(analysis))
        return ok(self._started(analysis), 201)

    def settle(self, analysis: Analysis) -> None:
        """Finish the analysis, or the blueprint build, whose simulated time has come."""
        world = self.world
        now = world.clock.now()
        if analysis.status == "analyzing" and now >= analysis.ready_at:
            if analysis.outcome == "succeed":
                self._ready(analysis)
            else:
                analysis.status = "failed"
                minutes = round((analysis.ready_at - analysis.created_at) / 60, 1)
                analysis.error = (
                    f"Analysis timed out after {minutes:g} minutes; credits refunded"
                    if analysis.outcome == "timeout"
                    else "Analysis failed: the video could not be read; credits refunded"
                )
                world.accounts.refund(
                    analysis.caller, limits.ANALYSIS_CREDITS, "analysis", analysis.id, note="failed"
                )
        if analysis.build_at is not None and now >= analysis.build_at and analysis.blueprint is not None:
            for clip, prompt in zip(analysis.blueprint["clips"], analysis.prompts, strict=True):
                clip["prompt"] = prompt
            analysis.build_at = None

    def _ready(self, analysis: Analysis) -> None:
        """Write the title, blueprint, stored copy and poster of a finished analysis."""
        world = self.world
        # Seeded by the link, like its length: the same video read twice gives the same blueprint.
        rng = world.rng("analysis", analysis.source.url)
        blueprint, prompts = build_blueprint(rng, analysis.seconds, analysis.aspect)
        if analysis.source.platform is None:
            name = unquote(urlsplit(analysis.source.url).path).rsplit("/", 1)[-1]
            analysis.title = name.rsplit(".", 1)[0] or "Untitled video"
        else:
            analysis.title = rng.choice(TITLES)
        if analysis.shots_only:
            for clip in blueprint["clips"]:
                clip["prompt"] = None
        analysis.blueprint, analysis.prompts = blueprint, prompts
        width, height = SIZES[analysis.aspect]
        seed = rng.randrange(2**31)
        analysis.video_url = (
            analysis.source.url
            if analysis.source.platform is None
            else world.media_url(
                analysis.base_url,
                MediaSpec("video", analysis.title, analysis.seconds, seed, width, height, "mp4", True),
            )
        )
        analysis.poster_url = world.media_url(
            analysis.base_url, MediaSpec("image", analysis.title, 0, seed, width, height, "png")
        )
        analysis.status = "ready"

    def _own_analysis(self, ctx: Ctx) -> Analysis:
        """The caller's analysis named in the path, settled to now; 404 ``Flow not found`` otherwise."""
        analysis = self.analyses.get(ctx.request.path_params["id"])
        if analysis is None or analysis.caller.account.id != ctx.who.account.id:
            raise not_found(messages.FLOW_NOT_FOUND)
        self.settle(analysis)
        return analysis

    async def read_analysis(self, ctx: Ctx) -> "Response":
        """GET /v1/analyses/{id}."""
        return ok(self._own_analysis(ctx).public())

    async def build(self, ctx: Ctx) -> "Response":
        """POST .../blueprint: start writing the clip prompts of a shot-list-only analysis."""
        analysis = self._own_analysis(ctx)
        reason = None
        if analysis.status == "analyzing":
            reason = "The analysis is still running; poll it until it is ready"
        elif analysis.status == "failed":
            reason = "The analysis failed, so there is no shot list to build from"
        elif analysis.build_at is not None:
            reason = "The blueprint is already being built"
        elif not analysis.shot_list_only:
            reason = "The blueprint is already built"
        if reason is not None:
            return ok({wire.BLUEPRINT_STARTED: False, wire.BLUEPRINT_REASON: reason})
        assert analysis.blueprint is not None
        build_seconds = BLUEPRINT_BASE_SECONDS + BLUEPRINT_PER_CLIP * len(analysis.blueprint["clips"])
        analysis.build_at = self.world.clock.now() + build_seconds
        self.world.schedule(build_seconds, lambda: self.settle(analysis))
        return ok({wire.BLUEPRINT_STARTED: True})

    # --- runs

    async def _run_request(self, body: dict[str, Any]) -> RunRequest:
        """Every body field's type and value rule, with defaults; the webhook is checked here too."""
        model_id = body.get("modelId", DEFAULT_MODEL)
        if model_id not in catalog.REPLICATION_MODELS:
            raise bad_request(messages.unknown_replication_model(catalog.REPLICATION_MODELS))
        quality = _choice(body, "quality", QUALITIES, "medium")
        accuracy = _choice(body, "accuracy", ACCURACIES, "fast")
        clips = body.get("clips")
        if clips is not None and not (
            isinstance(clips, list)
            and clips
            and all(isinstance(c, int) and not isinstance(c, bool) for c in clips)
        ):
            raise bad_request(messages.wrong_type("clips", "a non-empty list of clip indexes"))
        image = body.get("characterImage")
        if image is not None and not _https(image):
            raise bad_request(messages.wrong_type("characterImage", "an https URL of an image"))
        captions = body.get("captions", False)
        if not isinstance(captions, bool):
            raise bad_request(messages.wrong_type("captions", "true or false"))
        audio = body.get("audio")
        if audio is not None:
            if not isinstance(audio, dict):
                raise bad_request(messages.wrong_type("audio", 'an object such as {"mode": "chunks"}'))
            if audio.get("mode") not in AUDIO_MODES:
                raise bad_request(messages.not_one_of("audio.mode", AUDIO_MODES))
            if audio["mode"] == "upload" and not _https(audio.get("url")):
                raise bad_request(
                    messages.wrong_type("audio.url", "an https URL of an .mp3, .wav or .mp4 file")
                )
        marketing = _choice(body, "marketingAspect", MARKETING_ASPECTS, "9:16")
        webhook = body.get("webhook")
        if webhook is not None:
            await self.world.outbox.check(webhook)
        return RunRequest(
            catalog.BY_ID[model_id], quality, accuracy, clips, image, captions, audio, marketing, webhook
        )

    async def replicate(self, ctx: Ctx) -> "Response":
        """POST .../replicate: body rules, then the Idempotency-Key, then readiness, clips, cap, balance."""
        analysis = self._own_analysis(ctx)
        request = await self._run_request(await ctx.json())
        key = _idempotency_key(ctx)
        if key is None:
            return await self._create_run(ctx, analysis, request, None)
        async with self.run_keys.lock(key):
            existing = self.run_keys.get(key)
            if existing is not None:
                run = self.runs[existing]
                return ok({"runId": run.id, "modelId": run.model.id}, 200)
            return await self._create_run(ctx, analysis, request, key)

    async def _create_run(
        self, ctx: Ctx, analysis: Analysis, request: RunRequest, key: tuple[str, str] | None
    ) -> "Response":
        world, caller = self.world, ctx.who
        if analysis.status != "ready" or analysis.blueprint is None:
            raise bad_request(messages.FLOW_NOT_READY)
        if analysis.shot_list_only:
            raise bad_request(messages.STILL_READING_SHOTS)
        clips = analysis.blueprint["clips"]
        selected = sorted(set(request.clips)) if request.clips is not None else list(range(len(clips)))
        if not all(0 <= index < len(clips) for index in selected):
            raise bad_request(messages.CLIP_OUT_OF_RANGE)
        if request.audio is not None and request.audio["mode"] == "upload":
            await self._check_track(request.audio["url"])
        groups = pack(clips, selected, request.accuracy, request.model.id in MULTI_SHOT_MODELS)
        priced = [self._price(request, g, clips[g[-1]]["end"] - clips[g[0]]["start"]) for g in groups]
        first = priced[0].credits
        if not world.accounts.cap_allows(caller.key, first):
            raise too_many(messages.key_cap_reached(caller.key.monthly_cap or 0))
        if request.character_image is not None and moderation.IMAGE_MARKER in request.character_image.lower():
            raise bad_request(messages.IMAGE_MODERATED)
        if caller.account.balance < first:
            raise bad_request(
                messages.not_enough_credits(first, caller.account.balance, _top_up(ctx.base_url))
            )
        run_id = world.new_id()
        if ctx.fault == "503":
            world.accounts.charge(caller, first, "replication", run_id, modelId=request.model.id)
            world.accounts.refund(caller, first, "replication", run_id, note="model could not start the run")
            raise ServiceError(503, messages.AT_CAPACITY)
        takes = self._schedule_takes(run_id, request.model, priced)
        run = Run(
            id=run_id,
            analysis=analysis,
            caller=caller,
            model=request.model,
            quality=request.quality,
            accuracy=request.accuracy,
            takes=takes,
            captions=request.captions,
            audio=request.audio,
            marketing_aspect=request.marketing_aspect,
            webhook=request.webhook,
            base_url=ctx.base_url,
            created_at=takes[0].start_at,
        )
        self.runs[run_id] = run
        if key is not None:
            self.run_keys.put(key, run_id)
        self.advance(run)
        now = world.clock.now()
        for at in sorted({*(t.start_at for t in takes), *(t.end_at for t in takes), run.done_at}):
            world.schedule(at - now, self._advancer(run))
        world.schedule(run.done_at + MARKETING_DELAY_SECONDS - now, self._advancer(run))
        return ok({"runId": run.id, "modelId": run.model.id}, 201)

    def _advancer(self, run: Run) -> Callable[[], None]:
        """A timer callback that advances ``run``."""
        return lambda: self.advance(run)

    async def _check_track(self, url: str) -> None:
        """An uploaded soundtrack must be an .mp3, .wav or .mp4 the service can download."""
        if schema.url_extension(url) not in limits.LENGTH_BILLED_EXTENSIONS:
            raise bad_request(messages.UNSUPPORTED_MEDIA_FORMAT)
        try:
            await fetch.download(url, self.world.own_file)
        except fetch.Unreachable:
            raise bad_request(messages.media_not_reachable("audio")) from None

    @staticmethod
    def _price(request: RunRequest, clips: list[int], seconds: float) -> Take:
        """A take's input and price, not yet placed in time."""
        values = take_input(request.model, request.quality, seconds)
        credits = pricing.price(request.model, values, None)
        return Take(tuple(clips), round(seconds, 2), credits, values)

    def _schedule_takes(self, run_id: str, model: catalog.ModelSpec, takes: list[Take]) -> list[Take]:
        """Draw every take's model outcome and place the takes one after another from now."""
        rng = self.world.rng("run", run_id)
        at = self.world.clock.now()
        for take in takes:
            take.outcome = _outcome(self.world)
            runtime = catalog.simulated_runtime(model, take.input, None) * rng.lognormvariate(0, 0.2)
            if take.outcome == "timeout":
                limit = limits.RUNTIME_BASE_SECONDS + limits.RUNTIME_PER_MEDIA_SECOND * take.seconds
                runtime = min(limit, limits.RUNTIME_HARD_SECONDS)
            take.start_at, take.end_at = at, at + runtime
            at += runtime
        return takes

    def advance(self, run: Run) -> None:
        """Apply every event of the run whose simulated time has come, in order."""
        now = self.world.clock.now()
        for take in run.takes:
            if run.status != "generating":
                break
            if take.settled:
                continue
            if not take.charged and (now < take.start_at or not self._charge(run, take)):
                return
            if now < take.end_at:
                return
            self._settle_take(run, take)
        if run.status == "generating":
            run.status = "stitching"
        if run.status == "stitching" and now >= run.done_at:
            self._finish(run)
        marketing_due = now >= run.done_at + MARKETING_DELAY_SECONDS
        if run.status == "done" and run.marketing_video_url is None and marketing_due:
            self._marketing(run)

    def _charge(self, run: Run, take: Take) -> bool:
        """Charge a take as it starts; fail the run when the cap or the balance cannot cover it."""
        accounts, caller = self.world.accounts, run.caller
        remaining = sum(t.credits for t in run.takes if not t.charged)
        if not accounts.cap_allows(caller.key, take.credits):
            self._fail(run, messages.key_cap_reached(caller.key.monthly_cap or 0))
            return False
        if caller.account.balance < take.credits:
            self._fail(
                run, messages.not_enough_credits(remaining, caller.account.balance, _top_up(run.base_url))
            )
            return False
        accounts.charge(caller, take.credits, "replication", run.id, **_take_note(run, take))
        take.charged = True
        return True

    def _settle_take(self, run: Run, take: Take) -> None:
        """Count a finished take's clips, or refund it and fail the run."""
        take.settled = True
        if take.outcome == "succeed":
            run.done_clips += len(take.clips)
            return
        self.world.accounts.refund(
            run.caller, take.credits, "replication", run.id, **_take_note(run, take), note="failed"
        )
        minutes = round((take.end_at - take.start_at) / 60, 1)
        reason = (
            messages.generation_timed_out(minutes)
            if take.outcome == "timeout"
            else f"{run.model.name} could not render it; its credits were refunded"
        )
        label = ", ".join(map(str, take.clips))
        self._fail(run, f"Clip {label} failed: {reason}")

    def _fail(self, run: Run, error: str) -> None:
        """End the run as failed and send its webhook."""
        run.status, run.error = "failed", error
        self._notify(run)

    def _finish(self, run: Run) -> None:
        """Write the replica, side-by-side, clean copy and share link; the run is done; send its webhook."""
        world, analysis = self.world, run.analysis
        width, height = SIZES[analysis.aspect]
        seed = world.rng("run media", run.id).randrange(2**31)
        sound = run.audio is not None
        title = analysis.title or "video"

        def video(prompt: str, offset: int, w: int, h: int, audio: bool = sound) -> str:
            spec = MediaSpec("video", prompt, run.seconds, seed + offset, w, h, "mp4", audio)
            return world.media_url(run.base_url, spec)

        run.output_video_url = video(f"Replica: {title}", 0, width, height)
        run.compare_video_url = video(f"Original | replica: {title}", 1, width * 2, height, True)
        if run.captions:
            run.clean_output_video_url = video(f"Replica without text: {title}", 2, width, height)
        run.share_url = run.base_url + path("sandbox_app", page=f"r/{run.id}")
        run.status = "done"
        self._notify(run)

    def _marketing(self, run: Run) -> None:
        """The branded marketing cuts, which arrive a few seconds after ``done``."""
        world = self.world
        seed = world.rng("run media", run.id).randrange(2**31)
        title = run.analysis.title or "video"
        cuts = {"marketing": SIZES[run.marketing_aspect], "marketing169": SIZES["16:9"]}
        prompt = f"Made with replication: {title}"
        urls = {
            name: world.media_url(
                run.base_url, MediaSpec("video", prompt, run.seconds, seed + 3, w, h, "mp4", True)
            )
            for name, (w, h) in cuts.items()
        }
        run.marketing_video_url, run.marketing_video_url_169 = urls["marketing"], urls["marketing169"]

    def _notify(self, run: Run) -> None:
        """The run's webhook: its resource fields plus ``event: replication.completed``."""
        if run.webhook:
            self.world.outbox.send(run.webhook, {**run.public(self.world), "event": "replication.completed"})

    async def read_run(self, ctx: Ctx) -> "Response":
        """GET /v1/runs/{id}: the caller's run, advanced to now; 404 ``Run not found`` otherwise."""
        run = self.runs.get(ctx.request.path_params["id"])
        if run is None or run.caller.account.id != ctx.who.account.id:
            raise not_found(messages.RUN_NOT_FOUND)
        self.advance(run)
        return ok(run.public(self.world))
