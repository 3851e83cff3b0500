"""``mediagen sweep``: a spreadsheet of inputs in, results and an HTML gallery out, with the batch engine.

mediagen sweep prompts.xlsx --model gpt-image-2 --map prompt=Prompt --set quality=high --estimate
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from mediagen_nb.batch import runner
from mediagen_nb.batch.download import download
from mediagen_nb.batch.gallery import Gallery
from mediagen_nb.batch.template import template
from mediagen_nb.client import MediagenError

SPREADSHEETS = (".xlsx", ".xlsm", ".xls")


def read_table(path: Path, sheet: str | None = None) -> pd.DataFrame:
    """A CSV or Excel file as a DataFrame (the first sheet unless ``sheet`` is given)."""
    if not path.is_file():
        raise SystemExit(f"mediagen sweep: no such file: {path}")
    if path.suffix.lower() in SPREADSHEETS:
        return pd.read_excel(path, sheet_name=sheet or 0)
    if path.suffix.lower() in (".csv", ".tsv", ".txt"):
        return pd.read_csv(path, sep="\t" if path.suffix.lower() == ".tsv" else ",")
    raise SystemExit(f"mediagen sweep: {path.name}: use a .csv, .tsv or .xlsx file")


def write_table(df: pd.DataFrame, path: Path) -> None:
    """CSV or XLSX by extension; lists of URLs become space-separated text."""
    flat = df.copy()
    for column in flat.columns:
        if flat[column].map(lambda v: isinstance(v, list)).any():
            flat[column] = flat[column].map(lambda v: " ".join(v) if isinstance(v, list) else v)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in SPREADSHEETS:
        flat.to_excel(path, index=False)
    else:
        flat.to_csv(path, index=False)


def _pairs(items: list[str], option: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise SystemExit(f"mediagen sweep: {option} {item!r}: write it as field=value")
        pairs[name.strip()] = value
    return pairs


def _value(text: str) -> Any:
    """``--set`` values: JSON when they parse (numbers, true/false, lists), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mediagen sweep", description="Run a spreadsheet of inputs through a model."
    )
    p.add_argument("table", type=Path, help="a .csv or .xlsx file, one row per generation")
    p.add_argument("--model", required=True, help="model id, e.g. gpt-image-2")
    p.add_argument(
        "--map", action="append", default=[], metavar="FIELD=COLUMN", help="input field from a column"
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
    p.add_argument("--estimate", action="store_true", help="only price the sweep; nothing is run or charged")
    p.add_argument("--budget", type=int, help="put the estimate against this many credits")
    p.add_argument("--max-credits", type=int, help="refuse, or stop starting rows, past this many credits")
    p.add_argument("--out", type=Path, help="write the results (.csv or .xlsx)")
    p.add_argument("--gallery", type=Path, help="write an HTML gallery of the results")
    p.add_argument(
        "--download", type=Path, help="save every output in this folder (the gallery then uses them)"
    )
    p.add_argument("--run-name", default="", help="a new name starts new generations; the same name resumes")
    p.add_argument("--fresh", action="store_true", help="new generations even for rows that ran before")
    p.add_argument("--ledger", type=Path, help="the ledger file (default: the user's, or MEDIAGEN_LEDGER)")
    return p


def sweep(args: argparse.Namespace) -> int:
    df = read_table(args.table, args.sheet)
    columns = {column: field for field, column in _pairs(args.map, "--map").items()} or None
    constants: dict[str, Any] = {k: _value(v) for k, v in _pairs(args.set, "--set").items()}
    constants |= {k: template(v) for k, v in _pairs(args.template, "--template").items()}
    priced = runner.estimate(df, args.model, columns, budget=args.budget, **constants)
    if args.estimate:
        if args.out:
            write_table(priced, args.out)
        return 0
    result = runner.run(
        df,
        args.model,
        columns,
        max_credits=args.max_credits,
        run_name=args.run_name,
        fresh=args.fresh,
        ledger=args.ledger,
        **constants,
    )
    counts = result["status"].value_counts().to_dict()
    print(f"{len(result)} rows: " + ", ".join(f"{n} {status}" for status, n in counts.items()))
    print(f"credits spent: {int(result['credits'].sum())}")
    if args.download:
        result = download(result, args.download)
    if args.out:
        write_table(result, args.out)
        print(f"results: {args.out}")
    if args.gallery:
        shown = result
        if args.download:
            base = args.gallery.parent.resolve()
            shown = result.assign(
                output_url=[
                    Path(p).resolve().relative_to(base).as_posix() if isinstance(p, str) else None
                    for p in result["local_path"]
                ]
            )
        args.gallery.parent.mkdir(parents=True, exist_ok=True)
        args.gallery.write_text(
            Gallery(shown, limit=len(shown)).to_html_page(f"{args.model}: {args.table.name}")
        )
        print(f"gallery: {args.gallery}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return sweep(args)
    except MediagenError as exc:
        print(f"mediagen sweep: {exc.message}", file=sys.stderr)
        return 2
