"""From a DataFrame to one checked input per row, before anything is sent.

A mapping mistake (an unknown column, a field the model does not have) is one clear error for the
whole call; a bad row (a missing value, NaN, an enum mismatch) is that row's error and the others go on.
"""

import difflib
import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mediagen_nb.batch.template import Template
from mediagen_nb.client import Model, ValidationError, idempotency
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.protocol.schema import is_missing

Columns = Mapping[str, str] | Sequence[str] | None


class MappingError(ValidationError):
    """The columns or constants of a batch do not fit the model; nothing was sent."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message, field=field, sent=False)


@dataclass(frozen=True)
class Row:
    """One row's input, or why it cannot be sent; ``key`` is its deterministic Idempotency-Key."""

    position: int
    input: dict[str, Any] | None
    error: str | None = None
    key: str | None = None


def _did_you_mean(name: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(options), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _fields(model: Model, wanted: Mapping[str, Any], what: str) -> None:
    names = list(model.properties)
    for field in wanted:
        if field not in model.properties:
            raise MappingError(
                f"{what}: {field!r} is not an input of {model.id}{_did_you_mean(field, names)} "
                f"(inputs: {', '.join(names)})",
                field=field,
            )


def resolve_columns(
    model: Model, frame_columns: Sequence[str], columns: Columns, constants: Mapping[str, Any]
) -> dict[str, str]:
    """Field -> column: the mapping given, else every column named like an input field."""
    frame_columns = [str(c) for c in frame_columns]
    if columns is None:
        mapping = {c: c for c in frame_columns if c in model.properties and c not in constants}
    elif isinstance(columns, Mapping):
        mapping = {str(column): str(field) for column, field in columns.items()}
    else:
        mapping = {str(c): str(c) for c in columns}
    for column in mapping:
        if column not in frame_columns:
            raise MappingError(
                f"columns: {column!r} is not a column of this DataFrame"
                f"{_did_you_mean(column, frame_columns)} "
                f"(columns: {', '.join(frame_columns)})",
                field=column,
            )
    by_field = {field: column for column, field in mapping.items()}
    _fields(model, by_field, "columns")
    _fields(model, constants, "constants")
    for field, value in constants.items():
        if isinstance(value, Template):
            for column in value.columns:
                if column not in frame_columns:
                    raise MappingError(
                        f"{field}: template column {column!r} is not in this DataFrame"
                        f"{_did_you_mean(column, frame_columns)}",
                        field=field,
                    )
    if not by_field and not constants:
        raise MappingError(
            f"no column matches an input of {model.id} (inputs: {', '.join(model.properties)}); "
            "pass columns={'Column': 'field'} or field=value constants",
        )
    return by_field


def plain(value: Any) -> Any:
    """A cell as JSON sends it: numpy scalars to Python, NaN/NaT/None to None."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is not None and type(value).__name__ in ("NaTType", "NAType"):
        return None
    return value


def plan_rows(
    records: Sequence[Mapping[str, Any]],
    model: Model,
    by_field: Mapping[str, str],
    constants: Mapping[str, Any],
    check: Callable[[Model, Mapping[str, Any]], dict[str, Any]],
    *,
    run_name: str,
) -> list[Row]:
    """One Row per record, checked with ``check`` (the client's schema validation).

    Each row's Idempotency-Key comes from what it asks, the run name and its occurrence among
    identical rows (:mod:`mediagen_nb.client.idempotency`): the same on every re-run, from any key
    of the account, so a restart never charges twice.
    """
    rows, seen = [], Counter[str]()
    for position, record in enumerate(records):
        values: dict[str, Any] = {}
        for field, column in by_field.items():
            cell = plain(record[column])
            if cell is not None:
                values[field] = cell
        empty = [
            f"{field}: column {column!r} is empty in this row"
            for field, value in constants.items()
            if isinstance(value, Template)
            for column in value.columns
            if is_missing(plain(record[column]))
        ]
        if empty:
            rows.append(Row(position, None, empty[0]))
            continue
        for field, value in constants.items():
            values[field] = value.render(record) if isinstance(value, Template) else plain(value)
        try:
            checked = check(model, values)
        except ValidationError as exc:
            rows.append(Row(position, None, exc.message))
            continue
        identity = json.dumps(checked, sort_keys=True, default=str)
        seen[identity] += 1
        key = idempotency.derive(
            ledgers.GENERATION,
            idempotency.SWEEP,
            model.id,
            checked,
            run_name=run_name,
            occurrence=seen[identity],
        )
        rows.append(Row(position, checked, None, key))
    return rows
