"""Simulated time: one clock whose scale speeds up run times, waits, limits and the rate-limit window."""

import asyncio
import time
from datetime import datetime, timezone


class Clock:
    """Simulated wall time running ``scale`` times faster than real time (60 = a minute per second)."""

    def __init__(self, scale: float = 1.0) -> None:
        if scale <= 0:
            raise ValueError("time scale must be positive")
        self.scale = scale
        self._real0 = time.monotonic()
        self._sim0 = time.time()
        self._skipped = 0.0

    def advance(self, sim_seconds: float) -> None:
        """Jump simulated time forward (tests of window edges, month boundaries, expiries)."""
        if sim_seconds < 0:
            raise ValueError("the clock only moves forward")
        self._skipped += sim_seconds

    def now(self) -> float:
        """Simulated Unix time in seconds."""
        return self._sim0 + self._skipped + (time.monotonic() - self._real0) * self.scale

    def real(self, sim_seconds: float) -> float:
        """Real seconds that ``sim_seconds`` of simulated time take."""
        return max(0.0, sim_seconds) / self.scale

    async def sleep(self, sim_seconds: float) -> None:
        await asyncio.sleep(self.real(sim_seconds))

    def iso(self, at: float | None = None) -> str:
        """ISO 8601 (UTC, milliseconds) of simulated time ``at`` (default now)."""
        moment = datetime.fromtimestamp(self.now() if at is None else at, tz=timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def month(self, at: float | None = None) -> str:
        """Calendar month ``YYYY-MM`` of simulated time, for monthly key caps."""
        return datetime.fromtimestamp(self.now() if at is None else at, tz=timezone.utc).strftime("%Y-%m")
