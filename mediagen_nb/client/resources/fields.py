"""Every resource's wire names and field types, and the checked parser that builds resources from them.

A field of the wrong type, or a missing field the client needs, is a ServiceResponseError naming the
wire field, what was found, and the setting that fixes it, never a resource whose repr, HTML view
or figures trip on it; unknown extra fields are kept in ``extra``. Names the spec does not show come
from the client's :class:`~mediagen_nb.protocol.wire.Names` (ours, a names file's, or learned).
"""

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from mediagen_nb.client.checks import ID_KINDS, is_id
from mediagen_nb.client.errors import ServiceResponseError, mask
from mediagen_nb.protocol import states, wire
from mediagen_nb.protocol.documents import KINDS
from mediagen_nb.protocol.environment import ENV_WIRE

R = TypeVar("R")
REPORT = "no setting reads it otherwise: `mediagen doctor --record DIR` keeps the answer to report"

# What each wire field must be when present (null is allowed unless the field is required).
TEXT, WHOLE, NUMBER, FLAG, OBJECT, ARRAY = (
    "a string",
    "an integer",
    "a number",
    "true or false",
    "an object",
    "a list",
)
ANY = "any value"  # types the spec does not show
_KINDS: dict[str, Any] = {
    TEXT: lambda v: isinstance(v, str),
    WHOLE: lambda v: isinstance(v, int) and not isinstance(v, bool),
    NUMBER: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    FLAG: lambda v: isinstance(v, bool),
    OBJECT: lambda v: isinstance(v, Mapping),
    ARRAY: lambda v: isinstance(v, (list, tuple)),
    ANY: lambda v: True,
}
BASE_URL_HINT = "is MEDIAGEN_BASE_URL the service's address?"


class Normalised(UserWarning):
    """A value the spec makes certain came in another type or case, and was read as the spec's (said once)."""


_SAID: set[str] = set()  # normalisations already said in this process


def say_again() -> None:
    """Forget what was said: each normalisation is said once more (the doctor watches every one)."""
    _SAID.clear()


def say_once(key: str, message: str) -> None:
    """Warn ``message`` once per process for ``key``."""
    if key not in _SAID:
        _SAID.add(key)
        warnings.warn(message, Normalised, stacklevel=4)


@dataclass(frozen=True)
class Field:
    """One field of a resource: its wire name (a dotted path for a name the spec does not show), its kind,
    its values when the spec fixes them (``vocab``), and the attribute of
    :class:`~mediagen_nb.protocol.wire.Names` that spells an unshown name."""

    wire: str
    kind: str = TEXT
    unshown: str | None = None
    vocab: tuple[str, ...] = ()

    def hint(self) -> str:
        """What fixes a missing field: the names file for an unshown name, else the address."""
        if self.unshown is None:
            return BASE_URL_HINT
        return (
            f'the spec does not show this name: set {wire.setting(self.unshown)} = "<the service\'s name>" '
            f"in a names file ({ENV_WIRE}=names.toml; `mediagen doctor` shows what the service sends)"
        )

    def read(self, data: Mapping[str, Any]) -> Any:
        """The field's value in a wire object (an unshown name may be a dotted path)."""
        return wire.get(data, self.wire) if self.unshown is not None else data.get(self.wire)


Fields = Mapping[str, Field]  # attribute -> field


def unshown(names: wire.Names, attribute: str, kind: str = TEXT) -> Field:
    """The field a names attribute spells (``model_credits``)."""
    return Field(getattr(names, attribute), kind, attribute)


GENERATION_FIELDS: Fields = {
    "id": Field("id"),
    "model_id": Field("modelId"),
    "status": Field("status", vocab=states.GENERATION_STATES),
    "output": Field("output", OBJECT),
    "error": Field("error"),
    "credits_spent": Field("creditsSpent", WHOLE),
    "created_at": Field("createdAt"),
    "media_duration_sec": Field("mediaDurationSec", NUMBER),
    "still_running": Field("stillRunning", FLAG),
}


def model_fields(names: wire.Names) -> Fields:
    return {
        "id": unshown(names, "model_id"),
        "name": unshown(names, "model_name"),
        "description": unshown(names, "model_description"),
        "output_type": Field(names.model_output_type, TEXT, "model_output_type", KINDS),
        "group": unshown(names, "model_group"),
        "credits": unshown(names, "model_credits", WHOLE),
        "preview_url": unshown(names, "model_preview"),
        "links": unshown(names, "model_links", OBJECT),
        "input_schema": Field("input_schema", OBJECT),
        "pricing": Field("pricing", OBJECT),
        "example": Field("example", OBJECT),
    }


def estimate_fields(names: wire.Names) -> Fields:
    return {
        "model_id": unshown(names, "estimate_model"),
        "credits": unshown(names, "estimate_credits", WHOLE),
        "billing": unshown(names, "estimate_billing"),
    }


ANALYSIS_FIELDS: Fields = {
    "id": Field("analysisId"),
    "status": Field("status", vocab=states.ANALYSIS_STATES),
    "title": Field("title"),
    "duration_seconds": Field("durationSeconds", NUMBER),
    "clip_count": Field("clipCount", WHOLE),
    "source_url": Field("sourceUrl"),
    "video_url": Field("videoUrl"),
    "poster_url": Field("posterUrl"),
    "blueprint": Field("blueprint", OBJECT),
    "error": Field("error"),
    "credits_spent": Field("creditsSpent", WHOLE),
}
BLUEPRINT_FIELDS: Fields = {
    "clips": Field("clips", ARRAY),
    "style_bible": Field("styleBible", ANY),
    "soundtrack": Field("soundtrack", ANY),
    "aspect": Field("aspect", ANY),
    "shots": Field("shots", ANY),
    "speakers": Field("speakers", ANY),
    "characters": Field("characters", ANY),
}
RUN_FIELDS: Fields = {
    "id": Field("id"),
    "analysis_id": Field("analysisId"),
    "model_id": Field("modelId"),
    "quality": Field("quality"),
    "status": Field("status", vocab=states.RUN_STATES),
    "total_clips": Field("totalClips", WHOLE),
    "done_clips": Field("doneClips", WHOLE),
    "output_video_url": Field("outputVideoUrl"),
    "compare_video_url": Field("compareVideoUrl"),
    "clean_output_video_url": Field("cleanOutputVideoUrl"),
    "marketing_video_url": Field("marketingVideoUrl"),
    "marketing_video_url_169": Field("marketingVideoUrl169"),
    "share_url": Field("shareUrl"),
    "error": Field("error"),
    "created_at": Field("createdAt"),
}


def job_fields(names: wire.Names) -> Fields:
    return {
        "id": Field("jobId"),
        "status": Field("status", vocab=states.JOB_STATES),
        "stage": Field("stage", vocab=states.JOB_STATES),
        "progress": unshown(names, "job_progress", NUMBER),
        "script": unshown(names, "job_script"),
        "portrait_url": unshown(names, "job_portrait"),
        "lipsync_video_url": unshown(names, "job_lipsync"),
        "video_url": Field("videoUrl"),
        "credits_used": unshown(names, "job_credits", WHOLE),
        "edit_report": unshown(names, "job_edit_report", OBJECT),
        "degraded": unshown(names, "job_degraded", FLAG),
        "flow": Field("flow"),
        "topic": Field("topic"),
        "voice": Field("voice"),
        "seconds": Field("seconds", NUMBER),
        "poster_url": Field("posterUrl"),
        "error": Field("error"),
        "created_at": Field("createdAt"),
        "updated_at": Field("updatedAt"),
    }


def options_fields(names: wire.Names) -> Fields:
    return {
        "voices": unshown(names, "options_voices", OBJECT),
        "genders": unshown(names, "options_genders", ARRAY),
        "looks": unshown(names, "options_looks", ARRAY),
        "flows": unshown(names, "options_flows", ARRAY),
        "seconds": unshown(names, "options_seconds", OBJECT),
        "defaults": unshown(names, "options_defaults", OBJECT),
    }


def blueprint_build_fields(names: wire.Names) -> Fields:
    return {
        "started": unshown(names, "blueprint_started", FLAG),
        "reason": unshown(names, "blueprint_reason"),
    }


# Each resource's id: its attribute and its kind in checks.ID_KINDS. Ids name URLs and files, so one
# missing or of another shape (a path such as "../../x" or "/abs/x") is a ServiceResponseError naming it.
IDS = {"Generation": "generation", "Analysis": "analysis", "ReplicationRun": "run", "ShortVideoJob": "job"}
_ID_SHAPES = {True: "a UUID", False: "an id of letters, digits, - and _"}


def _type_of(value: Any) -> str:
    """A JSON value's type in words: ``a string``, ``a number with a fraction``."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def normal(what: str, name: str, value: Any, kind: str) -> tuple[bool, Any]:
    """``value`` read as ``kind`` when it is that value in another type (``"3"`` or ``3.0`` for 3,
    ``"true"`` for true, ``"0.5"`` for 0.5): (True, the value); (False, ``value``) when it is not."""
    if value is None or _KINDS[kind](value):
        return True, value
    text = value.strip() if isinstance(value, str) else None
    if kind == WHOLE:
        if isinstance(value, float) and value.is_integer():
            return True, int(value)
        if text is not None and text.lstrip("-").isdigit():
            return True, int(text)
    elif kind == NUMBER and text is not None:
        try:
            number = float(text)
        except ValueError:
            return False, value
        if number == number and abs(number) != float("inf"):
            return True, int(number) if number.is_integer() and "." not in text else number
    elif kind == FLAG and text is not None and text.lower() in ("true", "false"):
        return True, text.lower() == "true"
    return False, value


def checked(what: str, field: Field, value: Any) -> Any:
    """``value`` as the spec's type and case: read as it when it only differs in type or case (said once,
    naming the field and both), else a ServiceResponseError naming the type found and the one expected."""
    ok, read = normal(what, field.wire, value, field.kind)
    if not ok:
        raise ServiceResponseError(
            f"the service sent {what}.{field.wire} = {str(value)[:60]!r}, not {field.kind} (it is "
            f"{_type_of(value)}): {_type_advice(field)}",
            field=field.wire,
        )
    if read is not value and type(read) is not type(value):
        say_once(
            f"type:{what}.{field.wire}",
            f"mediagen_nb: the service sends {what}.{field.wire} as {_type_of(value)} ({str(value)[:20]!r}), "
            f"not {field.kind}: read as {read!r} (no setting needed)",
        )
    if field.vocab and isinstance(read, str) and read not in field.vocab:
        lowered = {word.lower(): word for word in field.vocab}
        spec = lowered.get(read.lower())
        if spec is not None:
            say_once(
                f"case:{what}.{field.wire}",
                f"mediagen_nb: the service sends {what}.{field.wire} in another case ({read!r}), not as the "
                f"spec writes it ({spec!r}): read as {spec!r} (no setting needed)",
            )
            read = spec
    return read


def _type_advice(field: Field) -> str:
    """What to do about a value of another type: a type is no name, so a names file does not help unless
    the field was read under the wrong name."""
    if field.unshown is not None:
        return (
            f"if another member holds it, set {wire.setting(field.unshown)} = "
            '"<that member>" in a names file '
            f"({ENV_WIRE}); else {REPORT}"
        )
    return f"{BASE_URL_HINT} ({REPORT})"


def expect(what: str, name: str, value: Any, kind: str, hint: str = BASE_URL_HINT) -> None:
    """Raise ServiceResponseError unless ``value`` is None or of ``kind``."""
    if value is not None and not _KINDS[kind](value):
        raise ServiceResponseError(
            f"the service sent {what}.{name} = {str(value)[:60]!r}, not {kind} "
            f"(it is {_type_of(value)}): {hint}",
            field=name,
        )


def members(data: Mapping[str, Any], limit: int = 12) -> str:
    """An object's member names for a message: ``id, title, type, creditCost, …``."""
    names = [str(name)[:40] for name in data]
    return ", ".join(names[:limit]) + (", …" if len(names) > limit else "") if names else "none"


def deeper(data: Mapping[str, Any], name: str) -> list[str]:
    """Where ``name`` (its last part) sits one or two levels deeper in an answer: dotted paths."""
    leaf = name.rsplit(".", 1)[-1]
    found: list[str] = []
    for member, value in data.items():
        if not isinstance(value, Mapping):
            continue
        if leaf in value and f"{member}.{leaf}" != name:
            found.append(f"{member}.{leaf}")
        for inner, nested in value.items():
            if isinstance(nested, Mapping) and leaf in nested and f"{member}.{inner}.{leaf}" != name:
                found.append(f"{member}.{inner}.{leaf}")
    return found


def missing(what: str, field: Field, data: Mapping[str, Any], who: str = "") -> ServiceResponseError:
    """The error of a required field a wire object lacks: the field, what was there, and the fix (a path
    when the name is one level deeper, a name otherwise)."""
    places = deeper(data, field.wire)
    if places and field.unshown is not None:
        fix = f"it is at {places[0]}: set {wire.line(field.unshown, places[0])} in a names file ({ENV_WIRE})"
    elif places:
        fix = f"it is at {places[0]}, not at the top of the answer: {BASE_URL_HINT}"
    else:
        fix = field.hint()
    return ServiceResponseError(
        f"the service sent {what}{who} without {field.wire} (its members: {members(data)}): {fix}",
        field=field.wire,
    )


def parse(
    cls: type[R], data: Any, fields: Fields, *, required: tuple[str, ...] = (), who: str = "", **more: Any
) -> R:
    """Build ``cls`` from a wire object: its id (of its shape) and ``required`` attributes present,
    every mapped field read as its type (see :func:`checked`), everything else in ``extra``. ``who``
    names the object in messages (`` gpt-image-2``)."""
    what = cls.__name__
    if not isinstance(data, Mapping):
        raise ServiceResponseError(f"the service sent {str(data)[:60]!r} where {what} should be an object")
    ident = IDS.get(what)
    for attr in (("id",) if ident else ()) + required:
        if fields[attr].read(data) is None:
            raise missing(what, fields[attr], data, who)
    values = {
        attr: _kept(field.wire, checked(what, field, field.read(data))) for attr, field in fields.items()
    }
    if ident is not None and not is_id(values["id"], ident):
        name = fields["id"].wire
        raise ServiceResponseError(
            f"the service sent {what}.{name} = {str(values['id'])[:60]!r}, not "
            f"{_ID_SHAPES[ID_KINDS[ident]]}: {BASE_URL_HINT}",
            field=name,
        )
    known = {wire.top(field.wire) if field.unshown else field.wire for field in fields.values()}
    return cls(**values, **more, extra={k: v for k, v in data.items() if k not in known})  # type: ignore[call-arg]


def _kept(name: str, value: Any) -> Any:
    """A wire value as a resource keeps it: a server's ``error`` text with any API key in it masked."""
    return mask(value) if name == "error" and isinstance(value, str) else value


def wire_of(resource: Any) -> dict[str, Any]:
    """A resource back as the wire object it was read from (mapped fields and ``extra``)."""
    fields = _WIRE_FIELDS[type(resource).__name__]
    return {**resource.extra, **{field.wire: getattr(resource, attr) for attr, field in fields.items()}}


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


_WIRE_FIELDS: dict[str, Fields] = {
    "Generation": GENERATION_FIELDS,
    "Analysis": ANALYSIS_FIELDS,
    "ReplicationRun": RUN_FIELDS,
}
