"""``mediagen sweep``: a spreadsheet of inputs in, results and an HTML gallery out, with the batch engine.

mediagen sweep prompts.xlsx --model gpt-image-2 --map Prompt=prompt --set quality=high --estimate
mediagen sweep prompts.xlsx --model gpt-image-2 --model flare-1-pro --gallery compare.html

Several ``--model`` (or ``--model a,b``) run every row on each model: the results have a row per row
and model (``row``, ``model``), the estimate a subtotal per model, and the gallery is a grid of rows x
models. Without ``--model``, a column of the sheet naming each row's model is used.

Exit codes: 0 every row succeeded (or was priced); 1 some rows could not be run or failed (the
reasons are printed, grouped by cause, with counts and row numbers); 2 nothing was run because of a
mistake to fix first (a file, an option, the mapping, the ledger, an output that cannot be written).
Every output is checked writable before anything is spent; no user error ever prints a traceback.

With ``--json`` standard output holds one JSON document (every other line goes to stderr): the
sweep's outcome, ``{"ok": true, "rows": 3, "status": {"succeeded": 3}, "out": ...}`` (``"estimate"``
credits and ``"invalid"`` rows with ``--estimate``), or for a mistake the failure document of every
``mediagen`` command, ``{"ok": false, "error": {"type": ..., "message": ..., "exit": 2}}``.
"""

import argparse
import importlib.util
import json
import os
import sys
import warnings
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, redirect_stdout
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd

from mediagen_nb.batch import runner
from mediagen_nb.batch.download import download
from mediagen_nb.batch.gallery import Gallery
from mediagen_nb.batch.plan import FilesFrom, MappingError, MappingWarning, NotSent, resolve_columns
from mediagen_nb.batch.template import template
from mediagen_nb.batch.words import CLI, speaking
from mediagen_nb.client import MediagenError

SPREADSHEETS = (".xlsx", ".xlsm", ".xls")
TABLES_IN = (".csv", ".tsv", ".txt", *SPREADSHEETS)
TABLES_OUT = (".csv", ".tsv", ".xlsx", ".json", ".parquet")
OK, INCOMPLETE, REFUSED = 0, 1, 2
SHOWN_ROWS = 8  # row numbers listed per cause
FIRST_ROW = 2  # the sheet's number of its first row of data, below the header


class Refused(Exception):
    """A mistake to fix before anything runs: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse, refusing instead of exiting, so ``--json`` can say the mistake as JSON too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise Refused(message)


def read_table(path: Path, sheet: str | None = None, encoding: str = "utf-8") -> pd.DataFrame:
    """A CSV or Excel file as a DataFrame (the first sheet unless ``sheet`` is given), its rows labelled
    as the sheet numbers them (the header is row 1, so the first row of data is row 2)."""
    if not path.is_file():
        raise Refused(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix not in TABLES_IN:
        raise Refused(f"{path.name}: use a .csv, .tsv or .xlsx file")
    try:
        if suffix in SPREADSHEETS:
            df = pd.read_excel(path, sheet_name=sheet or 0)
        else:
            df = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", encoding=encoding)
    except pd.errors.EmptyDataError:
        raise Refused(f"{path.name} is empty: it needs a header row and one row per generation") from None
    except UnicodeDecodeError:
        raise Refused(
            f"{path.name} is not {encoding} text: save it as UTF-8 CSV, or pass --encoding (e.g. latin-1)"
        ) from None
    except (ValueError, OSError) as exc:  # a bad sheet name, a damaged spreadsheet, a parse error
        raise Refused(f"{path.name} cannot be read: {exc}") from None
    if df.empty:
        raise Refused(f"{path.name} has a header but no rows")
    df.index = pd.RangeIndex(FIRST_ROW, FIRST_ROW + len(df))
    return df


def check_output(path: Path) -> None:
    """Refuse, before anything is spent, an output of an unknown format or in a place we cannot write."""
    suffix = path.suffix.lower()
    if suffix not in TABLES_OUT:
        raise Refused(f"--out {path}: write one of {', '.join(TABLES_OUT)}")
    if suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise Refused(f"--out {path}: .parquet needs pyarrow (pip install pyarrow), or use .csv")
    writable(path)


def writable(path: Path) -> None:
    """Create the folder and try a file beside ``path`` (removed again): a failure is a Refused."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe = path.with_name(f".{path.name}.mediagen-probe")
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise Refused(f"{path} cannot be written ({exc.strerror or exc}): choose another place") from None


def write_table(df: pd.DataFrame, path: Path) -> None:
    """CSV, TSV, XLSX, JSON or Parquet by extension; lists of URLs become space-separated text."""
    flat = df.copy()
    for column in flat.columns:
        if flat[column].map(lambda v: isinstance(v, (list, dict))).any():
            flat[column] = flat[column].map(
                lambda v: " ".join(v) if isinstance(v, list) else json.dumps(v) if isinstance(v, dict) else v
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        flat.to_excel(path, index=False)
    elif suffix == ".json":
        flat.to_json(path, orient="records", indent=1, force_ascii=False)
    elif suffix == ".parquet":
        flat.to_parquet(path, index=False)
    else:
        flat.to_csv(path, index=False, sep="\t" if suffix == ".tsv" else ",")


def _pairs(items: list[str], option: str, shape: str) -> dict[str, str]:
    """NAME=VALUE pairs; NAME as written (a sheet's column may end in a space), VALUE after the first =."""
    pairs = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise Refused(f"{option} {item!r}: write it as {shape}")
        pairs[name if option == "--map" else name.strip()] = value.strip() if option == "--map" else value
    return pairs


def _value(text: str) -> Any:
    """``--set`` values: JSON when they parse (numbers, true/false, lists), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def mapping(items: list[str]) -> dict[str, str] | None:
    """``--map COLUMN=FIELD`` pairs (the direction of DataFrame.rename). COLUMN is found as in every
    sweep (:mod:`mediagen_nb.batch.columns`): ``--map "Prompt Text =prompt"`` and ``--map "prompt
    text=prompt"`` both name a column ``Prompt Text ``; a pair written backwards is refused with the swap."""
    return _pairs(items, "--map", "COLUMN=FIELD") or None


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="mediagen sweep", description="Run a spreadsheet of inputs through a model.")
    p.add_argument("table", type=Path, help="a .csv, .tsv or .xlsx file, one row per generation")
    p.add_argument(
        "--model",
        action="append",
        default=[],
        help="model id, e.g. gpt-image-2; several (--model a --model b, or a,b) run every row on each "
        "(default: the sheet's column naming each row's model)",
    )
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="COLUMN=FIELD",
        help="this column fills that input (columns named like inputs need no --map)",
    )
    p.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="input field for every row"
    )
    p.add_argument(
        "--template",
        action="append",
        default=[],
        metavar="FIELD=PATTERN",
        help='e.g. prompt="A {style} photo of {subject}"',
    )
    p.add_argument("--sheet", help="sheet name of an .xlsx file (default: the first)")
    p.add_argument("--encoding", default="utf-8", help="text encoding of a .csv/.tsv file (default utf-8)")
    p.add_argument("--estimate", action="store_true", help="only price the sweep; nothing is run or charged")
    p.add_argument("--budget", type=int, help="put the estimate against this many credits")
    p.add_argument("--max-credits", type=int, help="refuse, or stop starting rows, past this many credits")
    p.add_argument("--out", type=Path, help=f"write the results ({', '.join(TABLES_OUT)})")
    p.add_argument("--gallery", type=Path, help="write an HTML gallery of the results")
    p.add_argument(
        "--download", type=Path, help="save every output in this folder (the gallery then uses them)"
    )
    p.add_argument("--run-name", default="", help="a new name starts new generations; the same name resumes")
    p.add_argument("--fresh", action="store_true", help="new generations even for rows that ran before")
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="start again the rows whose generation failed; keep the rest",
    )
    p.add_argument("--ledger", type=Path, help="the ledger file (default: the user's, or MEDIAGEN_LEDGER)")
    p.add_argument(
        "--files-from",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="also send the table's local files from this folder (default: only the table's own folder)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document of the outcome, for scripts")
    return p


@contextmanager
def _one_line_warnings() -> Iterator[None]:
    """Mapping warnings as one line each on stderr, not Python's file:line form (an input a model of
    several does not have is a note of the estimate printed next)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MappingWarning)
        yield
    for warning in caught:
        if issubclass(warning.category, NotSent):
            continue
        print(f"mediagen sweep: warning: {warning.message}", file=sys.stderr)


def causes(
    frame: pd.DataFrame, status: str = "status", error: str = "error", ok: str = "succeeded"
) -> list[str]:
    """Lines grouping the rows whose status is not ``ok`` by status, reason (and model, in a comparison),
    with counts and row numbers: the frame's row labels (for a table read here, the sheet's own row
    numbers)."""
    groups: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    models = frame[runner.MODEL] if runner.ROW in frame.columns and runner.MODEL in frame.columns else None
    on = [""] * len(frame) if models is None else [f" on {m}" for m in models]
    for number, state, reason, model in zip(frame.index, frame[status], frame[error], on, strict=True):
        if state != ok:
            groups[(str(state), model, str(reason) if isinstance(reason, str) else "")].append(number)
    lines = []
    for (state, model, reason), rows in sorted(groups.items(), key=lambda item: -len(item[1])):
        shown = ", ".join(map(str, rows[:SHOWN_ROWS])) + (", ..." if len(rows) > SHOWN_ROWS else "")
        lines.append(f"  {len(rows)} {state}{model}: {reason or 'no reason given'} (rows {shown})")
    return lines


def other_sheets(args: argparse.Namespace, columns: dict[str, str] | None, constants: dict[str, Any]) -> str:
    """``; sheet 'Prompts' matches: pass --sheet Prompts`` when the columns that did not fit the sheet
    read would fit another sheet of the workbook (its first one, unless --sheet said otherwise)."""
    if args.table.suffix.lower() not in SPREADSHEETS:
        return ""
    from mediagen_nb.client.connection import current

    ids = [args.models] if isinstance(args.models, str) else list(args.models or [])
    try:
        headers = pd.read_excel(args.table, sheet_name=None, nrows=0)
        models = [current().model(model_id) for model_id in ids]
    except (ValueError, OSError, MediagenError):
        return ""
    read = args.sheet or next(iter(headers), None)
    fitting = []
    for name, header in headers.items():
        if name == read:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MappingWarning)
                for model in models:
                    cells = [str(c) for c in header.columns]
                    resolve_columns(model, cells, columns, constants, lenient=len(models) > 1)
        except MappingError:
            continue
        fitting.append(str(name))
    if not models or not fitting:
        return ""
    listed = ", ".join(repr(name) for name in fitting)
    return f"; {args.table.name}'s sheet {listed} would: pass {CLI.option('sheet', fitting[0])}"


def models_of(given: list[str]) -> list[str] | str | None:
    """The ``--model`` options: one id, a list (several options, or ids joined by commas), or None."""
    ids = [part.strip() for option in given for part in option.split(",") if part.strip()]
    if not ids:
        return None
    return ids[0] if len(given) == 1 and len(ids) == 1 else ids


def sweep(args: argparse.Namespace) -> int:
    df = read_table(args.table, args.sheet, args.encoding)
    columns = mapping(args.map)
    constants: dict[str, Any] = {k: _value(v) for k, v in _pairs(args.set, "--set", "FIELD=VALUE").items()}
    try:
        constants |= {k: template(v) for k, v in _pairs(args.template, "--template", "FIELD=PATTERN").items()}
    except ValueError as exc:
        raise Refused(f"--template: {exc}") from None
    for path in (args.out, args.gallery):
        if path is not None:
            (check_output if path is args.out else writable)(path)
    try:  # a sheet from elsewhere names files: only those beside it (or in --files-from) are sent
        files_from = FilesFrom.of(args.table.parent, args.files_from, "--files-from")
    except MappingError as exc:
        raise Refused(exc.message) from None
    args.models = models_of(args.model)
    try:
        with _one_line_warnings():
            priced = runner.estimate(
                df,
                args.models,
                columns,
                budget=args.budget,
                show=False,
                allow_files_from=files_from,
                **constants,
            )
    except MappingError as exc:
        hint = other_sheets(args, columns, constants) if exc.field != "prefix" else ""
        raise Refused(exc.message + hint) from None
    print(priced.attrs["mediagen_estimate"])
    if args.estimate:
        if args.out:
            write_table(priced, args.out)
            print(f"estimate: {args.out}")
        invalid = priced["credits"].isna()
        args.outcome = {
            "rows": len(priced),
            "estimate": int(priced["credits"].sum()),
            "invalid": int(invalid.sum()),
        }
        if invalid.any():
            reasons = causes(
                priced.assign(status=invalid.map({True: "invalid", False: "priced"})), ok="priced"
            )
            print("mediagen sweep: some rows cannot be sent:\n" + "\n".join(reasons), file=sys.stderr)
            return INCOMPLETE
        return OK
    with warnings.catch_warnings():  # said once, with the estimate
        warnings.simplefilter("ignore", MappingWarning)
        result = runner.run(
            df,
            args.models,
            columns,
            max_credits=args.max_credits,
            run_name=args.run_name,
            fresh=args.fresh,
            retry_failed=args.retry_failed,
            ledger=args.ledger,
            allow_files_from=files_from,
            **constants,
        )
    args.outcome = {"rows": len(result), "status": result["status"].value_counts().to_dict()}
    try:
        return _write_results(args, result)
    except OSError as exc:  # checked before spending, so only a disk that changed since
        print(
            f"mediagen sweep: the results could not be written ({exc}); they are in the ledger, so running "
            "the same command with another --out costs nothing",
            file=sys.stderr,
        )
        return INCOMPLETE


def _served_here(result: pd.DataFrame) -> bool:
    """Whether outputs come from a server on this machine (the embedded sandbox), not the service."""
    from mediagen_nb.client.config import on_this_machine

    return any(on_this_machine(u) for u in result.get("output_url", []) if isinstance(u, str))


def _write_results(args: argparse.Namespace, result: pd.DataFrame) -> int:
    """Downloads, the results table and the gallery; then the exit code, with the reasons printed."""
    if args.download:
        result = download(result, args.download)
    if args.out:
        write_table(result, args.out)
        print(f"results: {args.out}")
    if args.gallery:
        saved = result if args.download else None
        if saved is None and _served_here(result):  # a sandbox may be stopped or reset: keep copies
            saved = download(result, args.gallery.parent / f"{args.gallery.stem}_files", progress=False)
        shown = result
        if saved is not None:
            base = args.gallery.parent.resolve()
            local: list[Any] = [
                os.path.relpath(Path(p).resolve(), base).replace(os.sep, "/") if isinstance(p, str) else None
                for p in saved["local_path"]
            ]
            shown = result.assign(output_url=local)
        args.gallery.write_text(
            Gallery(shown, per_page=max(1, len(shown))).to_html_page(
                f"{', '.join(args.model) or 'the models of its rows'}: {args.table.name}"
            )
        )
        print(f"gallery: {args.gallery}")
    problems = causes(result)
    if problems:
        print("mediagen sweep: some rows did not succeed:\n" + "\n".join(problems), file=sys.stderr)
        return INCOMPLETE
    return OK


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    as_json = "--json" in argv
    try:
        args = parser().parse_args(argv)
        args.outcome = {}
        with redirect_stdout(sys.stderr) if as_json else nullcontext(), speaking(CLI):
            code = sweep(args)
    except Refused as exc:
        return _failed(as_json, "Refused", str(exc))
    except MappingError as exc:  # the table does not fit the model: said as a mistake to fix, in CLI words
        return _failed(as_json, "Refused", exc.message)
    except MediagenError as exc:
        return _failed(as_json, type(exc).__name__, str(exc))
    if as_json:
        paths = {"out": args.out, "gallery": args.gallery, "download": args.download}
        shown = {name: str(path) if path is not None else None for name, path in paths.items()}
        print(json.dumps({"ok": code == OK, **args.outcome, **shown}, ensure_ascii=False, default=str))
    return code


def _failed(as_json: bool, kind: str, message: str) -> int:
    """A mistake: one line on stderr and, with --json, the failure document on stdout; exit 2."""
    from mediagen_nb.client.errors import failure_document

    print(f"mediagen sweep: {message if kind == 'Refused' else f'{kind}: {message}'}", file=sys.stderr)
    if as_json:
        print(json.dumps(failure_document(kind, message, REFUSED), ensure_ascii=False))
    return REFUSED
