"""Makespan of a 600-row sweep: ``df.mediagen.run`` (1 key, and a pool of 2 keys) against hand-written loops.

Every contender runs in the same process against the same time-scaled sandbox, reset before each
one so the rolling windows start empty. The model is a cheap, fast image model with flat pricing,
so the makespan is set by the limits: every job needs at least one start and one read, so at most
min(60, 30 x keys) jobs a minute, and the lower bound is rows / that rate plus one run time of the
last job. Efficiency is bound / makespan (it can pass 1 on short sweeps: the service's rolling
window starts empty, so the first 60 requests need not wait). The baselines are what a user writes
by hand with one key: a sequential run-and-poll loop, and a thread pool with naive retries (sleep
1 s on a 429 or 5xx); both poll every 2 s. With ``--baseline-rows`` below ``--rows`` the baselines
run fewer rows and their makespan is extrapolated from their throughput (marked ``*``).
Target: our efficiency >= 0.9 with zero 429s, and faster than both baselines.

    .venv/bin/python benchmarks/sweep.py [--rows 600] [--baseline-rows 600] [--time-scale 60] [--workers 16]
"""

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pandas as pd

import mediagen_nb.batch.accessor  # noqa: F401  (registers df.mediagen)
from mediagen_nb import Sandbox
from mediagen_nb.batch import loop
from mediagen_nb.client import AsyncClient, Limits
from mediagen_nb.client.clients import POOL
from mediagen_nb.client.timing import ServiceClock
from mediagen_nb.protocol import limits as spec_limits
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime.clock import REAL
from mediagen_nb.sandbox.catalog import BY_ID

MODEL = "flare-1-swift"  # flat price (pricing null), about 5 s a run
POLL_SECONDS = 2.0  # the baselines poll every 2 simulated seconds
RETRY_SECONDS = 1.0  # ... and retry a 429 or 5xx after 1 simulated second
BALANCE = 10_000_000
TARGET_EFFICIENCY = 0.9


class Counter:
    """Authenticated requests (catalog reads excluded) and 429s seen; safe to call from threads."""

    def __init__(self) -> None:
        self.requests = self.rate_limited = 0
        self._lock = threading.Lock()

    def on_request(self, request: httpx.Request) -> None:
        if "authorization" in request.headers:
            with self._lock:
                self.requests += 1

    def on_response(self, response: httpx.Response) -> None:
        if response.status_code == 429:
            with self._lock:
                self.rate_limited += 1

    async def on_request_async(self, request: httpx.Request) -> None:
        self.on_request(request)

    async def on_response_async(self, response: httpx.Response) -> None:
        self.on_response(response)


@dataclass
class Result:
    """One contender's measured run."""

    name: str
    keys: int
    rows: int  # rows actually run
    real_s: float  # wall-clock seconds of the run
    succeeded: int
    counter: Counter
    runtimes: list[float]  # simulated run time of each generation

    def makespan(self, scale: float, rows: int) -> float:
        """Simulated seconds for ``rows`` rows (extrapolated by throughput when fewer were run)."""
        return self.real_s * scale * rows / self.rows


def pause_after_429(scale: float) -> float:
    """Real seconds a window of our limiters lasts, with its margin, for a sandbox at ``scale``."""
    return Limits().pause(ServiceClock(REAL, scale).real(spec_limits.WINDOW_SECONDS))


def lower_bound(rows: int, keys: int) -> float:
    """Simulated seconds no client can beat: rows at min(60, 30 x keys) jobs a minute, plus one run."""
    per_minute = min(spec_limits.STARTS_PER_ACCOUNT, spec_limits.REQUESTS_PER_KEY * keys / 2)
    return rows / per_minute * 60 + BY_ID[MODEL].runtime_s


def prepare(sandbox: Sandbox, keys: int) -> list[str]:
    """Reset the sandbox (empty windows, big balance) and return ``keys`` keys of the demo account."""
    assert sandbox.base_url is not None
    with httpx.Client(base_url=sandbox.base_url) as http:
        http.post(path("sandbox_reset")).raise_for_status()
        http.post(path("sandbox_account"), json={"balance": BALANCE}).raise_for_status()
        extra = [http.post(path("sandbox_keys"), json={}).json()["data"]["key"] for _ in range(keys - 1)]
    # Our limiters are process-wide: let one window of the previous contender's requests expire.
    time.sleep(pause_after_429(sandbox.config.time_scale))
    return [sandbox.demo_key, *extra]


def runtimes(sandbox: Sandbox) -> tuple[int, list[float]]:
    """Succeeded generations and the simulated run time of each, as the sandbox drew them."""
    items = sandbox.world.generations.items.values()
    done = [g for g in items if g.status == "succeeded"]
    return len(done), [g.finish_at - g.created_at for g in items]


def ours(sandbox: Sandbox, rows: int, keys: int) -> Result:
    """``df.mediagen.run`` with an AsyncClient for the sandbox (a pool when ``keys`` > 1)."""
    secrets = prepare(sandbox, keys)
    counter = Counter()
    hooks = {"request": [counter.on_request_async], "response": [counter.on_response_async]}
    http = httpx.AsyncClient(event_hooks=hooks, limits=POOL, follow_redirects=True)
    scale = sandbox.config.time_scale
    client = AsyncClient(secrets, base_url=sandbox.base_url, time_scale=scale, http_client=http)
    frame = pd.DataFrame({"prompt": [f"sweep row {i}" for i in range(rows)]})
    with tempfile.TemporaryDirectory() as tmp:
        began = time.monotonic()
        out = frame.mediagen.run(MODEL, client=client, ledger=Path(tmp) / "ledger.sqlite", progress=False)
        real = time.monotonic() - began
    loop.submit(http.aclose()).result()
    succeeded, times = runtimes(sandbox)
    assert (out["status"] == "succeeded").sum() == succeeded, out["status"].value_counts()
    return Result(
        f"df.mediagen.run, {keys} key{'s' if keys > 1 else ''}", keys, rows, real, succeeded, counter, times
    )


def _naive_job(http: httpx.Client, i: int, scale: float, sleep: Callable[[float], None]) -> None:
    """Start one row, then GET every 2 s until it ends; a 429 or 5xx is retried after 1 s."""
    body = {"modelId": MODEL, "input": {"prompt": f"sweep row {i}"}}
    while (response := http.post(path("run"), json=body)).status_code == 429 or response.status_code >= 500:
        sleep(RETRY_SECONDS / scale)
    gen_id = response.raise_for_status().json()["data"]["id"]
    while True:
        response = http.get(path("generation", id=gen_id))
        if response.status_code == 429 or response.status_code >= 500:
            sleep(RETRY_SECONDS / scale)
            continue
        if response.raise_for_status().json()["data"]["status"] != "processing":
            return
        sleep(POLL_SECONDS / scale)


def baseline(sandbox: Sandbox, rows: int, workers: int) -> Result:
    """The hand-written loop with one key: sequential (``workers`` = 1) or a thread pool."""
    (key,) = prepare(sandbox, 1)
    counter = Counter()
    hooks = {"request": [counter.on_request], "response": [counter.on_response]}
    scale = sandbox.config.time_scale
    with httpx.Client(
        base_url=sandbox.base_url or "",
        headers={"Authorization": f"Bearer {key}"},
        event_hooks=hooks,
        limits=httpx.Limits(max_connections=workers + 4, max_keepalive_connections=workers + 4),
        timeout=60,
    ) as http:
        began = time.monotonic()
        if workers == 1:
            for i in range(rows):
                _naive_job(http, i, scale, time.sleep)
        else:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(lambda i: _naive_job(http, i, scale, time.sleep), range(rows)))
        real = time.monotonic() - began
    succeeded, times = runtimes(sandbox)
    name = "sequential run-and-poll" if workers == 1 else f"thread pool ({workers}), naive retries"
    return Result(name, 1, rows, real, succeeded, counter, times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=600, help="rows of the sweep")
    parser.add_argument(
        "--baseline-rows",
        type=int,
        default=None,
        help="rows the baselines run (default: --rows); fewer are extrapolated to --rows by throughput",
    )
    parser.add_argument("--time-scale", type=float, default=60.0, help="simulated seconds per real second")
    parser.add_argument("--workers", type=int, default=16, help="threads of the thread-pool baseline")
    args = parser.parse_args()
    rows, scale = args.rows, args.time_scale
    base_rows = min(args.baseline_rows or rows, rows)
    with Sandbox(time_scale=scale, seed=7) as sandbox:
        results = [
            ours(sandbox, rows, 1),
            ours(sandbox, rows, 2),
            baseline(sandbox, base_rows, 1),
            baseline(sandbox, base_rows, args.workers),
        ]
    all_times = [t for r in results for t in r.runtimes]
    window = pause_after_429(scale)
    print(
        f"sweep of {rows} rows of {MODEL} (catalog run time {BY_ID[MODEL].runtime_s:g} s, "
        f"measured median {statistics.median(all_times):.2f} s), time x{scale:g}; times in simulated s"
    )
    print(
        f"our limiter's window: {spec_limits.WINDOW_SECONDS / scale:.2f} s real plus a margin that follows "
        f"the measured latency ({window - spec_limits.WINDOW_SECONDS / scale:.2f} s until it is measured)"
    )
    print(
        f"{'contender':<36} {'keys':>4} {'rows':>5} {'makespan':>9} {'real':>7} {'bound':>7} "
        f"{'effic.':>6} {'req/gen':>7} {'429s':>6} {'ok':>5}"
    )
    for r in results:
        mark = "*" if r.rows < rows else " "
        bound = lower_bound(rows, r.keys)
        makespan, real = r.makespan(scale, rows), r.real_s * rows / r.rows
        print(
            f"{r.name:<36} {r.keys:>4} {r.rows:>5} {makespan:>8.0f}{mark} {real:>6.1f}{mark} "
            f"{bound:>7.0f} {bound / makespan:>6.2f} {r.counter.requests / max(1, r.succeeded):>7.2f} "
            f"{r.counter.rate_limited:>6} {r.succeeded:>5}"
        )
    if base_rows < rows:
        print(f"* baselines ran {base_rows} rows; makespan extrapolated to {rows} rows by their throughput")
    mine, baselines = results[:2], results[2:]
    fastest_baseline = min(b.makespan(scale, rows) for b in baselines)
    misses = []
    for r in mine:
        efficiency = lower_bound(rows, r.keys) / r.makespan(scale, rows)
        if efficiency < TARGET_EFFICIENCY:
            misses.append(f"{r.name}: efficiency {efficiency:.2f}")
        if r.counter.rate_limited:
            misses.append(f"{r.name}: {r.counter.rate_limited} 429s")
        if r.succeeded != rows:
            misses.append(f"{r.name}: {rows - r.succeeded} rows not succeeded")
        if r.makespan(scale, rows) >= fastest_baseline:
            misses.append(f"{r.name}: not faster than the fastest baseline")
    verdict = "met" if not misses else "MISSED (" + "; ".join(misses) + ")"
    speedups = ", ".join(f"{r.keys} key(s) {fastest_baseline / r.makespan(scale, rows):.1f}x" for r in mine)
    print(
        f"target (efficiency >= {TARGET_EFFICIENCY} with zero 429s, faster than both baselines): {verdict}; "
        f"fastest baseline / ours: {speedups}"
    )


if __name__ == "__main__":
    main()
