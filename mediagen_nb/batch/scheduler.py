"""Running the rows of a sweep as fast as the service's limits allow, and no faster.

Starts and reads go through the client's shared limiters (60 requests a minute per key, 60 starts
a minute per account), so our own load never causes a 429. Each running generation is held by one
long-poll (``wait=55``) at a time; for a model that runs longer than a wait, its first read is
delayed by the run time seen so far for that model (until one of its generations has ended, one
"probe" reads and the others wait for what it learns), so a generation usually costs one start and
one read.

Several models share the one schedule (:class:`StartOrder`): their rows are started in turn, so
every model's results come in from the start, and a model whose runs take longer is started a little
ahead of the others by the time it takes, so all end together instead of a slow video model's last
runs holding up the end of the sweep.

Money: every start is written to the ledger before it is sent (by the client). A row's failure is
data and never stops the others; a start refused for money (credits, the key's cap, the budget), a
ledger that cannot be written, or a service that cannot be reached (a sandbox that could not be
started again) stops further starts, because every one of them would fail too; a start sent without
an answer is ``uncertain``. ``cancel()`` stops starting but lets the starts already sent get their
answer, so :meth:`Sweep.run` returns with no start in flight and every charge shown, and never raises
for what the service or the ledger did.
"""

import asyncio
import statistics
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mediagen_nb.batch.estimates import combination
from mediagen_nb.batch.plan import Row
from mediagen_nb.client import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    BudgetExceeded,
    ConnectionFailed,
    Generation,
    InsufficientCreditsError,
    KeyCapReachedError,
    LedgerError,
    MediagenError,
    Model,
    NotFoundError,
    PermissionDeniedError,
    StartUncertain,
    processes,
)
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.protocol import limits, states

# Refusals every further start would meet too: the first stops starting (money, key, account, ledger).
STOPS_EVERY_START = (
    InsufficientCreditsError,
    KeyCapReachedError,
    BudgetExceeded,
    LedgerError,
    AuthenticationError,
    PermissionDeniedError,
)
MAX_ATTEMPTS = 20  # retries of one row by retry_failed, over every run
STARTS_IN_FLIGHT = 8  # start requests awaiting their answer at once (hides latency; the limiter paces)
UNCERTAIN = "uncertain"  # a row whose start got no answer: it may have been charged; a re-run resumes it
ROW_DONE = frozenset({states.SUCCEEDED, states.FAILED, "invalid", "error", UNCERTAIN, "skipped"})
# Whose start a row's generation is: this run's, an earlier run's (this process's, or one that has
# ended: a killed kernel's), or another running process's (counted there).
NOW, EARLIER, ELSEWHERE = "now", "earlier", "elsewhere"
SLOW_RUN = 2.0  # a slow run of a model, against its median (past the 99th percentile of the sandbox's)
RUNTIME_SAMPLES = 101  # the latest run times of a model its median is taken over


@dataclass
class Outcome:
    """What became of one row. ``credits`` is what the service charged for it (0 once refunded)."""

    status: str  # succeeded | failed | processing | uncertain | invalid | skipped | error
    generation_id: str | None = None
    urls: tuple[str, ...] = ()
    credits: int = 0
    error: str | None = None
    elapsed_s: float | None = None
    origin: str = NOW  # NOW: charged by this run; EARLIER or ELSEWHERE: by another, nothing by this one
    possibly: int | None = 0  # an uncertain start: what it may have cost (None: its price is unknown)

    @property
    def reused(self) -> bool:
        """Started by an earlier run or another process: nothing charged by this one."""
        return self.origin != NOW

    @classmethod
    def of(cls, generation: Generation, *, origin: str = NOW) -> "Outcome":
        """A read generation; a failed one cost nothing (its ``creditsSpent`` was refunded)."""
        credits = 0 if generation.status == states.FAILED else generation.credits_spent
        return cls(
            generation.status,
            generation.id,
            generation.urls,
            credits,
            generation.error,
            generation.elapsed_s,
            origin,
        )

    @classmethod
    def from_entry(cls, entry: ledgers.Entry) -> "Outcome":
        credits = 0 if entry.status == states.FAILED else entry.credits
        return cls(
            entry.status, entry.resource_id, entry.urls, credits, entry.error, entry.elapsed_s, EARLIER
        )


@dataclass
class Progress:
    """Counts a progress bar or a handle shows, kept equal to the rows' outcomes.

    ``spent`` is what this run's starts were charged; ``reused`` rows were finished or started by
    an earlier run, and ``elsewhere`` rows by another process running the same sweep: they cost this
    run nothing. ``possibly`` is what uncertain starts may have cost (``unpriced`` of them at a price
    that could not be learnt).
    """

    total: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    spent: int = 0
    reused: int = 0
    reused_credits: int = 0
    elsewhere: int = 0
    elsewhere_credits: int = 0
    uncertain: int = 0
    possibly: int = 0
    unpriced: int = 0
    retried: int = 0  # rows started again by retry_failed (their last attempt had failed)
    retried_credits: int = 0
    gone: int = 0  # rows whose earlier generation the service does not know (its sandbox is gone): restarted
    listeners: list[Callable[["Progress"], None]] = field(default_factory=list, repr=False)

    @property
    def credits(self) -> int:
        """Credits of every row shown: spent now plus reused (from earlier runs or other processes)."""
        return self.spent + self.reused_credits + self.elsewhere_credits

    def count(self, outcome: Outcome | None, sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) one row's outcome."""
        if outcome is None:
            return
        if outcome.status == states.SUCCEEDED:
            self.done += sign
        elif outcome.status == "processing":
            self.running += sign
        elif outcome.status in (states.FAILED, "invalid", "error", UNCERTAIN):
            self.failed += sign
        if outcome.status == UNCERTAIN:
            self.uncertain += sign
            if outcome.possibly is None:
                self.unpriced += sign
            else:
                self.possibly += sign * outcome.possibly
        if outcome.origin == ELSEWHERE:
            self.elsewhere += sign
            self.elsewhere_credits += sign * outcome.credits
        elif outcome.origin == EARLIER:
            self.reused += sign
            self.reused_credits += sign * outcome.credits
        else:
            self.spent += sign * outcome.credits

    def changed(self) -> None:
        for listener in self.listeners:
            listener(self)


class StartOrder:
    """Which row to start next, when several models share one sweep.

    Each model's rows keep their order. The next start goes to the model whose rows left need the
    largest share of the starts left to be started in time: a model whose runs take ``lead`` more
    seconds than the fastest model's must have its last start that much earlier, so it needs its rows
    in fewer of the starts left (``rate`` starts a second). With equal run times the models take turns,
    by the rows they have left; with one model this is the rows' own order.
    """

    def __init__(self, rows: list[Row], rate: float) -> None:
        self._queues: dict[str, deque[Row]] = {}
        for row in rows:
            self._queues.setdefault(row.model, deque()).append(row)
        self.rate = rate  # starts a service second the limits allow

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    def next(self, runtimes: Mapping[str, float | None]) -> Row | None:
        """The next row to start, given each model's run time so far (service seconds; None: unknown)."""
        left = {model: queue for model, queue in self._queues.items() if queue}
        if not left:
            return None
        known = [t for model in left if (t := runtimes.get(model)) is not None]
        fastest = min(known, default=0.0)
        starts = sum(len(queue) for queue in left.values())
        best: tuple[float, int, int] | None = None
        chosen = ""
        for order, (model, queue) in enumerate(left.items()):
            lead = max(0.0, (runtimes.get(model) or fastest) - fastest) * self.rate
            need = (len(queue) / max(float(len(queue)), starts - lead), len(queue), -order)
            if best is None or need > best:
                best, chosen = need, model
        return left[chosen].popleft()


class Sweep:
    """One run of a plan on the background loop. ``cancel()`` stops starting and returns what is known."""

    def __init__(
        self,
        client: AsyncClient,
        models: Mapping[str, Model],
        rows: list[Row],
        ledger: ledgers.Ledger,
        *,
        prices: dict[int, int] | None = None,
        max_credits: int | None = None,
        retry_failed: bool = False,
    ) -> None:
        self.client = client
        self.models = dict(models)
        self.rows = rows
        self.ledger = ledger
        self.prices = dict(prices or {})
        for row in rows:  # a listed price: known without a request
            model = self.models.get(row.model)
            if row.input is not None and model is not None and model.pricing is None:
                self.prices[row.position] = model.credits or 0
        self._charged: dict[tuple[str, str], int] = {}  # what answered starts cost, by model and price class
        self.retry_failed = retry_failed
        self._retried: set[int] = set()  # positions started again because their last attempt failed
        self.max_credits = max_credits
        self.outcomes: dict[int, Outcome] = {}
        self._known: dict[str, ledgers.Entry] = {}  # the ledger's entries of the rows when the run began
        self.progress = Progress(total=len(rows))
        self._stop_reason: str | None = None
        self.stopped: str | None = None  # why the sweep stopped starting rows by itself (money, ledger ...)
        self._committed = 0  # credits charged or about to be, for max_credits
        self._runtimes: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=RUNTIME_SAMPLES))
        self._medians: dict[str, float] = {}  # of each model's run times (service seconds)
        self._slow: dict[str, float] = {}  # a slow run of each model: the 90th percentile of its run times
        self._first_start: dict[str, float] = {}  # when each model's first row was started (real seconds)
        self._probing: set[str] = set()  # models whose run time one generation is being read to learn
        self._learned: dict[str, asyncio.Event] = {}  # set when a probe of the model ends
        self._cancelled = False
        self.row_listeners: list[Callable[[Row, Outcome], None]] = []  # called as each row ends
        self._watchers: list[asyncio.Task[None]] = []  # reads: cancelled by cancel()
        self._resumed: set[int] = set()  # positions of rows whose earlier start this run resumes

    def cancel(self, reason: str = "cancelled before it started") -> None:
        """Stop starting rows; starts already sent get their answer. Call on the sweep's loop."""
        self._stop_reason = self._stop_reason or reason
        self._cancelled = True
        for task in self._watchers:
            task.cancel()

    def _stop_starting(self, reason: str) -> None:
        """Start no more rows (money, the budget or the ledger failed); rows started are still read."""
        self.stopped = self.stopped or reason.removeprefix("not started: ")
        self._stop_reason = self._stop_reason or reason

    def _show(self, row: Row, outcome: Outcome) -> None:
        """Set a row's outcome, keep the counts equal to the outcomes, and tell who waits for rows."""
        self.progress.count(self.outcomes.get(row.position), -1)
        self.outcomes[row.position] = outcome
        self.progress.count(outcome, 1)
        self.progress.changed()
        if outcome.status in ROW_DONE:
            self._tell(row, outcome)

    def _tell(self, row: Row, outcome: Outcome) -> None:
        for listener in self.row_listeners:
            listener(row, outcome)

    async def run(self) -> dict[int, Outcome]:
        """Run every row; returns the outcome of each row by position, with no start in flight."""
        valid = [row for row in self.rows if row.input is not None]
        for row in self.rows:
            if row.input is None:
                self._show(row, Outcome("invalid", error=row.error))
        try:  # the embedded sandbox: which state it holds (started again if it died)
            await asyncio.to_thread(self.client.settings.check)
        except ConnectionFailed as exc:  # it cannot be started: nothing can be, rows ended are still shown
            self._stop_starting(f"not started: {exc}")
        where = self.client.settings.where
        keys = [row.key for row in valid if row.key]
        known = await asyncio.to_thread(self.ledger.entries, keys, where)
        if self.retry_failed:
            valid = await self._next_attempts(valid, known)
        self._known = known
        resumed: list[Row] = []  # an earlier start to resume through the client's start path
        pending: list[Row] = []
        for row in valid:
            entry = known.get(row.key or "")
            if entry is not None and entry.final and entry.trusted(where):
                self._committed += 0 if entry.status == states.FAILED else entry.credits
                self._show(row, Outcome.from_entry(entry))
            elif entry is not None and entry.resource_id and entry.model_id == row.model:
                resumed.append(row)
            else:
                pending.append(row)
        self._resumed = {row.position for row in resumed}
        rate = self._start_rate()
        await self._start_all(StartOrder(resumed, rate))  # first: they were charged before any new row
        await self._start_all(StartOrder(pending, rate))
        busy = [] if self._cancelled else [t for t in self._watchers if not t.done()]
        while busy:
            await asyncio.wait(busy)
            busy = [] if self._cancelled else [t for t in self._watchers if not t.done()]
        await asyncio.gather(*self._watchers, return_exceptions=True)
        for row in valid:  # the rows this run leaves as they are: not started, or still running
            shown = self.outcomes.get(row.position)
            if shown is None:
                self._show(row, self._unstarted(row, self._stop_reason, "skipped"))
            elif shown.status not in ROW_DONE:
                self._tell(row, shown)
        retried = [p for p in self._retried if not self.outcomes[p].reused]  # started again by this run
        self.progress.retried = len(retried)
        self.progress.retried_credits = sum(self.outcomes[p].credits for p in retried)
        return self.outcomes

    def _start_rate(self) -> float:
        """Starts a service second the limits allow this client: the account's 60 a minute, or half of
        its keys' requests (each generation is a start and a read)."""
        keys = max(1, len(self.client.settings.keys))
        per_window = min(limits.STARTS_PER_ACCOUNT, limits.REQUESTS_PER_KEY * keys / 2)
        return per_window / limits.WINDOW_SECONDS

    def _runtime(self, model_id: str) -> float | None:
        """How long a model's last runs may take (service seconds), for the start order: a slow run of
        those seen (the 90th percentile), else how long its first run has been going (at least that),
        else None."""
        if model_id in self._slow:
            return self._slow[model_id]
        first = self._first_start.get(model_id)
        if first is None:
            return None
        return self.client.clock.monotonic() - first  # the client's clock runs in service seconds

    async def _next_attempts(self, rows: list[Row], known: dict[str, ledgers.Entry]) -> list[Row]:
        """Rows whose last attempt failed get the key of their next attempt (``<key>-retry<n>``).

        A failed generation was refunded, and the service returns it again for its key, so a retry
        needs a new key; successes keep theirs. ``known`` gains the entries of the attempts found.
        """
        where = self.client.settings.where
        by_position = {row.position: row for row in rows}
        failing = [row for row in rows if _failed(known.get(row.key or ""))]
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if not failing:
                break
            keys = {row.position: f"{(row.key or '').split('-retry')[0]}-retry{attempt}" for row in failing}
            found = await asyncio.to_thread(self.ledger.entries, list(keys.values()), where)
            known.update(found)
            for row in failing:
                by_position[row.position] = replace(row, key=keys[row.position])
                self._retried.add(row.position)
            failing = [by_position[row.position] for row in failing if _failed(found.get(keys[row.position]))]
        return [by_position[row.position] for row in rows]

    async def _start_all(self, order: StartOrder) -> None:
        """Start rows in ``order``, at most STARTS_IN_FLIGHT awaiting their answer; never leaves a start
        in flight. Each next row is chosen as a start is free, with the run times known then."""
        gate = asyncio.Semaphore(STARTS_IN_FLIGHT)
        starting: list[asyncio.Task[None]] = []

        async def start(row: Row) -> None:
            try:
                await self._start(row)
            finally:
                gate.release()

        while len(order):
            await gate.acquire()
            if self._stop_reason is not None:
                gate.release()
                break
            row = order.next({model: self._runtime(model) for model in self.models})
            assert row is not None
            self._first_start.setdefault(row.model, self.client.clock.monotonic())
            starting.append(asyncio.create_task(start(row)))
        await asyncio.gather(*starting)

    async def _start(self, row: Row) -> None:
        """Start one row; every failure becomes the row's outcome (this never raises)."""
        price = self.prices.get(row.position)
        if self.max_credits is not None and self._committed + (price or 0) > self.max_credits:
            self._stop_starting(f"not started: max_credits={self.max_credits} would be exceeded")
            return
        self._committed += price or 0
        try:
            with ledgers.via("sweep"):
                generation = await self.client.run(
                    row.model,
                    row.input or {},
                    idempotency_key=row.key,
                    validate=False,
                    price=price,
                    ledger=self.ledger,
                )
        except (*STOPS_EVERY_START, ConnectionFailed) as exc:  # ConnectionFailed: the service is unreachable
            self._committed -= price or 0
            self._stop_starting(f"not started: {exc}")
            self._show(row, self._unstarted(row, str(exc)))
            return
        except StartUncertain as exc:
            possibly = exc.credits if exc.credits is not None else await self._price_of(row)
            priced = exc.credits is None and possibly is not None
            note = f"{exc.message} (its price: {possibly} credits)" if priced else exc.message
            self._show(row, Outcome(UNCERTAIN, error=note, possibly=possibly))
            return
        except Exception as exc:  # a row's bad data must never stop the others
            self._committed -= price or 0
            self._show(row, self._unstarted(row, str(exc)))
            return
        self._committed += generation.credits_spent - (price or 0)
        if generation.status != states.FAILED:
            self._charged[(row.model, combination(self.models[row.model], row))] = generation.credits_spent
        origin = self._origin(row) if generation.reused else NOW
        if row.position in self._resumed and origin == NOW:
            self.progress.gone += 1  # the service no longer knows its earlier generation: started again
        if generation.done:
            self._finish(row, generation, self.client.clock.monotonic(), origin)
            return
        self._show(row, Outcome("processing", generation.id, credits=generation.credits_spent, origin=origin))
        self._watch_soon(row, generation.id, origin)

    def _unstarted(self, row: Row, error: str | None, status: str = "error") -> Outcome:
        """A row not started by this run (``status``: its start failed, or it was ``skipped``), with
        nothing charged now. An earlier run's start of it still shows its generation and what it was
        charged then; one that got no answer (given up by an earlier run, or left by a process that is
        gone) is still ``uncertain``."""
        entry = self._known.get(row.key or "")
        if entry is not None and entry.resource_id and entry.trusted(self.client.settings.where):
            return replace(Outcome.from_entry(entry), status=status, error=error)
        if entry is not None and entry.sent_unanswered and (entry.error or entry.writer != processes.RUNNING):
            why = f"{error}; " if error else ""
            note = f"{why}an earlier start of it got no answer: it may have been charged; a re-run resumes it"
            return Outcome(UNCERTAIN, error=note, possibly=entry.credits if entry.credits else None)
        return Outcome(status, error=error)

    def _origin(self, row: Row) -> str:
        """Whose start a row's reused generation is (the service answered a replay, or it was read).

        An earlier run's when the ledger held its start as this run began: answered, given up as
        unanswered, or written by this process or by one that has ended (a killed kernel's, which may
        have sent it). Another process's when that process still runs, or when the start was written
        since this run began (by this run, whose request the service says another one beat).
        """
        entry = self._known.get(row.key or "")
        if entry is None:
            return ELSEWHERE
        if entry.resource_id or entry.error:
            return EARLIER
        return ELSEWHERE if entry.writer == processes.RUNNING else EARLIER

    async def _price_of(self, row: Row) -> int | None:
        """What an unanswered start may have cost: what a start of the same price class was charged,
        else the service's estimate; None when neither can be learnt."""
        model = self.models[row.model]
        seen = self._charged.get((row.model, combination(model, row)))
        if seen is not None:
            return seen
        try:
            return (await self.client.estimate(row.model, row.input or {}, validate=False)).credits
        except MediagenError:
            return None

    def _watch_soon(self, row: Row, generation_id: str, origin: str) -> None:
        task = asyncio.create_task(self._watch(row, generation_id, self.client.clock.monotonic(), origin))
        self._watchers.append(task)

    async def _probe(self, model_id: str) -> bool:
        """Wait until the model's run time is known, or be the generation that reads to learn it (True:
        the caller reads at once and calls :meth:`_probed` when its read ends)."""
        while model_id not in self._medians:
            if model_id not in self._probing:
                self._probing.add(model_id)
                return True
            await self._learned.setdefault(model_id, asyncio.Event()).wait()
        return False

    def _probed(self, model_id: str) -> None:
        """A probe's read ended (its run time is recorded if it succeeded): wake the generations waiting."""
        self._probing.discard(model_id)
        event = self._learned.pop(model_id, None)
        if event is not None:
            event.set()

    def _first_read_delay(self, row: Row, started: float) -> float:
        """Real seconds to wait before the first read of a generation started at ``started``: until
        a slow run of the model (``SLOW_RUN`` times its median) would end within one long-poll, but no
        later than its median, so the runs read as they end still tell the median: a run that ended
        before its read is timed as longer than it was, which is harmless below the median (none for a
        resumed row, which has been running since an earlier run)."""
        median = self._medians.get(row.model)
        if median is None or row.position in self._resumed:
            return 0.0
        due = min(median * SLOW_RUN - limits.WAIT_MAX_SECONDS, median)
        waited = self.client.clock.monotonic() - started
        return max(0.0, due - waited)

    async def _watch(self, row: Row, generation_id: str, started: float, origin: str) -> None:
        """Hold one long-poll at a time on the generation until it ends (its reads are recorded in the
        ledger by the client, as every read of a start it made or resumed)."""
        probe = False
        try:
            if row.position not in self._resumed:
                probe = await self._probe(row.model)
            delay = 0.0 if probe else self._first_read_delay(row, started)
            if delay:
                await self.client.clock.wait(delay)
            generation = await self.client.wait(generation_id)
        except (NotFoundError, BadRequestError) as exc:
            charged = self.outcomes[row.position].credits
            self._show(row, Outcome("error", generation_id, credits=charged, error=f"reading failed: {exc}"))
            return
        except Exception as exc:  # whatever broke the reads, the row says so with its charge
            shown = self.outcomes[row.position]
            cause = exc if isinstance(exc, MediagenError) else f"{type(exc).__name__}: {exc}"
            note = f"reading failed: {cause}; it was charged {shown.credits} credits and a re-run resumes it"
            self._show(row, replace(shown, status="error", error=note))
            return
        except asyncio.CancelledError:
            return  # the row keeps its "processing" outcome, with its charge; a re-run resumes it
        else:  # before a probe's waiters wake: its run time is recorded first
            self._finish(row, generation, started, origin, timed=row.position not in self._resumed)
        finally:
            if probe:
                self._probed(row.model)

    def _finish(
        self, row: Row, generation: Generation, started: float, origin: str, *, timed: bool = False
    ) -> None:
        """Show a generation that ended; ``timed``: it was started by this run and read here, so the time
        since ``started`` is its model's run time (at most: it may have ended before its read)."""
        elapsed = self.client.clock.monotonic() - started
        generation = replace(generation, elapsed_s=generation.elapsed_s or round(elapsed, 3))
        if generation.status != states.SUCCEEDED:
            self._committed -= generation.credits_spent  # failed runs are refunded
        elif timed:
            seen = self._runtimes[row.model]
            seen.append(elapsed)
            self._medians[row.model] = statistics.median(seen)
            self._slow[row.model] = statistics.quantiles(seen, n=10)[-1] if len(seen) > 1 else seen[0]
        self._show(row, Outcome.of(generation, origin=origin))


def _failed(entry: ledgers.Entry | None) -> bool:
    return entry is not None and entry.status == states.FAILED


def outcome_fields(outcome: Outcome, input: dict[str, Any] | None = None) -> dict[str, Any]:
    """The result columns of one row (without prefix); ``input`` is what the row sent (or would)."""
    return {
        "generation_id": outcome.generation_id,
        "status": outcome.status,
        "output_url": outcome.urls[0] if outcome.urls else None,
        "output_urls": list(outcome.urls),
        "credits": outcome.credits,
        "error": outcome.error,
        "elapsed_s": outcome.elapsed_s,
        "input": input,
    }
