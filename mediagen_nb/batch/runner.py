"""Estimate and run a DataFrame of inputs: the engine behind ``df.mediagen`` and ``mediagen sweep``.

Everything runs on one background event loop with an AsyncClient, so a blocking ``run`` and a
non-blocking ``submit`` are the same code, and the kernel stays usable during a long sweep.
"""

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from mediagen_nb.batch import loop, routing
from mediagen_nb.batch.estimates import Price, price_rows
from mediagen_nb.batch.frames import Table, table
from mediagen_nb.batch.handle import RowResult, SweepHandle, progress_bar
from mediagen_nb.batch.plan import (
    Columns,
    FilesFrom,
    Folders,
    MappingError,
    Models,
    NotSent,
    Plan,
    Row,
    allowed,
    model_ids,
    plan,
    warn,
)
from mediagen_nb.batch.scheduler import Outcome, Sweep, outcome_fields
from mediagen_nb.batch.words import words
from mediagen_nb.client import AsyncClient, BaseClient, BudgetExceeded, BudgetStatus, Ledger, Model, budget
from mediagen_nb.client.assemble import as_ledger
from mediagen_nb.client.connection import async_current
from mediagen_nb.client.errors import ValidationError

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
MODELS = "mediagen_models"  # DataFrame.attrs: the one model of each result prefix (for download sidecars)
MODEL_COLUMNS = "mediagen_model_columns"  # DataFrame.attrs: the column naming each row's model, by prefix
ROW, MODEL = "row", "model"  # a comparison's columns: the frame row (its label) and the model of each row
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
        elif name in ("run_name", "prefix"):
            if not isinstance(value, str):
                raise ValidationError(f"{name} must be a string, not {value!r}", field=name, sent=False)
        elif name == "model":
            model_ids(value)
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
    models: Models,
    columns: Columns,
    constants: Mapping[str, Any],
    client: AsyncClient,
    *,
    run_name: str = "",
    files_from: FilesFrom,
    upload: bool = True,
    notes: bool = True,
) -> Plan:
    """The plan of a call: one checked Row per frame row and model; mapping errors raise before any
    request but the catalog's (which needs no key), and each model's notes are said once.

    A row's local files must lie in ``files_from``'s folders; they are uploaded (become URLs) only
    when ``upload``: a sweep's run, never its estimate. ``notes=False``: the caller shows them.
    """
    catalog = {m.id: m for m in _call(client.models())}
    found = plan_frame(
        frame,
        catalog,
        models,
        columns,
        constants,
        client,
        run_name=run_name,
        files_from=files_from,
        upload=upload,
    )
    for note in found.notes if notes else ():
        warn(NotSent(note))
    return found


def plan_frame(
    frame: Table,
    catalog: Mapping[str, Model],
    models: Models,
    columns: Columns,
    constants: Mapping[str, Any],
    client: BaseClient,
    *,
    run_name: str = "",
    files_from: FilesFrom,
    upload: bool = True,
) -> Plan:
    """:func:`prepare` with the catalog (by id) in hand, its notes unsaid: an engine's worker reads the
    catalog once, on its own loop, and plans each batch with it."""

    def check(model: Model, values: Mapping[str, Any]) -> dict[str, Any]:
        values = files_from.checked(model, values)
        return client.check_input(model, client.attach(model, values) if upload else values)

    return plan(frame.names(), frame.records(), catalog, models, columns, constants, check, run_name=run_name)


async def price_plan(client: AsyncClient, found: Plan) -> tuple[dict[int, Price], dict[str, int]]:
    """Every planned row's price by position, and the estimate requests each model took: as few as its
    pricing allows (none for a listed price, one per price class), every model at once."""
    by_model = {m: [r for r in found.rows if r.model == m] for m in found.models}
    priced = await asyncio.gather(
        *(price_rows(client, found.models[m], rows) for m, rows in by_model.items())
    )
    prices = {position: price for model_prices, _ in priced for position, price in model_prices.items()}
    return prices, {m: requests for m, (_, requests) in zip(by_model, priced, strict=True)}


@dataclass
class Subtotal:
    """One model's part of an estimate."""

    credits: int = 0
    rows: int = 0  # planned rows (generations) of the model
    invalid: int = 0
    requests: int = 0
    classes: list[tuple[int, int, str]] = field(default_factory=list)  # (rows, credits each, price class)

    @property
    def per_row(self) -> float | None:
        """The mean price of its priced rows."""
        priced = self.rows - self.invalid
        return self.credits / priced if priced else None


class EstimateSummary:
    """Total, by model and price class, the largest rows, and the total against a budget or a key's cap."""

    def __init__(
        self,
        found: Plan,
        prices: Mapping[int, Price],
        labels: list[Any],
        requests: Mapping[str, int],
        budget: int | None,
        key_cap: int | None,
        service: str = "",
    ) -> None:
        self.models = list(found.models)
        self.model_id = ", ".join(self.models)
        self.service = service
        self.notes = list(found.notes)
        self.frame_rows = len(labels)
        self.model_column = found.model_column
        self.requests = sum(requests.values())
        self.by_model = {m: Subtotal(requests=requests.get(m, 0)) for m in self.models}
        classes: dict[tuple[str, str, int], int] = Counter()
        largest: list[tuple[str, int]] = []
        self.total = self.invalid = 0
        several = len(self.models) > 1
        for row in found.rows:
            sub = self.by_model.get(row.model)
            credits = prices[row.position].credits if row.position in prices else None
            if sub is not None:
                sub.rows += 1
            if credits is None:
                self.invalid += 1
                if sub is not None:
                    sub.invalid += 1
                continue
            assert sub is not None  # a priced row runs on a model of the plan
            sub.credits += credits
            self.total += credits
            classes[(row.model, price_class(found.models[row.model], row), credits)] += 1
            label = labels[row.source]
            largest.append((f"row {label} on {row.model}" if several else f"row {label}", credits))
        self.rows = len(found.rows)
        for (model_id, kind, credits), n in sorted(classes.items(), key=lambda c: (c[0][2], c[0][1])):
            self.by_model[model_id].classes.append((n, credits, kind))
        self.by_class = [
            (n, credits, f"{m}: {kind}" if several else kind)
            for m in self.models
            for n, credits, kind in self.by_model[m].classes
        ]
        self.largest = sorted(largest, key=lambda r: -r[1])[:5]
        self.limits = {
            name: value for name, value in (("budget", budget), ("key cap", key_cap)) if value is not None
        }

    def _largest_lines(self) -> list[str]:
        """``largest rows: row 2: 25, ...``, or no line when no row was priced."""
        shown = ", ".join(f"{label}: {credits}" for label, credits in self.largest)
        return [f"largest rows: {shown}"] if shown else []

    def _limit_lines(self) -> list[str]:
        lines = []
        for name, value in self.limits.items():
            verdict = "fits" if self.total <= value else f"exceeds it by {self.total - value}"
            lines.append(f"against the {name} of {value} credits: {verdict}")
        return lines

    def _head(self) -> str:
        where = f" on {self.service}" if self.service else ""
        if len(self.models) == 1:
            return (
                f"{self.model_id}{where}: {self.total} credits for {self.rows - self.invalid} rows "
                f"({self.invalid} invalid, never sent) using {self.requests} estimate requests"
            )
        shape = (
            f"{self.frame_rows} rows, each on the model its column names"
            if self.model_column
            else f"{self.frame_rows} rows x {len(self.models)} models"
        )
        return (
            f"{len(self.models)} models{where}: {self.total} credits for {self.rows - self.invalid} "
            f"generations ({shape}; {self.invalid} invalid, never sent) using {self.requests} estimate "
            "requests"
        )

    def _model_line(self, model_id: str) -> str:
        sub = self.by_model[model_id]
        each = f", {sub.per_row:.4g} a row" if sub.per_row is not None else ""
        invalid = f" ({sub.invalid} invalid)" if sub.invalid else ""
        priced = sub.rows - sub.invalid
        return (
            f"{model_id}: {sub.credits} credits for {priced} row{'' if priced == 1 else 's'}{invalid}{each}, "
            f"{sub.requests} estimate request{'' if sub.requests == 1 else 's'}"
        )

    def __str__(self) -> str:
        if len(self.models) == 1:
            body = [f"  {rows} x {credits} credits  ({kind})" for rows, credits, kind in self.by_class]
        else:
            body = []
            for m in self.models:
                body.append(f"  {self._model_line(m)}")
                body += [f"    {n} x {c} credits  ({kind})" for n, c, kind in self.by_model[m].classes]
        notes = [f"note: {note}" for note in self.notes]
        return "\n".join([self._head(), *body, *self._largest_lines(), *notes, *self._limit_lines()])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        several = len(self.models) > 1
        head = "<th>model</th>" if several else ""
        lines = []
        for m in self.models:
            for rows, credits, kind in self.by_model[m].classes:
                cell = f"<td>{escape(m)}</td>" if several else ""
                lines.append(f"<tr>{cell}<td>{rows}</td><td>{credits}</td><td>{escape(str(kind))}</td></tr>")
        subtotals = (
            "".join(f"<div>{escape(self._model_line(m))}</div>" for m in self.models) if several else ""
        )
        extra = [*self._largest_lines(), *(f"note: {note}" for note in self.notes), *self._limit_lines()]
        return (
            f"<div>{escape(self._head())}</div>{subtotals}"
            f"<table><tr>{head}<th>rows</th><th>credits each</th><th>price class</th></tr>{''.join(lines)}"
            f"</table>{''.join(f'<div>{escape(line)}</div>' for line in extra)}"
        )


def _show(summary: Any) -> None:
    """Display in a notebook when IPython is already running, else print."""
    if routing.in_notebook():
        routing.show(summary)
    else:
        print(summary)


def estimate(
    df: Any,
    models: Models,
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

    ``models`` is one model id, a list of them (a row per frame row and model, with ``row`` and
    ``model`` columns), or None to price each row on the model its own model column names. Local
    files are measured here, never uploaded; ``allow_files_from`` adds folders (beyond the working
    folder) a frame's paths may name."""
    check_options(model=models, client=client, budget=budget, key_cap=key_cap, show=show)
    frame = table(df)
    files_from = allowed(allow_files_from)
    aclient = async_client(client)
    found = prepare(
        frame, models, columns, constants, aclient, files_from=files_from, upload=False, notes=not show
    )  # shown, the summary says the notes
    names = [*tidy_columns(found), *ESTIMATE_COLUMNS]
    writable(frame, names, "the estimate", prefixed=False)
    prices, requests = _call(price_plan(aclient, found))
    summary = EstimateSummary(
        found, prices, frame.labels(), requests, budget, key_cap, aclient.settings.service_name
    )
    rows = found.rows
    out = frame.with_columns(
        {
            **tidy_values(found, frame),
            "credits": [_credits(prices.get(r.position)) for r in rows],
            "billing": [prices[r.position].billing if r.position in prices else None for r in rows],
            "error": [r.error or (prices[r.position].error if r.position in prices else None) for r in rows],
            "input": [r.input for r in rows],
        },
        {WRITTEN: written(frame, names), "mediagen_estimate": summary},
        rows=[r.source for r in rows] if found.tidy else None,
    )
    if show:
        _show(summary)
    return out


def tidy_columns(found: Plan, prefix: str = "") -> list[str]:
    """The columns a comparison adds before its results: the frame row and the model of each row."""
    return [prefix + ROW, prefix + MODEL] if found.tidy else []


def tidy_values(found: Plan, frame: Table, prefix: str = "") -> dict[str, list[Any]]:
    """The ``row`` (the frame row's label) and ``model`` of each planned row, for a comparison."""
    if not found.tidy:
        return {}
    labels = frame.labels()
    return {
        prefix + ROW: [labels[r.source] for r in found.rows],
        prefix + MODEL: [r.model for r in found.rows],
    }


def price_class(model: Model, row: Row) -> str:
    """What sets this row's price: its values of the model's ``varies_by`` inputs, or the listed price."""
    if model.pricing is None:
        return "listed price"
    values = row.input or {}
    return ", ".join(
        f"{name}={values[name]}" if name in values else f"{name}={_default(model, name)} (default)"
        for name in model.varies_by
    )


def _default(model: Model, name: str) -> Any:
    prop = model.properties.get(name)
    return prop.get("default") if isinstance(prop, Mapping) else None


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
    models: Models,
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

    ``models`` is one model id, a list of them (every row on each: one result row per frame row and
    model, with ``row`` and ``model`` columns, under one budget and one schedule), or None to run each
    row on the model its own model column names. A path in the frame is sent only from the working
    folder or a folder of ``allow_files_from``.

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
        model=models,
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
    files_from = allowed(allow_files_from)
    aclient = async_client(client)
    if fresh:
        run_name = f"{run_name}|fresh-{time.time_ns()}"
    found = prepare(frame, models, columns, constants, aclient, run_name=run_name, files_from=files_from)
    names = [*tidy_columns(found, prefix), *(prefix + name for name in RESULT_COLUMNS)]
    writable(frame, names, "the run")
    rows = found.rows
    session = budget()
    prices: dict[int, Price] = {}
    if max_credits is not None or session.limit is not None:
        prices, _ = _call(price_plan(aclient, found))
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
    book = as_ledger(ledger)  # opened here, in the caller's thread: a bad file fails before any start
    sweep = Sweep(
        aclient,
        found.models,
        rows,
        book,
        prices={pos: p.credits for pos, p in prices.items() if p.credits is not None},
        max_credits=max_credits,
        retry_failed=retry_failed,
    )
    bar = progress_bar(sweep.progress, len(rows), progress, aclient.settings.service_name)
    tidy = tidy_values(found, frame, prefix)
    single = next(iter(found.models)) if len(found.models) == 1 and found.model_column is None else None
    model_column = found.model_column or (prefix + MODEL if found.tidy else None)

    def finish(outcomes: dict[int, Outcome]) -> Any:
        """The input frame with the result columns of ``outcomes`` (rows not done yet: ``pending``)."""
        fields = [outcome_fields(outcomes.get(r.position, Outcome("pending")), r.input) for r in rows]
        attrs = frame.attrs()
        return frame.with_columns(
            {**tidy, **{prefix + name: [entry[name] for entry in fields] for name in RESULT_COLUMNS}},
            {
                WRITTEN: written(frame, names),
                MODELS: {**attrs.get(MODELS, {}), prefix: single},
                MODEL_COLUMNS: {**attrs.get(MODEL_COLUMNS, {}), prefix: model_column},
            },
            rows=[r.source for r in rows] if found.tidy else None,
        )

    records = frame.records()
    labels = frame.labels()
    handle = SweepHandle(sweep, finish, bar, lambda row, out: RowResult.of(row, out, labels, records), on_row)
    handle.start(loop.submit(sweep.run()))
    return handle


def run(df: Any, models: Models, columns: Columns = None, **options: Any) -> Any:
    """Run every row (on each model) and return a copy of ``df`` with the result columns; Ctrl-C keeps
    what finished."""
    return submit(df, models, columns, **options).result()
