"""``pl_df.mediagen``: the same estimate, run, submit, preview and download for polars frames.

Registered with polars' namespace API as soon as polars is imported (polars stays optional: the
``polars`` extra). Estimates and runs go through the one engine shared with pandas
(:mod:`mediagen_nb.batch.frames`) and return polars frames; a LazyFrame is collected first, since a
sweep spends credits and cannot stay lazy. Each row's ``input`` is JSON text (``.str.json_decode()``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from mediagen_nb.batch.frames import as_pandas

if TYPE_CHECKING:
    from mediagen_nb.batch import runner
    from mediagen_nb.batch.gallery import Gallery
    from mediagen_nb.batch.plan import Columns, Models


class _Mediagen:
    """Bulk generation on a polars frame; the frame is never modified, every call returns a new one."""

    def __init__(self, df: pl.DataFrame | pl.LazyFrame) -> None:
        self._df = df

    def estimate(self, model: Models = None, columns: Columns = None, **options: Any) -> pl.DataFrame:
        """Price every row (``credits``, ``billing``, ``error``, ``input``); see ``df.mediagen.estimate``."""
        from mediagen_nb.batch import runner

        done: pl.DataFrame = runner.estimate(self._df, model, columns, **options)
        return done

    def run(self, model: Models = None, columns: Columns = None, **options: Any) -> pl.DataFrame:
        """Run every row at the speed the limits allow; see ``df.mediagen.run``."""
        from mediagen_nb.batch import runner

        done: pl.DataFrame = runner.run(self._df, model, columns, **options)
        return done

    def submit(self, model: Models = None, columns: Columns = None, **options: Any) -> runner.SweepHandle:
        """Like ``run`` but returns a handle at once; ``handle.result()`` is a polars frame."""
        from mediagen_nb.batch import runner

        return runner.submit(self._df, model, columns, **options)

    def preview(self, columns: Sequence[str] | None = None, **options: Any) -> Gallery:
        """The frame's outputs inline, as ``df.mediagen.preview`` shows them."""
        from mediagen_nb.batch.gallery import Gallery

        return Gallery(as_pandas(self._df), columns, **options)

    def download(self, folder: str | Path, column: str = "output_url", **options: Any) -> pl.DataFrame:
        """Save every output to ``folder``; returns the frame with a ``local_path`` column."""
        from mediagen_nb.batch.download import download

        saved = download(as_pandas(self._df), folder, column, **options)
        added = [c for c in saved.columns if c not in self._df.columns]
        frame = self._df.collect() if isinstance(self._df, pl.LazyFrame) else self._df
        return frame.with_columns([pl.Series(name, saved[name].tolist(), strict=False) for name in added])


pl.api.register_dataframe_namespace("mediagen")(_Mediagen)
pl.api.register_lazyframe_namespace("mediagen")(_Mediagen)
