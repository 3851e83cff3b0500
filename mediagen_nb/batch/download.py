"""Saving a result frame's outputs to a folder, concurrently, with a progress bar."""

import asyncio
import hashlib
from pathlib import Path

import httpx
import pandas as pd

from mediagen_nb.batch import loop
from mediagen_nb.protocol.schema import url_extension

CONCURRENT = 8


def _target(folder: Path, position: int, url: str) -> Path:
    digest = hashlib.sha256(url.encode()).hexdigest()[:10]
    return folder / f"{position:05d}-{digest}{url_extension(url) or '.bin'}"


async def _fetch_all(jobs: list[tuple[int, str, Path]], progress: bool) -> dict[int, str | None]:
    bar = None
    if progress and jobs:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), desc="download", unit="file")
    gate = asyncio.Semaphore(CONCURRENT)
    saved: dict[int, str | None] = {}
    async with httpx.AsyncClient(follow_redirects=True, timeout=120) as http:

        async def one(position: int, url: str, target: Path) -> None:
            async with gate:
                if not target.exists():
                    try:
                        response = await http.get(url)
                        response.raise_for_status()
                    except httpx.HTTPError:
                        saved[position] = None
                    else:
                        partial = target.with_suffix(target.suffix + ".part")
                        partial.write_bytes(response.content)
                        partial.replace(target)  # a crash never leaves a half file under the real name
                if position not in saved:
                    saved[position] = str(target)
                if bar is not None:
                    bar.update(1)

        await asyncio.gather(*(one(*job) for job in jobs))
    if bar is not None:
        bar.close()
    return saved


def download(
    df: pd.DataFrame, folder: str | Path, column: str = "output_url", *, progress: bool = True
) -> pd.DataFrame:
    """A copy of ``df`` with ``local_path`` (prefixed like ``column``) for every output saved."""
    if column not in df.columns:
        raise KeyError(
            f"download: no column {column!r}; pass column= one of {', '.join(map(str, df.columns))}"
        )
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    urls = list(df[column])
    jobs = [(i, url, _target(folder, i, url)) for i, url in enumerate(urls) if isinstance(url, str) and url]
    saved = loop.submit(_fetch_all(jobs, progress)).result()
    out: pd.DataFrame = df.copy()
    out[column.removesuffix("output_url") + "local_path"] = [saved.get(i) for i in range(len(urls))]
    return out
