"""Daft: ``df.with_column("result", mediagen_nb.daft.generate(model, prompt=daft.col("prompt"), ...))``.

:func:`generate` is an async batch UDF of a Daft class: each instance makes one client from its
environment and runs its batches through the accessor's engine (:mod:`mediagen_nb.batch.engines`),
under the limits every process of the account shares. Each row gets a struct of the accessor's
result fields. Daft's own options (``max_concurrency``, ``batch_size``, ``use_process``,
``max_retries``, ``on_error``, ``ray_options``) pass through. :func:`estimate` prices a frame.

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
from mediagen_nb.batch.plan import Columns, Folders, MappingError
from mediagen_nb.batch.template import Template
from mediagen_nb.client import BaseClient

__all__ = ["RESULT", "estimate", "generate"]

RESULT = DataType.struct(
    {
        "generation_id": DataType.string(),
        "status": DataType.string(),
        "output_url": DataType.string(),
        "output_urls": DataType.list(DataType.string()),
        "credits": DataType.int64(),
        "error": DataType.string(),
        "elapsed_s": DataType.float64(),
        "input": DataType.string(),  # JSON text
    }
)


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
    for column in named:
        add(str(column), daft.col(str(column)))
    if not read:
        raise MappingError(
            "give at least one input as a column (prompt=daft.col('prompt')), a template of columns or "
            "columns=: a Daft function runs per row of columns",
        )
    return read, constants


def generate(
    model: str,
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

    Inputs are expressions (``prompt=daft.col("prompt")``), constants or ``mediagen_nb.template``s of
    columns; ``columns=`` maps the frame's own columns as in ``df.mediagen.run``. ``max_credits`` is one
    budget for every worker (check the whole frame first with :func:`estimate`); a re-run or a retried
    batch replays its rows at no charge. The last six options are Daft's own.
    """
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

        @daft.method.batch(return_dtype=RESULT, batch_size=batch_size)
        async def __call__(self, *series: Series) -> list[dict[str, Any]]:
            frame = pd.DataFrame({name: s.to_pylist() for name, s in zip(self.names, series, strict=True)})
            return await self._worker.run(table(frame))

    udf = daft.cls(
        Generate,
        max_concurrency=max_concurrency,
        use_process=use_process,
        max_retries=max_retries,
        on_error=on_error,
        ray_options=ray_options,
        name_override=f"mediagen {model}",
    )
    result: Expression = udf(job, list(read))(*read.values())
    return result


def estimate(
    df: "daft.DataFrame",
    model: str,
    columns: Columns = None,
    *,
    max_credits: int | None = None,
    budget: int | None = None,
    key_cap: int | None = None,
    client: BaseClient | None = None,
    allow_files_from: Folders = None,
    **inputs: Any,
) -> runner.EstimateSummary:
    """Price every row of ``df`` in one request per price class; nothing is started. The summary has
    ``total``, ``by_class`` and the largest rows; ``max_credits`` refuses (BudgetExceeded) a frame whose
    estimate is over it."""
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
