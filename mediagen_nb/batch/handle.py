"""A sweep running in the background, and its rows as they finish.

``SweepHandle`` is what ``df.mediagen.submit`` returns: ``progress``, ``frame()`` (the frame so far),
``as_completed()`` and ``async for`` (each row as it ends, in the order they end), ``result()``
and ``cancel()``. Rows end on the sweep's event loop; they reach the caller's thread through a
queue per consumer, so a consumer that is slow, or an ``on_row`` callback that is, never slows it.
"""

import asyncio
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from html import escape
from queue import Empty, Queue
from typing import Any

from mediagen_nb.batch import loop, routing
from mediagen_nb.batch.plan import Row
from mediagen_nb.batch.scheduler import Outcome, Progress, Sweep, outcome_fields

_END = None  # what a consumer's queue receives when the sweep is over
MAX_LABELS = 30  # row labels named in a line, at most


@dataclass(frozen=True)
class RowResult:
    """One row (on one model) as it ended: its label and values in the frame, and the result columns."""

    label: Any  # the frame row's index label (pandas) or row number (polars)
    position: int  # its place in the result frame (one row per frame row and model in a comparison)
    values: dict[str, Any]  # the frame row's own columns
    generation_id: str | None
    status: str
    output_url: str | None
    output_urls: list[str]
    credits: int
    error: str | None
    elapsed_s: float | None
    input: dict[str, Any] | None
    model: str = ""  # the model it ran on

    @classmethod
    def of(cls, row: Row, outcome: Outcome, labels: list[Any], records: list[dict[str, Any]]) -> "RowResult":
        fields = outcome_fields(outcome, row.input)
        return cls(labels[row.source], row.position, records[row.source], **fields, model=row.model)


class SweepHandle:
    """A sweep running in the background: ``progress``, ``frame()``, ``as_completed()``, ``result()``."""

    def __init__(
        self,
        sweep: Sweep,
        finish: Callable[[dict[int, Outcome]], Any],
        bar: Any,
        result_of: Callable[[Row, Outcome], RowResult],
        on_row: Callable[[RowResult], None] | None = None,
    ) -> None:
        self._sweep = sweep
        self._finish = finish
        self._bar = bar
        self._result_of = result_of
        self._frame: Any = None
        self._lock = threading.Lock()
        self._ended: list[RowResult] = []
        self._consumers: list[Queue[RowResult | None]] = []
        self._future: Future[dict[int, Outcome]] | None = None
        sweep.row_listeners.append(self._ended_row)
        self._on_row: threading.Thread | None = None  # result() waits for it: every callback has run
        self._live: list[Any] = []  # live previews: result() waits for each one's final drawing
        if on_row is not None:
            self._on_row = threading.Thread(
                target=self._call_on_row, args=(on_row,), name="mediagen-on-row", daemon=True
            )
            self._on_row.start()

    def start(self, future: "Future[dict[int, Outcome]]") -> None:
        """Follow the sweep's future (consumers hear the end of the sweep from it)."""
        self._future = future
        future.add_done_callback(lambda _: self._close())

    # -- rows as they end --------------------------------------------------------------------

    def _ended_row(self, row: Row, outcome: Outcome) -> None:
        """Called on the sweep's loop as a row ends: record it and hand it to every consumer."""
        result = self._result_of(row, outcome)
        with self._lock:
            self._ended.append(result)
            for queue in self._consumers:
                queue.put(result)

    def _close(self) -> None:
        with self._lock:
            for queue in self._consumers:
                queue.put(_END)

    def _subscribe(self) -> "Queue[RowResult | None]":
        """A queue that gets every row ended so far, then each new one, then the end."""
        queue: Queue[RowResult | None] = Queue()
        with self._lock:
            for result in self._ended:
                queue.put(result)
            if self.done():
                queue.put(_END)
            else:
                self._consumers.append(queue)
        return queue

    def as_completed(self, timeout: float | None = None) -> Iterator[RowResult]:
        """Each row as it ends (rows already ended first), until the sweep is over.

        ``timeout`` (seconds) bounds the wait for the next row; past it, TimeoutError. A Ctrl-C
        while iterating (waiting for a row, or in the loop's body) stops starting rows, as in
        ``result()``; leaving the loop otherwise (``break``, an error) lets the sweep go on.
        """
        queue = self._subscribe()
        with _ctrl_c_noted() as pressed:
            try:
                while True:
                    try:
                        result = loop.get(queue, timeout)
                    except Empty:
                        raise TimeoutError(f"no row ended within {timeout} s: {self.progress}") from None
                    if result is _END:
                        return
                    yield result
            finally:
                if pressed.is_set() and not self.done():
                    self._interrupt()

    async def __aiter__(self) -> AsyncIterator[RowResult]:
        """``async for row in handle``: the same rows, without blocking the caller's event loop."""
        queue = self._subscribe()
        while True:
            result = await asyncio.to_thread(queue.get)
            if result is _END:
                return
            yield result

    def _call_on_row(self, on_row: Callable[[RowResult], None]) -> None:
        """The ``on_row`` thread: each row in turn; a callback's error is said once, never stops the sweep."""
        told = False
        for result in self.as_completed():
            try:
                on_row(result)
            except Exception as exc:  # the caller's code: say it, go on with the next row
                if not told:
                    print(f"mediagen_nb: on_row raised {type(exc).__name__}: {exc}", file=sys.stderr)
                    told = True

    # -- the sweep -----------------------------------------------------------------------------

    @property
    def progress(self) -> dict[str, int]:
        """Rows total, done, failed, running, reused from earlier runs or started by another process
        (``elsewhere``), unanswered (``uncertain``, ``possibly`` charged), and credits by whose they are."""
        p = self._sweep.progress
        snapshot = asdict(p)
        snapshot.pop("listeners", None)
        snapshot["credits"] = p.credits
        return snapshot

    def done(self) -> bool:
        return self._future is not None and self._future.done()

    def frame(self) -> Any:
        """The frame so far: rows that ended have their results, the others ``processing`` or ``pending``."""
        if self._frame is not None:
            return self._frame
        return self._finish(dict(self._sweep.outcomes))

    def preview(self, live: bool = False, **options: Any) -> Any:
        """The frame so far as a gallery (``df.mediagen.preview``'s options); ``live=True`` gives one that
        fills in as rows finish, redrawn from a thread of its own so the kernel stays free."""
        from mediagen_nb.batch.frames import as_pandas
        from mediagen_nb.batch.gallery import Gallery, LiveGallery

        def drawn() -> Gallery:
            return Gallery(as_pandas(self.frame()), **options)

        if not live:
            return drawn()
        gallery = LiveGallery(drawn, self.as_completed())
        self._live.append(gallery)
        return gallery

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop starting rows; starts already sent are answered and recorded, finished rows are kept."""
        loop.background_loop().call_soon_threadsafe(self._sweep.cancel, f"not started: {reason}")

    def result(self, timeout: float | None = None) -> Any:
        """The result frame; waits for the sweep (Ctrl-C while waiting cancels it, keeping what finished).

        After a Ctrl-C it returns once the starts already sent have their answer, so the frame shows
        every charge and nothing is charged after it returns.
        """
        assert self._future is not None, "start() the handle first"
        if self._frame is None:
            try:
                outcomes = loop.result(self._future, timeout)
            except KeyboardInterrupt:
                outcomes = self._interrupt()
            except FutureTimeout:
                raise TimeoutError(f"the sweep is still running: {self.progress}") from None
            if self._on_row is not None:
                self._on_row.join()  # its last callbacks run before the result is handed back
            for gallery in self._live:
                gallery.drawn.wait()
                # Once more from this cell, so a notebook saved after it keeps every row's result: a
                # front end may take a thread's drawing only while the cell it came from still runs
                # (nbclient, nbconvert --execute); one sent as that cell ended was lost under load.
                gallery.redraw()
            if self._bar is not None:
                self._bar.close()
            self._frame = self._finish(outcomes)
            print(summary_line(self._sweep.progress, by_model(self._sweep)))
            if self._sweep.stopped:
                print(stop_line(self._sweep, self._result_of))
        return self._frame

    def _interrupt(self) -> dict[int, Outcome]:
        """Ctrl-C: stop starting rows and wait for the starts already sent, so each shows its charge."""
        assert self._future is not None
        self.cancel("interrupted (Ctrl-C)")
        outcomes = loop.result(self._future)
        print(
            "mediagen_nb: interrupted; what finished is kept, rows in flight show their charge, and "
            "the ledger is up to date: run the same cell again to resume without paying twice"
        )
        return outcomes

    def __repr__(self) -> str:
        p = self._sweep.progress
        state = "finished" if self.done() else "running"
        return (
            f"<SweepHandle {state}: {p.done}/{p.total} done, {p.failed} failed, "
            f"{p.spent} credits spent now, {p.reused} rows reused"
            + (f", {p.elsewhere} started by another process>" if p.elsewhere else ">")
        )

    def _repr_html_(self) -> str:
        return escape(repr(self))


@contextmanager
def _ctrl_c_noted() -> Iterator[threading.Event]:
    """Set while a Ctrl-C came (in the main thread, where Python delivers it; it is raised as before).

    A loop over ``as_completed()`` left by a KeyboardInterrupt and one left by ``break`` look alike to
    the generator; this tells them apart.
    """
    pressed = threading.Event()
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield pressed  # no Python handler to wrap (another thread, or Ctrl-C ignored)
        return

    def noted(signum: int, frame: Any) -> Any:
        pressed.set()
        return previous(signum, frame)

    signal.signal(signal.SIGINT, noted)
    try:
        yield pressed
    finally:
        if signal.getsignal(signal.SIGINT) is noted:  # not if someone has set another since
            signal.signal(signal.SIGINT, previous)


def by_model(sweep: Sweep) -> dict[str, Progress]:
    """The counts of each model of a sweep of several (none for one model)."""
    if len(sweep.models) < 2:
        return {}
    counts = {model: Progress() for model in sweep.models}
    for row in sweep.rows:
        if row.model in counts:
            counts[row.model].total += 1
            counts[row.model].count(sweep.outcomes.get(row.position), 1)
    return counts


def summary_line(p: Progress, models: dict[str, Progress] | None = None) -> str:
    """One line of what a sweep did with money: spent now, reused, possibly charged; and with several
    models, a line for each (``flare-1-pro: 120 rows, 118 succeeded, 2 failed or invalid; 590 credits``)."""
    lines = [_summary(p, len(models or {}))]
    for model, c in (models or {}).items():
        earlier = c.reused + c.elsewhere
        reused = (
            f", {earlier} rows reused ({c.reused_credits + c.elsewhere_credits} credits)" if earlier else ""
        )
        lines.append(
            f"  {model}: {c.total} rows, {c.done} succeeded, {c.failed} failed or invalid; "
            f"{c.spent} credits spent now{reused}"
        )
    return "\n".join(lines)


def _summary(p: Progress, models: int) -> str:
    parts = [f"{p.done} succeeded", f"{p.failed} failed or invalid"]
    if p.running:
        parts.append(f"{p.running} still running")
    money = f"{p.spent} credits spent now"
    if p.reused:
        money += f", {p.reused} rows reused at no charge ({p.reused_credits} credits earlier)"
    if p.elsewhere:
        money += (
            f", {p.elsewhere} rows started by another process running this sweep "
            f"({p.elsewhere_credits} credits, counted there)"
        )
    if p.gone:
        money += f"; the sandbox that ran {p.gone} earlier rows is gone: they were started again"
    if p.retried:
        money += f", {p.retried} failed rows retried ({p.retried_credits} credits)"
    if p.uncertain:
        priced = [f"up to {p.possibly} credits"] if p.uncertain > p.unpriced else []
        if p.unpriced:
            priced.append(
                f"{p.unpriced} at a price that could not be learnt"
                if priced
                else "at a price that could not be learnt"
            )
        money += (
            f", {p.uncertain} starts unanswered (possibly charged {' and '.join(priced)}; "
            "a re-run resumes them at no cost)"
        )
    rows = f"{p.total} generations on {models} models" if models else f"{p.total} rows"
    return f"mediagen_nb: {rows}: {', '.join(parts)}; {money}"


def stop_line(sweep: Sweep, result_of: Callable[[Row, Outcome], RowResult]) -> str:
    """Why a sweep stopped starting rows, which rows were charged (and for how much), and what is left."""
    charged = [result_of(row, sweep.outcomes[row.position]) for row in sweep.rows]
    charged = [r for r in charged if r.generation_id is not None and r.credits]
    left = sum(1 for outcome in sweep.outcomes.values() if outcome.status == "skipped")
    several = len(sweep.models) > 1
    labels = ", ".join(
        f"{r.label} ({r.model})" if several else str(r.label) for r in charged[:MAX_LABELS]
    ) + (", ..." if len(charged) > MAX_LABELS else "")
    which = f": rows {labels}" if charged else ""
    return (
        f"mediagen_nb: stopped starting rows ({sweep.stopped}); {len(charged)} rows were charged "
        f"({sum(r.credits for r in charged)} credits{which}); {left} rows were not started: once fixed, "
        "run the same sweep again to start them (the charged ones are reused at no cost)"
    )


def progress_bar(progress: Progress, total: int, enabled: bool, where: str) -> Any:
    """A tqdm bar of rows ended, with what is done, failed, running, spent now and reused."""
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=f"mediagen · {where}", unit="row")
    lock = threading.Lock()
    route = routing.here()  # a text bar (no widgets) redrawn from the loop stays in the sweep's cell

    def update(p: Progress) -> None:
        with lock, route.applied():
            bar.n = p.done + p.failed
            bar.set_postfix(
                done=p.done, failed=p.failed, running=p.running, spent=p.spent, reused=p.reused, refresh=False
            )
            bar.refresh()

    progress.listeners.append(update)
    return bar
