"""Every resource's wire names and field types, and the checked parser that builds resources from them.

A field of the wrong type is a ServiceResponseError naming it, never a resource whose repr or HTML
view trips on it; unknown extra fields are kept in ``extra``.
"""

from collections.abc import Mapping
from typing import Any, TypeVar

from mediagen_nb.client.checks import ID_KINDS, is_id
from mediagen_nb.client.errors import ServiceResponseError, mask
from mediagen_nb.protocol import wire

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
# Each resource's id (its wire name and its kind in checks.ID_KINDS) and the other fields an answer
# must have. Ids name URLs and files, so one missing or of another shape (a path such as
# "../../x" or "/abs/x") is a ServiceResponseError naming it, never a resource.
IDS = {
    "Generation": ("id", "generation"),
    "Analysis": ("analysisId", "analysis"),
    "ReplicationRun": ("id", "run"),
    "ShortVideoJob": ("jobId", "job"),
}
REQUIRED = {
    "Generation": ("modelId", "status"),
    "Model": (wire.MODEL_ID,),
    "Estimate": (wire.ESTIMATE_CREDITS,),
}
_ID_SHAPES = {True: "a UUID", False: "an id of letters, digits, - and _"}
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


def _present(what: str, data: Mapping[str, Any]) -> None:
    """Raise ServiceResponseError unless ``data`` has the id (of its shape) and the fields ``what`` needs."""
    ident = IDS.get(what)
    for name in ((ident[0],) if ident else ()) + REQUIRED.get(what, ()):
        if data.get(name) is None:
            raise ServiceResponseError(
                f"the service sent {what} without {name}: is MEDIAGEN_BASE_URL the service's address?",
                field=name,
            )
    if ident is not None and not is_id(data[ident[0]], ident[1]):
        raise ServiceResponseError(
            f"the service sent {what}.{ident[0]} = {str(data[ident[0]])[:60]!r}, not "
            f"{_ID_SHAPES[ID_KINDS[ident[1]]]}: is MEDIAGEN_BASE_URL the service's address?",
            field=ident[0],
        )


def parse(
    cls: type[R], data: Any, names: Mapping[str, str], kinds: Mapping[str, str] | None = None, **more: Any
) -> R:
    """Build ``cls`` from a wire object: its id and required fields checked, mapped fields by attribute
    (type-checked; ``kinds`` overrides the kind of a wire name), everything else in ``extra``."""
    if not isinstance(data, Mapping):
        raise ServiceResponseError(
            f"the service sent {str(data)[:60]!r} where {cls.__name__} should be an object"
        )
    _present(cls.__name__, data)
    for name in names.values():
        if name not in _FREE:
            expect(cls.__name__, name, data.get(name), (kinds or {}).get(name) or _NOT_TEXT.get(name, TEXT))
    known = set(names.values())
    values = {attr: _kept(name, data.get(name)) for attr, name in names.items()}
    return cls(**values, **more, extra={k: v for k, v in data.items() if k not in known})  # type: ignore[call-arg]


def _kept(name: str, value: Any) -> Any:
    """A wire value as a resource keeps it: a server's ``error`` text with any API key in it masked."""
    return mask(value) if name == "error" and isinstance(value, str) else value


def wire_of(resource: Any) -> dict[str, Any]:
    """A resource back as the wire object it was read from (mapped fields and ``extra``)."""
    names = _WIRE_NAMES[type(resource).__name__]
    return {**resource.extra, **{name: getattr(resource, attr) for attr, name in names.items()}}


def short(text: object, limit: int = 60) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Shown:
    """A readable ``repr`` from the fields that say most; ``_repr_html_`` in subclasses."""

    _headline: tuple[str, ...] = ()

    def __repr__(self) -> str:
        parts = []
        for name in self._headline:
            value = getattr(self, name)
            if value in (None, (), {}, "") or value is False:
                continue
            shown = short(value) if isinstance(value, str) and not name.endswith("url") else value
            parts.append(f"{name}={shown!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


_WIRE_NAMES: dict[str, Mapping[str, str]] = {
    "Generation": GENERATION_FIELDS,
    "Analysis": ANALYSIS_FIELDS,
    "ReplicationRun": RUN_FIELDS,
    "ShortVideoJob": JOB_FIELDS,
}
