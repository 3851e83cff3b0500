"""Estimate and run a DataFrame of inputs: the engine behind ``df.mediagen`` and ``mediagen sweep``.

Everything runs on one background event loop with an AsyncClient, so a blocking ``run`` and a
non-blocking ``submit`` are the same code, and the kernel stays usable during a long sweep.
"""

import time
from collections import Counter
from collections.abc import Callable, Mapping
from html import escape
from pathlib import Path
from typing import Any

from mediagen_nb.batch import loop, routing
from mediagen_nb.batch.estimates import Price, price_rows
from mediagen_nb.batch.frames import Table, table
from mediagen_nb.batch.handle import RowResult, SweepHandle, progress_bar
from mediagen_nb.batch.plan import (
    QUOTED,
    Columns,
    FilesFrom,
    Folders,
    MappingError,
    Row,
    allowed,
    plan_rows,
    resolve_columns,
)
from mediagen_nb.batch.scheduler import Outcome, Sweep, outcome_fields
from mediagen_nb.batch.words import words
from mediagen_nb.client import AsyncClient, BaseClient, BudgetExceeded, BudgetStatus, Ledger, Model, budget
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.connection import async_current
from mediagen_nb.client.errors import ValidationError
from mediagen_nb.protocol import messages
from mediagen_nb.protocol.messages import did_you_mean

RESULT_COLUMNS = (
    "generation_id",
    "status",
    "output_url",
    "output_urls",
    "credits",
    "error",
    "elapsed_s",
    "input",
)
ESTIMATE_COLUMNS = ("credits", "billing", "error", "input")
MODELS = "mediagen_models"  # DataFrame.attrs: the model of each result prefix (for download sidecars)
WRITTEN = "mediagen_columns"  # DataFrame.attrs: the columns a sweep or estimate wrote (free to write again)


def writable(frame: Table, names: list[str], what: str, prefixed: bool = True) -> None:
    """Refuse, before anything is sent, to write result columns over the user's own columns (naming
    ``prefix=`` where ``what`` takes one: the CLI has no such option)."""
    ours = set(frame.attrs().get(WRITTEN, ()))
    clash = [name for name in names if name in frame.names() and name not in ours]
    if clash:
        fix = (
            f"pass prefix='mg_' (result columns mg_{clash[0]}, ...) or "
            if prefixed and not words().cli
            else ""
        )
        raise MappingError(
            f"prefix: {words().table} already has its own {', '.join(map(repr, clash))}, which {what} would "
            f"overwrite; {fix}rename yours",
            field="prefix",
        )


def written(frame: Table, names: list[str]) -> list[str]:
    """``names`` added to the columns written by us, so a later run on the frame may replace them."""
    return sorted(set(frame.attrs().get(WRITTEN, ())) | set(names))


def check_options(**options: Any) -> None:
    """Type-check the public options of estimate, run and submit: one message naming the argument."""
    for name, value in options.items():
        if value is None:
            continue
        if name in ("max_credits", "budget", "key_cap"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValidationError(
                    f"{name} must be a whole number of credits, 0 or more, not {value!r}",
                    field=name,
                    sent=False,
                )
        elif name in ("model", "run_name", "prefix"):
            if not isinstance(value, str) or (name == "model" and not value):
                raise ValidationError(f"{name} must be a string, not {value!r}", field=name, sent=False)
        elif name in ("fresh", "retry_failed", "progress", "show") and not isinstance(value, bool):
            raise ValidationError(f"{name} must be True or False, not {value!r}", field=name, sent=False)
        elif name == "ledger" and not isinstance(value, (str, Path, Ledger)):
            raise ValidationError(f"ledger must be a path or a Ledger, not {value!r}", field=name, sent=False)
        elif name == "client" and not isinstance(value, BaseClient):
            raise ValidationError(
                f"client must be a mediagen_nb Client or AsyncClient, not {type(value).__name__}",
                field=name,
                sent=False,
            )


def async_client(client: BaseClient | None) -> AsyncClient:
    """The AsyncClient of a batch: the one given, one like the sync client given, or the current one."""
    if isinstance(client, AsyncClient):
        return client
    if client is not None:
        return AsyncClient.like(client)
    return async_current()


def _call(coroutine: Any) -> Any:
    return loop.result(loop.submit(coroutine))


def prepare(
    frame: Table,
    model_id: str,
    columns: Columns,
    constants: Mapping[str, Any],
    client: AsyncClient,
    *,
    run_name: str = "",
    files_from: FilesFrom,
    upload: bool = True,
) -> tuple[Model, list[Row]]:
    """The model and one checked Row per DataFrame row; mapping errors raise before any request.

    A row's local files must lie in ``files_from``'s folders; they are uploaded (become URLs) only
    when ``upload``: a sweep's run, never its estimate.
    """
    models = {m.id: m for m in _call(client.models())}
    if model_id not in models:
        hint = did_you_mean(model_id, list(models), QUOTED)
        raise ValidationError(messages.unknown_model(model_id, models) + hint, field="model", sent=False)
    model = models[model_id]
    by_field = resolve_columns(model, frame.names(), columns, constants)

    def check(model: Model, values: Mapping[str, Any]) -> dict[str, Any]:
        values = files_from.checked(model, values)
        return client.check_input(model, client.attach(model, values) if upload else values)

    return model, plan_rows(frame.records(), model, by_field, constants, check, run_name=run_name)


class EstimateSummary:
    """Total, by price class, the largest rows, and the total against a budget or a key's cap."""

    def __init__(
        self,
        model: Model,
        credits: list[int | None],
        labels: list[Any],
        classes: list[str],
        requests: int,
        budget: int | None,
        key_cap: int | None,
        service: str = "",
    ) -> None:
        self.model_id = model.id
        self.service = service
        self.requests = requests
        priced = [
            (label, c, k) for label, c, k in zip(labels, credits, classes, strict=True) if c is not None
        ]
        self.total = sum(c for _, c, _ in priced)
        self.rows = len(credits)
        self.invalid = self.rows - len(priced)
        counts = Counter((k, c) for _, c, k in priced)
        self.by_class = sorted(((n, c, k) for (k, c), n in counts.items()), key=lambda r: (r[1], r[2]))
        self.largest = sorted(((label, c) for label, c, _ in priced), key=lambda r: -r[1])[:5]
        self.limits = {
            name: value for name, value in (("budget", budget), ("key cap", key_cap)) if value is not None
        }

    def _largest_lines(self) -> list[str]:
        """``largest rows: row 2: 25, ...``, or no line when no row was priced."""
        shown = ", ".join(f"row {label}: {credits}" for label, credits in self.largest)
        return [f"largest rows: {shown}"] if shown else []

    def _limit_lines(self) -> list[str]:
        lines = []
        for name, value in self.limits.items():
            verdict = "fits" if self.total <= value else f"exceeds it by {self.total - value}"
            lines.append(f"against the {name} of {value} credits: {verdict}")
        return lines

    def __str__(self) -> str:
        where = f" on {self.service}" if self.service else ""
        head = (
            f"{self.model_id}{where}: {self.total} credits for {self.rows - self.invalid} rows "
            f"({self.invalid} invalid, never sent) using {self.requests} estimate requests"
        )
        classes = [f"  {rows} x {credits} credits  ({kind})" for rows, credits, kind in self.by_class]
        return "\n".join([head, *classes, *self._largest_lines(), *self._limit_lines()])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        classes = "".join(
            f"<tr><td>{rows}</td><td>{credits}</td><td>{escape(str(kind))}</td></tr>"
            for rows, credits, kind in self.by_class
        )
        limits = "".join(
            f"<div>{escape(line)}</div>" for line in [*self._largest_lines(), *self._limit_lines()]
        )
        return (
            f"<div><b>{escape(self.model_id)}</b>{escape(f' on {self.service}' if self.service else '')}: "
            f"<b>{self.total}</b> credits "
            f"for {self.rows - self.invalid} rows "
            f"({self.invalid} invalid, never sent), {self.requests} estimate requests</div>"
            f"<table><tr><th>rows</th><th>credits each</th><th>price class</th></tr>{classes}</table>{limits}"
        )


def _show(summary: Any) -> None:
    """Display in a notebook when IPython is already running, else print."""
    if routing.in_notebook():
        routing.show(summary)
    else:
        print(summary)


def estimate(
    df: Any,
    model_id: str,
    columns: Columns = None,
    *,
    client: BaseClient | None = None,
    budget: int | None = None,
    key_cap: int | None = None,
    show: bool = True,
    allow_files_from: Folders | FilesFrom = None,
    **constants: Any,
) -> Any:
    """A copy of ``df`` (pandas or polars) with ``credits`` and ``billing`` per row, ``error`` for
    invalid rows, and the ``input`` each row would send; the summary is ``attrs["mediagen_estimate"]``.

    Local files are measured here, never uploaded; ``allow_files_from`` adds folders (beyond the
    working folder) a frame's paths may name."""
    check_options(model=model_id, client=client, budget=budget, key_cap=key_cap, show=show)
    frame = table(df)
    writable(frame, list(ESTIMATE_COLUMNS), "the estimate", prefixed=False)
    files_from = allowed(allow_files_from)
    aclient = async_client(client)
    model, rows = prepare(frame, model_id, columns, constants, aclient, files_from=files_from, upload=False)
    prices, requests = _call(price_rows(aclient, model, rows))
    credits = [_credits(prices.get(r.position)) for r in rows]
    summary = EstimateSummary(
        model,
        credits,
        frame.labels(),
        [price_class(model, r) for r in rows],
        requests,
        budget,
        key_cap,
        aclient.settings.service_name,
    )
    out = frame.with_columns(
        {
            "credits": credits,
            "billing": [prices[r.position].billing if r.position in prices else None for r in rows],
            "error": [r.error or (prices[r.position].error if r.position in prices else None) for r in rows],
            "input": [r.input for r in rows],
        },
        {WRITTEN: written(frame, list(ESTIMATE_COLUMNS)), "mediagen_estimate": summary},
    )
    if show:
        _show(summary)
    return out


def price_class(model: Model, row: Row) -> str:
    """What sets this row's price: its values of the model's ``varies_by`` inputs, or the listed price."""
    if model.pricing is None:
        return "listed price"
    return ", ".join(f"{name}={(row.input or {}).get(name)}" for name in model.varies_by)


def _credits(price: Price | None) -> int | None:
    return price.credits if price is not None else None


def _prices_within(prices: dict[int, Price], name: str, limit: int, fix: str) -> None:
    """Refuse, before anything is sent, a sweep whose rows cannot be priced or cost more than ``limit``."""
    unpriced = [p.error for p in prices.values() if p.credits is None]
    if unpriced:  # an unknown price would start unchecked: refuse rather than overspend
        raise ValidationError(
            f"{name}: {len(unpriced)} rows could not be priced, so the limit cannot be checked; nothing was "
            f"started ({unpriced[0]})",
            field=name,
            sent=False,
        )
    total = sum(p.credits or 0 for p in prices.values())
    if total > limit:
        raise ValidationError(
            f"{name}: the estimate is {total} credits for {len(prices)} rows, over "
            f"{words().option(name, limit)}; {fix}",
            field=name,
            sent=False,
        )


def _within_budget(prices: dict[int, Price], session: BudgetStatus) -> None:
    """Refuse, before anything is sent, a sweep that would pass what is left of the session budget."""
    total = sum(p.credits or 0 for p in prices.values())
    unpriced = sum(1 for p in prices.values() if p.credits is None)
    if session.left is not None and (total > session.left or unpriced):
        cost = f"{total} credits" + (f" and {unpriced} rows that could not be priced" if unpriced else "")
        raise BudgetExceeded(
            f"budget: this sweep would cost {cost}, but {session.spent} of the session budget of "
            f"{session.limit} credits are spent ({session.left} left); nothing was sent. Raise it with "
            + ("MEDIAGEN_BUDGET=N" if words().cli else "mediagen_nb.budget(N) or %mediagen budget N")
            + ", or run fewer rows"
        )


def submit(
    df: Any,
    model_id: str,
    columns: Columns = None,
    *,
    client: BaseClient | None = None,
    prefix: str = "",
    max_credits: int | None = None,
    run_name: str = "",
    fresh: bool = False,
    retry_failed: bool = False,
    ledger: str | Path | Ledger | None = None,
    progress: bool = True,
    on_row: Callable[[RowResult], None] | None = None,
    allow_files_from: Folders | FilesFrom = None,
    **constants: Any,
) -> SweepHandle:
    """Start a sweep in the background and return its handle at once.

    A path in the frame is sent only from the working folder or a folder of ``allow_files_from``.

    ``retry_failed=True`` starts again exactly the rows whose last attempt failed (new generations for
    those rows only) and keeps every success. ``on_row`` is called with each row's
    :class:`RowResult` as it ends (on a thread of its own, so a slow callback never slows the sweep);
    ``handle.as_completed()`` and ``async for`` yield the same.
    """
    if on_row is not None and not callable(on_row):
        raise ValidationError(
            f"on_row must be a function of one row, not {on_row!r}", field="on_row", sent=False
        )
    check_options(
        model=model_id,
        client=client,
        prefix=prefix,
        max_credits=max_credits,
        run_name=run_name,
        fresh=fresh,
        retry_failed=retry_failed,
        ledger=ledger,
        progress=progress,
    )
    frame = table(df)
    writable(frame, [prefix + name for name in RESULT_COLUMNS], "the run")
    files_from = allowed(allow_files_from)
    aclient = async_client(client)
    if fresh:
        run_name = f"{run_name}|fresh-{time.time_ns()}"
    model, rows = prepare(
        frame, model_id, columns, constants, aclient, run_name=run_name, files_from=files_from
    )
    session = budget()
    prices: dict[int, Price] = {}
    if max_credits is not None or session.limit is not None:
        prices, _ = _call(price_rows(aclient, model, rows))
    if max_credits is not None:
        _prices_within(
            prices,
            "max_credits",
            max_credits,
            "raise it or run fewer rows (see "
            + ("mediagen sweep --estimate)" if words().cli else "df.mediagen.estimate)"),
        )
    if session.limit is not None:
        _within_budget(prices, session)
    book = ledgers.as_ledger(ledger)  # opened here, in the caller's thread: a bad file fails before any start
    sweep = Sweep(
        aclient,
        model,
        rows,
        book,
        prices={pos: p.credits for pos, p in prices.items() if p.credits is not None},
        max_credits=max_credits,
        retry_failed=retry_failed,
    )
    bar = progress_bar(sweep.progress, len(rows), progress, aclient.settings.service_name)

    def finish(outcomes: dict[int, Outcome]) -> Any:
        """The input frame with the result columns of ``outcomes`` (rows not done yet: ``pending``)."""
        fields = [outcome_fields(outcomes.get(r.position, Outcome("pending")), r.input) for r in rows]
        names = [prefix + name for name in RESULT_COLUMNS]
        return frame.with_columns(
            {prefix + name: [entry[name] for entry in fields] for name in RESULT_COLUMNS},
            {WRITTEN: written(frame, names), MODELS: {**frame.attrs().get(MODELS, {}), prefix: model.id}},
        )

    records = frame.records()
    labels = frame.labels()
    handle = SweepHandle(sweep, finish, bar, lambda row, out: RowResult.of(row, out, labels, records), on_row)
    handle.start(loop.submit(sweep.run()))
    return handle


def run(df: Any, model_id: str, columns: Columns = None, **options: Any) -> Any:
    """Run every row and return a copy of ``df`` with the result columns; Ctrl-C keeps what finished."""
    return submit(df, model_id, columns, **options).result()
