"""From a DataFrame to one checked input per row and model, before anything is sent.

:func:`plan` is the one place where a frame's columns, keyword constants and templates become inputs,
for one model, a list of models (every row on each: one planned row per row and model) or the frame's
own column naming each row's model. Each model takes its inputs under its own names, from its own
schema: with several models, an input one of them does not have is not sent to it (one note per
model), and a required input nothing fills makes that model's rows invalid. A mapping mistake (an
unknown column, a field no model has) is one clear error for the whole call; a bad row (a missing
value, NaN, an enum mismatch) is that row's error and the others go on.

A path in a table came from whoever wrote the table, so it is sent only from where the user meant
(:class:`FilesFrom`: the working folder, or the sheet's folder for ``mediagen sweep``, plus the folders
the user adds); anything else makes that row invalid, naming the path and the option that allows it.
"""

import difflib
import json
import math
import os
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mediagen_nb.batch.columns import loose, matching
from mediagen_nb.batch.template import Template
from mediagen_nb.batch.words import words
from mediagen_nb.client import Model, ValidationError, idempotency
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.catalog import local_items
from mediagen_nb.protocol import messages
from mediagen_nb.protocol.messages import did_you_mean
from mediagen_nb.protocol.schema import is_missing

# column -> input field (like DataFrame.rename) or columns to match; a model id's entry is for it alone
Columns = Mapping[Any, Any] | Sequence[str] | None
Models = str | Sequence[str] | None  # one model id, a list of them, or None: the frame's model column
QUOTED = "{!r}"  # how a sweep's "did you mean" shows a name: quoted, as in a frame's columns
MODEL_COLUMN_NAMES = frozenset({"model", "models", "modelid"})  # a column so named (loosely) names models


class MappingError(ValidationError):
    """The columns or constants of a batch do not fit the model; nothing was sent."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message, field=field, sent=False)


@dataclass(frozen=True)
class Row:
    """One planned start: its input, or why it cannot be sent, on ``model``, for frame row ``source``.

    ``position`` is its place in the plan (and in the result frame); ``key`` its deterministic
    Idempotency-Key.
    """

    position: int
    input: dict[str, Any] | None
    error: str | None = None
    key: str | None = None
    model: str = ""
    source: int = 0


@dataclass(frozen=True)
class Fill:
    """How one model's input is filled, under its own names: field -> column, field -> constant."""

    by_field: dict[str, str]
    constants: dict[str, Any]
    lacks: tuple[str, ...] = ()  # constants and mapped fields given that this model has not: not sent to it
    unfilled: tuple[str, ...] = ()  # required inputs that nothing fills: every row of the model is invalid


@dataclass(frozen=True)
class Plan:
    """Every (row, model) of a call, checked: what a sweep starts and an estimate prices."""

    rows: list[Row]
    models: dict[str, Model]  # by id: in the order given, or as first named by the model column
    fills: dict[str, Fill]
    notes: list[str]  # said once per model: inputs not sent to it, required inputs nothing fills
    model_column: str | None = None  # the frame's own column that named each row's model
    listed: bool = False  # the models were given as a list: the result has a row per row and model

    @property
    def tidy(self) -> bool:
        """One result row per frame row and model (with ``row`` and ``model`` columns)."""
        return self.listed and self.model_column is None


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


class MappingWarning(UserWarning):
    """A column or an input that nearly matches and is not used: the warning names the fix."""


class NotSent(MappingWarning):
    """With several models, an input one of them does not have (not sent to it), or needs and lacks."""


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


def field_named(model: Model, name: str) -> str | None:
    """``model``'s input called ``name``: the same name, else the one that matches it loosely."""
    if name in model.properties:
        return name
    matches = [f for f in model.properties if loose(f) == loose(name)]
    return matches[0] if len(matches) == 1 else None


def _explicit(model: Model, columns: Columns) -> dict[str, str]:
    """A ``columns=`` mapping as column -> field (a list of columns: each to the input it names)."""
    if columns is None:
        return {}
    if isinstance(columns, Mapping):
        return {str(column): str(field) for column, field in columns.items()}
    if isinstance(columns, str):
        raise MappingError(f"columns: give a list of column names or a mapping, not the string {columns!r}")
    return {str(column): field_named(model, str(column)) or str(column) for column in columns}


def resolve_columns(
    model: Model,
    frame_columns: Sequence[Any],
    columns: Columns,
    constants: Mapping[str, Any],
    *,
    own: Mapping[Any, Any] | None = None,
    lenient: bool = False,
    exclude: Collection[str] = (),
) -> Fill:
    """How ``model``'s input is filled from a frame: every column named like one of its input fields
    (ignoring case, spaces, ``-`` and ``_``), plus the ``columns`` mapping (column -> field) and the
    model's ``own`` mapping, which add to the matching and win over it.

    Fields given as keyword constants come from the constant (under the model's spelling of the
    name), not a column. ``lenient`` (several models in one call): a constant or a mapped field of
    ``columns`` the model does not have goes to ``lacks`` instead of being refused. ``exclude`` names
    columns that are no input (the model column). A column or a field that nearly matches and is left
    unused gets a MappingWarning with the exact fix (when not ``lenient``: :func:`plan` says it then).
    """
    said = words()
    labels = {str(c): c for c in frame_columns}
    names = list(labels)
    lacks: list[str] = []
    explicit = _explicit(model, columns)
    owned = {str(column): str(field) for column, field in (own or {}).items()}
    mapped: dict[str, str] = {}
    for column, field in [*explicit.items(), *owned.items()]:
        if not matching(column, names) and (hint := _swap_hint(model, names, column, field)):
            raise MappingError(f"{said.mapping_option}: {column!r} is not a column{hint}", field=column)
        found = _column(column, names, said.mapping_option)
        if field not in model.properties:
            if lenient and column not in owned:
                lacks.append(field)
                continue
            hint = _swap_hint(model, names, column, field) or did_you_mean(field, model.properties, QUOTED)
            raise MappingError(
                f"{said.mapping_option}: {field!r} is not an input of {model.id}{hint} "
                f"(inputs: {', '.join(model.properties)})",
                field=field,
            )
        mapped[found] = field
    fixed: dict[str, Any] = {}
    for name, value in constants.items():
        spelt = field_named(model, name)
        if spelt is None and lenient:
            lacks.append(name)
        elif spelt is None:
            fields = list(model.properties)
            what = said.constant(name) if said.cli else "constants"
            raise MappingError(
                f"{what}: {name!r} is not an input of {model.id}{did_you_mean(name, fields, QUOTED)} "
                f"(inputs: {', '.join(fields)})",
                field=name,
            )
        else:
            fixed[spelt] = value
    by_field: dict[str, str] = {}
    for field in model.properties:
        if field in fixed or field in mapped.values():
            continue
        matches = [c for c in names if loose(c) == loose(field) and c not in mapped and c not in exclude]
        if len(matches) > 1:
            raise MappingError(
                f"columns: {', '.join(map(repr, matches))} all match input {field!r}; say which with "
                f"{said.mapping(matches[0], field)}",
                field=field,
            )
        if matches:
            by_field[field] = matches[0]
    by_field.update({field: column for column, field in mapped.items()})
    for field, value in constants.items():
        if isinstance(value, Template):
            for column in value.columns:
                _column(column, names, f"{field}: {said.template_option} column", field)
    if not by_field and not fixed and not lenient:
        example = said.mapping("COLUMN", "FIELD") if said.cli else said.mapping("Column", "field")
        raise MappingError(
            f"no column matches an input of {model.id} (inputs: {', '.join(model.properties)}; columns: "
            f"{', '.join(map(repr, names))}); pass {example} or {said.constant()}",
        )
    fill = Fill(
        by_field,
        fixed,
        tuple(dict.fromkeys(lacks)),
        tuple(f for f in model.required if f not in by_field and f not in fixed),
    )
    if not lenient:
        _warn_near_misses({model.id: model}, {model.id: fill}, names, exclude)
    return fill


def _warn_near_misses(
    models: Mapping[str, Model], fills: Mapping[str, Fill], names: Sequence[str], exclude: Collection[str]
) -> None:
    """Say which column no model uses looks like an input a model leaves unfilled (``aspect`` for
    ``aspect_ratio``), and the fix."""
    used = set(exclude)
    for fill in fills.values():
        used |= {str(c) for c in fill.by_field.values()}
        used |= {
            found
            for value in fill.constants.values()
            if isinstance(value, Template)
            for c in value.columns
            for found in matching(c, names)
        }
    for column in names:
        if column in used or not loose(column):
            continue
        for model_id, model in models.items():
            fill = fills[model_id]
            unfilled = [f for f in model.properties if f not in fill.by_field and f not in fill.constants]
            close = [
                f
                for f in unfilled
                if loose(f).startswith(loose(column))
                or loose(column).startswith(loose(f))
                or difflib.SequenceMatcher(None, loose(f), loose(column)).ratio() >= 0.8
            ]
            if close:
                warn(
                    MappingWarning(
                        f"column {column!r} is not used; if it is input {close[0]!r} of {model_id}, pass "
                        f"{words().mapping(column, close[0])}"
                    )
                )
                break


def warn(warning: Warning) -> None:
    """Warn as from the user's own line: the first frame outside this package, however deep the call."""
    package = os.path.dirname(os.path.dirname(__file__))  # as code objects name their files
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(warning, stacklevel=level)


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


def model_ids(models: Models) -> tuple[list[str] | None, bool]:
    """The model ids a call asks for, and whether as a list; None when none is given."""
    if models is None:
        return None, False
    if isinstance(models, str):
        if not models:
            raise ValidationError(
                "model must be a model id or a list of them, not ''", field="model", sent=False
            )
        if "," in models:
            split = [part.strip() for part in models.split(",")]
            raise ValidationError(
                f"model {models!r} is one string; give several models as a list: model={split!r}",
                field="model",
                sent=False,
            )
        return [models], False
    if isinstance(models, Mapping) or not isinstance(models, Sequence):
        raise ValidationError(
            f"model must be a model id or a list of them, not {type(models).__name__}",
            field="model",
            sent=False,
        )
    ids = list(models)
    wrong = [m for m in ids if not isinstance(m, str) or not m]
    if wrong:
        raise ValidationError(
            f"model: every model is an id (a string), not {wrong[0]!r}", field="model", sent=False
        )
    if not ids:
        raise ValidationError("model: the list of models is empty", field="model", sent=False)
    twice = [m for m, n in Counter(ids).items() if n > 1]
    if twice:
        raise ValidationError(f"model: {twice[0]!r} is listed twice", field="model", sent=False)
    return ids, True


def _known(model_id: str, catalog: Mapping[str, Model]) -> Model:
    if model_id not in catalog:
        hint = did_you_mean(model_id, list(catalog), QUOTED)
        raise ValidationError(messages.unknown_model(model_id, catalog) + hint, field="model", sent=False)
    return catalog[model_id]


def _names_a_model(records: Sequence[Mapping[str, Any]], column: str, catalog: Mapping[str, Model]) -> bool:
    """Whether some cell of ``column`` is a catalog model id."""
    for record in records:
        value = record[column]
        if isinstance(value, str) and value in catalog:
            return True
    return False


def _names_models(records: Sequence[Mapping[str, Any]], column: str, catalog: Mapping[str, Model]) -> bool:
    """Whether every filled cell of ``column`` is a catalog model id (and one is)."""
    seen = False
    for record in records:
        value = plain(record[column])
        if is_missing(value):
            continue
        if not isinstance(value, str) or value not in catalog:
            return False
        seen = True
    return seen


def model_column(
    names: Sequence[str],
    records: Sequence[Mapping[str, Any]],
    catalog: Mapping[str, Model],
    exclude: Collection[str] = (),
) -> str | None:
    """The frame's column that names each row's model: one called ``model`` (``Model``, ``model_id`` ...)
    with a catalog id in it, or one whose every value is a catalog id. Columns in ``exclude`` (mapped
    to inputs) are not; two such columns are refused, naming both."""
    candidates = [n for n in names if n not in exclude]
    named = [n for n in candidates if loose(n) in MODEL_COLUMN_NAMES and _names_a_model(records, n, catalog)]
    found = named or [n for n in candidates if _names_models(records, n, catalog)]
    if len(found) > 1:
        raise MappingError(
            f"model: columns {', '.join(map(repr, found))} all name models; keep one (the others "
            f"can be dropped with df.drop(columns=[...])) or give the models yourself",
            field="model",
        )
    return found[0] if found else None


def _row_model(value: Any, column: str, catalog: Mapping[str, Model]) -> tuple[str, str | None]:
    """A model column's cell: the model id, or what it holds and why that row cannot run."""
    value = plain(value)
    if is_missing(value):
        return "", f"model: column {column!r} is empty in this row"
    if not isinstance(value, str) or value not in catalog:
        hint = did_you_mean(str(value), list(catalog), QUOTED)
        return str(value), f"model: {value!r} (column {column!r}) is not a catalog model{hint}"
    return value, None


def _mapped(columns: Columns) -> dict[str, str]:
    """The columns a shared ``columns=`` names, with the field each maps to (a listed column: itself)."""
    if isinstance(columns, Mapping):
        return {str(column): str(field) for column, field in columns.items()}
    return {str(column): str(column) for column in columns or () if not isinstance(columns, str)}


def _split_columns(
    columns: Columns, catalog: Mapping[str, Model]
) -> tuple[Columns, dict[str, Mapping[Any, Any]]]:
    """``columns=`` as the mapping every model shares and each model's own (a model id -> a mapping)."""
    if not isinstance(columns, Mapping):
        return columns, {}
    own = {str(k): v for k, v in columns.items() if isinstance(v, Mapping)}
    for key in own:
        if key not in catalog:
            raise MappingError(
                f"columns: {key!r} maps columns for a model, but it is not a catalog model"
                f"{did_you_mean(key, list(catalog), QUOTED)}",
                field="columns",
            )
    return {k: v for k, v in columns.items() if not isinstance(v, Mapping)} or None, own


def _inputs_of(lacks: Sequence[str]) -> str:
    return f"input{'s' if len(lacks) > 1 else ''} {', '.join(lacks)}"


def not_sent(model_id: str, lacks: Sequence[str]) -> str:
    """The one line said of a model of several that has not some inputs given to all."""
    return f"{model_id} has no {_inputs_of(lacks)}: not sent to it"


def plan(
    names: Sequence[Any],
    records: Sequence[Mapping[str, Any]],
    catalog: Mapping[str, Model],
    models: Models,
    columns: Columns,
    constants: Mapping[str, Any],
    check: Callable[[Model, Mapping[str, Any]], dict[str, Any]],
    *,
    run_name: str = "",
) -> Plan:
    """Every row of a frame (``names``, ``records``) on each of ``models`` (or on the model its own
    model column names), its input filled under that model's names and checked with ``check`` (the
    client's schema validation); the engine adapters (pandas, polars, the command line) all plan here.

    Refused before anything is sent (a ValidationError): an unknown model, a frame whose own model
    column is ignored by a model given too, a mapping or constant that fits no model. A frame column
    naming models is used when no model is given, each row on its own; one row per (row, model)
    otherwise, row by row.
    """
    asked, listed = model_ids(models)
    names = [str(n) for n in names]
    shared, own = _split_columns(columns, catalog)
    inputs = [
        *_mapped(shared),
        *(str(c) for m in own.values() for c in m),
    ]  # columns the user says are inputs
    inputs += [c for v in constants.values() if isinstance(v, Template) for c in v.columns]
    column = model_column(names, records, catalog, {found for c in inputs for found in matching(c, names)})
    if asked is not None and column is not None:
        given = asked[0] if not listed else asked
        if words().cli:
            ways = (
                "to run each row on the model its column names, leave --model out; to run every row on "
                f"{given!r}, remove the column from the sheet"
            )
        else:
            ways = (
                "to run each row on the model its column names, leave the model out (df.mediagen.run(...) "
                f"with no model); to run every row on {given!r}, drop the column first "
                f"(df.drop(columns=[{column!r}]))"
            )
        shown = " ".join(f"--model {m}" for m in asked) if words().cli else f"model={given!r}"
        raise MappingError(
            f"model: {words().table} has its own column {column!r} naming a model for each row, and "
            f"{shown} was given too; {ways}",
            field="model",
        )
    per_row: list[tuple[str, str | None]] | None = None
    if column is not None:
        per_row = [_row_model(record[column], column, catalog) for record in records]
        chosen = {m: catalog[m] for m, error in per_row if error is None}
    elif asked is None:
        given = "--model (repeat it to compare models)" if words().cli else "a model id, a list of them,"
        raise MappingError(
            f"model: give {given} or a table with a column naming each row's model (none of "
            f"{words().table}'s columns does)",
            field="model",
        )
    else:
        chosen = {m: _known(m, catalog) for m in asked}
    for key in own:
        if key not in chosen:
            raise MappingError(
                f"columns: {key!r} maps columns for a model this call does not run "
                f"(models: {', '.join(chosen)})",
                field="columns",
            )
    lenient = len(chosen) > 1
    exclude = {column} if column else set()
    fills = {
        m: resolve_columns(model, names, shared, constants, own=own.get(m), lenient=lenient, exclude=exclude)
        for m, model in chosen.items()
    }
    notes: list[str] = []
    if lenient:
        _nothing_fits(chosen, fills, shared, constants)
        _warn_near_misses(chosen, fills, names, exclude)
        for m, fill in fills.items():
            used = set(fill.by_field.values())
            others = [  # a column another model takes as an input this one has not (``negative_prompt``)
                field
                for o, other in fills.items()
                if o != m
                for field, c in other.by_field.items()
                if c not in used and field_named(chosen[m], field) is None
            ]
            lacks = list(dict.fromkeys([*fill.lacks, *others]))
            if lacks:
                notes.append(not_sent(m, lacks))
            if fill.unfilled:
                notes.append(
                    f"{m} needs {_inputs_of(fill.unfilled)}, which no column or constant fills: its rows are "
                    "invalid and nothing is sent for them"
                )
    rows = plan_rows(records, chosen, fills, check, run_name=run_name, per_row=per_row)
    return Plan(rows, chosen, fills, notes, column, listed)


def _nothing_fits(
    models: Mapping[str, Model], fills: Mapping[str, Fill], shared: Columns, constants: Mapping[str, Any]
) -> None:
    """Refuse a constant or a mapped field that no model of the call has, or a frame that fills none."""
    union = list(dict.fromkeys(f for model in models.values() for f in model.properties))
    everyone = " or ".join(models)
    for name in constants:
        if all(name in fill.lacks for fill in fills.values()):
            raise MappingError(
                f"constants: {name!r} is not an input of {everyone}{did_you_mean(name, union, QUOTED)}",
                field=name,
            )
    for field in dict.fromkeys(_mapped(shared).values()):
        if field not in constants and all(field in fill.lacks for fill in fills.values()):
            raise MappingError(
                f"columns: {field!r} is not an input of {everyone}{did_you_mean(field, union, QUOTED)}",
                field=field,
            )
    if not any(fill.by_field or fill.constants for fill in fills.values()):
        raise MappingError(
            f"no column matches an input of {everyone}; pass columns={{'Column': 'field'}} or field=value "
            "constants",
        )


def plan_rows(
    records: Sequence[Mapping[str, Any]],
    models: Mapping[str, Model],
    fills: Mapping[str, Fill],
    check: Callable[[Model, Mapping[str, Any]], dict[str, Any]],
    *,
    run_name: str,
    per_row: Sequence[tuple[str, str | None]] | None = None,
) -> list[Row]:
    """One Row per record and model (``per_row``: the one model each record names), row by row,
    checked with ``check``.

    Each row's Idempotency-Key comes from its model, what it asks, the run name and its occurrence
    among identical rows of that model (:mod:`mediagen_nb.client.idempotency`): the same on every
    re-run, from any key of the account, and the same as a sweep of that model alone, so a restart
    never charges twice.
    """
    rows: list[Row] = []
    seen = Counter[tuple[str, str]]()
    for source, record in enumerate(records):
        targets = list(models)
        if per_row is not None:
            named, error = per_row[source]
            if error is not None:
                rows.append(Row(len(rows), None, error, model=named, source=source))
                continue
            targets = [named]
        for model_id in targets:
            model, fill = models[model_id], fills[model_id]
            input, error = _row_input(record, model, fill, check)
            if input is None:
                rows.append(Row(len(rows), None, error, model=model_id, source=source))
                continue
            identity = json.dumps(input, sort_keys=True, default=str)
            seen[(model_id, identity)] += 1
            key = idempotency.derive(
                ledgers.GENERATION,
                idempotency.SWEEP,
                model_id,
                input,
                run_name=run_name,
                occurrence=seen[(model_id, identity)],
            )
            rows.append(Row(len(rows), input, None, key, model_id, source))
    return rows


def _row_input(
    record: Mapping[str, Any],
    model: Model,
    fill: Fill,
    check: Callable[[Model, Mapping[str, Any]], dict[str, Any]],
) -> tuple[dict[str, Any] | None, str | None]:
    """One record's checked input for ``model``, or why it cannot be sent."""
    if fill.unfilled:
        return None, messages.missing_field(fill.unfilled[0])
    values: dict[str, Any] = {}
    for field, column in fill.by_field.items():
        cell = as_option(model.properties.get(field) or {}, plain(record[column]))
        if cell is not None:
            values[field] = cell
    for field, value in fill.constants.items():
        if isinstance(value, Template):
            empty = [c for c in value.columns if is_missing(plain(record[Template.column(c, record)]))]
            if empty:
                return None, f"{field}: column {empty[0]!r} is empty in this row"
            given = value.render(record)
        else:
            given = plain(value)
        values[field] = as_option(model.properties.get(field) or {}, given)
    try:
        return check(model, values), None
    except ValidationError as exc:
        return None, exc.message


def one_input(
    models: Sequence[Model], values: Mapping[str, Any]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """One input asked of several models (``mediagen generate a,b``, ``%%generate a,b``): what each
    model is sent, under its own names, and the notes of what a model is not sent (it has no such
    input). A value no model has is refused; each start checks the rest (a required input missing)."""
    shared: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for model in models:
        mine: dict[str, Any] = {}
        lacks: list[str] = []
        for name, value in values.items():
            field = field_named(model, name)
            if field is None:
                lacks.append(name)
            else:
                mine[field] = value
        shared[model.id] = mine
        if lacks:
            notes.append(not_sent(model.id, lacks))
    for name in values:
        if all(field_named(model, name) is None for model in models):
            union = [f for model in models for f in model.properties]
            raise MappingError(
                f"{name}: not an input of {' or '.join(shared)}{did_you_mean(name, union, QUOTED)}",
                field=name,
            )
    return shared, notes
