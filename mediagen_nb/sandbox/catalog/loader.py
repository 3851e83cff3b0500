"""Reading ``models.toml`` into checked :class:`ModelSpec` s: fragments and families expanded, price rules
built from their tables, and every model refused at import when its schema and price disagree."""

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from mediagen_nb.protocol import replication as replication_rules
from mediagen_nb.protocol import schema as schema_rules
from mediagen_nb.protocol.documents import KINDS
from mediagen_nb.protocol.paths import path
from mediagen_nb.protocol.schema import media_kind
from mediagen_nb.sandbox import datafiles
from mediagen_nb.sandbox.catalog.model import ModelSpec, Schema
from mediagen_nb.sandbox.pricing import (
    Flat,
    Multiplier,
    Option,
    PerMediaSecond,
    PerOption,
    PerOutputSecond,
    PerTextLength,
    PriceRule,
    listed_credits,
    same_option,
)

ID_PATTERN = re.compile(r"^[a-z0-9.-]+$")
SAMPLE_PREFIX = "sample:"  # an example value naming one of the sandbox's sample files
_FIELDS = frozenset(
    {
        "id",
        "name",
        "description",
        "kind",
        "group",
        "price",
        "runtime",
        "runtime_per_second",
        "required",
        "input",
        "family",
        "without",
        "example",
        "min_media_seconds",
    }
)


class CatalogError(ValueError):
    """The catalog data is inconsistent; the message names the model and every problem."""


def _property(spec: Any, fragments: Mapping[str, Schema], where: str) -> Schema:
    """One input property: a fragment's name, a fragment with keys replaced (``use``), or inline."""
    if isinstance(spec, str):
        spec = {"use": spec}
    if not isinstance(spec, dict):
        raise CatalogError(f"{where}: a property is a fragment name or a table, not {spec!r}")
    rest = dict(spec)
    name = rest.pop("use", None)
    if name is None:
        return copy.deepcopy(rest)
    if name not in fragments:
        raise CatalogError(f"{where}: unknown fragment {name!r}")
    return {**copy.deepcopy(fragments[name]), **copy.deepcopy(rest)}


def _properties(entry: Mapping[str, Any], data: Mapping[str, Any], where: str) -> dict[str, Schema]:
    """A model's properties in order: its own ``input``, then its ``family``'s (less ``without``)."""
    fragments = data.get("fragments", {})
    own = {
        name: _property(spec, fragments, f"{where}.{name}") for name, spec in entry.get("input", {}).items()
    }
    family_name = entry.get("family")
    if family_name is None:
        return own
    family = data.get("families", {}).get(family_name)
    if family is None:
        raise CatalogError(f"{where}: unknown family {family_name!r}")
    without = set(entry.get("without", ()))
    shared = {n: _property(s, fragments, f"{where}.{n}") for n, s in family.items() if n not in without}
    return {**own, **shared}


def _options(
    props: Mapping[str, Schema], field: str, table: Mapping[str, Any], where: str
) -> tuple[Any, ...]:
    """``(option, amount)`` pairs of a price or multiplier table, its keys read as the input's options."""
    prop = props.get(field)
    if prop is None:
        raise CatalogError(f"{where}: prices unknown input {field}")
    options: list[Option] = [False, True] if prop.get("type") == "boolean" else list(prop.get("enum", []))
    by_label = {str(o).lower() if isinstance(o, bool) else str(o): o for o in options}
    pairs = []
    for label, amount in table.items():
        if label not in by_label:
            raise CatalogError(f"{where}: {field} has no option {label!r}")
        pairs.append((by_label[label], amount))
    return tuple(pairs)


def _rule(price: Any, props: Mapping[str, Schema], where: str) -> PriceRule:
    """A price rule from its data: a flat number of credits, or a table naming the billing method."""
    if isinstance(price, int) and not isinstance(price, bool):
        return Flat(credits=price)
    if not isinstance(price, dict):
        raise CatalogError(f"{where}: price must be credits or a table, not {price!r}")
    multipliers = tuple(
        Multiplier(field, _options(props, field, factors, where))
        for field, factors in price.get("by", {}).items()
    )
    if "per_option" in price:
        field = price["per_option"]
        return PerOption(
            field=field, prices=_options(props, field, price["prices"], where), multipliers=multipliers
        )
    if "per_media_second" in price:
        return PerMediaSecond(field=price["per_media_second"], rate=price["rate"], multipliers=multipliers)
    if "per_output_second" in price:
        return PerOutputSecond(field=price["per_output_second"], rate=price["rate"], multipliers=multipliers)
    if "per_text_length" in price:
        field = price["per_text_length"]
        return PerTextLength(
            field=field, chars=price["chars"], credits=price["credits"], multipliers=multipliers
        )
    raise CatalogError(f"{where}: unknown billing method in {sorted(price)}")


def _samples(value: Any) -> Any:
    """An example with ``sample:NAME`` values as the sandbox's sample paths."""
    if isinstance(value, str) and value.startswith(SAMPLE_PREFIX):
        return path("sandbox_samples", name=value.removeprefix(SAMPLE_PREFIX))
    if isinstance(value, dict):
        return {key: _samples(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_samples(item) for item in value]
    return value


def _same_options(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(any(same_option(x, y) for y in b) for x in a)


_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object"})


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def property_problems(name: str, prop: Any) -> list[str]:
    """Where one input property is not a schema the sandbox can check inputs against: a shape it
    cannot read (a list of types, an enum that is no list, a bound that is no number), or a default
    its own rules refuse (the value a run that leaves the input out would be given)."""
    where = f"input {name}"
    if not isinstance(prop, Mapping):
        return [f"{where} is {type(prop).__name__}, not an object"]
    problems = []
    if "type" in prop and not (isinstance(prop["type"], str) and prop["type"] in _TYPES):
        problems.append(
            f"{where}: type {prop['type']!r} is none the sandbox checks ({', '.join(sorted(_TYPES))})"
        )
    if "enum" in prop and not (isinstance(prop["enum"], list) and prop["enum"]):
        problems.append(f"{where}: enum {prop['enum']!r} is not a list of options")
    problems += [
        f"{where}: {k} {prop[k]!r} is not a number"
        for k in ("minimum", "maximum")
        if k in prop and not _number(prop[k])
    ]
    problems += [
        f"{where}: {k} {prop[k]!r} is not a whole number"
        for k in ("maxLength", "maxItems", "minItems")
        if k in prop and not (isinstance(prop[k], int) and not isinstance(prop[k], bool) and prop[k] >= 0)
    ]
    if "items" in prop:
        problems += property_problems(f"{name}[]", prop["items"])
    if problems or "default" not in prop or prop["default"] is None:
        return problems
    try:
        schema_rules.normalize({"properties": {name: prop}}, {name: prop["default"]})
    except schema_rules.InputError as exc:
        return [f"{where}: its default {prop['default']!r} breaks its own rule ({exc.message})"]
    return []


def rule_problems(rule: PriceRule, props: Mapping[str, Any]) -> list[str]:
    """Where a price rule and a model's input properties disagree (none: the rule can price it)."""
    problems = [f"prices unknown input {n}" for n in rule.varies_by() if not isinstance(props.get(n), dict)]
    if problems:
        return problems
    if isinstance(rule, PerOption) and not _same_options(rule.options(), props[rule.field].get("enum", [])):
        problems.append(f"price table of {rule.field} does not match its enum")
    for m in rule.multipliers:
        boolean = props[m.field].get("type") == "boolean"
        if not _same_options(m.options(), [False, True] if boolean else props[m.field].get("enum", [])):
            problems.append(f"multipliers of {m.field} do not match its options")
        if "default" not in props[m.field]:
            problems.append(f"{m.field} needs a default (the listed price is quoted at it)")
    if isinstance(rule, PerMediaSecond) and media_kind(props[rule.field]) not in ("audio", "video"):
        problems.append(f"{rule.field} is not an audio or video field")
    if isinstance(rule, PerOutputSecond):
        prop = props[rule.field]
        if "default" not in prop:
            problems.append(f"{rule.field} needs a default")
        if prop.get("type") not in ("integer", "number") or not (
            _number(prop.get("maximum")) or "enum" in prop
        ):
            problems.append(f"{rule.field} is not a number input with a maximum or options")
    return problems


def check(model: ModelSpec) -> None:
    """Refuse a model whose schema and price rule disagree (raised at import, naming every problem)."""
    props = model.input_schema["properties"]
    problems = [] if ID_PATTERN.match(model.id) and model.kind in KINDS else ["bad id or kind"]
    problems += [f"required {n} not a property" for n in model.input_schema["required"] if n not in props]
    problems += [f"{n} has no description" for n, p in props.items() if not p.get("description")]
    problems += [problem for n, p in props.items() for problem in property_problems(n, p)]
    problems += rule_problems(model.rule, props)
    if problems:
        raise CatalogError(f"catalog model {model.id}: " + "; ".join(problems))


def model(entry: Mapping[str, Any], data: Mapping[str, Any]) -> ModelSpec:
    """One checked model from its ``[[models]]`` entry; ``credits``, ``pricing``, ``media_field`` derive."""
    where = f"catalog model {entry.get('id')}"
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise CatalogError(f"{where}: unknown fields {unknown}")
    props = _properties(entry, data, where)
    schema: Schema = {"type": "object", "properties": props, "required": list(entry.get("required", []))}
    rule = _rule(entry.get("price"), props, where)
    spec = ModelSpec(
        id=entry["id"],
        name=entry["name"],
        description=entry["description"],
        kind=entry["kind"],
        group=entry["group"],
        credits=listed_credits(rule, schema),
        input_schema=schema,
        pricing=rule.public(),
        rule=rule,
        runtime_s=entry["runtime"],
        runtime_per_second=entry.get("runtime_per_second", 0.0),
        media_field=rule.field if isinstance(rule, PerMediaSecond) else None,
        example=_samples(entry["example"]) if "example" in entry else None,
        min_media_seconds=tuple(entry.get("min_media_seconds", {}).items()),
    )
    check(spec)
    return spec


def load() -> tuple[tuple[ModelSpec, ...], tuple[str, ...]]:
    """Every model of ``models.toml``, and the replication API's models (``protocol.replication``, default
    first), each checked to be in the catalog."""
    data = datafiles.load(__package__ or __name__, "models.toml")
    models = tuple(model(entry, data) for entry in data["models"])
    ids = [m.id for m in models]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CatalogError(f"catalog: model ids used twice: {duplicates}")
    replication = replication_rules.MODELS
    missing = [i for i in replication if i not in ids]
    if missing:
        raise CatalogError(f"catalog: replication models not in the catalog: {missing}")
    return models, replication
