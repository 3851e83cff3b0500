"""Saving a result frame's outputs to a folder: names from columns, a JSON sidecar per file, no file lost.

Files are named by ``name=`` (a template of the frame's columns, ``{row}`` and ``{id}``; a comparison
of models has ``{model}`` too, and its ``{row}`` is the frame row), else by the row and what it asked
(its model and input): never by the output's host or port, so the same sweep
saved twice (even from a restarted sandbox) gives the same names. A frame may come from someone
else, so every name is made by :mod:`mediagen_nb.client.files` (no separator, short, proven inside
the folder) and its extension comes from the URL only when that is a media extension, else from the
answer's media type. Each file gets ``<file>.json``: the model, the input, the generation id, the
credits, the status, where it came from and when. A row that fails (its name, its URL, the disk) is
reported in its ``download_error`` and a summary line; the other rows are saved.
"""

import hashlib
import json
import re
import string
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pandas as pd

from mediagen_nb.batch.runner import MODEL, MODEL_COLUMNS, MODELS, ROW
from mediagen_nb.client import files
from mediagen_nb.client.errors import DownloadFailed
from mediagen_nb.client.transport import save
from mediagen_nb.runtime import tls

CONCURRENT = 8


@dataclass(frozen=True)
class Job:
    """One row's output to save: its URL, and its file's name before the extension."""

    url: str
    stem: str


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
    known = {str(c) for c in df.columns} | {"row", "id", "model"}
    unknown = [f for f in fields if f.split(".")[0].split("[")[0] not in known]
    if unknown:
        raise ValueError(
            f"download: name={template!r} uses {', '.join(map(repr, unknown))}, which is no column; use "
            f"{{row}}, {{id}} or columns: {', '.join(map(str, df.columns))}"
        )


def _stem(
    template: str | None, position: int, record: Mapping[str, Any], column: str, model: str | None = None
) -> str:
    """The file name of a row before its extension: the template filled, else its row, its model (in
    a frame of several) and what it asked."""
    prefix = column.removesuffix("output_url")
    ident = record.get(prefix + "generation_id") or ""
    if template is not None:
        values = {str(k): ("" if v is None else v) for k, v in record.items()}
        row = record.get(prefix + ROW, position)  # a comparison's frame row, else the position
        text = template.format(**{**values, "row": row, "id": ident, "model": model or ""})
    else:
        asked = record.get(prefix + "input")
        basis = (
            json.dumps(asked, sort_keys=True, default=str) if asked is not None else _path_of(record[column])
        )
        named = f"-{model}" if model else ""
        text = f"{position:05d}{named}-{hashlib.sha256(basis.encode()).hexdigest()[:10]}"
    return files.name(text, fallback=f"{position:05d}")


def row_models(df: pd.DataFrame, prefix: str) -> tuple[list[str | None], bool]:
    """The model of each row (for its sidecar), and whether they come from a column (several models):
    a sweep's one model, else the column naming each row's model."""
    single = df.attrs.get(MODELS, {}).get(prefix)
    if single is not None:
        return [single] * len(df), False
    column = df.attrs.get(MODEL_COLUMNS, {}).get(prefix) or prefix + MODEL
    if column in df.columns:
        return [v if isinstance(v, str) else None for v in df[column]], True
    return [None] * len(df), False


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in record.items()} for record in df.to_dict("records")]


def _path_of(url: str) -> str:
    """The URL without its scheme, host and port (a restarted sandbox serves the same path elsewhere)."""
    return re.sub(r"^[a-z]+://[^/]+", "", url)


def targets(df: pd.DataFrame, column: str, name: str | None) -> tuple[dict[int, Job], dict[int, str]]:
    """Row position -> what to save, for every row with an output (names made unique); and the rows
    whose name cannot be made (a template that does not fill), with why."""
    check_name(name, df)
    models, named = row_models(df, column.removesuffix("output_url"))
    chosen: dict[int, Job] = {}
    failed: dict[int, str] = {}
    taken: set[str] = set()
    for position, record in enumerate(_records(df)):
        url = record.get(column)
        if not isinstance(url, str) or not url:
            continue
        try:
            stem = _stem(name, position, record, column, models[position] if named or name else None)
        except (ValueError, KeyError, IndexError, AttributeError, TypeError) as exc:
            failed[position] = f"download: name={name!r} cannot be filled for this row ({exc})"
            continue
        if stem in taken:
            stem = files.name(stem, position)
        taken.add(stem)
        chosen[position] = Job(url, stem)
    return chosen, failed


def _saved_before(folder: Path, job: Job) -> Path | None:
    """The file an earlier download of ``job`` made, if any (its extension may have come from its type)."""
    known = files.extension(None, job.url)
    suffixes = [known] if known != files.UNKNOWN else [*files.CONTENT_TYPES.values(), files.UNKNOWN]
    for suffix in dict.fromkeys(suffixes):
        candidate = files.inside(folder, job.stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def _save_one(http: httpx.Client, folder: Path, job: Job) -> Path:
    """Save one output (unless an earlier download did), named by its URL's or its answer's media type."""
    earlier = _saved_before(folder, job)
    if earlier is not None:
        return earlier

    def named(media_type: str | None) -> Path:
        return files.inside(folder, job.stem + files.extension(None, job.url, media_type))

    return save(job.url, named, http=http)  # streamed; no half file under the real name


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


def _fetch_all(
    jobs: dict[int, Job], folder: Path, progress: bool, write: Callable[[int, Job, Path], None]
) -> tuple[dict[int, Path], dict[int, str]]:
    """Save each job's output (and ``write`` its sidecar), several at once; the files saved and the
    error of each one that failed, by position. One row's failure never stops the others."""
    bar = None
    if progress and jobs:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), desc="download", unit="file")
    saved: dict[int, Path] = {}
    failed: dict[int, str] = {}

    def one(http: httpx.Client, position: int, job: Job) -> None:
        try:
            target = _save_one(http, folder, job)
            write(position, job, target)
            saved[position] = target
        except Exception as exc:  # this row's own failure (a name, a URL, the disk): kept in its row
            failed[position] = str(exc) if isinstance(exc, DownloadFailed) else _why(job, exc)
        if bar is not None:
            bar.update(1)

    with (
        httpx.Client(follow_redirects=True, timeout=120, verify=tls.context()) as http,
        ThreadPoolExecutor(CONCURRENT) as pool,
    ):
        for done in [pool.submit(one, http, p, job) for p, job in jobs.items()]:
            done.result()
    if bar is not None:
        bar.close()
    return saved, failed


def _why(job: Job, exc: Exception) -> str:
    return f"cannot save {job.url[:80]}: {type(exc).__name__}: {exc}"[:300]


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
    jobs, unnamed = targets(df, column, name)
    folder.mkdir(parents=True, exist_ok=True)
    records = _records(df)
    prefix = column.removesuffix("output_url")
    models, _ = row_models(df, prefix)

    def write(position: int, job: Job, target: Path) -> None:
        if sidecars:
            card = sidecar(records[position], column, job.url, models[position])
            files.inside(folder, target.name + ".json").write_text(json.dumps(card, indent=2, default=str))

    saved, failed = _fetch_all(jobs, folder, progress, write)
    failed |= unnamed
    out: pd.DataFrame = df.copy()
    out[prefix + "local_path"] = [str(saved[p]) if p in saved else None for p in range(len(records))]
    out[prefix + "download_error"] = [failed.get(p) for p in range(len(records))]
    if failed:
        print(
            f"mediagen_nb: {len(failed)} of {len(jobs) + len(unnamed)} files could not be downloaded (see "
            f"download_error); the other {len(saved)} are in {folder}",
            file=sys.stderr,
        )
    return out
