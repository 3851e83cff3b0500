"""``df.mediagen``: estimate, run, submit, preview and download a whole frame of inputs.

Registered as soon as pandas is imported, so the batch machinery (client, httpx) loads on first
use, not here: ``import pandas`` then ``%load_ext mediagen_nb`` stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from mediagen_nb.batch import runner
    from mediagen_nb.batch.gallery import Gallery
    from mediagen_nb.batch.plan import Columns, Models


@pd.api.extensions.register_dataframe_accessor("mediagen")
class MediagenAccessor:
    """Bulk generation on a DataFrame; the frame is never modified, every call returns a new one."""

    def __init__(self, df: pd.DataFrame) -> None:
        self._df = df

    def estimate(self, model: Models = None, columns: Columns = None, **options: Any) -> pd.DataFrame:
        """Price every row (``credits``, ``billing``) with as few requests as the pricing allows.

        ``model`` is a model id, a list of them (every row on each: a row per row and model, with
        ``row`` and ``model`` columns, and a subtotal per model), or left out to use the frame's own
        column naming each row's model. ``columns`` maps column -> input field (default: columns
        named like fields; ``{model_id: {...}}`` maps for one model); keyword constants apply to every
        row (``mediagen_nb.template(...)`` fills one from columns); ``budget=`` and ``key_cap=`` put
        the total against a limit in the summary. Local files are measured here, never uploaded; a
        path column is read only inside the working folder and the folders of ``allow_files_from=``.
        """
        from mediagen_nb.batch import runner

        done: pd.DataFrame = runner.estimate(self._df, model, columns, **options)
        return done

    def run(self, model: Models = None, columns: Columns = None, **options: Any) -> pd.DataFrame:
        """Run every row (on each model of a list) at the speed the limits allow; adds generation_id,
        status, output_url, output_urls, credits, error, elapsed_s (with ``prefix=``). Options:
        ``max_credits``, ``run_name``, ``fresh``, ``ledger`` (path), ``client``, ``progress``,
        ``allow_files_from`` (folders a path column may name beyond the working folder). A re-run
        resumes."""
        from mediagen_nb.batch import runner

        done: pd.DataFrame = runner.run(self._df, model, columns, **options)
        return done

    def submit(self, model: Models = None, columns: Columns = None, **options: Any) -> runner.SweepHandle:
        """Like ``run`` but returns at once: a handle with ``.progress``, ``.result()``, ``.cancel()``."""
        from mediagen_nb.batch import runner

        return runner.submit(self._df, model, columns, **options)

    def preview(self, columns: Sequence[str] | None = None, **options: Any) -> Gallery:
        """The frame's outputs as a grid of cards (images, players), each captioned with what varied, its
        credits and status (a comparison of models: a grid of rows x models); ``rows=``/``cols=`` a
        facet grid, ``page=``/``per_page=`` pages, ``media=`` the URL column, ``width=`` the card size."""
        from mediagen_nb.batch.gallery import Gallery

        return Gallery(self._df, columns, **options)

    def download(
        self,
        folder: str | Path,
        column: str = "output_url",
        *,
        name: str | None = None,
        sidecars: bool = True,
        progress: bool = True,
    ) -> pd.DataFrame:
        """Save every output to ``folder``, each with a JSON sidecar of what made it.

        ``name="{subject}-{quality}-{row}"`` names files from columns. Returns a copy with
        ``local_path`` and ``download_error`` (one failed URL never stops the others)."""
        from mediagen_nb.batch.download import download

        return download(self._df, folder, column, name=name, sidecars=sidecars, progress=progress)
