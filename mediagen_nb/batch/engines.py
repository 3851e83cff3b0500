"""Ray Data and Daft run their rows through the engine of ``df.mediagen``: what the two adapters share.

The driver describes a run once, as a :class:`Job` (the model or list of models, the mapping of
columns to inputs, the options, the name of its shared budget); Ray pickles it into every actor and
Daft into every UDF instance. It holds no client and no key: each :class:`Worker` (one per actor or
instance) connects from its own environment, on its own event loop. A batch is planned exactly as
the accessor plans a frame (:func:`runner.plan_frame`: with a list of models, one row per row and
model, as a comparison plans them), run by the accessor's scheduler (:class:`Sweep`: the shared
limiters, the ledger written before each start, starts then long polls) and answered with the
accessor's result columns. Its rows' Idempotency-Keys come from the account and what is asked, so a
retried task, a speculative copy or a re-run of the pipeline is a replay at no charge.

``max_credits`` is one budget for every worker of the run (:mod:`mediagen_nb.client.shared_budget`):
a batch holds all its rows' prices or starts none of them. The estimate runs on the driver, over the
whole dataset, in one request per price class.
"""

import asyncio
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mediagen_nb.batch import runner
from mediagen_nb.batch.estimates import Price
from mediagen_nb.batch.frames import Table
from mediagen_nb.batch.plan import Columns, FilesFrom, Folders, Models, Plan, Row, allowed, model_ids
from mediagen_nb.batch.scheduler import UNCERTAIN, Outcome, Sweep, outcome_fields
from mediagen_nb.client import AsyncClient, BaseClient, BudgetExceeded
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.assemble import as_ledger
from mediagen_nb.client.errors import ValidationError
from mediagen_nb.client.shared_budget import SharedBudget

RESULT_COLUMNS = runner.RESULT_COLUMNS


@dataclass(frozen=True)
class Job:
    """What every worker of a run is asked: made on the driver, pickled to the workers (no key in it)."""

    models: str | tuple[str, ...] | None  # as the accessor takes them; a list is kept as a tuple
    columns: Columns
    constants: Mapping[str, Any]
    files_from: FilesFrom
    run_name: str = ""
    max_credits: int | None = None
    budget: str = field(default_factory=lambda: uuid.uuid4().hex)  # the run's shared budget, by name
    prefix: str = ""
    ledger: str | None = None
    retry_failed: bool = False

    @classmethod
    def of(
        cls,
        models: Models,
        columns: Columns = None,
        *,
        max_credits: int | None = None,
        run_name: str = "",
        fresh: bool = False,
        prefix: str = "",
        ledger: str | Path | None = None,
        retry_failed: bool = False,
        allow_files_from: Folders = None,
        **constants: Any,
    ) -> "Job":
        """Check the options on the driver (one message naming the argument), before any worker starts."""
        if isinstance(ledger, ledgers.Ledger):
            raise ValidationError(
                "ledger: give a path each worker can open, not a Ledger (it is an open file of this process)",
                field="ledger",
                sent=False,
            )
        runner.check_options(
            model=models,
            max_credits=max_credits,
            run_name=run_name,
            fresh=fresh,
            prefix=prefix,
            ledger=ledger,
            retry_failed=retry_failed,
        )
        if fresh:  # decided here, once: every worker and every retry of the run shares it
            run_name = f"{run_name}|fresh-{time.time_ns()}"
        return cls(
            models if models is None or isinstance(models, str) else tuple(models),
            columns,
            dict(constants),
            allowed(allow_files_from),
            run_name,
            max_credits,
            prefix=prefix,
            ledger=None if ledger is None else str(ledger),
            retry_failed=retry_failed,
        )

    @property
    def listed(self) -> bool:
        """The models were given as a list: each row runs on each, and says its ``model``."""
        return isinstance(self.models, tuple)

    def names(self) -> list[str]:
        """The result columns, with the prefix (a list of models adds ``model`` first)."""
        return [self.prefix + name for name in ((runner.MODEL,) if self.listed else ()) + RESULT_COLUMNS]


def result_fields(outcome: Outcome, row: Row) -> dict[str, Any]:
    """One row's result columns as an engine stores them: the input as JSON text (a struct inferred from
    one row would not fit the next), the output URLs as a list of strings."""
    fields = outcome_fields(outcome, row.input)
    fields["input"] = None if row.input is None else json.dumps(row.input, sort_keys=True, ensure_ascii=False)
    return fields


class Worker:
    """One actor's or UDF instance's share of a run: its client (on the loop that runs it) and its batches."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self._client: AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._budget = None if job.max_credits is None else SharedBudget(job.budget, job.max_credits)

    async def client(self) -> AsyncClient:
        """This worker's client, made from its environment (``MEDIAGEN_API_KEY`` ..., else the embedded
        sandbox) on first use; one per event loop, as httpx's connections belong to one."""
        running = asyncio.get_running_loop()
        if self._client is None or self._loop is not running:
            self._client = await asyncio.to_thread(AsyncClient)
            self._loop = running
        return self._client

    async def plan(self, frame: Table, client: AsyncClient) -> Plan:
        """The batch's plan, as the accessor plans a frame: one row per frame row and model."""
        job = self.job
        catalog = {m.id: m for m in await client.models()}
        found: Plan = await asyncio.to_thread(
            runner.plan_frame,
            frame,
            catalog,
            job.models if not isinstance(job.models, tuple) else list(job.models),
            job.columns,
            job.constants,
            client,
            run_name=job.run_name,
            files_from=job.files_from,
        )
        return found

    async def run(self, frame: Table) -> tuple[Plan, list[dict[str, Any]]]:
        """Run every planned row of a batch (each row on each model); the plan, and the result fields of
        each of its rows, in its order (``Row.source`` is the batch row, ``Row.model`` the model)."""
        job, client = self.job, await self.client()
        found = await self.plan(frame, client)
        rows = found.rows
        book = await asyncio.to_thread(as_ledger, job.ledger)
        prices: dict[int, Price] = {}
        held: dict[str, int] = {}
        if self._budget is not None:
            prices, _ = await runner.price_plan(client, found)
            refused = await self._hold(rows, prices, held)
            if refused is not None:
                return found, [result_fields(refused(row), row) for row in rows]
        sweep = Sweep(
            client,
            found.models,
            rows,
            book,
            prices={pos: p.credits for pos, p in prices.items() if p.credits is not None},
            max_credits=sum(held.values()) if self._budget is not None else None,
            retry_failed=job.retry_failed,
        )
        outcomes = await sweep.run()
        if self._budget is not None:
            charges = {
                row.key: outcomes[row.position].credits
                for row in rows
                if row.key in held and outcomes[row.position].status != UNCERTAIN  # it may have been charged
            }
            await asyncio.to_thread(self._budget.settle, charges)
        return found, [result_fields(outcomes[row.position], row) for row in rows]

    async def _hold(self, rows: list[Row], prices: dict[int, Price], held: dict[str, int]) -> Any:
        """Hold the batch's prices in the run's budget (filling ``held``); or, when they cannot be held, the
        outcome of each row (none started)."""
        assert self._budget is not None
        valid = [row for row in rows if row.input is not None and row.key]
        unpriced = [
            prices[row.position].error if row.position in prices else "no price"
            for row in valid
            if row.position not in prices or prices[row.position].credits is None
        ]
        reason = None
        if unpriced:  # an unknown price would start unchecked: refuse rather than overspend
            reason = (
                f"max_credits: {len(unpriced)} rows of this batch could not be priced, so the limit cannot "
                f"be checked; none of its rows was started ({unpriced[0]})"
            )
        else:
            wanted = {row.key or "": prices[row.position].credits or 0 for row in valid}
            try:
                await asyncio.to_thread(self._budget.hold, wanted, f"this batch of {len(valid)} rows")
                held.update(wanted)
            except BudgetExceeded as exc:
                reason = exc.message
        if reason is None:
            return None

        def refused(row: Row) -> Outcome:
            return (
                Outcome("invalid", error=row.error) if row.input is None else Outcome("skipped", error=reason)
            )

        return refused


def estimate(
    batches: Iterable[Table],
    models: Models,
    columns: Columns = None,
    *,
    client: BaseClient | None = None,
    max_credits: int | None = None,
    budget: int | None = None,
    key_cap: int | None = None,
    allow_files_from: Folders = None,
    **constants: Any,
) -> runner.EstimateSummary:
    """Price a dataset's batches on the driver: one estimate request per model and price class of the
    whole dataset (none for a listed price); nothing is started. With a list of models every row is
    priced on each, with a subtotal per model, as ``df.mediagen.estimate`` does. ``max_credits``
    refuses (BudgetExceeded) a dataset whose estimate is over it, as ``run`` refuses a frame: check it
    before the pipeline runs."""
    runner.check_options(model=models, client=client, max_credits=max_credits, budget=budget, key_cap=key_cap)
    aclient = runner.async_client(client)
    files_from = allowed(allow_files_from)
    catalog = {m.id: m for m in runner._call(aclient.models())}
    plans = [
        (
            runner.plan_frame(
                frame, catalog, models, columns, constants, aclient, files_from=files_from, upload=False
            ),
            len(frame.labels()),
        )
        for frame in batches
    ]
    found = joined(plans, catalog, models)
    prices, requests = runner._call(runner.price_plan(aclient, found))
    labels = list(range(sum(n for _, n in plans)))  # a dataset's rows, numbered through its batches
    summary = runner.EstimateSummary(
        found, prices, labels, requests, budget, key_cap, aclient.settings.service_name
    )
    if max_credits is not None:
        unpriced = [p for p in prices.values() if p.credits is None]
        if unpriced:
            raise BudgetExceeded(
                f"max_credits: {len(unpriced)} rows could not be priced, so the limit cannot be checked; "
                f"nothing was started ({unpriced[0].error})"
            )
        if summary.total > max_credits:
            raise BudgetExceeded(
                f"max_credits: the estimate is {summary.total} credits for {summary.rows - summary.invalid} "
                f"rows, over max_credits={max_credits}; nothing was started. Raise it or run fewer rows"
            )
    return summary


def joined(batches: list[tuple[Plan, int]], catalog: Mapping[str, Any], models: Models) -> Plan:
    """The plans of a dataset's batches (each with its number of rows) as one plan of the dataset:
    positions and source rows numbered through."""
    rows: list[Row] = []
    sources = 0
    for found, n in batches:
        rows += [
            replace(row, position=len(rows) + i, source=sources + row.source)
            for i, row in enumerate(found.rows)
        ]
        sources += n
    plans = [found for found, _ in batches]
    if not plans:  # an empty dataset: its models, and nothing to price
        asked, listed = model_ids(models)
        return Plan([], {m: catalog[m] for m in asked or () if m in catalog}, {}, [], listed=listed)
    first = plans[0]
    return Plan(
        rows,
        {m: model for found in plans for m, model in found.models.items()},
        first.fills,
        list(dict.fromkeys(note for found in plans for note in found.notes)),
        first.model_column,
        first.listed,
    )
