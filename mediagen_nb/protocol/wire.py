"""Names of response and body fields the spec does not show: chosen here, once, and settable.

The spec names `input_schema`, `pricing`, `varies_by` and `example` on a model record and every
field of the Generation, Analysis and Replication run resources; everything below is a guess. The
constants are our spelling (the sandbox's by default); :class:`Names` holds one spelling of them
all, and a names file (TOML, :func:`load`) sets another: the client reads one from ``MEDIAGEN_WIRE``
and ``mediagen sandbox --wire`` serves one, so the sandbox can speak whatever the service speaks.

A names file has one table per answer or body, each key the toolkit's word for a field::

    [catalog]            # GET /v1/models (the member holding the list) and each model record
    list = "items"
    output_type = "type"
    credits = "creditCost"
    next = "nextCursor"  # the member of a page of the list that names the next page ...
    next_param = "cursor"  # ... and the query parameter it is sent back as

    [estimate]           # POST /v1/estimate's data
    credits = "price.credits"   # a member one level deeper: a dotted path

A name in an answer may be a dotted path (``price.credits``: the member ``credits`` of the object
``price``); a name in a body (``[job]``) is a name. The ``[serve]`` table is read by the sandbox
alone (:class:`Serve`): how it pages the models list, the type and case of the values the spec makes
certain, and the other numbers an estimate carries, so tests can serve any shape a service may have.
"""

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]  # installed on 3.10 only

# Catalog record (GET /v1/models, /v1/models/{id}).
MODEL_ID = "id"
MODEL_NAME = "name"
MODEL_DESCRIPTION = "description"
MODEL_OUTPUT_TYPE = "outputType"  # image | video | audio
MODEL_GROUP = "group"
MODEL_CREDITS = "credits"  # listed cost; the price of every run when pricing is null
LISTED_MEDIA_SECONDS = 10.0  # ours: the listed cost of a model billed by media length prices this much
MODEL_PREVIEW = "previewUrl"
MODEL_LINKS = "links"  # {"run": ..., "poll": ...}
MODELS_LIST = "models"  # data.models of the list endpoint (data is an object)
MODELS_NEXT = "nextCursor"  # a page of the list: the member naming the next page (ours never pages)
MODELS_NEXT_PARAM = "cursor"  # the query parameter the next page is asked for with

# POST /v1/estimate response data.
ESTIMATE_MODEL = "modelId"
ESTIMATE_CREDITS = "credits"
ESTIMATE_BILLING = "billing"

# Topic-to-video start body (the spec gives meanings only).
JOB_TOPIC = "topic"
JOB_SECONDS = "seconds"
JOB_GENDER = "gender"
JOB_LOOK = "look"
JOB_VOICE = "voice"
JOB_FLOW = "flow"
JOB_CAPTIONS = "captions"
JOB_MUSIC = "music"
JOB_IDEMPOTENCY = "idempotencyKey"
JOB_WEBHOOK = "webhook"

# Topic-to-video job read response (names not shown by the spec).
JOB_PROGRESS = "progress"
JOB_SCRIPT = "script"
JOB_PORTRAIT = "portraitUrl"
JOB_LIPSYNC = "lipsyncVideoUrl"
JOB_CREDITS = "creditsUsed"
JOB_EDIT_REPORT = "editReport"
JOB_DEGRADED = "degraded"

# POST /v1/analyses/{id}/blueprint answer.
BLUEPRINT_STARTED = "started"
BLUEPRINT_REASON = "reason"

# Topic-to-video GET /options response (names not shown by the spec). OPTIONS_SECONDS holds
# {"min", "max", "default"}; OPTIONS_DEFAULTS holds the defaults by body field name, the voice by gender.
OPTIONS_VOICES = "voices"  # {"man": [...], "woman": [...]}
OPTIONS_GENDERS = "genders"
OPTIONS_LOOKS = "looks"
OPTIONS_FLOWS = "flows"
OPTIONS_SECONDS = "seconds"
OPTIONS_DEFAULTS = "defaults"

# Pricing type names (``pricing.type``): not shown either. Ours, by billing method (sandbox/pricing.py).
PRICING_TYPES = ("per_option", "per_media_second", "per_text_length", "per_output_second")

# Names the spec shows on a catalog record: no other field of a record may be spelled like them.
SHOWN_RECORD_FIELDS = ("input_schema", "pricing", "example")

# Where a names file sets each name: its table, then attribute -> key. One table per answer or body,
# so names within a table must differ (two members of one object cannot share a name).
TABLES: dict[str, dict[str, str]] = {
    "catalog": {
        "models_list": "list",
        "model_id": "id",
        "model_name": "name",
        "model_description": "description",
        "model_output_type": "output_type",
        "model_group": "group",
        "model_credits": "credits",
        "model_preview": "preview",
        "model_links": "links",
        "models_next": "next",
        "models_next_param": "next_param",
    },
    "estimate": {"estimate_model": "model", "estimate_credits": "credits", "estimate_billing": "billing"},
    "job": {
        "job_topic": "topic",
        "job_seconds": "seconds",
        "job_gender": "gender",
        "job_look": "look",
        "job_voice": "voice",
        "job_flow": "flow",
        "job_captions": "captions",
        "job_music": "music",
        "job_idempotency": "idempotency_key",
        "job_webhook": "webhook",
    },
    "job_read": {
        "job_progress": "progress",
        "job_script": "script",
        "job_portrait": "portrait",
        "job_lipsync": "lipsync",
        "job_credits": "credits",
        "job_edit_report": "edit_report",
        "job_degraded": "degraded",
    },
    "options": {
        "options_voices": "voices",
        "options_genders": "genders",
        "options_looks": "looks",
        "options_flows": "flows",
        "options_seconds": "seconds",
        "options_defaults": "defaults",
    },
    "blueprint": {"blueprint_started": "started", "blueprint_reason": "reason"},
}
PRICING_TABLE = "pricing_types"  # ours -> theirs, e.g. per_option = "by_quality"
SERVE_TABLE = "serve"  # the sandbox's shape of its answers (read by the sandbox alone)
BODY_TABLES = ("job",)  # names of a request body: names, never paths
LIST_MEMBERS = ("models_list", "models_next", "models_next_param")  # of the list answer, not a record
PAGING = ("cursor", "page", "offset", "link")
NUMBER_TYPES = ("string", "float")
CASES = ("upper", "title")
EXTRA_NUMBERS = ("balance", "balance_after", "listed")


@dataclass(frozen=True)
class Serve:
    """How a sandbox shapes its answers beyond names (``[serve]``): none of it is the client's to set.

    ``page_size`` models a page (0: the whole list), ``paging`` how the next page is named (a cursor,
    a page number, an offset, or a link); ``numbers`` sends credit figures as strings or floats and
    ``case`` output kinds and statuses in another case (values the spec makes certain, in another type
    or case); ``estimate_extra`` adds members to every estimate (name -> ``balance``, ``balance_after``,
    ``listed`` or an integer): numbers that are not the price.
    """

    page_size: int = 0
    paging: str = "cursor"
    numbers: str | None = None
    case: str | None = None
    estimate_extra: Mapping[str, str | int] = field(default_factory=dict)


class WireError(ValueError):
    """A names file that cannot be used; the message names the file, the key and the fix."""


@dataclass(frozen=True)
class Names:
    """One spelling of every name the spec does not show. ``DEFAULT`` is ours (the sandbox's)."""

    models_list: str = MODELS_LIST
    model_id: str = MODEL_ID
    model_name: str = MODEL_NAME
    model_description: str = MODEL_DESCRIPTION
    model_output_type: str = MODEL_OUTPUT_TYPE
    model_group: str = MODEL_GROUP
    model_credits: str = MODEL_CREDITS
    model_preview: str = MODEL_PREVIEW
    model_links: str = MODEL_LINKS
    models_next: str = MODELS_NEXT
    models_next_param: str = MODELS_NEXT_PARAM
    estimate_model: str = ESTIMATE_MODEL
    estimate_credits: str = ESTIMATE_CREDITS
    estimate_billing: str = ESTIMATE_BILLING
    job_topic: str = JOB_TOPIC
    job_seconds: str = JOB_SECONDS
    job_gender: str = JOB_GENDER
    job_look: str = JOB_LOOK
    job_voice: str = JOB_VOICE
    job_flow: str = JOB_FLOW
    job_captions: str = JOB_CAPTIONS
    job_music: str = JOB_MUSIC
    job_idempotency: str = JOB_IDEMPOTENCY
    job_webhook: str = JOB_WEBHOOK
    job_progress: str = JOB_PROGRESS
    job_script: str = JOB_SCRIPT
    job_portrait: str = JOB_PORTRAIT
    job_lipsync: str = JOB_LIPSYNC
    job_credits: str = JOB_CREDITS
    job_edit_report: str = JOB_EDIT_REPORT
    job_degraded: str = JOB_DEGRADED
    options_voices: str = OPTIONS_VOICES
    options_genders: str = OPTIONS_GENDERS
    options_looks: str = OPTIONS_LOOKS
    options_flows: str = OPTIONS_FLOWS
    options_seconds: str = OPTIONS_SECONDS
    options_defaults: str = OPTIONS_DEFAULTS
    blueprint_started: str = BLUEPRINT_STARTED
    blueprint_reason: str = BLUEPRINT_REASON
    pricing_types: Mapping[str, str] = field(default_factory=lambda: {name: name for name in PRICING_TYPES})
    serve: Serve = field(default_factory=Serve)

    def pricing_type(self, ours: str | None) -> str | None:
        """Our pricing type name as this spelling writes it."""
        return self.pricing_types.get(ours, ours) if ours is not None else None

    def our_pricing_type(self, theirs: str | None) -> str | None:
        """A pricing type name of this spelling as ours (unknown names stay as they are)."""
        back = {spelled: ours for ours, spelled in self.pricing_types.items()}
        return back.get(theirs, theirs) if theirs is not None else None


DEFAULT = Names()


def setting(attribute: str) -> str:
    """Where a names file sets ``attribute``: ``[catalog] credits``."""
    for table, keys in TABLES.items():
        if attribute in keys:
            return f"[{table}] {keys[attribute]}"
    raise KeyError(attribute)


def load(path: str | Path) -> tuple[Names, frozenset[str]]:
    """The spelling a names file sets (every name it leaves out is ours), and the attributes it set.

    A table or key the format does not have, a name that is not a non-empty string, or two members of
    one object given one name is a :class:`WireError` naming the file and the key.
    """
    where = Path(path).expanduser()
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise WireError(f"names file {where}: cannot be read ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise WireError(f"names file {where}: not TOML ({exc})") from None
    return parse(data, str(where))


def parse(data: Mapping[str, Any], where: str = "names") -> tuple[Names, frozenset[str]]:
    """A spelling from a names file's tables (see :func:`load`)."""
    keys = {table: {key: attr for attr, key in attrs.items()} for table, attrs in TABLES.items()}
    changes: dict[str, Any] = {}
    for table, values in data.items():
        known = keys.get(table)
        if table == PRICING_TABLE:
            changes["pricing_types"] = _pricing_types(values, where)
            continue
        if table == SERVE_TABLE:
            changes["serve"] = _serve(values, where)
            continue
        if known is None or not isinstance(values, Mapping):
            tables = ", ".join([*TABLES, PRICING_TABLE, SERVE_TABLE])
            raise WireError(f"names file {where}: [{table}] is not a table of names (tables: {tables})")
        for key, value in values.items():
            if key not in known:
                raise WireError(f"names file {where}: [{table}] has no {key!r} (keys: {', '.join(known)})")
            if not isinstance(value, str) or not value.strip():
                raise WireError(f"names file {where}: [{table}] {key} must be a field name, not {value!r}")
            value = value.strip()
            if "." in value and (table in BODY_TABLES or known[key] == "models_next_param"):
                raise WireError(f"names file {where}: [{table}] {key} = {value!r}: a name here, not a path")
            if any(not part for part in value.split(".")):
                raise WireError(f"names file {where}: [{table}] {key} = {value!r} is not a path of names")
            changes[known[key]] = value
    names = replace(DEFAULT, **changes)
    _distinct(names, where)
    return names, frozenset(changes)


def _serve(values: Any, where: str) -> Serve:
    """The ``[serve]`` table, each key checked."""
    said = f"names file {where}: [{SERVE_TABLE}]"
    if not isinstance(values, Mapping):
        raise WireError(f"{said} is a table (page_size, paging, numbers, case, estimate_extra)")
    allowed = {"page_size", "paging", "numbers", "case", "estimate_extra"}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise WireError(f"{said} has no {unknown[0]!r} (keys: {', '.join(sorted(allowed))})")
    size = values.get("page_size", 0)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise WireError(f"{said} page_size must be a whole number of models (0: no pages)")
    for key, choices in (("paging", PAGING), ("numbers", NUMBER_TYPES), ("case", CASES)):
        if key in values and values[key] not in choices:
            raise WireError(f"{said} {key} must be one of {', '.join(choices)}")
    extra = values.get("estimate_extra", {})
    if not isinstance(extra, Mapping) or not all(
        isinstance(k, str) and k and (v in EXTRA_NUMBERS or (isinstance(v, int) and not isinstance(v, bool)))
        for k, v in extra.items()
    ):
        raise WireError(
            f"{said} estimate_extra maps a member name to {', '.join(EXTRA_NUMBERS)} or an integer"
        )
    return Serve(size, values.get("paging", "cursor"), values.get("numbers"), values.get("case"), dict(extra))


def _pricing_types(values: Any, where: str) -> dict[str, str]:
    if not isinstance(values, Mapping) or not all(
        key in PRICING_TYPES and isinstance(value, str) and value.strip() for key, value in values.items()
    ):
        raise WireError(
            f"names file {where}: [{PRICING_TABLE}] maps our pricing types ({', '.join(PRICING_TYPES)}) "
            "to the service's names"
        )
    return {**DEFAULT.pricing_types, **{key: value.strip() for key, value in values.items()}}


def _distinct(names: Names, where: str) -> None:
    """Two members of one object cannot share a name, nor a record field take a name the spec shows."""
    for table, attrs in TABLES.items():
        spelled: dict[str, str] = {}
        for attr, key in attrs.items():
            if attr in LIST_MEMBERS:
                continue  # a member of the list answer (or a query parameter), not of a record
            name = getattr(names, attr)
            if name in spelled:
                raise WireError(f"names file {where}: [{table}] {spelled[name]} and {key} are both {name!r}")
            if table == "catalog" and name in SHOWN_RECORD_FIELDS:
                raise WireError(f"names file {where}: [{table}] {key} = {name!r} is a name the spec shows")
            spelled[name] = key


def tables(names: Names, only: frozenset[str] | None = None) -> dict[str, Any]:
    """``names`` as a names file's tables (every name, or the attributes in ``only``): what :func:`parse`
    reads back."""
    found: dict[str, Any] = {
        table: {key: getattr(names, attr) for attr, key in attrs.items() if only is None or attr in only}
        for table, attrs in TABLES.items()
    }
    if only is None or "pricing_types" in only:
        found[PRICING_TABLE] = dict(names.pricing_types)
    if names.serve != Serve() and (only is None or "serve" in only):
        serve = names.serve
        found[SERVE_TABLE] = {
            key: value
            for key, value in (
                ("page_size", serve.page_size),
                ("paging", serve.paging),
                ("numbers", serve.numbers),
                ("case", serve.case),
                ("estimate_extra", dict(serve.estimate_extra)),
            )
            if value not in (None, {})
        }
    return {table: keys for table, keys in found.items() if keys}


def dump(names: Names, only: frozenset[str] | None = None) -> str:
    """``names`` as a names file (every name, or the attributes in ``only``), for :func:`load`."""
    lines: list[str] = []
    for table, keys in tables(names, only).items():
        plain = {k: v for k, v in keys.items() if not isinstance(v, Mapping)}
        lines += [f"[{table}]", *(f"{key} = {json.dumps(value)}" for key, value in plain.items()), ""]
        for key, value in keys.items():
            if isinstance(value, Mapping):
                lines += [f"[{table}.{key}]", *(f"{k} = {json.dumps(v)}" for k, v in value.items()), ""]
    return "\n".join(lines)


def line(attribute: str, spelled: str) -> str:
    """The names-file line that sets ``attribute``: ``[estimate] credits = "cost"``."""
    return f"{setting(attribute)} = {json.dumps(spelled)}"


# -- names that are paths ------------------------------------------------------------------------


def get(data: Any, name: str, default: Any = None) -> Any:
    """The value at ``name`` in an answer object (a dotted path descends objects), else ``default``."""
    if isinstance(data, Mapping) and name in data:
        return data[name]
    current = data
    for part in name.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return default
        current = current[part]
    return current


def has(data: Any, name: str) -> bool:
    """Whether an answer object holds ``name`` (a dotted path descends objects)."""
    missing = object()
    return get(data, name, missing) is not missing


def put(data: dict[str, Any], name: str, value: Any) -> None:
    """Set ``name`` in an answer object being written (a dotted path makes the objects on its way)."""
    *outer, last = name.split(".")
    current = data
    for part in outer:
        current = current.setdefault(part, {})
    current[last] = value


def top(name: str) -> str:
    """The member of the answer object a (dotted) name lives in: ``price`` of ``price.credits``."""
    return name.split(".", 1)[0]
