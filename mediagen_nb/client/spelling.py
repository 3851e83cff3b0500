"""How this client spells the names the spec does not show: ours, a names file's, or learned from answers.

A names file (``MEDIAGEN_WIRE=names.toml``, the format ``mediagen sandbox --wire`` reads) sets them.
Where a name is not set and an answer leaves only one member it can be (the one list of records in
the models answer; the one record field whose values are all image, video or audio; the one integer
of every record, or of an estimate), the client uses that member and says once which it used. Anything
else missing is a ServiceResponseError naming the field, what was found and the setting: no missing
value is ever read as 0, None or an empty catalog.
"""

import re
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mediagen_nb.client.errors import ServiceResponseError
from mediagen_nb.client.resources.fields import Field, members, unshown
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.documents import KINDS
from mediagen_nb.protocol.environment import ENV_WIRE

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")  # an id as the catalog's: no spaces, no slashes


class SpellingLearned(UserWarning):
    """The client met a name the spec does not show spelled otherwise, and uses that spelling."""


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Spelling:
    """The names one client reads answers and writes bodies by (see the module); shared by its parts."""

    def __init__(
        self, names: wire.Names = wire.DEFAULT, given: frozenset[str] = frozenset(), source: str | None = None
    ) -> None:
        self.names = names
        self.given = given  # the attributes a names file set: never learned over
        self.source = source  # that file, for messages
        self.learned: dict[str, str] = {}  # attribute -> the spelling learned from an answer
        self.confirmed: set[str] = set(given)  # names a names file set, or an answer proved (not guessed)
        self.agent_asked = False  # make_video's schema was asked for (once: it costs three requests)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        where = f" from {self.source}" if self.source else ""
        return f"<Spelling{where} learned={self.learned}>"

    def learn(self, attribute: str, spelled: str, evidence: str) -> None:
        """Use ``spelled`` for ``attribute`` from now on, and say so once."""
        with self._lock:
            if getattr(self.names, attribute) == spelled:
                return
            ours = getattr(self.names, attribute)
            changed: dict[str, Any] = {attribute: spelled}
            self.names = replace(self.names, **changed)
            self.learned[attribute] = spelled
        warnings.warn(
            f"mediagen_nb: the service sends {evidence} as {spelled!r}, not {ours!r}: using {spelled!r} "
            f"(to set it, {wire.setting(attribute)} = {spelled!r} in a names file, {ENV_WIRE}=names.toml)",
            SpellingLearned,
            stacklevel=2,
        )

    def _learnable(self, attribute: str) -> bool:
        return attribute not in self.given

    def confirm(self, attribute: str, spelled: str, evidence: str) -> None:
        """``spelled`` is ``attribute``'s name beyond doubt (``evidence`` proved it): learned if it is not
        the one in use, and trusted from now on."""
        if getattr(self.names, attribute) != spelled:
            self.learn(attribute, spelled, evidence)
        with self._lock:
            self.confirmed.add(attribute)

    def is_confirmed(self, attribute: str) -> bool:
        """Whether a names file or an answer that leaves no doubt settled ``attribute``'s name."""
        return attribute in self.confirmed

    # -- the models answer ---------------------------------------------------------------------------

    def model_records(self, data: Any) -> list[Any]:
        """The records of a models answer (``data`` is an object holding the list, or the list itself),
        the names of their id, output kind and listed cost learned where only one member can be each."""
        records = self.model_list(data)
        self.learn_records(records)
        return records

    def model_list(self, data: Any) -> list[Any]:
        """The list of records in one models answer (or one page of it); the list's name learned when
        the answer holds one list of objects only."""
        if isinstance(data, list):
            records = data
        else:
            name = self.names.models_list
            field = unshown(self.names, "models_list")
            if not wire.has(data, name):
                lists = [k for k, v in data.items() if isinstance(v, list) and all(_is_record(i) for i in v)]
                lists += [p for p in _paths(data) if isinstance(wire.get(data, p), list) and p not in lists]
                lists = [p for p in lists if all(_is_record(i) for i in wire.get(data, p))]
                if len(lists) != 1 or not self._learnable("models_list") or not wire.get(data, lists[0]):
                    raise ServiceResponseError(
                        f"the service's models answer has no {name} list of models (data's members: "
                        f"{members(data)}): {field.hint()}",
                        field=name,
                    )
                self.learn("models_list", lists[0], "the list of models")
                name = lists[0]
            records = wire.get(data, name)
            if not isinstance(records, list):
                raise ServiceResponseError(
                    f"the service sent data.{name} = {str(records)[:60]!r}, not a list of models: "
                    f"{field.hint()}",
                    field=name,
                )
        if not records:
            raise ServiceResponseError(
                "the service listed no models at all, and its catalog is never empty: is MEDIAGEN_BASE_URL "
                "the service's address? (`mediagen doctor` shows what it sends)",
                field=self.names.models_list,
            )
        return records

    def learn_records(
        self, records: Sequence[Any], documented: Mapping[str, str | None] | None = None
    ) -> None:
        """Learn the names of a record's id, output kind and listed cost, each when no record has ours
        and exactly one member of every record (or of the objects in it) can be it. ``documented``
        (model id -> output kind, from llms.txt) tells the id and the kind apart where values alone
        cannot."""
        recognised = [r for r in records if _is_record(r)]
        if len(recognised) != len(records) or not recognised:
            return
        self._learn_member(recognised, "model_id", "each model's id", _ids, documented)
        self._learn_member(recognised, "model_output_type", "each model's output kind", _kinds, documented)
        self._learn_member(recognised, "model_credits", "each model's listed cost", _wholes, None)

    def _learn_member(
        self,
        records: Sequence[Mapping[str, Any]],
        attribute: str,
        evidence: str,
        fits: Callable[[Sequence[Any]], bool],
        documented: Mapping[str, str | None] | None,
    ) -> None:
        name = getattr(self.names, attribute)
        if any(wire.has(record, name) for record in records) or not self._learnable(attribute):
            return  # ours is there (a record without it is refused when it is read), or it was set
        taken = {getattr(self.names, attr) for attr in wire.TABLES["catalog"]} | set(wire.SHOWN_RECORD_FIELDS)
        shared = set(_paths(records[0])).intersection(*(_paths(r) for r in records[1:])) - taken
        found = [p for p in _paths(records[0]) if p in shared and fits([wire.get(r, p) for r in records])]
        if len(found) > 1 and documented:
            found = [p for p in found if _documented(records, p, attribute, self.names, documented)]
        if len(found) == 1:
            self.learn(attribute, found[0], evidence)

    # -- the estimate answer -------------------------------------------------------------------------

    def estimate_data(self, data: Mapping[str, Any], model_id: str) -> Mapping[str, Any]:
        """An estimate answer, its credits, model and billing names learned when unambiguous (the one
        whole number, where a price can be; the one text that is the model asked; the one other text).
        Which of several numbers is the price is :mod:`mediagen_nb.client.certain`'s to settle."""
        names = self.names
        flat = _flat(data)
        if not wire.has(data, names.estimate_credits) and self._learnable("estimate_credits"):
            wholes = [k for k, v in flat.items() if _price_like(v)]
            if len(wholes) == 1:
                self.learn("estimate_credits", wholes[0], "an estimate's credits")
        if not wire.has(data, names.estimate_model) and self._learnable("estimate_model"):
            same = [k for k, v in flat.items() if v == model_id]
            if len(same) == 1:
                self.learn("estimate_model", same[0], "the model an estimate priced")
        names = self.names
        if not wire.has(data, names.estimate_billing) and self._learnable("estimate_billing"):
            texts = [
                k
                for k, v in flat.items()
                if isinstance(v, str) and k != names.estimate_model and not _number_text(v)
            ]
            if len(texts) == 1:
                self.learn("estimate_billing", texts[0], "how an estimate is billed")
        return data

    # -- the topic-to-video answers ------------------------------------------------------------------

    def job_data(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """A job read, the names of its progress, script, portrait, lip-sync, credits, edit report and
        skipped flag learned where ours is absent and one member of the read can be each."""
        if not isinstance(data, Mapping):
            return data
        names = self.names
        ours = {getattr(names, attr) for attr in wire.TABLES["job_read"]}
        reports = {k for k, v in data.items() if isinstance(v, Mapping) and EDIT_REPORT_KEYS & set(v)}
        flat = {
            k: v
            for k, v in _flat(data).items()
            if (k not in JOB_SHOWN and k not in ours and wire.top(k) not in reports) or k in reports
        }
        for attribute, evidence, fits in JOB_SHAPES:
            if wire.has(data, getattr(self.names, attribute)) or not self._learnable(attribute):
                continue
            taken = {getattr(self.names, attr) for attr in wire.TABLES["job_read"]}
            found = [k for k, v in flat.items() if k not in taken and v is not None and fits(v)]
            if len(found) == 1:
                self.learn(attribute, found[0], evidence)
        return data

    def options_data(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
        """The options answer, the names of its voices, genders, looks, edit styles, length bounds and
        defaults learned where ours is absent and one member can be each (by the values the spec names)."""
        if not isinstance(data, Mapping):
            return data
        flat = _flat(data)
        for attribute, evidence, fits in OPTIONS_SHAPES:
            if wire.has(data, getattr(self.names, attribute)) or not self._learnable(attribute):
                continue
            taken = {getattr(self.names, attr) for attr in wire.TABLES["options"]}
            found = [k for k, v in flat.items() if k not in taken and fits(v)]
            if len(found) == 1:
                self.learn(attribute, found[0], evidence)
        return data

    def job_body_confirmed(self) -> bool:
        """Whether the topic-to-video start body's names are settled: a names file's ``[job]`` table, or
        the agent server's ``make_video`` schema read (:meth:`learn_job_body`)."""
        return bool(self.given & JOB_BODY) or self.confirmed >= JOB_BODY

    def learn_job_body(self, schema: Any) -> list[str]:
        """The start body's names from ``make_video``'s input schema (``tools/list``): each meaning's one
        property, learned (said once) and confirmed. The meanings no single property has, by name."""
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if not isinstance(properties, Mapping):
            return sorted(wire.TABLES["job"][a] for a in JOB_BODY)
        found: dict[str, str] = {}
        for attribute, test in BODY_MEANINGS:
            fits = [
                name
                for name, prop in properties.items()
                if isinstance(name, str)
                and isinstance(prop, Mapping)
                and name not in found.values()
                and test(name.lower(), prop)
            ]
            if len(fits) == 1:
                found[attribute] = fits[0]
        unsettled = sorted(wire.TABLES["job"][a] for a in JOB_BODY if a not in found)
        if not unsettled:
            for attribute, name in found.items():
                self.confirm(attribute, name, "the topic-to-video start body's names (make_video's schema)")
        return unsettled

    def field(self, attribute: str) -> Field:
        """The field ``attribute`` names now (for messages)."""
        return unshown(self.names, attribute)


JOB_BODY = frozenset(wire.TABLES["job"])


def _words(prop: Mapping[str, Any]) -> str:
    return str(prop.get("description") or "").lower() + " " + str(prop.get("title") or "").lower()


def _enum(prop: Mapping[str, Any]) -> set[str]:
    values = prop.get("enum")
    return {str(v).lower() for v in values} if isinstance(values, list) else set()


def _kind(prop: Mapping[str, Any], *kinds: str) -> bool:
    kind = prop.get("type")
    return bool(set(kind) & set(kinds)) if isinstance(kind, list) else kind in kinds


BodyTest = Callable[[str, Mapping[str, Any]], bool]
# Each meaning of the start body (the spec's table) and how make_video's schema shows it: by the values
# the spec names (genders, looks, voices, edit styles, the 20 to 180 seconds), else by its words.
BODY_MEANINGS: tuple[tuple[str, BodyTest], ...] = (
    ("job_gender", lambda n, p: {"man", "woman"} <= _enum(p)),
    ("job_look", lambda n, p: "creator" in _enum(p) or "newscaster" in _enum(p)),
    ("job_voice", lambda n, p: bool({"archer", "lucy"} & _enum(p)) or (not _enum(p) and "voice" in n)),
    (
        "job_flow",
        lambda n, p: bool({"classic", "karaoke"} & _enum(p)) or (not _enum(p) and "edit style" in _words(p)),
    ),
    (
        "job_seconds",
        lambda n, p: (
            _kind(p, "number", "integer")
            and (p.get("maximum") == 180 or "second" in n or "length" in n or "duration" in n)
        ),
    ),
    ("job_captions", lambda n, p: _kind(p, "boolean") and "caption" in n + _words(p)),
    ("job_music", lambda n, p: _kind(p, "boolean") and "music" in n + _words(p)),
    (
        "job_idempotency",
        lambda n, p: (
            _kind(p, "string")
            and any(
                word in n + _words(p)
                for word in ("idempot", "dedup", "same key", "no charge", "no new charge")
            )
        ),
    ),
    (
        "job_webhook",
        lambda n, p: _kind(p, "string") and ("webhook" in n + _words(p) or "https url called" in _words(p)),
    ),
    (
        "job_topic",
        lambda n, p: (
            _kind(p, "string") and not _enum(p) and ("topic" in n + _words(p) or "about" in _words(p))
        ),
    ),
)


def _paths(record: Mapping[str, Any]) -> list[str]:
    """A record's members and, for each member that is an object, its members as dotted paths."""
    found: list[str] = []
    for member, value in record.items():
        found.append(member)
        if isinstance(value, Mapping) and member not in wire.SHOWN_RECORD_FIELDS:
            found += [f"{member}.{inner}" for inner in value if isinstance(inner, str)]
    return found


def _flat(data: Mapping[str, Any]) -> dict[str, Any]:
    """An answer's values by member and by dotted path one level down."""
    return {path: wire.get(data, path) for path in _paths(data)}


def _documented(
    records: Sequence[Mapping[str, Any]],
    path: str,
    attribute: str,
    names: wire.Names,
    documented: Mapping[str, str | None],
) -> bool:
    """Whether member ``path`` of every record agrees with llms.txt: its ids, or its kinds by id."""
    if attribute == "model_id":
        return all(wire.get(r, path) in documented for r in records)
    ids = [wire.get(r, names.model_id) for r in records]
    return all(
        isinstance(i, str) and str(wire.get(r, path)).lower() == str(documented.get(i) or "").lower()
        for i, r in zip(ids, records, strict=True)
    )


def _price_like(value: Any) -> bool:
    """A whole number of credits, or one in another type (``"25"``, ``25.0``)."""
    if _whole(value):
        return bool(value >= 0)
    if isinstance(value, float):
        return value.is_integer() and value >= 0
    return isinstance(value, str) and value.strip().isdigit()


def _number_text(value: str) -> bool:
    return value.strip().lstrip("-").replace(".", "", 1).isdigit()


def _url(value: Any, suffixes: tuple[str, ...]) -> bool:
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        return False
    path = value.split("?", 1)[0].lower()
    return path.endswith(suffixes)


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif")
VIDEO_SUFFIXES = (".mp4", ".webm", ".mov", ".m4v")
EDIT_REPORT_KEYS = frozenset({"captions", "broll", "images", "music", "loudnorm", "skipped"})
JOB_SHOWN = frozenset(
    {
        "jobId",
        "status",
        "stage",
        "videoUrl",
        "flow",
        "topic",
        "voice",
        "seconds",
        "posterUrl",
        "error",
        "createdAt",
        "updatedAt",
    }
)
Shape = tuple[str, str, Callable[[Any], bool]]
JOB_SHAPES: tuple[Shape, ...] = (
    (
        "job_progress",
        "a job's progress",
        lambda v: isinstance(v, float) and 0 <= v <= 1,
    ),
    ("job_credits", "a job's credits", lambda v: _price_like(v) and not isinstance(v, float)),
    ("job_script", "a job's script", lambda v: isinstance(v, str) and " " in v.strip() and "://" not in v),
    ("job_portrait", "a job's presenter image", lambda v: _url(v, IMAGE_SUFFIXES)),
    ("job_lipsync", "a job's lip-synced video", lambda v: _url(v, VIDEO_SUFFIXES)),
    (
        "job_edit_report",
        "a job's edit report",
        lambda v: isinstance(v, Mapping) and bool(EDIT_REPORT_KEYS & set(v)),
    ),
    ("job_degraded", "a job's skipped-steps flag", lambda v: isinstance(v, bool)),
)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


OPTIONS_SHAPES: tuple[Shape, ...] = (
    (
        "options_voices",
        "the voices by gender",
        lambda v: isinstance(v, Mapping) and bool(v) and all(_strings(x) for x in v.values()),
    ),
    (
        "options_genders",
        "the presenter genders",
        lambda v: _strings(v) and {"man", "woman"} <= {x.lower() for x in v},
    ),
    ("options_looks", "the presenter looks", lambda v: _strings(v) and "creator" in [x.lower() for x in v]),
    (
        "options_flows",
        "the edit styles",
        lambda v: _strings(v) and bool({"classic", "karaoke", "reveal"} & {x.lower() for x in v}),
    ),
    (
        "options_seconds",
        "the length bounds",
        lambda v: isinstance(v, Mapping) and all(isinstance(v.get(k), (int, float)) for k in ("min", "max")),
    ),
)


def _is_record(value: Any) -> bool:
    return isinstance(value, Mapping)


def _ids(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str) and _ID.match(v) for v in values) and len(set(values)) == len(values)


def _kinds(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str) and v.lower() in KINDS for v in values)


def _wholes(values: Sequence[Any]) -> bool:
    return all(_price_like(v) for v in values)


def from_file(path: str | None) -> Spelling:
    """The spelling of a names file (None: ours); a file that cannot be used is a ConfigurationError."""
    from mediagen_nb.client.errors import ConfigurationError

    if path is None:
        return Spelling()
    try:
        names, given = wire.load(path)
    except wire.WireError as exc:
        raise ConfigurationError(f"{exc} ({ENV_WIRE})") from None
    return Spelling(names, given, path)
