"""Client-side pacing that makes 429s from our own load impossible, for every process of an account.

A rolling window of timestamps: a request may go at time ``t`` only if the request ``limit`` places
before it reached the service at least a window earlier. That is the spec's rule and all of it: a
window with room takes a burst at once (an estimate's three price classes, a form's price), and
requests are spread only as it fills (``burst=1`` asks for an even stream instead). The windows
live in a store shared by every process that uses the key or account
(:mod:`mediagen_nb.client.limits_store`: a file on this machine by default, Redis across machines).
Windows are real seconds: the service's 60 s divided by the time scale (for a time-scaled sandbox),
plus a margin for the spread of request latency, measured as requests go (:class:`Latency`), so a
loaded machine gets no 429s and an idle one loses no throughput.
"""

import math
import statistics
import threading
from collections import deque
from dataclasses import dataclass

from mediagen_nb.protocol import limits as spec_limits

# Network latency is real time: it does not shrink with a time-scaled sandbox, so margins never do.
MIN_MARGIN = 0.1  # real seconds before any latency is measured; evenly spaced requests arrive within ms
ADAPTIVE_FLOOR = 0.02  # real seconds: the least margin, however steady the latency
ADAPTIVE_CAP = 1.0  # real seconds: the most margin, however loaded the machine
SAMPLES = 64  # recent requests the margin is measured over
MIN_SAMPLES = 8  # requests measured before the margin follows them


@dataclass(frozen=True)
class Limits:
    """The service's limits as the client paces itself; ``time_scale`` matches a time-scaled sandbox.

    ``burst`` is how many requests may go at once into a window with room (default: the whole limit,
    as the spec allows; 1 spaces every request window/limit apart);
    ``margin`` fixes the real seconds added to each window (default: measured, see :class:`Latency`);
    ``url`` says where windows are shared (default: ``MEDIAGEN_LIMITS_URL``, else a file on this
    machine; ``redis://host:6379/0`` across machines; ``memory`` for this process alone).
    """

    requests_per_key: int = spec_limits.REQUESTS_PER_KEY
    starts_per_account: int = spec_limits.STARTS_PER_ACCOUNT
    window: float = spec_limits.WINDOW_SECONDS  # service seconds
    time_scale: float = 1.0  # service seconds per real second
    margin: float | None = None
    url: str | None = None
    burst: int | None = None

    def __post_init__(self) -> None:
        if not (0 < self.time_scale < math.inf and 0 < self.window < math.inf):
            raise ValueError("Limits: time_scale and window must be positive and finite")
        if self.margin is not None and not 0 <= self.margin < math.inf:
            raise ValueError("Limits: margin must be a finite number of real seconds, 0 or more")
        if self.requests_per_key < 1 or self.starts_per_account < 1:
            raise ValueError("Limits: requests_per_key and starts_per_account must be at least 1")
        if self.burst is not None and self.burst < 1:
            raise ValueError("Limits: burst must be at least 1 (1: an even stream)")

    def burst_of(self, limit: int) -> int:
        """How many of a window of ``limit`` may go at once."""
        return limit if self.burst is None else min(self.burst, limit)

    def real(self, service_seconds: float) -> float:
        """Real seconds that ``service_seconds`` of service time take."""
        return service_seconds / self.time_scale

    @property
    def default_margin(self) -> float:
        """The margin before latency is measured: 5% of the window, 0.1 s to 1 s (or the one given)."""
        if self.margin is not None:
            return self.margin
        return min(ADAPTIVE_CAP, max(MIN_MARGIN, 0.05 * self.real(self.window)))

    @property
    def real_window(self) -> float:
        """A window in real seconds with the default margin: how long a 429's pause lasts."""
        return self.real(self.window) + self.default_margin


class Latency:
    """The spread of recent request latency, which sets the margin of every window.

    A request is counted by the service when it arrives, which is its slot plus how late it was sent
    (a busy machine wakes late) plus its way there; two requests a window apart must arrive a window
    apart, so the margin covers the spread of that delay: twice the 95th percentile of recent
    (lateness + round trip), between 20 ms and 1 s.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._samples: deque[float] = deque(maxlen=SAMPLES)
        self._lock = threading.Lock()

    def record(self, seconds: float) -> None:
        """One request's lateness plus round trip, in real seconds."""
        with self._lock:
            self._samples.append(max(0.0, seconds))

    def margin(self) -> float:
        """Real seconds to add to each window now."""
        if self.limits.margin is not None:
            return self.limits.margin
        with self._lock:
            samples = list(self._samples)
        if len(samples) < MIN_SAMPLES:
            return self.limits.default_margin
        p95 = statistics.quantiles(samples, n=20, method="inclusive")[-1]
        return min(ADAPTIVE_CAP, max(ADAPTIVE_FLOOR, 2 * p95))
