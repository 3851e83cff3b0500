"""Running the rows of a sweep as fast as the service's limits allow, and no faster.

Starts and reads go through the client's shared limiters (60 requests a minute per key, 60 starts
a minute per account), so our own load never causes a 429. Each running generation is held by one
long-poll (``wait=55``) at a time; for a model that runs longer than a wait, its first read is
delayed by the run time seen so far for that model, so a generation usually costs one start and
one read. A row's failure is data; a start refused for money (credits, the key's cap, the budget)
stops further starts, because every one of them would be refused too.
"""

import asyncio
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from mediagen_nb.batch.ledger import Entry, Ledger
from mediagen_nb.batch.plan import Row
from mediagen_nb.client import (
    AsyncClient,
    Generation,
    InsufficientCreditsError,
    KeyCapReachedError,
    MediagenError,
    Model,
)
from mediagen_nb.protocol import limits

STARTS_IN_FLIGHT = 8  # start requests awaiting their answer at once (hides latency; the limiter paces)


@dataclass
class Outcome:
    """What became of one row."""

    status: str  # succeeded | failed | invalid | skipped | processing | error
    generation_id: str | None = None
    urls: tuple[str, ...] = ()
    credits: int = 0
    error: str | None = None
    elapsed_s: float | None = None

    @classmethod
    def of(cls, generation: Generation) -> "Outcome":
        """A read generation; a failed one cost nothing (its ``creditsSpent`` was refunded)."""
        credits = 0 if generation.status == "failed" else generation.credits_spent
        return cls(
            generation.status, generation.id, generation.urls, credits, generation.error, generation.elapsed_s
        )

    @classmethod
    def from_entry(cls, entry: Entry) -> "Outcome":
        credits = 0 if entry.status == "failed" else entry.credits
        return cls(entry.status, entry.generation_id, entry.urls, credits, entry.error, entry.elapsed_s)


@dataclass
class Progress:
    """Counts a progress bar or a handle shows."""

    total: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    credits: int = 0
    reused: int = 0
    listeners: list[Callable[["Progress"], None]] = field(default_factory=list, repr=False)

    def changed(self) -> None:
        for listener in self.listeners:
            listener(self)


class Sweep:
    """One run of a plan on the background loop. ``cancel()`` stops starting and returns what is known."""

    def __init__(
        self,
        client: AsyncClient,
        model: Model,
        rows: list[Row],
        ledger: Ledger,
        *,
        prices: dict[int, int] | None = None,
        max_credits: int | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.rows = rows
        self.ledger = ledger
        self.prices = prices or {}
        self.max_credits = max_credits
        self.outcomes: dict[int, Outcome] = {}
        self.progress = Progress(total=len(rows))
        self._stop_reason: str | None = None
        self._committed = 0  # credits charged or about to be, for max_credits
        self._runtimes: dict[str, list[float]] = defaultdict(list)
        self._cancelled = asyncio.Event()

    def cancel(self, reason: str = "cancelled before it started") -> None:
        """Stop starting rows; finished rows and the ledger stay. Call on the sweep's loop."""
        self._stop_reason = self._stop_reason or reason
        self._cancelled.set()

    def _stop_starting(self, reason: str) -> None:
        """Start no more rows (money or the budget ran out); rows already started are still read."""
        self._stop_reason = self._stop_reason or reason

    async def run(self) -> dict[int, Outcome]:
        """Run every row; returns the outcome of each row by position."""
        valid = [row for row in self.rows if row.input is not None]
        for row in self.rows:
            if row.input is None:
                self._settle(row, Outcome("invalid", error=row.error))
        known = self.ledger.entries(row.key for row in valid if row.key)
        watchers: list[asyncio.Task[None]] = []
        pending: list[Row] = []
        for row in valid:
            entry = known.get(row.key or "")
            if entry is not None and entry.final:
                self.progress.reused += 1
                self._committed += entry.credits if entry.status == "succeeded" else 0
                self._settle(row, Outcome.from_entry(entry))
            elif entry is not None and entry.generation_id:
                self._committed += entry.credits
                watchers.append(asyncio.create_task(self._watch(row, entry.generation_id, time.monotonic())))
            else:
                pending.append(row)
        starter = asyncio.create_task(self._start_all(pending, watchers))
        cancelled = asyncio.create_task(self._cancelled.wait())
        await asyncio.wait([starter, cancelled], return_when=asyncio.FIRST_COMPLETED)
        if self._cancelled.is_set():
            starter.cancel()
        await asyncio.gather(starter, return_exceptions=True)
        if self._cancelled.is_set():
            for task in watchers:
                task.cancel()
        else:
            await asyncio.gather(*watchers, return_exceptions=True)
            cancelled.cancel()
        await asyncio.gather(*watchers, cancelled, return_exceptions=True)
        for row in valid:
            if row.position not in self.outcomes:
                self.outcomes[row.position] = Outcome("skipped", error=self._stop_reason)
        return self.outcomes

    def _settle(self, row: Row, outcome: Outcome) -> None:
        self.outcomes[row.position] = outcome
        if outcome.status == "succeeded":
            self.progress.done += 1
            self.progress.credits += outcome.credits
        elif outcome.status in ("failed", "invalid", "error"):
            self.progress.failed += 1
        self.progress.changed()

    async def _start_all(self, pending: list[Row], watchers: list[asyncio.Task[None]]) -> None:
        gate = asyncio.Semaphore(STARTS_IN_FLIGHT)

        async def start(row: Row) -> None:
            async with gate:
                if self._stop_reason is not None:
                    return
                price = self.prices.get(row.position, 0)
                if self.max_credits is not None and self._committed + price > self.max_credits:
                    self._stop_starting(f"not started: max_credits={self.max_credits} would be exceeded")
                    return
                self._committed += price
                try:
                    generation = await self.client.run(
                        self.model.id, row.input or {}, idempotency_key=row.key, validate=False
                    )
                except (InsufficientCreditsError, KeyCapReachedError) as exc:
                    self._committed -= price
                    self._stop_starting(f"not started: {exc.message}")
                    self._settle(row, Outcome("error", error=exc.message))
                    return
                except MediagenError as exc:
                    self._committed -= price
                    self._settle(row, Outcome("error", error=str(exc)))
                    return
            self.ledger.started(row.key or "", self.client.base_url, row.input or {}, generation)
            self._committed += generation.credits_spent - price
            watchers.append(asyncio.create_task(self._watch(row, generation.id, time.monotonic())))

        await asyncio.gather(*(start(row) for row in pending))

    def _first_read_delay(self) -> float:
        """Real seconds to wait before the first read: the model's usual run time less half a wait."""
        seen = self._runtimes[self.model.id]
        if not seen:
            return 0.0
        delay = statistics.median(seen) - limits.WAIT_MAX_SECONDS / 2
        return max(0.0, self.client.settings.limits.real(delay))

    async def _watch(self, row: Row, generation_id: str, started: float) -> None:
        """Hold one long-poll at a time on the generation until it ends."""
        self.progress.running += 1
        self.progress.changed()
        try:
            delay = self._first_read_delay()
            if delay:
                await asyncio.sleep(delay)
            generation = await self.client.wait(generation_id)
        except MediagenError as exc:
            self._settle(row, Outcome("error", generation_id, error=f"reading failed: {exc}"))
            return
        except asyncio.CancelledError:
            self.outcomes[row.position] = Outcome(
                "processing", generation_id, error="not read yet; re-run to resume"
            )
            raise
        finally:
            self.progress.running -= 1
        elapsed = time.monotonic() - started
        generation = replace(generation, elapsed_s=round(elapsed, 3))
        if generation.status == "succeeded":
            self._runtimes[self.model.id].append(elapsed * self.client.settings.limits.time_scale)
        else:
            self._committed -= generation.credits_spent  # failed runs are refunded
        self.ledger.finished(row.key or "", generation)
        self._settle(row, Outcome.of(generation))


def outcome_fields(outcome: Outcome) -> dict[str, Any]:
    """The result columns of one row (without prefix)."""
    return {
        "generation_id": outcome.generation_id,
        "status": outcome.status,
        "output_url": outcome.urls[0] if outcome.urls else None,
        "output_urls": list(outcome.urls),
        "credits": outcome.credits,
        "error": outcome.error,
        "elapsed_s": outcome.elapsed_s,
    }
