"""Daft: ``df.with_column("result", mediagen_nb.daft.generate(model, prompt=daft.col("prompt"), ...))``.

:func:`generate` is an async batch UDF of a Daft class: each instance makes one client from its
environment and runs its batches through the accessor's engine (:mod:`mediagen_nb.batch.engines`),
under the limits every process of the account shares. Each row gets a struct of the accessor's
result fields; with a list of models, a list of them (one per model, each naming its ``model``:
``.explode()`` makes a row of each, as ``df.mediagen.run`` compares models). Daft's own options
(``max_concurrency``, ``batch_size``, ``use_process``, ``max_retries``, ``on_error``,
``ray_options``) pass through. :func:`estimate` prices a frame.

Needs ``pip install "mediagen-nb[daft]"``; nothing else in the package imports Daft.
"""

from collections.abc import Mapping
from typing import Any, Literal

import pandas as pd

try:
    import daft
    from daft import DataType, Expression, Series
except ModuleNotFoundError as missing:  # a user without the extra
    raise ModuleNotFoundError(
        f"mediagen_nb.daft needs Daft: pip install 'mediagen-nb[daft]' ({missing})"
    ) from None

from mediagen_nb.batch import engines, runner
from mediagen_nb.batch.frames import table
from mediagen_nb.batch.plan import Columns, Folders, MappingError, Models
from mediagen_nb.batch.template import Template
from mediagen_nb.client import BaseClient

__all__ = ["COMPARED", "RESULT", "estimate", "generate"]

_FIELDS = {
    "generation_id": DataType.string(),
    "status": DataType.string(),
    "output_url": DataType.string(),
    "output_urls": DataType.list(DataType.string()),
    "credits": DataType.int64(),
    "error": DataType.string(),
    "elapsed_s": DataType.float64(),
    "input": DataType.string(),  # JSON text
}
RESULT = DataType.struct(_FIELDS)  # a row's generation on one model
COMPARED = DataType.list(DataType.struct({"model": DataType.string(), **_FIELDS}))  # one per model of a list


def _arguments(columns: Columns, inputs: Mapping[str, Any]) -> tuple[dict[str, Expression], dict[str, Any]]:
    """The columns the UDF reads (by the name the mapping knows them by) and the constants.

    An input given as an expression is a column named like the input; a template reads its columns,
    and ``columns=`` names columns of the frame itself."""
    read: dict[str, Expression] = {}
    constants: dict[str, Any] = {}

    def add(name: str, expression: Expression) -> None:
        if name in read and read[name] is not expression and str(read[name]) != str(expression):
            raise MappingError(f"{name!r} is both an input given as an expression and a column read by name")
        read[name] = expression

    for name, value in inputs.items():
        if isinstance(value, Expression):
            add(name, value.alias(name))
        else:
            constants[name] = value
            for column in value.columns if isinstance(value, Template) else ():
                add(column, daft.col(column))
    named = (
        columns
        if isinstance(columns, Mapping)
        else []
        if columns is None or isinstance(columns, str)
        else columns
    )
    for column, field in named.items() if isinstance(named, Mapping) else ((c, None) for c in named):
        if isinstance(field, Mapping):  # a model's own mapping: {model id: {column: input}}
            for own in field:
                add(str(own), daft.col(str(own)))
        else:
            add(str(column), daft.col(str(column)))
    if not read:
        raise MappingError(
            "give at least one input as a column (prompt=daft.col('prompt')), a template of columns or "
            "columns=: a Daft function runs per row of columns",
        )
    return read, constants


def generate(
    model: Models,
    columns: Columns = None,
    *,
    max_credits: int | None = None,
    run_name: str = "",
    fresh: bool = False,
    ledger: str | None = None,
    retry_failed: bool = False,
    allow_files_from: Folders = None,
    max_concurrency: int | None = None,
    batch_size: int | None = None,
    use_process: bool | None = None,
    max_retries: int | None = None,
    on_error: Literal["raise", "log", "ignore"] | None = None,
    ray_options: dict[str, Any] | None = None,
    **inputs: Any,
) -> Expression:
    """An expression whose every row is a generation on ``model``: a struct of ``generation_id``,
    ``status``, ``output_url``, ``output_urls``, ``credits``, ``error``, ``elapsed_s``, ``input`` (JSON).
    ``model`` may be a list: every row runs on each model (each on the inputs it has), and the row's
    value is a list of those structs, each with its ``model`` first (``.explode()`` for a row of each).

    Inputs are expressions (``prompt=daft.col("prompt")``), constants or ``mediagen_nb.template``s of
    columns; ``columns=`` maps the frame's own columns as in ``df.mediagen.run``. ``max_credits`` is one
    budget for every worker (check the whole frame first with :func:`estimate`); a re-run or a retried
    batch replays its rows at no charge. The last six options are Daft's own.
    """
    if model is None:
        raise MappingError(
            "model: give a model id or a list of them (a Daft function reads only the columns it names, "
            "so a column of models is not read)",
            field="model",
        )
    read, constants = _arguments(columns, inputs)
    job = engines.Job.of(
        model,
        columns,
        max_credits=max_credits,
        run_name=run_name,
        fresh=fresh,
        ledger=ledger,
        retry_failed=retry_failed,
        allow_files_from=allow_files_from,
        **constants,
    )

    class Generate:
        """One Daft worker's share of the run: a client, and its batches through the engine."""

        def __init__(self, job: engines.Job, names: list[str]) -> None:
            self.names = names
            self._worker = engines.Worker(job)

        @daft.method.batch(return_dtype=COMPARED if job.listed else RESULT, batch_size=batch_size)
        async def __call__(self, *series: Series) -> list[Any]:
            frame = pd.DataFrame({name: s.to_pylist() for name, s in zip(self.names, series, strict=True)})
            found, results = await self._worker.run(table(frame))
            if not found.tidy:
                return results
            per_row: list[list[dict[str, Any]]] = [[] for _ in range(len(frame))]
            for row, fields in zip(found.rows, results, strict=True):
                per_row[row.source].append({"model": row.model, **fields})
            return per_row

    udf = daft.cls(
        Generate,
        max_concurrency=max_concurrency,
        use_process=use_process,
        max_retries=max_retries,
        on_error=on_error,
        ray_options=ray_options,
        name_override=f"mediagen {model if isinstance(model, str) else ','.join(model)}",
    )
    result: Expression = udf(job, list(read))(*read.values())
    return result


def estimate(
    df: "daft.DataFrame",
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
    """Price every row of ``df`` (on each model of a list) in one request per model and price class;
    nothing is started. The summary has ``total``, ``by_class``, ``by_model`` and the largest rows;
    ``max_credits`` refuses (BudgetExceeded) a frame whose estimate is over it."""
    read, constants = _arguments(columns, inputs)
    selected = df.select(*read.values())
    batches = (table(batch.to_pandas()) for batch in selected.to_arrow_iter())
    return engines.estimate(
        batches,
        model,
        columns,
        client=client,
        max_credits=max_credits,
        budget=budget,
        key_cap=key_cap,
        allow_files_from=allow_files_from,
        **constants,
    )
