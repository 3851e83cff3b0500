"""A snapshot of a service's public catalog (``mediagen sandbox sync``), written and read back to serve.

A snapshot folder holds the catalog endpoints' answers as the service sent them, and where and when
they were read::

    snapshot.json    {"source": URL, "taken": ISO time, "date": "YYYY-MM-DD", "wire": {names file tables}}
    models.json      the models answer's data
    models/ID.json   each model's answer's data (with its ``example``)
    openapi.json     llms.txt

Read back, each record becomes a model the sandbox prices and runs. The public record carries the
listed price and the pricing type but not the rule behind them, so the bundled rule of the same id
is used when its type, ``varies_by`` and options still fit (scaled to a listed price that changed);
otherwise a rule is derived from the listed price; and a pricing type the sandbox does not know is
served at its listed price. Each approximation is flagged (``Catalog.flagged``): its estimates, the
sandbox's info and the sync's report say so.
"""

import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.documents import KINDS
from mediagen_nb.protocol.schema import media_kind
from mediagen_nb.sandbox import nesting
from mediagen_nb.sandbox.catalog import BY_ID, Catalog, ModelSpec
from mediagen_nb.sandbox.catalog.loader import property_problems, rule_problems
from mediagen_nb.sandbox.pricing import (
    REFERENCE_TEXT_CHARS,
    Flat,
    PerMediaSecond,
    PerOption,
    PerOutputSecond,
    PerTextLength,
    PriceRule,
)

META, LIST, DETAILS, OPENAPI, LLMS = "snapshot.json", "models.json", "models", "openapi.json", "llms.txt"
MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # a model id that may name a file
RUNTIME_BY_KIND = {"image": 20.0, "video": 60.0, "audio": 8.0}  # a model the bundled catalog lacks
MAX_FILE_BYTES = 64 * 2**20
NOT_SERVED = "not served"  # how a model the sandbox cannot serve is flagged
STAGING = ".incoming"  # where a sync writes until it has every answer


class SnapshotError(ValueError):
    """A snapshot that cannot be read or written; the message names the file or field and the fix."""


def detail_file(folder: Path, model_id: Any) -> Path:
    """Where one model's answer is kept: its id checked before it names a file, and the file proven to
    lie in the folder."""
    if not isinstance(model_id, str) or not MODEL_ID.match(model_id):
        raise SnapshotError(f"model id {str(model_id)[:60]!r} cannot name a file: not letters, digits, . - _")
    place = (folder / DETAILS / f"{model_id}.json").resolve()
    if place.parent != (folder / DETAILS).resolve():
        raise SnapshotError(f"model id {model_id!r} does not stay in {folder / DETAILS}")
    return place


class Writer:
    """A snapshot being written into ``folder``: each model's answer as it arrives (so a sync holds one
    at a time), the rest at :meth:`finish`. Until then it all goes to a staging folder inside, so the
    snapshot already there stays whole if the sync fails (:meth:`abandon`). A folder holding anything
    but a snapshot is refused, so nothing of the user's is overwritten."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.made = not folder.exists()
        if (
            not self.made
            and any(p.name != STAGING for p in folder.iterdir())
            and not (folder / META).is_file()
        ):
            raise SnapshotError(f"{folder} holds files and no {META}: give --out an empty or a new folder")
        self.staging = folder / STAGING
        shutil.rmtree(self.staging, ignore_errors=True)  # what a killed sync left
        (self.staging / DETAILS).mkdir(parents=True)

    def detail(self, model_id: str, answer: Any) -> None:
        """Keep one model's answer now."""
        _dump(detail_file(self.staging, model_id), answer)

    def finish(self, meta: Mapping[str, Any], listed: Any, openapi: Any, llms: str) -> None:
        """Write the rest and put the new snapshot in place of the old (a model removed since the last
        sync does not linger)."""
        _dump(self.staging / LIST, listed)
        _dump(self.staging / OPENAPI, openapi)
        (self.staging / LLMS).write_text(llms, encoding="utf-8")
        _dump(self.staging / META, meta)
        old = self.folder / f"{STAGING}-old"
        shutil.rmtree(old, ignore_errors=True)
        if (self.folder / DETAILS).is_dir():
            (self.folder / DETAILS).rename(old)
        (self.staging / DETAILS).rename(self.folder / DETAILS)
        for name in (LIST, OPENAPI, LLMS, META):  # the meta last: it marks the folder a snapshot
            (self.staging / name).replace(self.folder / name)
        shutil.rmtree(old, ignore_errors=True)
        self.staging.rmdir()

    def abandon(self) -> None:
        """Drop what was written; the folder is as it was (gone again if this made it)."""
        shutil.rmtree(self.folder if self.made else self.staging, ignore_errors=True)


def _dump(where: Path, value: Any) -> None:
    with where.open("w", encoding="utf-8") as file:  # written as it is encoded, never whole in memory
        json.dump(value, file, indent=1, ensure_ascii=False)
        file.write("\n")


def _load(where: Path) -> Any:
    try:
        too_large = where.stat().st_size > MAX_FILE_BYTES
        raw = b"" if too_large else where.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"{where}: cannot be read ({exc.strerror or exc}); a sync's --out?") from None
    if too_large:
        raise SnapshotError(f"{where} is over {MAX_FILE_BYTES // 2**20} MB")
    try:
        return nesting.loads(raw)
    except nesting.TooDeep as exc:
        raise SnapshotError(f"{where}: {exc}, deeper than the sandbox reads") from None
    except ValueError as exc:  # also text that is not UTF-8
        raise SnapshotError(f"{where}: not JSON ({exc})") from None


def read(folder: Path) -> Catalog:
    """The catalog a snapshot folder holds, its approximated prices flagged."""
    folder = Path(folder).expanduser()
    meta = _load(folder / META)
    if not isinstance(meta, Mapping):
        raise SnapshotError(f"{folder / META}: not an object")
    try:
        names = wire.parse(meta.get("wire") or {}, str(folder / META))[0]
    except wire.WireError as exc:
        raise SnapshotError(str(exc)) from None
    specs, flagged = [], {}
    for record in records(_load(folder / LIST), names, str(folder / LIST)):
        model_id = wire.get(record, names.model_id)
        detail_path = detail_file(folder, model_id)
        spec, why = model_of(record, _load(detail_path) if detail_path.is_file() else None, names)
        if spec is not None:
            specs.append(spec)
        if why is not None:
            flagged[str(model_id)] = why
    if not specs:
        raise SnapshotError(f"{folder}: no model in it can be served")
    return Catalog(tuple(specs), str(folder), str(meta.get("date") or "undated"), flagged)


def records(listed: Any, names: wire.Names, where: str) -> list[Mapping[str, Any]]:
    """The records of a models answer (an object holding the list, or the list), each an object with an
    id; a :class:`SnapshotError` naming the names file otherwise."""
    found = wire.get(listed, names.models_list) if isinstance(listed, Mapping) else listed
    if not isinstance(found, list) or not found:
        members = ", ".join(map(str, listed)) if isinstance(listed, Mapping) else type(listed).__name__
        raise SnapshotError(
            f"{where}: no list of models under {names.models_list!r} (found: {members}); give the service's "
            "names with --wire NAMES.toml"
        )
    for record in found:
        if not isinstance(record, Mapping) or wire.get(record, names.model_id) is None:
            raise SnapshotError(
                f"{where}: a model without {names.model_id!r}; give the service's names: --wire NAMES.toml"
            )
    return found


def model_of(
    record: Mapping[str, Any], detail: Any, names: wire.Names
) -> tuple[ModelSpec | None, str | None]:
    """A model of the list as the sandbox serves it: from its own answer (``detail``) when that is an
    object, else from its list record (see :func:`spec_of`)."""
    return spec_of(detail if isinstance(detail, Mapping) else record, names)


def spec_of(record: Mapping[str, Any], names: wire.Names) -> tuple[ModelSpec | None, str | None]:
    """A model the sandbox can serve from a public record, and why its price is approximated (or why it
    is not served: None and the reason)."""
    model_id = str(wire.get(record, names.model_id))
    kind, credits = wire.get(record, names.model_output_type), wire.get(record, names.model_credits)
    kind = kind.lower() if isinstance(kind, str) else kind  # a service may write IMAGE or Image
    if (isinstance(credits, str) and credits.strip().isdigit()) or (
        isinstance(credits, float) and credits.is_integer()
    ):
        credits = int(credits)  # "3" or 3.0: the spec's integer in another type
    schema = record.get("input_schema")
    if kind not in KINDS:
        return None, f"{NOT_SERVED}: output kind {kind!r} is none of {', '.join(KINDS)}"
    if not isinstance(credits, int) or isinstance(credits, bool) or credits < 0:
        return None, f"{NOT_SERVED}: listed cost {credits!r} ({names.model_credits}) is not a whole number"
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return None, f"{NOT_SERVED}: its input_schema has no properties"
    input_schema = {**schema, "properties": dict(schema["properties"]), "required": _required(schema)}
    unreadable = [
        p for name, prop in input_schema["properties"].items() for p in property_problems(name, prop)
    ]
    if unreadable:
        return None, f"{NOT_SERVED}: " + "; ".join(unreadable)
    pricing = record.get("pricing")
    public = None
    if isinstance(pricing, Mapping):
        public = {**pricing, "type": names.our_pricing_type(pricing.get("type"))}
    bundled = BY_ID.get(model_id)
    rule, why = priced(credits, input_schema["properties"], public, bundled)
    example = record.get("example")
    spec = ModelSpec(
        id=model_id,
        name=str(wire.get(record, names.model_name) or model_id),
        description=str(wire.get(record, names.model_description) or ""),
        kind=kind,
        group=str(wire.get(record, names.model_group) or ""),
        credits=credits,
        input_schema=input_schema,
        pricing=public,
        rule=rule,
        runtime_s=bundled.runtime_s if bundled else RUNTIME_BY_KIND[kind],
        runtime_per_second=bundled.runtime_per_second if bundled else 0.0,
        media_field=rule.field if isinstance(rule, PerMediaSecond) else None,
        example=dict(example) if isinstance(example, Mapping) else None,
        min_media_seconds=bundled.min_media_seconds if bundled else (),
    )
    return spec, why


def _required(schema: Mapping[str, Any]) -> list[str]:
    required = schema.get("required")
    return [name for name in required if isinstance(name, str)] if isinstance(required, list) else []


def priced(
    credits: int, props: Mapping[str, Any], public: Mapping[str, Any] | None, bundled: ModelSpec | None
) -> tuple[PriceRule, str | None]:
    """The rule a snapshot's model is priced by, and why it is an approximation (None: it is not)."""
    listed = max(1, credits)
    at_least = None if credits >= 1 else f"listed at {credits} credits, served at 1 (a run costs 1 at least)"
    if public is None:
        return Flat(credits=listed), at_least
    kind = public.get("type")
    varies = public.get("varies_by")
    varies_by = [n for n in varies if isinstance(n, str)] if isinstance(varies, list) else []
    if kind not in wire.PRICING_TYPES:
        return Flat(credits=listed), (
            f"pricing type {kind!r} unknown to the sandbox: each run is charged its listed {credits} credits"
        )
    same = bundled is not None and bundled.pricing == {"type": kind, "varies_by": varies_by}
    if bundled is not None and same and not rule_problems(bundled.rule, props):
        if bundled.credits == credits:
            return bundled.rule, None
        return bundled.rule.scaled(credits / bundled.credits), (
            f"listed at {credits} credits (bundled: {bundled.credits}): its other prices scaled alike"
        )
    derived = _derived(kind, varies_by, credits, props)
    by = ", ".join(varies_by) or "nothing"
    problems = rule_problems(derived, props) if derived is not None else []
    if derived is None or problems:
        if same and bundled is not None:
            problems = rule_problems(bundled.rule, props)
        why = "; ".join(problems) or "no input it varies by can set a price of this type"
        return Flat(
            credits=listed
        ), f"{kind} by {by} cannot be priced ({why}): every run costs its listed {listed}"
    return derived, f"{kind} by {by}: the catalog lists one price, {credits} credits, for every input"


def _derived(kind: str, varies_by: list[str], credits: int, props: Mapping[str, Any]) -> PriceRule | None:
    """A rule of ``kind`` priced from the one listed figure, over the first input it can read."""
    fields = {name: props[name] for name in varies_by if isinstance(props.get(name), dict)}

    def first(fits: Any) -> str | None:
        return next((name for name, prop in fields.items() if fits(prop)), None)

    if kind == "per_option" and (field := first(lambda p: isinstance(p.get("enum"), list) and p["enum"])):
        return PerOption(field=field, prices=tuple((option, credits) for option in fields[field]["enum"]))
    if kind == "per_media_second" and (field := first(lambda p: media_kind(p) in ("audio", "video"))):
        return PerMediaSecond(field=field, rate=credits / wire.LISTED_MEDIA_SECONDS)
    if kind == "per_output_second" and (field := first(lambda p: isinstance(p.get("default"), (int, float)))):
        default = float(fields[field]["default"])
        return PerOutputSecond(field=field, rate=credits / default) if default > 0 else None
    if kind == "per_text_length" and (field := first(lambda p: p.get("type") == "string")):
        return PerTextLength(field=field, chars=REFERENCE_TEXT_CHARS, credits=credits)
    return None
