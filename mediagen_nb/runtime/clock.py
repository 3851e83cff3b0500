"""Time as a dependency: the one :class:`Clock` the sandbox, the clients and the scheduler read and wait on.

``REAL`` is the wall clock (what clients use unless given another). The sandbox runs on a
:class:`SimulatedClock`: a :class:`ScaledClock` (real time times a scale, with jumps forward) or a
:class:`ManualClock` (virtual time that moves only when :meth:`ManualClock.advance` is called). Both keep
timers in simulated time and fire them in time order, on the event loop that armed them, as time passes
them, however it passes (a jump too). Cross-process rate-limit windows stay on real wall time
(``client/limits_store.py``): other processes share them.
"""

import asyncio
import concurrent.futures
import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Protocol

MAX_SKIP_SECONDS = 100 * 365 * 86400  # a century: far past any month end or time limit, far from overflow
TOLERANCE = 1e-6  # simulated seconds: a timer this close to where an advance stops fires (sums of floats)
HOP_TIMEOUT = 30.0  # real seconds an advance from another thread waits for the clock's event loop


class Clock(Protocol):
    """What reads time and waits: ``now`` (Unix seconds), ``monotonic`` (for deadlines), ``sleep`` (this
    thread) and ``wait`` (this task)."""

    def now(self) -> float: ...

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...

    async def wait(self, seconds: float) -> None: ...


class RealClock:
    """The wall clock: real time and real sleeps."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))

    async def wait(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


REAL = RealClock()


@dataclass(eq=False)
class Timer:
    """A callback due at a simulated moment; :meth:`cancel` keeps it from firing."""

    due: float
    callback: Callable[[], object] = field(repr=False)
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class SimulatedClock:
    """Simulated time with timers fired in time order; subclasses say how time moves (``now``, ``_arm``)."""

    scale = 1.0  # simulated seconds per real second while nothing jumps

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._skipped = 0.0

    def now(self) -> float:
        """Simulated Unix time in seconds."""
        raise NotImplementedError

    def _arm(self) -> None:
        """A timer was added: arrange for the earliest one to fire when it is due (on the loop thread)."""

    def advance(self, sim_seconds: float) -> None:
        """Move simulated time forward by ``sim_seconds``, firing the timers it passes."""
        raise NotImplementedError

    def resume(self, saved: dict[str, float]) -> None:
        """Go on from a moment saved by :meth:`to_dict`."""
        raise NotImplementedError

    def monotonic(self) -> float:
        return self.now()

    def sleep(self, seconds: float) -> None:
        """Block this thread until ``seconds`` of simulated time have passed."""
        if seconds <= 0:
            return
        woken = threading.Event()
        self._add(seconds, woken.set)
        woken.wait()

    async def wait(self, seconds: float) -> None:
        """Wait ``seconds`` of simulated time in this task."""
        await self.hold(None, seconds)

    async def hold(self, event: asyncio.Event | None, seconds: float) -> bool:
        """Wait until ``event`` is set or ``seconds`` of simulated time have passed; whether it was set."""
        if (event is not None and event.is_set()) or seconds <= 0:
            return event is not None and event.is_set()
        woken = asyncio.get_running_loop().create_future()

        def wake(_: object = None) -> None:
            if not woken.done():
                woken.set_result(None)

        timer = self.call_later(seconds, wake)
        waiter = asyncio.ensure_future(event.wait()) if event is not None else None
        if waiter is not None:
            waiter.add_done_callback(wake)
        try:
            await woken
        finally:
            timer.cancel()
            if waiter is not None:
                waiter.cancel()
        return event is not None and event.is_set()

    def call_later(self, seconds: float, callback: Callable[[], object]) -> Timer:
        """Call ``callback`` on the running event loop once ``seconds`` of simulated time have passed."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop  # a sandbox served again runs on a new loop: its timers go on there
        return self._add(seconds, callback)

    def _add(self, seconds: float, callback: Callable[[], object]) -> Timer:
        timer = Timer(self.now() + max(0.0, seconds), callback)
        with self._lock:
            heapq.heappush(self._timers, (timer.due, next(self._order), timer))
        self._on_loop(self._arm)
        return timer

    def next_due(self) -> float | None:
        """When the earliest live timer is due (None: no timer)."""
        with self._lock:
            while self._timers and self._timers[0][2].cancelled:
                heapq.heappop(self._timers)
            return self._timers[0][0] if self._timers else None

    def pending(self) -> list[float]:
        """When each live timer is due, earliest first (what waits on this clock: runs, holds, sleeps)."""
        with self._lock:
            return sorted(due for due, _, timer in self._timers if not timer.cancelled)

    def _pop_due(self, until: float) -> Timer | None:
        with self._lock:
            due = self.next_due()
            if due is None or due > until:
                return None
            return heapq.heappop(self._timers)[2]

    def _fire(self, timer: Timer) -> None:
        """Run one timer's callback; one that raises is reported to the loop and stops no other."""
        try:
            timer.callback()
        except Exception as exc:
            if self._loop is None:
                raise
            self._loop.call_exception_handler({"message": "a clock timer failed", "exception": exc})

    def on_running_loop(self) -> bool:
        """Whether this clock's timers may be fired right here (on their loop, or no loop runs them)."""
        loop = self._loop
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        return loop is None or loop is current or loop.is_closed() or not loop.is_running()

    def _on_loop(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the loop thread of this clock's timers (here when that is this thread or there is
        no running loop), and return when it has run."""
        loop = self._loop
        if loop is None or self.on_running_loop():
            fn()
            return
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            try:
                fn()
                done.set_result(None)
            except BaseException as exc:  # handed to the waiting thread, which raises it
                done.set_exception(exc)

        loop.call_soon_threadsafe(run)
        done.result(HOP_TIMEOUT)

    def _take_skip(self, seconds: float) -> None:
        """Count a jump of ``seconds`` against the century the clock may move by jumps in all."""
        with self._lock:
            if not 0 <= seconds <= MAX_SKIP_SECONDS - self._skipped:
                raise ValueError(
                    f"the clock moves forward only, by at most {MAX_SKIP_SECONDS:,} seconds in all "
                    f"({MAX_SKIP_SECONDS - self._skipped:,.0f} left)"
                )
            self._skipped += seconds

    def to_dict(self) -> dict[str, float]:
        """Simulated time as saved state: where it stands and how far it was jumped."""
        return {"now": self.now(), "skipped": self._skipped}

    def iso(self, at: float | None = None) -> str:
        """ISO 8601 (UTC, milliseconds) of simulated time ``at`` (default now)."""
        moment = datetime.fromtimestamp(self.now() if at is None else at, tz=timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def month(self, at: float | None = None) -> str:
        """Calendar month ``YYYY-MM`` of simulated time, for monthly key caps."""
        return datetime.fromtimestamp(self.now() if at is None else at, tz=timezone.utc).strftime("%Y-%m")


class ScaledClock(SimulatedClock):
    """Simulated wall time running ``scale`` times faster than real time (60 = a minute per second);
    :meth:`advance` jumps it forward, and timers a jump passes fire at once, in time order."""

    kind = "scaled"

    def __init__(self, scale: float = 1.0) -> None:
        if not 0 < scale < math.inf:
            raise ValueError("time scale must be positive")
        super().__init__()
        self.scale = scale
        self._real0 = time.monotonic()
        self._sim0 = time.time()
        self._armed: asyncio.TimerHandle | None = None

    def now(self) -> float:
        return self._sim0 + self._skipped + (time.monotonic() - self._real0) * self.scale

    def real(self, sim_seconds: float) -> float:
        """Real seconds that ``sim_seconds`` of simulated time take."""
        return max(0.0, sim_seconds) / self.scale

    def sleep(self, seconds: float) -> None:
        time.sleep(self.real(seconds))

    def advance(self, sim_seconds: float) -> None:
        """Jump simulated time forward (tests of window edges, month boundaries, expiries), by at most a
        century in all, so the calendar never leaves the years dates can be written in."""
        self._take_skip(sim_seconds)
        self._on_loop(self._tick)

    def resume(self, saved: dict[str, float]) -> None:
        """Go on from a saved moment: simulated time resumes where it stopped (downtime does not pass)."""
        self._real0 = time.monotonic()
        self._skipped = saved["skipped"]
        self._sim0 = saved["now"] - self._skipped
        self._on_loop(self._arm)

    def _tick(self) -> None:
        """Fire what is due, in time order, then arm for the next timer."""
        while (timer := self._pop_due(self.now())) is not None:
            self._fire(timer)
        self._arm()

    def _arm(self) -> None:
        """One real-time call of the loop, when the earliest timer is due."""
        if self._armed is not None:
            self._armed.cancel()
            self._armed = None
        due = self.next_due()
        if due is not None and self._loop is not None and not self._loop.is_closed():
            self._armed = self._loop.call_later(self.real(due - self.now()), self._tick)


class ManualClock(SimulatedClock):
    """Virtual time: it stands still until :meth:`advance` moves it, firing the timers it passes in time
    order, each at its own moment. Advancing from another thread runs on the clock's event loop and
    returns once the timers have fired.

    ``jump_holds``: a task that waits on the clock (a long poll's hold, a slow answer, an agent's wait)
    moves it itself, timer by timer, until its event is set or its time is up; for a sandbox whose only
    mover is a client stepping it (:meth:`~mediagen_nb.sandbox.Sandbox.stepping_clock`).
    """

    kind = "manual"

    def __init__(self, start: float | None = None, *, jump_holds: bool = False) -> None:
        super().__init__()
        self._now = time.time() if start is None else start
        self.jump_holds = jump_holds

    def now(self) -> float:
        return self._now

    def advance(self, sim_seconds: float) -> None:
        """Move time forward by ``sim_seconds`` (a century at most in all), firing every timer it passes."""
        self._take_skip(sim_seconds)
        target = self._now + sim_seconds
        self._on_loop(lambda: self._run_to(target))

    def resume(self, saved: dict[str, float]) -> None:
        """Go on from a saved moment."""
        self._skipped = saved["skipped"]
        self._now = saved["now"]

    def _run_to(self, target: float) -> None:
        while (timer := self._pop_due(target + TOLERANCE)) is not None:
            self._now = max(self._now, timer.due)
            self._fire(timer)
        self._now = max(self._now, target)

    def _arm(self) -> None:
        """A timer due now (none of its time to pass) fires soon, as on any clock."""
        due = self.next_due()
        if due is not None and due <= self._now and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon(self._run_to, self._now)

    async def hold(self, event: asyncio.Event | None, seconds: float) -> bool:
        if not self.jump_holds or seconds <= 0:
            return await super().hold(event, seconds)
        end = self._now + max(0.0, seconds)
        while not (event is not None and event.is_set()) and self._now < end:
            step = min(self.next_due() or math.inf, end)
            self._take_skip(max(0.0, step - self._now))
            self._run_to(step)
            await asyncio.sleep(0)  # let what the timers woke run before looking again
        return event is not None and event.is_set()


class SteppingClock:
    """A client's clock that moves a manual clock: each sleep or wait of ``s`` advances it by ``s``, so a
    client's pauses (retry backoff, polls, pacing) on a manual sandbox are instant and exact. Made by
    :meth:`~mediagen_nb.sandbox.Sandbox.stepping_clock`, which also lets the sandbox's holds move it."""

    def __init__(self, manual: ManualClock) -> None:
        self.manual = manual

    def now(self) -> float:
        return self.manual.now()

    def monotonic(self) -> float:
        return self.manual.now()

    def sleep(self, seconds: float) -> None:
        self.manual.advance(max(0.0, seconds))

    async def wait(self, seconds: float) -> None:
        if self.manual.on_running_loop():
            self.manual.advance(max(0.0, seconds))
        else:  # the sandbox's loop runs in another thread: let this loop go on while it advances
            await asyncio.to_thread(self.manual.advance, max(0.0, seconds))
