"""Simulated time: one clock whose scale speeds up run times, waits, limits and the rate-limit window."""

import asyncio
import time
from datetime import datetime, timezone

MAX_SKIP_SECONDS = 100 * 365 * 86400  # a century: far past any month end or time limit, far from overflow


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
        """Jump simulated time forward (tests of window edges, month boundaries, expiries), by at most
        a century in all, so the calendar never leaves the years dates can be written in."""
        if not 0 <= sim_seconds <= MAX_SKIP_SECONDS - self._skipped:
            raise ValueError(
                f"the clock moves forward only, by at most {MAX_SKIP_SECONDS:,} seconds in all "
                f"({MAX_SKIP_SECONDS - self._skipped:,.0f} left)"
            )
        self._skipped += sim_seconds

    def to_dict(self) -> dict[str, float]:
        """Simulated time as saved state: where it stands and how far it was jumped."""
        return {"now": self.now(), "skipped": self._skipped}

    def resume(self, saved: dict[str, float]) -> None:
        """Go on from a saved moment: simulated time resumes where it stopped (downtime does not pass)."""
        self._real0 = time.monotonic()
        self._skipped = saved["skipped"]
        self._sim0 = saved["now"] - self._skipped

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
