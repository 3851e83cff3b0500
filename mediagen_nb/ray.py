"""Ray Data: ``ds.map_batches(mediagen_nb.ray.Generate(model, ...), concurrency=N, batch_format="pandas")``.

``model`` may be a list of models: each row then runs on each, and comes back once per model with a
``model`` column, as ``df.mediagen.run`` compares models.

Ray runs a callable *class* on actors (an instance would run as plain tasks), so :func:`Generate`
returns one, its arguments bound: each actor makes one client from its environment and runs its
batches on its own event loop through the accessor's engine (:mod:`mediagen_nb.batch.engines`),
under the limits every process of the account shares (this machine's file, or Redis through
``MEDIAGEN_LIMITS_URL`` on a cluster). :func:`estimate` prices a dataset on the driver.

Needs ``pip install "mediagen-nb[ray]"``; nothing else in the package imports Ray.
"""

from typing import Any, ClassVar

import pandas as pd

try:
    import ray.data
except ModuleNotFoundError as missing:  # a user without the extra
    raise ModuleNotFoundError(
        f"mediagen_nb.ray needs Ray Data: pip install 'mediagen-nb[ray]' ({missing})"
    ) from None

from mediagen_nb.batch import engines, runner
from mediagen_nb.batch.frames import table
from mediagen_nb.batch.plan import Columns, Folders, Models
from mediagen_nb.client import BaseClient

__all__ = ["Generate", "GenerateBatches", "estimate"]


class GenerateBatches:
    """A batch UDF of Ray Data: each row of a batch becomes a generation (one per model given in a
    list), and the batch comes back with the accessor's result columns (``generation_id``, ``status``,
    ``output_url``, ``output_urls``, ``credits``, ``error``, ``elapsed_s``, ``input`` as JSON text; with
    a list of models each row once per model, ``model`` first). Made by :func:`Generate`."""

    job: ClassVar[engines.Job]

    def __init__(self) -> None:
        self._worker = engines.Worker(self.job)

    async def __call__(self, batch: Any) -> pd.DataFrame:
        frame = table(_pandas(batch))
        runner.writable(frame, self.job.names(), "Generate")
        found, results = await self._worker.run(frame)
        prefix = self.job.prefix
        columns = {prefix + runner.MODEL: [r.model for r in found.rows]} if found.tidy else {}
        columns |= {prefix + name: [r[name] for r in results] for name in engines.RESULT_COLUMNS}
        rows = [r.source for r in found.rows] if found.tidy else None
        done: pd.DataFrame = frame.with_columns(columns, {}, rows=rows).reset_index(drop=True)
        return done


def Generate(  # a class, as Ray wants one: its name says so
    model: Models,
    columns: Columns = None,
    *,
    max_credits: int | None = None,
    run_name: str = "",
    fresh: bool = False,
    prefix: str = "",
    ledger: str | None = None,
    retry_failed: bool = False,
    allow_files_from: Folders = None,
    **inputs: Any,
) -> type[GenerateBatches]:
    """The callable class for ``ds.map_batches``: every row on ``model``, columns mapped to inputs as
    ``df.mediagen.run`` maps them (columns named like inputs, ``columns=``, constants, templates).
    ``model`` is one model id, a list of them (every row on each, each on the inputs it has, one result
    row per row and model with a ``model`` column), or None for the model each row's model column names.

    ``max_credits`` is one budget for every actor of the run, kept in the store the limits share (a
    batch starts all its rows or none); check the whole dataset first with :func:`estimate`. A re-run,
    a retried task or a restarted actor replays its rows at no charge; ``run_name`` or ``fresh=True``
    asks for new generations. ``ledger`` is a path each worker can open (default: its own).
    """
    job = engines.Job.of(
        model,
        columns,
        max_credits=max_credits,
        run_name=run_name,
        fresh=fresh,
        prefix=prefix,
        ledger=ledger,
        retry_failed=retry_failed,
        allow_files_from=allow_files_from,
        **inputs,
    )
    return type("Generate", (GenerateBatches,), {"job": job, "__module__": __name__})


def estimate(
    ds: "ray.data.Dataset",
    model: Models,
    columns: Columns = None,
    *,
    max_credits: int | None = None,
    budget: int | None = None,
    key_cap: int | None = None,
    client: BaseClient | None = None,
    allow_files_from: Folders = None,
    **inputs: Any,
) -> runner.EstimateSummary:
    """Price every row of ``ds`` (on each model of a list) on the driver, in one request per model and
    price class; nothing is started.

    The summary has ``total``, ``by_class``, ``by_model`` and the largest rows; ``budget`` and
    ``key_cap`` are put against the total; ``max_credits`` refuses (BudgetExceeded) a dataset whose
    estimate is over it.
    """
    batches = (table(_pandas(batch)) for batch in ds.iter_batches(batch_format="pandas"))
    return engines.estimate(
        batches,
        model,
        columns,
        client=client,
        max_credits=max_credits,
        budget=budget,
        key_cap=key_cap,
        allow_files_from=allow_files_from,
        **inputs,
    )


def _pandas(batch: Any) -> pd.DataFrame:
    """A batch in whichever format ``map_batches`` was asked for, as a pandas DataFrame."""
    if isinstance(batch, pd.DataFrame):
        return batch
    if hasattr(batch, "to_pandas"):  # a pyarrow Table
        frame: pd.DataFrame = batch.to_pandas()
        return frame
    columns: pd.DataFrame = pd.DataFrame({name: list(values) for name, values in dict(batch).items()})
    return columns  # a dict of numpy columns
