"""How one catalog differs from another, model by model: the report ``mediagen sandbox sync`` prints.

Models added and removed; for a model in both, its listed price, pricing type, ``varies_by``, output
kind and input schema (inputs added or removed, required inputs, and each input's type, options and
default). What it says is what to change in ``models.toml`` to bring the bundled catalog in step.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mediagen_nb.sandbox.catalog import Catalog, ModelSpec

SCHEMA_KEYS = ("type", "enum", "default")  # what of an input a change is reported for


@dataclass(frozen=True)
class Change:
    """One difference of one model: what changed, from what, to what."""

    model: str
    what: str  # "listed price", "pricing type", "varies_by", "inputs", "required", "quality.enum" ...
    before: Any
    after: Any

    def __str__(self) -> str:
        return f"{self.model}: {self.what} {_shown(self.before)} -> {_shown(self.after)}"


@dataclass(frozen=True)
class Drift:
    """What a newer catalog changed against an older one (see the module)."""

    before: str  # which catalog each side is: "bundled (2026-09-16)"
    after: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changes: tuple[Change, ...] = ()
    flagged: Mapping[str, str] = field(default_factory=dict)  # the newer catalog's approximated prices

    @property
    def none(self) -> bool:
        return not (self.added or self.removed or self.changes)

    def of(self, what: str) -> list[Change]:
        """The changes of one kind (``listed price`` ...)."""
        return [c for c in self.changes if c.what == what]

    def lines(self) -> list[str]:
        """The report, for people."""
        head = f"{self.after} against {self.before}: "
        if self.none:
            return [head + "no model added, removed or changed"]
        counts = [f"{len(self.added)} added", f"{len(self.removed)} removed", f"{len(self.changes)} changes"]
        lines = [head + ", ".join(counts)]
        lines += [f"  + {model_id}" for model_id in self.added]
        lines += [f"  - {model_id}" for model_id in self.removed]
        lines += [f"  ~ {change}" for change in self.changes]
        if self.flagged:
            lines.append("priced by the sandbox only approximately (its estimates say so):")
            lines += [f"  ! {model_id}: {why}" for model_id, why in self.flagged.items()]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "after": self.after,
            "added": list(self.added),
            "removed": list(self.removed),
            "changes": [
                {"model": c.model, "what": c.what, "before": c.before, "after": c.after} for c in self.changes
            ],
            "flagged": dict(self.flagged),
        }


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def name(catalog: Catalog) -> str:
    return f"{'the bundled catalog' if catalog.source == 'bundled' else catalog.source} ({catalog.date})"


def drift(before: Catalog, after: Catalog) -> Drift:
    """What ``after`` changed against ``before``."""
    comparison = Comparison(before)
    for model in after.models:
        comparison.add(model)
    return comparison.drift(name(after), after.flagged)


class Comparison:
    """A :class:`Drift` built one model at a time, so the newer catalog is never held whole (a sync
    compares each model as it arrives)."""

    def __init__(self, before: Catalog) -> None:
        self.before = before
        self.seen: list[str] = []
        self.changes: list[Change] = []

    def add(self, model: ModelSpec) -> None:
        """One model of the newer catalog."""
        self.seen.append(model.id)
        old = self.before.by_id.get(model.id)
        if old is not None:
            self.changes += _changes(old, model)

    def drift(self, after: str, flagged: Mapping[str, str]) -> Drift:
        """The drift of every model added; ``after`` names the newer catalog."""
        old, seen = self.before.by_id, set(self.seen)
        return Drift(
            name(self.before),
            after,
            tuple(model_id for model_id in self.seen if model_id not in old),
            tuple(model_id for model_id in old if model_id not in seen),
            tuple(self.changes),
            dict(flagged),
        )


def _pricing(model: ModelSpec, key: str) -> Any:
    return model.pricing.get(key) if model.pricing is not None else None


def _changes(old: ModelSpec, new: ModelSpec) -> list[Change]:
    found = [
        Change(new.id, what, before, after)
        for what, before, after in (
            ("listed price", old.credits, new.credits),
            ("pricing type", _pricing(old, "type"), _pricing(new, "type")),
            ("varies_by", _pricing(old, "varies_by"), _pricing(new, "varies_by")),
            ("output kind", old.kind, new.kind),
        )
        if before != after
    ]
    return found + _schema_changes(new.id, old.input_schema, new.input_schema)


def _schema_changes(model_id: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    before, after = old.get("properties", {}), new.get("properties", {})
    found = []
    if list(before) != list(after) and set(before) != set(after):
        found.append(Change(model_id, "inputs", sorted(before), sorted(after)))
    if sorted(old.get("required", [])) != sorted(new.get("required", [])):
        found.append(Change(model_id, "required", old.get("required", []), new.get("required", [])))
    for input_name in (n for n in after if n in before):
        was, now = before[input_name], after[input_name]
        for key in SCHEMA_KEYS:
            old_value = was.get(key) if isinstance(was, Mapping) else None
            new_value = now.get(key) if isinstance(now, Mapping) else None
            if old_value != new_value:
                found.append(Change(model_id, f"{input_name}.{key}", old_value, new_value))
    return found
