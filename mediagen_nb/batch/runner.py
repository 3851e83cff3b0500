"""Estimate and run a DataFrame of inputs: the engine behind ``df.mediagen`` and ``mediagen sweep``.

Everything runs on one background event loop with an AsyncClient, so a blocking ``run`` and a
non-blocking ``submit`` are the same code, and the kernel stays usable during a long sweep.
"""

import sys
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict
from html import escape
from pathlib import Path
from typing import Any

import pandas as pd

from mediagen_nb.batch import loop
from mediagen_nb.batch.estimates import Price, price_rows
from mediagen_nb.batch.plan import Columns, MappingError, Row, _did_you_mean, plan_rows, resolve_columns
from mediagen_nb.batch.scheduler import Outcome, Progress, Sweep, outcome_fields
from mediagen_nb.client import AsyncClient, BaseClient, BudgetExceeded, BudgetStatus, Ledger, Model, budget
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.connection import async_current
from mediagen_nb.client.errors import ValidationError
from mediagen_nb.protocol import messages

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
WRITTEN = "mediagen_columns"  # DataFrame.attrs: the columns a sweep or estimate wrote (free to write again)


def writable(df: pd.DataFrame, names: list[str], what: str) -> None:
    """Refuse, before anything is sent, to write result columns over the user's own columns."""
    ours = set(df.attrs.get(WRITTEN, ()))
    clash = [name for name in names if name in {str(c) for c in df.columns} and name not in ours]
    if clash:
        raise MappingError(
            f"prefix: this frame already has its own {', '.join(map(repr, clash))}, which {what} would "
            f"overwrite; pass prefix='mg_' (result columns mg_{clash[0]}, ...) or rename yours",
            field="prefix",
        )


def written(out: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Mark ``names`` as written by us, so a later run on this frame may replace them."""
    out.attrs[WRITTEN] = sorted(set(out.attrs.get(WRITTEN, ())) | set(names))
    return out


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
        elif name in ("fresh", "progress", "show") and not isinstance(value, bool):
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
    return loop.submit(coroutine).result()


def prepare(
    df: pd.DataFrame,
    model_id: str,
    columns: Columns,
    constants: Mapping[str, Any],
    client: AsyncClient,
    *,
    run_name: str = "",
) -> tuple[Model, list[Row]]:
    """The model and one checked Row per DataFrame row; mapping errors raise before any request."""
    models = {m.id: m for m in _call(client.models())}
    if model_id not in models:
        hint = _did_you_mean(model_id, list(models))
        raise ValidationError(messages.unknown_model(model_id, models) + hint, field="model", sent=False)
    model = models[model_id]
    by_field = resolve_columns(model, list(df.columns), columns, constants)
    records = [{str(k): v for k, v in record.items()} for record in df.to_dict("records")]
    return model, plan_rows(records, model, by_field, constants, client.check_input, run_name=run_name)


class EstimateSummary:
    """Total, by price class, the largest rows, and the total against a budget or a key's cap."""

    def __init__(
        self,
        model: Model,
        frame: pd.DataFrame,
        classes: list[str],
        requests: int,
        budget: int | None,
        key_cap: int | None,
        service: str = "",
    ) -> None:
        self.model_id = model.id
        self.service = service
        self.requests = requests
        frame = frame.assign(price_class=classes)
        priced = frame[frame["credits"].notna()]
        self.total = int(priced["credits"].sum())
        self.rows = len(frame)
        self.invalid = int(frame["credits"].isna().sum())
        self.by_class = (
            priced.groupby(["price_class", "credits"])
            .size()
            .rename("rows")
            .reset_index()
            .sort_values("credits")
        )
        self.largest = priced.nlargest(5, "credits")
        self.limits = {
            name: value for name, value in (("budget", budget), ("key cap", key_cap)) if value is not None
        }

    def _largest_line(self) -> str:
        shown = ", ".join(f"row {label}: {credits}" for label, credits in self.largest["credits"].items())
        return f"largest rows: {shown}"

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
        classes = [f"  {r.rows} x {r.credits} credits  ({r.price_class})" for r in self.by_class.itertuples()]
        return "\n".join([head, *classes, self._largest_line(), *self._limit_lines()])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        classes = "".join(
            f"<tr><td>{r.rows}</td><td>{r.credits}</td><td>{escape(str(r.price_class))}</td></tr>"
            for r in self.by_class.itertuples()
        )
        limits = "".join(
            f"<div>{escape(line)}</div>" for line in [self._largest_line(), *self._limit_lines()]
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
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and type(shell).__name__ != "TerminalInteractiveShell":
        from IPython.display import display

        display(summary)
    else:
        print(summary)


def estimate(
    df: pd.DataFrame,
    model_id: str,
    columns: Columns = None,
    *,
    client: BaseClient | None = None,
    budget: int | None = None,
    key_cap: int | None = None,
    show: bool = True,
    **constants: Any,
) -> pd.DataFrame:
    """A copy of ``df`` with ``credits`` and ``billing`` per row, ``error`` for invalid rows, and the
    ``input`` each row would send."""
    check_options(model=model_id, client=client, budget=budget, key_cap=key_cap, show=show)
    writable(df, list(ESTIMATE_COLUMNS), "estimate")
    aclient = async_client(client)
    model, rows = prepare(df, model_id, columns, constants, aclient)
    prices, requests = _call(price_rows(aclient, model, rows))
    out = df.copy()
    out["credits"] = pd.array([_credits(prices.get(r.position)) for r in rows], dtype="Int64")
    out["billing"] = [prices[r.position].billing if r.position in prices else None for r in rows]
    out["error"] = [r.error or (prices[r.position].error if r.position in prices else None) for r in rows]
    out["input"] = [r.input for r in rows]
    written(out, list(ESTIMATE_COLUMNS))
    classes = [price_class(model, r) for r in rows]
    summary = EstimateSummary(model, out, classes, requests, budget, key_cap, aclient.settings.service_name)
    out.attrs["mediagen_estimate"] = summary
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


class SweepHandle:
    """A sweep running in the background: ``progress``, ``result()``, ``cancel()``."""

    def __init__(self, sweep: Sweep, future: "Future[dict[int, Outcome]]", finish: Any, bar: Any) -> None:
        self._sweep = sweep
        self._future = future
        self._finish = finish
        self._bar = bar
        self._frame: pd.DataFrame | None = None

    @property
    def progress(self) -> dict[str, int]:
        """Rows total, done, failed, running, reused from earlier runs, and credits (spent now, reused)."""
        p = self._sweep.progress
        snapshot = asdict(p)
        snapshot.pop("listeners", None)
        snapshot["credits"] = p.credits
        return snapshot

    def done(self) -> bool:
        return self._future.done()

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop starting rows; starts already sent are answered and recorded, finished rows are kept."""
        loop.background_loop().call_soon_threadsafe(self._sweep.cancel, f"not started: {reason}")

    def result(self, timeout: float | None = None) -> pd.DataFrame:
        """The result frame; waits for the sweep (Ctrl-C while waiting cancels it, keeping what finished).

        After a Ctrl-C it returns once the starts already sent have their answer, so the frame shows
        every charge and nothing is charged after it returns.
        """
        if self._frame is None:
            try:
                outcomes = self._future.result(timeout)
            except KeyboardInterrupt:
                self.cancel("interrupted (Ctrl-C)")
                outcomes = self._future.result()
                print(
                    "mediagen_nb: interrupted; what finished is kept, rows in flight show their charge, and "
                    "the ledger is up to date: run the same cell again to resume without paying twice"
                )
            except FutureTimeout:
                raise TimeoutError(f"the sweep is still running: {self.progress}") from None
            if self._bar is not None:
                self._bar.close()
            self._frame = self._finish(outcomes)
            print(summary_line(self._sweep.progress))
        return self._frame

    def __repr__(self) -> str:
        p = self._sweep.progress
        state = "finished" if self.done() else "running"
        return (
            f"<SweepHandle {state}: {p.done}/{p.total} done, {p.failed} failed, "
            f"{p.spent} credits spent now, {p.reused} rows reused>"
        )

    def _repr_html_(self) -> str:
        return escape(repr(self))


def summary_line(p: Progress) -> str:
    """One line of what a sweep did with money: spent now, reused, possibly charged."""
    parts = [f"{p.done} succeeded", f"{p.failed} failed or invalid"]
    if p.running:
        parts.append(f"{p.running} still running")
    money = f"{p.spent} credits spent now"
    if p.reused:
        money += f", {p.reused} rows reused at no charge ({p.reused_credits} credits earlier)"
    if p.uncertain:
        money += (
            f", {p.uncertain} starts unanswered (possibly charged up to {p.possibly} credits; "
            "a re-run resumes them at no cost)"
        )
    return f"mediagen_nb: {p.total} rows: {', '.join(parts)}; {money}"


def _progress_bar(progress: Progress, total: int, enabled: bool, where: str) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=f"mediagen · {where}", unit="row")
    lock = threading.Lock()

    def update(p: Progress) -> None:
        with lock:
            bar.n = p.done + p.failed
            bar.set_postfix(
                done=p.done, failed=p.failed, running=p.running, spent=p.spent, reused=p.reused, refresh=False
            )
            bar.refresh()

    progress.listeners.append(update)
    return bar


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
            f"{name}: the estimate is {total} credits for {len(prices)} rows, over {name}={limit}; {fix}",
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
            "mediagen_nb.budget(N) or %mediagen budget N, or run fewer rows"
        )


def submit(
    df: pd.DataFrame,
    model_id: str,
    columns: Columns = None,
    *,
    client: BaseClient | None = None,
    prefix: str = "",
    max_credits: int | None = None,
    run_name: str = "",
    fresh: bool = False,
    ledger: str | Path | Ledger | None = None,
    progress: bool = True,
    **constants: Any,
) -> SweepHandle:
    """Start a sweep in the background and return its handle at once."""
    check_options(
        model=model_id,
        client=client,
        prefix=prefix,
        max_credits=max_credits,
        run_name=run_name,
        fresh=fresh,
        ledger=ledger,
        progress=progress,
    )
    writable(df, [prefix + name for name in RESULT_COLUMNS], "run")
    aclient = async_client(client)
    if fresh:
        run_name = f"{run_name}|fresh-{time.time_ns()}"
    model, rows = prepare(df, model_id, columns, constants, aclient, run_name=run_name)
    session = budget()
    prices: dict[int, Price] = {}
    if max_credits is not None or session.limit is not None:
        prices, _ = _call(price_rows(aclient, model, rows))
    if max_credits is not None:
        _prices_within(
            prices, "max_credits", max_credits, "raise it or run fewer rows (see df.mediagen.estimate)"
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
    )
    bar = _progress_bar(sweep.progress, len(rows), progress, aclient.settings.service_name)

    def finish(outcomes: dict[int, Outcome]) -> pd.DataFrame:
        out = df.copy()
        table = [outcome_fields(outcomes.get(r.position, Outcome("skipped")), r.input) for r in rows]
        for name in RESULT_COLUMNS:
            out[prefix + name] = [entry[name] for entry in table]
        return written(out, [prefix + name for name in RESULT_COLUMNS])

    return SweepHandle(sweep, loop.submit(sweep.run()), finish, bar)


def run(df: pd.DataFrame, model_id: str, columns: Columns = None, **options: Any) -> pd.DataFrame:
    """Run every row and return a copy of ``df`` with the result columns; Ctrl-C keeps what finished."""
    return submit(df, model_id, columns, **options).result()
