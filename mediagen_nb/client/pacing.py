"""Client-side pacing that makes 429s from our own load impossible, for every process of an account.

A rolling window of timestamps: a request may go at time ``t`` only if the request ``limit`` places
before it reached the service at least a window earlier. That is the spec's rule and all of it: a
window with room takes a burst at once (an estimate's three price classes, a form's price), and
requests are spread only as it fills (``burst=1`` asks for an even stream instead). The windows
live in a store shared by every process that uses the key or account
(:mod:`mediagen_nb.client.limits_store`: a file on this machine by default, Redis across machines).
Windows are kept in real seconds: the client's clock (:class:`~mediagen_nb.client.timing.ServiceClock`,
the one place the service's seconds meet the machine's) says how long the service's 60 s take, plus a
margin for the spread of request latency, measured as requests go (:class:`Latency`), so a loaded
machine gets no 429s and an idle one loses no throughput.
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
    """The service's limits as the client paces itself, in the service's seconds.

    ``burst`` is how many requests may go at once into a window with room (default: the whole limit,
    as the spec allows; 1 spaces every request window/limit apart);
    ``margin`` fixes the real seconds added to each window (default: measured, see :class:`Latency`);
    ``url`` says where windows are shared (default: ``MEDIAGEN_LIMITS_URL``, else a file on this
    machine; ``redis://host:6379/0`` across machines; ``memory`` for this process alone).
    """

    requests_per_key: int = spec_limits.REQUESTS_PER_KEY
    starts_per_account: int = spec_limits.STARTS_PER_ACCOUNT
    window: float = spec_limits.WINDOW_SECONDS  # service seconds
    margin: float | None = None
    url: str | None = None
    burst: int | None = None

    def __post_init__(self) -> None:
        if not 0 < self.window < math.inf:
            raise ValueError("Limits: window must be a positive and finite number of service seconds")
        if self.margin is not None and not 0 <= self.margin < math.inf:
            raise ValueError("Limits: margin must be a finite number of real seconds, 0 or more")
        if self.requests_per_key < 1 or self.starts_per_account < 1:
            raise ValueError("Limits: requests_per_key and starts_per_account must be at least 1")
        if self.burst is not None and self.burst < 1:
            raise ValueError("Limits: burst must be at least 1 (1: an even stream)")

    def burst_of(self, limit: int) -> int:
        """How many of a window of ``limit`` may go at once."""
        return limit if self.burst is None else min(self.burst, limit)

    def margin_for(self, window: float) -> float:
        """The margin before latency is measured, for a window of ``window`` real seconds (what the client's
        clock says the service's window takes): 5% of it, 0.1 s to 1 s (or the one given)."""
        if self.margin is not None:
            return self.margin
        return min(ADAPTIVE_CAP, max(MIN_MARGIN, 0.05 * window))

    def pause(self, window: float) -> float:
        """How long a 429's pause lasts: a window of ``window`` real seconds and its margin."""
        return window + self.margin_for(window)


class Latency:
    """The spread of recent request latency, which sets the margin of every window.

    A request is counted by the service when it arrives, which is its slot plus how late it was sent
    (a busy machine wakes late) plus its way there; two requests a window apart must arrive a window
    apart, so the margin covers the spread of that delay: twice the 95th percentile of recent
    (lateness + round trip), between 20 ms and 1 s.
    """

    def __init__(self, limits: Limits, window: float) -> None:
        self.limits = limits
        self.default = limits.margin_for(window)  # ``window``: the service's window in real seconds
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
            return self.default
        p95 = statistics.quantiles(samples, n=20, method="inclusive")[-1]
        return min(ADAPTIVE_CAP, max(ADAPTIVE_FLOOR, 2 * p95))
