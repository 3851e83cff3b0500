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
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mediagen_nb.batch.columns import loose, matching
from mediagen_nb.batch.template import Template
from mediagen_nb.batch.words import words
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


def _fields(model: Model, wanted: Mapping[str, Any]) -> None:
    names = list(model.properties)
    for field in wanted:
        if field not in model.properties:
            said = words().constant(field) if words().cli else "constants"
            raise MappingError(
                f"{said}: {field!r} is not an input of {model.id}{did_you_mean(field, names, QUOTED)} "
                f"(inputs: {', '.join(names)})",
                field=field,
            )


class MappingWarning(UserWarning):
    """A column or an input that nearly matches and is not used: the warning names the fix."""


def _swap_hint(model: Model, frame_columns: Sequence[str], column: str, field: str) -> str:
    """``; the mapping goes column -> input: write {'Prompt': 'prompt'}`` when it was written backwards."""
    if column in model.properties and matching(field, frame_columns):
        swapped = words().mapping(matching(field, frame_columns)[0], column)
        if words().cli:
            return f"; the map goes COLUMN=FIELD: write {swapped}"
        return f"; the mapping goes column -> input field (like DataFrame.rename): write {swapped}"
    return ""


def _column(name: str, names: Sequence[str], what: str, field: str | None = None) -> str:
    """The one column of the table that ``name`` stands for (:mod:`mediagen_nb.batch.columns`), else a
    MappingError naming the columns."""
    found = matching(name, names)
    if len(found) > 1:
        raise MappingError(
            f"{what}: {name!r} could be any of {', '.join(map(repr, found))}; write one as it is in "
            f"{words().table}",
            field=field or name,
        )
    if not found:
        raise MappingError(
            f"{what}: {name!r} is not a column of {words().table}{did_you_mean(name, names, QUOTED)} "
            f"(columns: {', '.join(map(repr, names))})",
            field=field or name,
        )
    return found[0]


def resolve_columns(
    model: Model, frame_columns: Sequence[Any], columns: Columns, constants: Mapping[str, Any]
) -> dict[str, str]:
    """Field -> column name (``str`` of its label): every column named like an input field (ignoring
    case, spaces, ``-`` and ``_``), plus the ``columns`` mapping (column -> field), which adds to the
    matching and wins over it. A column of the mapping or of a template is found the same way (the name
    as it is in the table, else with case, surrounding spaces, ``-`` and ``_`` ignored).

    Fields given as keyword constants come from the constant, not a column. A column or a field that
    nearly matches and is left unused gets a MappingWarning with the exact fix. Messages speak the
    caller's words (:mod:`mediagen_nb.batch.words`).
    """
    said = words()
    labels = {str(c): c for c in frame_columns}
    names = list(labels)
    explicit: dict[str, str] = {}
    if isinstance(columns, Mapping):
        given = {str(column): str(field) for column, field in columns.items()}
    elif columns is not None:
        if isinstance(columns, str):
            raise MappingError(
                f"columns: give a list of column names or a mapping, not the string {columns!r}"
            )
        given = {}
        for column in columns:
            match = [f for f in model.properties if loose(f) == loose(str(column))]
            given[str(column)] = match[0] if match else str(column)
    else:
        given = {}
    for column, field in given.items():
        if not matching(column, names) and (hint := _swap_hint(model, names, column, field)):
            raise MappingError(f"{said.mapping_option}: {column!r} is not a column{hint}", field=column)
        found = _column(column, names, said.mapping_option)
        if field not in model.properties:
            hint = _swap_hint(model, names, column, field) or did_you_mean(field, model.properties, QUOTED)
            raise MappingError(
                f"{said.mapping_option}: {field!r} is not an input of {model.id}{hint} "
                f"(inputs: {', '.join(model.properties)})",
                field=field,
            )
        explicit[found] = field
    _fields(model, constants)
    by_field: dict[str, str] = {}
    for field in model.properties:
        if field in constants or field in explicit.values():
            continue
        matches = [c for c in names if loose(c) == loose(field) and c not in explicit]
        if len(matches) > 1:
            raise MappingError(
                f"columns: {', '.join(map(repr, matches))} all match input {field!r}; say which with "
                f"{said.mapping(matches[0], field)}",
                field=field,
            )
        if matches:
            by_field[field] = matches[0]
    by_field.update({field: column for column, field in explicit.items()})
    for field, value in constants.items():
        if isinstance(value, Template):
            for column in value.columns:
                _column(column, names, f"{field}: {said.template_option} column", field)
    if not by_field and not constants:
        example = said.mapping("COLUMN", "FIELD") if said.cli else said.mapping("Column", "field")
        raise MappingError(
            f"no column matches an input of {model.id} (inputs: {', '.join(model.properties)}; columns: "
            f"{', '.join(map(repr, names))}); pass {example} "
            f"or {said.constant()}",
        )
    _warn_near_misses(model, names, by_field, constants)
    return by_field


def _warn_near_misses(
    model: Model, names: Sequence[str], by_field: Mapping[str, str], constants: Mapping[str, Any]
) -> None:
    """Say which unused column looks like an unfilled input (``aspect`` for ``aspect_ratio``), and the fix."""
    used = {str(c) for c in by_field.values()} | {
        found
        for value in constants.values()
        if isinstance(value, Template)
        for c in value.columns
        for found in matching(c, names)
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
                    f"{words().mapping(column, close[0])}"
                ),
                stacklevel=4,
            )


def as_option(prop: Mapping[str, Any], value: Any) -> Any:
    """A cell as the option of an ``enum`` it spells with other case or spaces (``' Low '`` is ``low``);
    any other value as it is (the check then refuses it, naming the nearest option)."""
    options = prop.get("enum") if isinstance(prop, Mapping) else None
    if not options or not isinstance(value, str) or value in options:
        return value
    same = [o for o in options if isinstance(o, str) and o.strip().casefold() == value.strip().casefold()]
    return same[0] if len(same) == 1 else value


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
            cell = as_option(model.properties.get(field) or {}, plain(record[column]))
            if cell is not None:
                values[field] = cell
        empty = [
            f"{field}: column {column!r} is empty in this row"
            for field, value in constants.items()
            if isinstance(value, Template)
            for column in value.columns
            if is_missing(plain(record[Template.column(column, record)]))
        ]
        if empty:
            rows.append(Row(position, None, empty[0]))
            continue
        for field, value in constants.items():
            given = value.render(record) if isinstance(value, Template) else plain(value)
            values[field] = as_option(model.properties.get(field) or {}, given)
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
