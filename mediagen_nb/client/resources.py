"""The service's resources as frozen dataclasses, named after the spec, shown inline in notebooks.

Unknown extra fields from the service are kept in ``extra``, never a crash. Wire names come from
the spec's tables or, where the spec does not show them, from :mod:`mediagen_nb.protocol.wire`.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from html import escape
from typing import Any, TypeVar

from mediagen_nb.client import html
from mediagen_nb.client.errors import GenerationFailed, GenerationTimedOut, ServiceResponseError
from mediagen_nb.protocol import messages, wire
from mediagen_nb.protocol.schema import length_billed_field, media_kind

R = TypeVar("R")

# attribute -> wire name, one table per resource.
GENERATION_FIELDS = {
    "id": "id",
    "model_id": "modelId",
    "status": "status",
    "output": "output",
    "error": "error",
    "credits_spent": "creditsSpent",
    "created_at": "createdAt",
    "media_duration_sec": "mediaDurationSec",
    "still_running": "stillRunning",
}
MODEL_FIELDS = {
    "id": wire.MODEL_ID,
    "name": wire.MODEL_NAME,
    "description": wire.MODEL_DESCRIPTION,
    "output_type": wire.MODEL_OUTPUT_TYPE,
    "group": wire.MODEL_GROUP,
    "credits": wire.MODEL_CREDITS,
    "preview_url": wire.MODEL_PREVIEW,
    "links": wire.MODEL_LINKS,
    "input_schema": "input_schema",
    "pricing": "pricing",
    "example": "example",
}
ESTIMATE_FIELDS = {
    "model_id": wire.ESTIMATE_MODEL,
    "credits": wire.ESTIMATE_CREDITS,
    "billing": wire.ESTIMATE_BILLING,
}
ANALYSIS_FIELDS = {
    "id": "analysisId",
    "status": "status",
    "title": "title",
    "duration_seconds": "durationSeconds",
    "clip_count": "clipCount",
    "source_url": "sourceUrl",
    "video_url": "videoUrl",
    "poster_url": "posterUrl",
    "blueprint": "blueprint",
    "error": "error",
    "credits_spent": "creditsSpent",
}
BLUEPRINT_FIELDS = {
    "clips": "clips",
    "style_bible": "styleBible",
    "soundtrack": "soundtrack",
    "aspect": "aspect",
    "shots": "shots",
    "speakers": "speakers",
    "characters": "characters",
}
RUN_FIELDS = {
    "id": "id",
    "analysis_id": "analysisId",
    "model_id": "modelId",
    "quality": "quality",
    "status": "status",
    "total_clips": "totalClips",
    "done_clips": "doneClips",
    "output_video_url": "outputVideoUrl",
    "compare_video_url": "compareVideoUrl",
    "clean_output_video_url": "cleanOutputVideoUrl",
    "marketing_video_url": "marketingVideoUrl",
    "marketing_video_url_169": "marketingVideoUrl169",
    "share_url": "shareUrl",
    "error": "error",
    "created_at": "createdAt",
}
JOB_FIELDS = {
    "id": "jobId",
    "status": "status",
    "stage": "stage",
    "progress": wire.JOB_PROGRESS,
    "script": wire.JOB_SCRIPT,
    "portrait_url": wire.JOB_PORTRAIT,
    "lipsync_video_url": wire.JOB_LIPSYNC,
    "video_url": "videoUrl",
    "credits_used": wire.JOB_CREDITS,
    "edit_report": wire.JOB_EDIT_REPORT,
    "degraded": wire.JOB_DEGRADED,
    "flow": "flow",
    "topic": "topic",
    "voice": "voice",
    "seconds": "seconds",
    "poster_url": "posterUrl",
    "error": "error",
    "created_at": "createdAt",
    "updated_at": "updatedAt",
}
OPTIONS_FIELDS = {
    "voices": wire.OPTIONS_VOICES,
    "genders": wire.OPTIONS_GENDERS,
    "looks": wire.OPTIONS_LOOKS,
    "flows": wire.OPTIONS_FLOWS,
    "seconds": wire.OPTIONS_SECONDS,
    "defaults": wire.OPTIONS_DEFAULTS,
}


# What each wire field must be when present (null is always allowed): a field of another type is a
# ServiceResponseError naming it, so a resource never holds a value its repr or HTML view trips on.
TEXT, WHOLE, NUMBER, FLAG, OBJECT, ARRAY = (
    "a string",
    "an integer",
    "a number",
    "true or false",
    "an object",
    "a list",
)
_KINDS: dict[str, Any] = {
    TEXT: lambda v: isinstance(v, str),
    WHOLE: lambda v: isinstance(v, int) and not isinstance(v, bool),
    NUMBER: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    FLAG: lambda v: isinstance(v, bool),
    OBJECT: lambda v: isinstance(v, Mapping),
    ARRAY: lambda v: isinstance(v, (list, tuple)),
}
_NOT_TEXT = {
    "output": OBJECT,
    "creditsSpent": WHOLE,
    "mediaDurationSec": NUMBER,
    "stillRunning": FLAG,
    wire.MODEL_CREDITS: WHOLE,
    wire.MODEL_LINKS: OBJECT,
    "input_schema": OBJECT,
    "pricing": OBJECT,
    "example": OBJECT,
    "durationSeconds": NUMBER,
    "clipCount": WHOLE,
    "blueprint": OBJECT,
    "clips": ARRAY,
    "totalClips": WHOLE,
    "doneClips": WHOLE,
    wire.JOB_PROGRESS: NUMBER,
    wire.JOB_CREDITS: WHOLE,
    wire.JOB_EDIT_REPORT: OBJECT,
    wire.JOB_DEGRADED: FLAG,
    "seconds": NUMBER,
    wire.BLUEPRINT_STARTED: FLAG,
    wire.OPTIONS_VOICES: OBJECT,
    wire.OPTIONS_GENDERS: ARRAY,
    wire.OPTIONS_LOOKS: ARRAY,
    wire.OPTIONS_FLOWS: ARRAY,
    wire.OPTIONS_DEFAULTS: OBJECT,
}
_FREE = frozenset(
    {"styleBible", "soundtrack", "aspect", "shots", "speakers", "characters"}
)  # types not shown


def expect(what: str, name: str, value: Any, kind: str) -> None:
    """Raise ServiceResponseError unless ``value`` is None or of ``kind``."""
    if value is not None and not _KINDS[kind](value):
        raise ServiceResponseError(
            f"the service sent {what}.{name} = {str(value)[:60]!r}, not {kind}: is MEDIAGEN_BASE_URL the "
            "service's address?",
            field=name,
        )


def parse(
    cls: type[R], data: Any, names: Mapping[str, str], kinds: Mapping[str, str] | None = None, **more: Any
) -> R:
    """Build ``cls`` from a wire object: mapped fields by attribute (type-checked; ``kinds`` overrides the
    kind of a wire name), everything else in ``extra``."""
    if not isinstance(data, Mapping):
        raise ServiceResponseError(
            f"the service sent {str(data)[:60]!r} where {cls.__name__} should be an object"
        )
    for name in names.values():
        if name not in _FREE:
            expect(cls.__name__, name, data.get(name), (kinds or {}).get(name) or _NOT_TEXT.get(name, TEXT))
    known = set(names.values())
    values = {attr: data.get(name) for attr, name in names.items()}
    return cls(**values, **more, extra={k: v for k, v in data.items() if k not in known})  # type: ignore[call-arg]


def wire_of(resource: Any) -> dict[str, Any]:
    """A resource back as the wire object it was read from (mapped fields and ``extra``)."""
    names = _WIRE_NAMES[type(resource).__name__]
    return {**resource.extra, **{name: getattr(resource, attr) for attr, name in names.items()}}


def _short(text: object, limit: int = 60) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Shown:
    """A readable ``repr`` from the fields that say most; ``_repr_html_`` in subclasses."""

    _headline: tuple[str, ...] = ()

    def __repr__(self) -> str:
        parts = []
        for name in self._headline:
            value = getattr(self, name)
            if value in (None, (), {}, "") or value is False:
                continue
            shown = _short(value) if isinstance(value, str) and not name.endswith("url") else value
            parts.append(f"{name}={shown!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


@dataclass(frozen=True, repr=False)
class Generation(_Shown):
    """One run of a catalog model. ``url`` is the main result; ``elapsed_s`` is measured by this client."""

    id: str
    model_id: str
    status: str
    output: Mapping[str, Any] | None = None
    error: str | None = None
    credits_spent: int = 0
    created_at: str | None = None
    media_duration_sec: float | None = None
    still_running: bool | None = None
    elapsed_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False  # an earlier start of the same ask, returned at no charge

    _headline = ("id", "model_id", "status", "credits_spent", "elapsed_s", "url", "error", "reused")

    @classmethod
    def from_api(cls, data: Mapping[str, Any], *, elapsed_s: float | None = None) -> "Generation":
        generation = parse(cls, data, GENERATION_FIELDS, elapsed_s=elapsed_s)
        output = generation.output or {}
        expect("Generation.output", "type", output.get("type"), TEXT)
        expect("Generation.output", "urls", output.get("urls"), ARRAY)
        for url in output.get("urls") or ():
            expect("Generation.output", "urls[]", url, TEXT)
        return replace(generation, credits_spent=generation.credits_spent or 0)

    @property
    def output_type(self) -> str | None:
        return (self.output or {}).get("type")

    @property
    def urls(self) -> tuple[str, ...]:
        return tuple((self.output or {}).get("urls") or ())

    @property
    def url(self) -> str | None:
        """The main result (the first output URL), or None until success."""
        return self.urls[0] if self.urls else None

    @property
    def done(self) -> bool:
        """Ended: ``succeeded`` or ``failed`` (``queued`` counts as processing, as the spec says)."""
        return self.status in ("succeeded", "failed")

    @property
    def timed_out(self) -> bool:
        return self.status == "failed" and str(self.error or "").startswith(messages.GENERATION_TIMED_OUT)

    def raise_for_status(self) -> "Generation":
        """Return self when not failed; raise GenerationTimedOut or GenerationFailed otherwise."""
        if self.status == "failed":
            raise GenerationTimedOut(self) if self.timed_out else GenerationFailed(self)
        return self

    def _repr_html_(self) -> str:
        facts: list[tuple[str, object]] = [
            ("credits", self.credits_spent),
            ("elapsed", f"{self.elapsed_s:.1f} s" if self.elapsed_s is not None else None),
            ("media", f"{self.media_duration_sec:g} s" if self.media_duration_sec is not None else None),
            ("id", self.id),
        ]
        body = "".join(html.media(u, self.output_type) for u in self.urls) + html.error_line(self.error)
        if self.status not in ("succeeded", "failed"):
            body += '<div style="color:#555">running…</div>'
        return html.card(self.model_id, self.status, facts, body)


@dataclass(frozen=True, repr=False)
class Pricing:
    """How a model's price depends on its input: ``type`` (billing method) and ``varies_by``."""

    type: str | None
    varies_by: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Pricing(type={self.type!r}, varies_by={self.varies_by!r})"


@dataclass(frozen=True, repr=False)
class Model(_Shown):
    """A catalog record. ``credits`` is the price of every run when ``pricing`` is None."""

    id: str
    name: str | None = None
    description: str | None = None
    output_type: str | None = None
    group: str | None = None
    credits: int | None = None
    preview_url: str | None = None
    links: Mapping[str, Any] | None = None
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    pricing: Pricing | None = None
    example: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("id", "output_type", "group", "credits", "pricing")

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "Model":
        model = parse(cls, data, MODEL_FIELDS)
        raw = data.get("pricing")
        pricing = None
        if isinstance(raw, Mapping):
            expect("Model.pricing", "varies_by", raw.get("varies_by"), ARRAY)
            rest = {k: v for k, v in raw.items() if k not in ("type", "varies_by")}
            pricing = Pricing(raw.get("type"), tuple(raw.get("varies_by") or ()), rest)
        return replace(model, pricing=pricing, input_schema=model.input_schema or {})

    @property
    def properties(self) -> Mapping[str, Any]:
        return self.input_schema.get("properties", {})

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("required", ()))

    @property
    def varies_by(self) -> tuple[str, ...]:
        return self.pricing.varies_by if self.pricing else ()

    @property
    def length_billed_field(self) -> str | None:
        """The audio/video input whose file length sets the price (``.mp3``/``.wav``/``.mp4`` only)."""
        raw = {"varies_by": list(self.varies_by)} if self.pricing else None
        return length_billed_field(self.input_schema, raw)

    @property
    def list_fields(self) -> tuple[str, ...]:
        """Inputs that take a list of URLs (a single URL is sent as a one-item list)."""
        return tuple(n for n, p in self.properties.items() if p.get("type") == "array" and media_kind(p))

    def _repr_html_(self) -> str:
        price = f"{self.credits} credits" + (" per run" if self.pricing is None else " (varies)")
        facts: list[tuple[str, object]] = [
            ("kind", self.output_type),
            ("group", self.group),
            ("price", price),
        ]
        if self.pricing:
            facts.append(("varies by", ", ".join(self.varies_by)))
        rows = "".join(
            f"<tr><td><code>{escape(name)}</code>{' *' if name in self.required else ''}</td>"
            f"<td>{escape(str(prop.get('type', '')))}</td>"
            f"<td>{escape(_short(prop.get('enum', prop.get('default', '')), 40))}</td>"
            f"<td>{escape(str(prop.get('description', '')))}</td></tr>"
            for name, prop in self.properties.items()
        )
        preview = html.media(self.preview_url, "image", width=240)
        body = (
            f"<div>{escape(self.description or '')}</div>{preview}"
            f'<table style="font-size:12px"><tr><th>input</th><th>type</th><th>options / default</th>'
            f"<th>description</th></tr>{rows}</table>"
        )
        return html.card(f"{self.name or self.id} ({self.id})", self.output_type or "", facts, body)


@dataclass(frozen=True, repr=False)
class Estimate(_Shown):
    """What a run with this input will charge; ``billing`` says how the model is billed."""

    model_id: str
    credits: int
    billing: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("model_id", "credits", "billing")

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "Estimate":
        return parse(cls, data, ESTIMATE_FIELDS)

    def _repr_html_(self) -> str:
        return html.card(self.model_id, f"{self.credits} credits", [("billing", self.billing)])


@dataclass(frozen=True, repr=False)
class Blueprint(_Shown):
    """A shot-by-shot plan of a short video. Clip members' types are not shown by the spec: kept as dicts."""

    clips: tuple[Mapping[str, Any], ...] = ()
    style_bible: Any = None
    soundtrack: Any = None
    aspect: Any = None
    shots: Any = None
    speakers: Any = None
    characters: Any = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("aspect", "clips")

    def __repr__(self) -> str:
        return f"Blueprint(clips={len(self.clips)}, aspect={self.aspect!r}, prompts={self.has_prompts})"

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "Blueprint":
        blueprint = parse(cls, data, BLUEPRINT_FIELDS)
        return replace(blueprint, clips=tuple(blueprint.clips or ()))

    @property
    def has_prompts(self) -> bool:
        """False while only the shot list exists (every clip's ``prompt`` is null)."""
        return bool(self.clips) and all(clip.get("prompt") for clip in self.clips)

    def rows(self) -> list[dict[str, Any]]:
        """One plain row per clip: index, start, end, camera, prompt (for a table or a DataFrame)."""
        return [
            {
                "clip": i,
                "start": clip.get("start"),
                "end": clip.get("end"),
                "camera": clip.get("camera"),
                "prompt": clip.get("prompt"),
            }
            for i, clip in enumerate(self.clips)
        ]

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{r['clip']}</td><td>{escape(str(r['start']))} to {escape(str(r['end']))} s</td>"
            f"<td>{escape(_short(r['camera'] or '', 50))}</td>"
            f"<td>{escape(str(r['prompt'] or '(shot list only)'))}</td></tr>"
            for r in self.rows()
        )
        head = "<tr><th>#</th><th>time</th><th>camera</th><th>prompt</th></tr>"
        table = f'<table style="font-size:12px">{head}{rows}</table>'
        return html.card("Blueprint", f"{len(self.clips)} clips", [("aspect", self.aspect)], table)


@dataclass(frozen=True, repr=False)
class Analysis(_Shown):
    """A replication analysis: the source video read into a blueprint (``analyzing`` → ``ready``)."""

    id: str
    status: str | None = None
    title: str | None = None
    duration_seconds: float | None = None
    clip_count: int | None = None
    source_url: str | None = None
    video_url: str | None = None
    poster_url: str | None = None
    blueprint: Blueprint | None = None
    error: str | None = None
    credits_spent: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False  # an earlier start of the same ask, returned at no charge

    _headline = ("id", "status", "title", "duration_seconds", "clip_count", "error", "reused")

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "Analysis":
        analysis = parse(cls, data, ANALYSIS_FIELDS)
        raw = data.get("blueprint")
        return replace(analysis, blueprint=Blueprint.from_api(raw) if isinstance(raw, Mapping) else None)

    @property
    def done(self) -> bool:
        return self.status in ("ready", "failed")

    def _repr_html_(self) -> str:
        facts = [("clips", self.clip_count), ("length", self.duration_seconds), ("id", self.id)]
        body = html.media(self.poster_url, "image", width=180) + html.error_line(self.error)
        if self.blueprint is not None:
            body += self.blueprint._repr_html_()
        return html.card(self.title or "Analysis", self.status, facts, body)


@dataclass(frozen=True, repr=False)
class BlueprintBuild(_Shown):
    """The answer of ``POST .../blueprint``: whether a build started, and why not."""

    started: bool
    reason: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("started", "reason")

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "BlueprintBuild":
        return parse(cls, data, {"started": wire.BLUEPRINT_STARTED, "reason": wire.BLUEPRINT_REASON})


@dataclass(frozen=True, repr=False)
class ReplicationRun(_Shown):
    """A replica being rendered clip by clip (``generating`` → ``stitching`` → ``done``/``failed``)."""

    id: str
    analysis_id: str | None = None
    model_id: str | None = None
    quality: str | None = None
    status: str | None = None
    total_clips: int | None = None
    done_clips: int | None = None
    output_video_url: str | None = None
    compare_video_url: str | None = None
    clean_output_video_url: str | None = None
    marketing_video_url: str | None = None
    marketing_video_url_169: str | None = None
    share_url: str | None = None
    error: str | None = None
    created_at: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False  # an earlier start of the same ask, returned at no charge

    _headline = (
        "id",
        "model_id",
        "status",
        "done_clips",
        "total_clips",
        "output_video_url",
        "error",
        "reused",
    )

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "ReplicationRun":
        if "runId" in data and "id" not in data:
            data = {"id": data["runId"], **{k: v for k, v in data.items() if k != "runId"}}
        return parse(cls, data, RUN_FIELDS)

    @property
    def done(self) -> bool:
        return self.status in ("done", "failed")

    def _repr_html_(self) -> str:
        facts = [
            ("model", self.model_id),
            ("quality", self.quality),
            ("clips", f"{self.done_clips}/{self.total_clips}"),
        ]
        body = html.error_line(self.error)
        for label, url in (("compare", self.compare_video_url), ("replica", self.output_video_url)):
            if url:
                body += f"<div>{escape(label)}<br>{html.media(url, 'video')}</div>"
        if self.share_url:
            body += f"<div>share: {html.link(self.share_url)}</div>"
        return html.card("Replication run", self.status, facts, body)


@dataclass(frozen=True, repr=False)
class ShortVideoJob(_Shown):
    """A topic-to-video job (``scripting`` → ``portrait`` → ``animating`` → ``captioning`` → ``done``)."""

    id: str
    status: str | None = None
    stage: str | None = None
    progress: float | None = None
    script: str | None = None
    portrait_url: str | None = None
    lipsync_video_url: str | None = None
    video_url: str | None = None
    credits_used: int | None = None
    edit_report: Mapping[str, Any] | None = None
    degraded: bool | None = None
    flow: str | None = None
    topic: str | None = None
    voice: str | None = None
    seconds: float | None = None
    poster_url: str | None = None
    error: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False  # an earlier start of the same ask, returned at no charge

    _headline = ("id", "status", "progress", "credits_used", "video_url", "error", "reused")

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "ShortVideoJob":
        return parse(cls, data, JOB_FIELDS)

    @property
    def done(self) -> bool:
        return self.status in ("done", "failed")

    def _repr_html_(self) -> str:
        progress = f"{self.progress:.0%}" if isinstance(self.progress, (int, float)) else None
        facts = [
            ("stage", self.stage),
            ("progress", progress),
            ("credits", self.credits_used),
            ("id", self.id),
        ]
        body = html.error_line(self.error)
        if self.video_url:
            body += html.media(self.video_url, "video")
        elif self.portrait_url:
            body += html.media(self.portrait_url, "image", width=160)
        if self.degraded:
            body += (
                '<div style="color:#9a6700">some edit steps were skipped: a plainer video than asked</div>'
            )
        return html.card(_short(self.topic or "Short video", 60), self.status, facts, body)


@dataclass(frozen=True, repr=False)
class VideoOptions(_Shown):
    """Topic-to-video choices: voices by gender, looks, edit styles (flows), length bounds, defaults."""

    voices: Mapping[str, Any] | None = None
    genders: Any = None
    looks: Any = None
    flows: Any = None
    seconds: Any = None
    defaults: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("voices", "looks", "flows", "seconds")

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "VideoOptions":
        return parse(cls, data, OPTIONS_FIELDS, {wire.OPTIONS_SECONDS: OBJECT})


_WIRE_NAMES: dict[str, Mapping[str, str]] = {
    "Generation": GENERATION_FIELDS,
    "Analysis": ANALYSIS_FIELDS,
    "ReplicationRun": RUN_FIELDS,
    "ShortVideoJob": JOB_FIELDS,
}
