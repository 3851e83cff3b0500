"""The spec's retry strategy as a policy object.

429: wait about a window (60 s; no Retry-After exists). 500, 503 and broken connections:
exponential backoff from about 5 s with jitter. 400, 401, 403, 404: never retried unchanged.
Every retry of a start reuses its Idempotency-Key (the engine guarantees one exists).
"""

import random
from dataclasses import dataclass

from mediagen_nb.client.errors import MediagenError, RateLimitError


@dataclass(frozen=True)
class RetryPolicy:
    """When to try again and after how many service seconds."""

    max_attempts: int = 6  # tries in all, the first included
    backoff: float = 5.0  # first wait after a 500/503/connection failure, service seconds
    max_backoff: float = 120.0
    rate_limit_wait: float = 60.0  # after a 429
    jitter: float = 0.25  # +- this fraction of each wait, so many clients do not retry in step

    def delay(self, error: MediagenError, attempt: int, rng: random.Random | None = None) -> float | None:
        """Service seconds to wait before try ``attempt + 2``, or None to give up and raise."""
        if not error.retryable or attempt + 1 >= self.max_attempts:
            return None
        base = self.rate_limit_wait if isinstance(error, RateLimitError) else self.backoff * 2**attempt
        base = min(base, self.max_backoff)
        spread = (rng or random).uniform(-self.jitter, self.jitter)
        return max(0.0, base * (1 + spread))


NO_RETRY = RetryPolicy(max_attempts=1)
