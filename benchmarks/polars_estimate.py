"""Overhead of the polars path against the pandas path: one estimate of the same 100,000 rows.

Both frames hold the same rows (a subject, a style and one of three qualities of ``gpt-image-2``),
and both go through the one engine (:mod:`mediagen_nb.batch.frames`) to the same sandbox served on
127.0.0.1: three estimate requests each, so the figure is the frame handling around them. The cases
are interleaved and each reports the median of ``--runs`` samples (after one warm-up of each).
Target: polars within 1.2x of pandas.

    .venv/bin/python benchmarks/polars_estimate.py [--rows 100000] [--runs 5]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl

import mediagen_nb as mg
import mediagen_nb.batch.accessor  # registers df.mediagen
import mediagen_nb.batch.polars_accessor  # registers pl_df.mediagen
from mediagen_nb import Sandbox, SandboxConfig
from mediagen_nb.batch import loop
from mediagen_nb.client import AsyncClient

MODEL = "gpt-image-2"
TARGET = 1.2


def rows(n: int) -> dict[str, list[str]]:
    subjects = [f"subject {i % 997}" for i in range(n)]
    styles = [("watercolour", "photo", "line art", "oil")[i % 4] for i in range(n)]
    qualities = [("low", "medium", "high")[i % 3] for i in range(n)]
    return {"subject": subjects, "style": styles, "quality": qualities}


def timed(frame: Any, prompt: Any, client: AsyncClient) -> tuple[float, int]:
    start = time.perf_counter()
    priced = frame.mediagen.estimate(MODEL, prompt=prompt, show=False, client=client)
    seconds = time.perf_counter() - start
    total = int(priced["credits"].sum())
    return seconds, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    data = rows(args.rows)
    frames = {"pandas": pd.DataFrame(data), "polars": pl.DataFrame(data)}
    prompt = mg.template("A {style} picture of {subject}")
    config = SandboxConfig(time_scale=600.0, seed=1)
    with tempfile.TemporaryDirectory() as tmp, Sandbox(config) as sandbox:
        assert sandbox.base_url is not None
        ledger = str(Path(tmp) / "ledger.sqlite")
        client = AsyncClient(sandbox.demo_key, base_url=sandbox.base_url, ledger=ledger)
        samples: dict[str, list[float]] = {name: [] for name in frames}
        totals: dict[str, int] = {}
        for frame in frames.values():  # warm-up: the catalog cache, imports
            timed(frame, prompt, client)
        for _ in range(args.runs):
            for name, frame in frames.items():
                seconds, totals[name] = timed(frame, prompt, client)
                samples[name].append(seconds)
        loop.submit(client.aclose()).result(10)

    medians = {name: statistics.median(values) for name, values in samples.items()}
    print(f"estimate of {args.rows:,} rows of {MODEL}, median of {args.runs} runs")
    for name, median in medians.items():
        print(f"  {name:<7} {median:7.3f} s   {totals[name]:,} credits")
    ratio = medians["polars"] / medians["pandas"]
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"polars / pandas: {ratio:.2f}x (target <= {TARGET}x: {verdict})")
    if totals["polars"] != totals["pandas"]:
        raise SystemExit("the two paths priced the rows differently")


if __name__ == "__main__":
    main()
