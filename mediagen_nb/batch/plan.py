"""From a DataFrame to one checked input per row, before anything is sent.

A mapping mistake (an unknown column, a field the model does not have) is one clear error for the
whole call; a bad row (a missing value, NaN, an enum mismatch) is that row's error and the others go on.

A path in a table came from whoever wrote the table, so it is sent only from where the user meant
(:class:`FilesFrom`: the working folder, or the sheet's folder for ``mediagen sweep``, plus the folders
the user adds); anything else makes that row invalid, naming the path and the option that allows it.
"""

import difflib
import json
import math
import os
import re
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mediagen_nb.batch.template import Template
from mediagen_nb.client import Model, ValidationError, idempotency
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.catalog import local_items
from mediagen_nb.protocol.messages import did_you_mean
from mediagen_nb.protocol.schema import is_missing

Columns = Mapping[str, str] | Sequence[str] | None
QUOTED = "{!r}"  # how a sweep's "did you mean" shows a name: quoted, as in a frame's columns


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


Folders = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


@dataclass(frozen=True)
class FilesFrom:
    """The folders a table's local files may be sent from, and the option that adds one."""

    folders: tuple[Path, ...]  # resolved: symlinks and ``~`` followed
    option: str  # how the user adds a folder: ``allow_files_from=`` or ``--files-from``

    @classmethod
    def of(cls, home: Path, added: Folders, option: str = "allow_files_from") -> "FilesFrom":
        """``home`` (the working folder or the sheet's) and the ``added`` folders, each an existing folder."""
        given = [added] if isinstance(added, (str, os.PathLike)) else list(added or [])
        folders = [home.expanduser().resolve()]
        for folder in given:
            if not isinstance(folder, (str, os.PathLike)):
                raise MappingError(f"{option}: give a folder or a list of folders, not {folder!r}", option)
            found = Path(folder).expanduser().resolve()
            if not found.is_dir():
                raise MappingError(f"{option}: there is no folder {str(folder)!r}", option)
            folders.append(found)
        return cls(tuple(folders), option)

    def check(self, field: str, path: Path) -> None:
        """Refuse ``path`` unless it lies, once resolved, inside one of the folders (a ValidationError)."""
        resolved = path.expanduser().resolve()
        if any(resolved.is_relative_to(folder) for folder in self.folders):
            return
        add = resolved.parent
        widen = f"{self.option}={str(add)!r}" if self.option.isidentifier() else f"{self.option} {add}"
        raise ValidationError(
            f"{field}: {str(path)!r} is outside {' and '.join(map(str, self.folders))}; a table's files are "
            f"sent only from there (if you meant it, allow its folder: {widen})",
            field=field,
            sent=False,
        )

    def checked(self, model: Model, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` once every local file in a media field is inside the folders (else ValidationError)."""
        for name, _, path, _ in local_items(model, values):
            self.check(name, path)
        return dict(values)


def allowed(given: "Folders | FilesFrom") -> FilesFrom:
    """Where a frame's files may come from: the working folder and the folders of ``allow_files_from=``."""
    return given if isinstance(given, FilesFrom) else FilesFrom.of(Path.cwd(), given)


def _fields(model: Model, wanted: Mapping[str, Any], what: str) -> None:
    names = list(model.properties)
    for field in wanted:
        if field not in model.properties:
            raise MappingError(
                f"{what}: {field!r} is not an input of {model.id}{did_you_mean(field, names, QUOTED)} "
                f"(inputs: {', '.join(names)})",
                field=field,
            )


class MappingWarning(UserWarning):
    """A column or an input that nearly matches and is not used: the warning names the fix."""


def loose(name: str) -> str:
    """A name as matching sees it: case, spaces, ``-`` and ``_`` ignored."""
    return re.sub(r"[\s_\-]+", "", name).lower()


def _swap_hint(model: Model, frame_columns: Sequence[str], column: str, field: str) -> str:
    """``; the mapping goes column -> input: write {'Prompt': 'prompt'}`` when it was written backwards."""
    if column in model.properties and field in frame_columns:
        swapped = f"{{{field!r}: {column!r}}}"
        return f"; the mapping goes column -> input field (like DataFrame.rename): write {swapped}"
    return ""


def resolve_columns(
    model: Model, frame_columns: Sequence[Any], columns: Columns, constants: Mapping[str, Any]
) -> dict[str, str]:
    """Field -> column name (``str`` of its label): every column named like an input field (ignoring
    case, spaces, ``-`` and ``_``), plus the ``columns`` mapping (column -> field), which adds to the
    matching and wins over it.

    Fields given as keyword constants come from the constant, not a column. A column or a field that
    nearly matches and is left unused gets a MappingWarning with the exact fix.
    """
    labels = {str(c): c for c in frame_columns}
    names = list(labels)
    explicit: dict[str, str] = {}
    if isinstance(columns, Mapping):
        explicit = {str(column): str(field) for column, field in columns.items()}
    elif columns is not None:
        if isinstance(columns, str):
            raise MappingError(
                f"columns: give a list of column names or a mapping, not the string {columns!r}"
            )
        explicit = {}
        for column in columns:
            match = [f for f in model.properties if loose(f) == loose(str(column))]
            explicit[str(column)] = match[0] if match else str(column)
    for column, field in explicit.items():
        if column not in labels:
            raise MappingError(
                f"columns: {column!r} is not a column of this DataFrame"
                f"{_swap_hint(model, names, column, field) or did_you_mean(column, names, QUOTED)} "
                f"(columns: {', '.join(names)})",
                field=column,
            )
        if field not in model.properties:
            hint = _swap_hint(model, names, column, field) or did_you_mean(field, model.properties, QUOTED)
            raise MappingError(
                f"columns: {field!r} is not an input of {model.id}{hint} "
                f"(inputs: {', '.join(model.properties)})",
                field=field,
            )
    _fields(model, constants, "constants")
    by_field: dict[str, str] = {}
    for field in model.properties:
        if field in constants or field in explicit.values():
            continue
        matches = [c for c in names if loose(c) == loose(field) and c not in explicit]
        if len(matches) > 1:
            raise MappingError(
                f"columns: {', '.join(map(repr, matches))} all match input {field!r}; say which with "
                f"columns={{{matches[0]!r}: {field!r}}}",
                field=field,
            )
        if matches:
            by_field[field] = matches[0]
    by_field.update({field: column for column, field in explicit.items()})
    for field, value in constants.items():
        if isinstance(value, Template):
            for column in value.columns:
                if column not in labels:
                    raise MappingError(
                        f"{field}: template column {column!r} is not in this DataFrame"
                        f"{did_you_mean(column, names, QUOTED)}",
                        field=field,
                    )
    if not by_field and not constants:
        raise MappingError(
            f"no column matches an input of {model.id} (inputs: {', '.join(model.properties)}); "
            "pass columns={'Column': 'field'} or field=value constants",
        )
    _warn_near_misses(model, names, by_field, constants)
    return by_field


def _warn_near_misses(
    model: Model, names: Sequence[str], by_field: Mapping[str, str], constants: Mapping[str, Any]
) -> None:
    """Say which unused column looks like an unfilled input (``aspect`` for ``aspect_ratio``), and the fix."""
    used = {str(c) for c in by_field.values()} | {
        c for value in constants.values() if isinstance(value, Template) for c in value.columns
    }
    unfilled = [f for f in model.properties if f not in by_field and f not in constants]
    for column in names:
        if column in used:
            continue
        close = [
            f
            for f in unfilled
            if loose(f).startswith(loose(column))
            or loose(column).startswith(loose(f))
            or difflib.SequenceMatcher(None, loose(f), loose(column)).ratio() >= 0.8
        ]
        if close and loose(column):
            warnings.warn(
                MappingWarning(
                    f"column {column!r} is not used; if it is input {close[0]!r} of {model.id}, pass "
                    f"columns={{{column!r}: {close[0]!r}}}"
                ),
                stacklevel=4,
            )


def plain(value: Any) -> Any:
    """A cell as JSON sends it: numpy scalars to Python, NaN/NaT/None to None, a path to its text."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
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
