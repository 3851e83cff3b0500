"""Kernel-side time of ``df.mediagen.preview()`` for 100, 1,000 and 10,000 result rows.

The frame looks like a finished sweep (a prompt, a quality, an output URL, status and credits per
row). The time is building the HTML a notebook receives (``_repr_html_()``): the first page of cards
(300) and, as a baseline measured in the same run, pandas' own ``DataFrame.to_html()`` of the same
rows with no media. Median of ``--runs``. Target: 1,000 images in under a second.

    .venv/bin/python benchmarks/preview.py [--runs 5]
"""

import argparse
import statistics
import time

import pandas as pd

import mediagen_nb.batch.accessor  # noqa: F401  (registers df.mediagen)

SIZES = (100, 1_000, 10_000)


def frame(rows: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "prompt": [f"A watercolour picture of subject {i}" for i in range(rows)],
            "quality": [("low", "medium", "high")[i % 3] for i in range(rows)],
            "generation_id": [f"{i:08x}-0000-4000-8000-000000000000" for i in range(rows)],
            "status": "succeeded",
            "output_url": [f"https://cdn.example.org/out/{i}.png" for i in range(rows)],
            "credits": pd.array([(3, 8, 25)[i % 3] for i in range(rows)], dtype="Int64"),
        }
    )


def timed(make: object, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        make()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{'rows':>7} {'preview()':>10} {'all pages':>10} {'to_html()':>10}  page size")
    for rows in SIZES:
        df = frame(rows)
        first = timed(lambda df=df: df.mediagen.preview()._repr_html_(), args.runs)
        every = timed(lambda df=df, n=rows: df.mediagen.preview(per_page=n)._repr_html_(), args.runs)
        baseline = timed(lambda df=df: df.to_html(), args.runs)
        size = len(df.mediagen.preview()._repr_html_())
        print(
            f"{rows:>7,} {first * 1000:>8.1f}ms {every * 1000:>8.1f}ms {baseline * 1000:>8.1f}ms"
            f"  {size:,} chars"
        )
    verdict = (
        "met" if timed(lambda: frame(1000).mediagen.preview(per_page=1000)._repr_html_(), 3) < 1 else "MISSED"
    )
    print(f"target (1,000 images on one page in under a second of kernel time): {verdict}")


if __name__ == "__main__":
    main()
