"""Saving a result frame's outputs to a folder: names from columns, a JSON sidecar per file, no file lost.

Files are named by ``name=`` (a template of the frame's columns, ``{row}`` and ``{id}``), else by the
row and what it asked (its model and input): never by the output's host or port, so the same sweep
saved twice (even from a restarted sandbox) gives the same names. Each file gets ``<file>.json``:
the model, the input, the generation id, the credits, the status, where it came from and when. A
URL that fails is reported in ``download_error`` and a summary line; the other files are saved.
"""

import hashlib
import json
import re
import string
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pandas as pd

from mediagen_nb.client.errors import DownloadFailed
from mediagen_nb.client.transport import save
from mediagen_nb.protocol.schema import url_extension

CONCURRENT = 8
NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
MAX_NAME = 120


def _fields(template: str) -> list[str]:
    return [field for _, field, _, _ in string.Formatter().parse(template) if field]


def check_name(template: str | None, df: pd.DataFrame) -> None:
    """Refuse, before anything is downloaded, a template that names no column (with the columns)."""
    if template is None:
        return
    try:
        fields = _fields(template)
    except ValueError as exc:
        raise ValueError(f"download: name={template!r} is not a template ({exc})") from None
    known = {str(c) for c in df.columns} | {"row", "id"}
    unknown = [f for f in fields if f.split(".")[0].split("[")[0] not in known]
    if unknown:
        raise ValueError(
            f"download: name={template!r} uses {', '.join(map(repr, unknown))}, which is no column; use "
            f"{{row}}, {{id}} or columns: {', '.join(map(str, df.columns))}"
        )


def _stem(template: str | None, position: int, record: Mapping[str, Any], column: str) -> str:
    prefix = column.removesuffix("output_url")
    ident = record.get(prefix + "generation_id") or ""
    if template is not None:
        values = {str(k): ("" if v is None else v) for k, v in record.items()}
        text = template.format(**{**values, "row": position, "id": ident})
    else:
        asked = record.get(prefix + "input")
        basis = (
            json.dumps(asked, sort_keys=True, default=str) if asked is not None else _path_of(record[column])
        )
        text = f"{position:05d}-{hashlib.sha256(basis.encode()).hexdigest()[:10]}"
    return NAME_CHARS.sub("-", text).strip("-.")[:MAX_NAME] or f"{position:05d}"


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in record.items()} for record in df.to_dict("records")]


def _path_of(url: str) -> str:
    """The URL without its scheme, host and port (a restarted sandbox serves the same path elsewhere)."""
    return re.sub(r"^[a-z]+://[^/]+", "", url)


def targets(df: pd.DataFrame, folder: Path, column: str, name: str | None) -> dict[int, tuple[str, Path]]:
    """Row position -> (URL, file) for every row with an output; names made unique."""
    check_name(name, df)
    chosen: dict[int, tuple[str, Path]] = {}
    taken: set[str] = set()
    for position, record in enumerate(_records(df)):
        url = record.get(column)
        if not isinstance(url, str) or not url:
            continue
        stem = _stem(name, position, record, column)
        if stem in taken:
            stem = f"{stem}-{position}"
        taken.add(stem)
        chosen[position] = (url, folder / f"{stem}{url_extension(url) or '.bin'}")
    return chosen


def sidecar(record: Mapping[str, Any], column: str, url: str, model: str | None) -> dict[str, Any]:
    """What made one file: model, input, generation id, credits, status, source URL, saved time."""
    prefix = column.removesuffix("output_url")

    def plain(value: Any) -> Any:
        return None if value is None or (isinstance(value, float) and pd.isna(value)) else value

    return {
        "model": model,
        "input": plain(record.get(prefix + "input")),
        "generation_id": plain(record.get(prefix + "generation_id")),
        "credits": plain(record.get(prefix + "credits")),
        "status": plain(record.get(prefix + "status")),
        "source_url": url,
        "saved_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _fetch_all(jobs: dict[int, tuple[str, Path]], progress: bool) -> dict[int, str]:
    """Save each job's URL to its file, several at once; the error of each one that failed, by position."""
    bar = None
    if progress and jobs:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), desc="download", unit="file")
    failed: dict[int, str] = {}

    def one(http: httpx.Client, position: int, url: str, target: Path) -> None:
        if not target.exists():
            try:
                save(url, target, http=http)  # streamed; no half file under the real name
            except DownloadFailed as exc:
                failed[position] = str(exc)
        if bar is not None:
            bar.update(1)

    with httpx.Client(follow_redirects=True, timeout=120) as http, ThreadPoolExecutor(CONCURRENT) as pool:
        for done in [pool.submit(one, http, p, url, target) for p, (url, target) in jobs.items()]:
            done.result()
    if bar is not None:
        bar.close()
    return failed


def download(
    df: pd.DataFrame,
    folder: str | Path,
    column: str = "output_url",
    *,
    name: str | None = None,
    sidecars: bool = True,
    progress: bool = True,
) -> pd.DataFrame:
    """A copy of ``df`` with ``local_path`` and ``download_error`` (prefixed like ``column``)."""
    if column not in df.columns:
        raise KeyError(
            f"download: no column {column!r}; pass column= one of {', '.join(map(str, df.columns))}"
        )
    folder = Path(folder)
    jobs = targets(df, folder, column, name)
    folder.mkdir(parents=True, exist_ok=True)
    failed = _fetch_all(jobs, progress)
    records = _records(df)
    prefix = column.removesuffix("output_url")
    model = df.attrs.get("mediagen_models", {}).get(prefix)
    for position, (url, target) in jobs.items():
        if position not in failed and sidecars:
            card = sidecar(records[position], column, url, model)
            target.with_name(target.name + ".json").write_text(json.dumps(card, indent=2, default=str))
    out: pd.DataFrame = df.copy()
    out[prefix + "local_path"] = [
        str(jobs[p][1]) if p in jobs and p not in failed else None for p in range(len(records))
    ]
    out[prefix + "download_error"] = [failed.get(p) for p in range(len(records))]
    if failed:
        print(
            f"mediagen_nb: {len(failed)} of {len(jobs)} files could not be downloaded (see download_error); "
            f"the other {len(jobs) - len(failed)} are in {folder}",
            file=sys.stderr,
        )
    return out
