"""Ray Data and Daft run their rows through the engine of ``df.mediagen``: what the two adapters share.

The driver describes a run once, as a :class:`Job` (the model, the mapping of columns to inputs, the
options, the name of its shared budget); Ray pickles it into every actor and Daft into every UDF
instance. It holds no client and no key: each :class:`Worker` (one per actor or instance) connects
from its own environment, on its own event loop. A batch is mapped to inputs exactly as the accessor
maps a frame (:func:`runner.plan_frame`), run by the accessor's scheduler (:class:`Sweep`: the shared
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mediagen_nb.batch import runner
from mediagen_nb.batch.estimates import Price, combination, price_rows
from mediagen_nb.batch.frames import Table
from mediagen_nb.batch.plan import Columns, FilesFrom, Folders, Row, allowed
from mediagen_nb.batch.scheduler import UNCERTAIN, Outcome, Sweep, outcome_fields
from mediagen_nb.client import AsyncClient, BaseClient, BudgetExceeded, Model
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.errors import ValidationError
from mediagen_nb.client.shared_budget import SharedBudget

RESULT_COLUMNS = runner.RESULT_COLUMNS


@dataclass(frozen=True)
class Job:
    """What every worker of a run is asked: made on the driver, pickled to the workers (no key in it)."""

    model: str
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
        model: str,
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
            model=model,
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
            model,
            columns,
            dict(constants),
            allowed(allow_files_from),
            run_name,
            max_credits,
            prefix=prefix,
            ledger=None if ledger is None else str(ledger),
            retry_failed=retry_failed,
        )

    def names(self) -> list[str]:
        """The result columns, with the prefix."""
        return [self.prefix + name for name in RESULT_COLUMNS]


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

    async def run(self, frame: Table) -> list[dict[str, Any]]:
        """Run every row of a batch; the result fields of each row, in the batch's order."""
        job, client = self.job, await self.client()
        catalog = await client.models()
        model, rows = await asyncio.to_thread(
            runner.plan_frame,
            frame,
            catalog,
            job.model,
            job.columns,
            job.constants,
            client,
            run_name=job.run_name,
            files_from=job.files_from,
        )
        book = await asyncio.to_thread(ledgers.as_ledger, job.ledger)
        prices: dict[int, Price] = {}
        held: dict[str, int] = {}
        if self._budget is not None:
            prices, _ = await price_rows(client, model, rows)
            refused = await self._hold(rows, prices, held)
            if refused is not None:
                return [result_fields(refused(row), row) for row in rows]
        sweep = Sweep(
            client,
            model,
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
        return [result_fields(outcomes[row.position], row) for row in rows]

    async def _hold(self, rows: list[Row], prices: dict[int, Price], held: dict[str, int]) -> Any:
        """Hold the batch's prices in the run's budget (filling ``held``); or, when they cannot be held, the
        outcome of each row (none started)."""
        assert self._budget is not None
        valid = [row for row in rows if row.input is not None and row.key]
        unpriced = [prices[row.position].error for row in valid if prices[row.position].credits is None]
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
    model_id: str,
    columns: Columns = None,
    *,
    client: BaseClient | None = None,
    max_credits: int | None = None,
    budget: int | None = None,
    key_cap: int | None = None,
    allow_files_from: Folders = None,
    **constants: Any,
) -> runner.EstimateSummary:
    """Price a dataset's batches on the driver: one estimate request per price class of the whole dataset
    (none for a listed price); nothing is started. ``max_credits`` refuses (BudgetExceeded) a dataset
    whose estimate is over it, as ``run`` refuses a frame: check it before the pipeline runs."""
    runner.check_options(
        model=model_id, client=client, max_credits=max_credits, budget=budget, key_cap=key_cap
    )
    aclient = runner.async_client(client)
    files_from = allowed(allow_files_from)
    catalog: list[Model] = runner._call(aclient.models())
    model = runner.find_model(catalog, model_id)
    classes: dict[str, Row] = {}  # one row of each price class: the one the class is priced by
    kinds: list[str | None] = []  # each row's price class (None: an invalid row, never sent)
    shown: list[str] = []  # each row's price class as the summary names it
    for frame in batches:
        _, planned = runner.plan_frame(
            frame, catalog, model_id, columns, constants, aclient, files_from=files_from, upload=False
        )
        for row in planned:
            kind = None if row.input is None else combination(model, row)
            if kind is not None and kind not in classes:
                classes[kind] = Row(len(classes), row.input, row.error, row.key)
            kinds.append(kind)
            shown.append(runner.price_class(model, row))
    prices, requests = runner._call(price_rows(aclient, model, list(classes.values())))
    by_class = {kind: prices[row.position] for kind, row in classes.items()}
    summary = runner.EstimateSummary(
        model,
        [None if kind is None else by_class[kind].credits for kind in kinds],
        list(range(len(kinds))),
        shown,
        requests,
        budget,
        key_cap,
        aclient.settings.service_name,
    )
    if max_credits is not None:
        unpriced = [by_class[kind] for kind in kinds if kind is not None and by_class[kind].credits is None]
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
