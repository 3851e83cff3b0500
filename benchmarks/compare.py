"""Comparing models in one sweep: 2 image models and 1 video model over 120 rows, and an estimate of
10,000 rows x 3 models.

**Run.** Every row on ``gpt-image-2`` (quality low, runs of about 30 s), ``flare-1-swift`` (about 5 s)
and ``wavi-2-2-fast-t2v`` (480p, about 60 s), in one ``df.mediagen.run([...])``, on the sandbox at x10,
with 1 key and with 2 keys of the account. Against two baselines measured in the same run with the
same keys, the sandbox reset before each: what users wrote before (a loop over the models, one
``df.mediagen.run`` each, then ``pd.concat``) and the three sweeps submitted at once. The bound is what
the limits allow: every generation is a start and at least one read, so at most min(60, 30 x keys)
generations a minute, and the last start still has to run; no schedule ends before
``generations / rate + the fastest model's run time``. "of bound" is bound / makespan; "images done"
and "video done" are when each kind's last row ended (simulated seconds from the call).

**Estimate.** 10,000 rows x 3 models (quality in 3 values, resolution in 2: 6 price classes) in one
``df.mediagen.estimate([...])``: its estimate requests against the price classes, and its time against a
baseline measured in the same run (the loop of three estimates); per-row estimates would be 30,000
requests (500 minutes at 60 a minute: counted, not run). Times are the median of ``--estimate-runs``.

Targets: of bound >= 0.9, zero 429s and 2.00 requests per generation for each key count; estimate
requests <= price classes.

    .venv/bin/python benchmarks/compare.py [--rows 120] [--time-scale 10] [--keys 1 2] [--estimate-rows 10000]
        [--estimate-runs 3]
"""

import argparse
import statistics
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pandas as pd

import mediagen_nb.batch.accessor  # noqa: F401  (registers df.mediagen)
from mediagen_nb import Sandbox
from mediagen_nb.batch import loop
from mediagen_nb.batch.plan import MappingWarning
from mediagen_nb.client import AsyncClient, Limits
from mediagen_nb.client.clients import POOL
from mediagen_nb.client.timing import ServiceClock
from mediagen_nb.protocol import limits as spec_limits
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime.clock import REAL
from mediagen_nb.sandbox.catalog import BY_ID

MODELS = ["gpt-image-2", "flare-1-swift", "wavi-2-2-fast-t2v"]
VIDEO = "wavi-2-2-fast-t2v"
CONSTANTS = {"gpt-image-2": {"quality": "low"}, "flare-1-swift": {}, VIDEO: {"resolution": "480p"}}
BALANCE = 10_000_000
TARGET_OF_BOUND = 0.9
TARGET_REQUESTS = 2.0


class Counter:
    """Authenticated requests (catalog reads excluded), estimate requests and 429s; thread-safe."""

    def __init__(self) -> None:
        self.requests = self.estimates = self.rate_limited = 0
        self._lock = threading.Lock()

    async def on_request(self, request: httpx.Request) -> None:
        if "authorization" in request.headers:
            with self._lock:
                self.requests += 1
                self.estimates += request.url.path == path("estimate")

    async def on_response(self, response: httpx.Response) -> None:
        if response.status_code == 429:
            with self._lock:
                self.rate_limited += 1


@dataclass
class Result:
    """One contender's measured run."""

    name: str
    keys: int
    real_s: float
    succeeded: int
    counter: Counter
    ended: dict[str, float] = field(default_factory=dict)  # model -> real seconds when its last row ended


def pause_after_429(scale: float) -> float:
    """Real seconds a window of our limiters lasts, with its margin, for a sandbox at ``scale``."""
    return Limits().pause(ServiceClock(REAL, scale).real(spec_limits.WINDOW_SECONDS))


def bound(generations: int, keys: int) -> float:
    """Simulated seconds no schedule can beat: the starts at the limits' pace, then the fastest run."""
    per_minute = min(spec_limits.STARTS_PER_ACCOUNT, spec_limits.REQUESTS_PER_KEY * keys / 2)
    return generations / per_minute * spec_limits.WINDOW_SECONDS + min(BY_ID[m].runtime_s for m in MODELS)


def prepare(sandbox: Sandbox, keys: int) -> list[str]:
    """Reset the sandbox (empty windows, a big balance) and return ``keys`` keys of the demo account."""
    assert sandbox.base_url is not None
    with httpx.Client(base_url=sandbox.base_url) as http:
        http.post(path("sandbox_reset")).raise_for_status()
        http.post(path("sandbox_account"), json={"balance": BALANCE}).raise_for_status()
        extra = [http.post(path("sandbox_keys"), json={}).json()["data"]["key"] for _ in range(keys - 1)]
    # Our limiters are process-wide: let one window of the previous contender's requests expire.
    time.sleep(pause_after_429(sandbox.config.time_scale))
    return [sandbox.demo_key, *extra]


def client_for(
    sandbox: Sandbox, secrets: list[str], counter: Counter
) -> tuple[AsyncClient, httpx.AsyncClient]:
    hooks = {"request": [counter.on_request], "response": [counter.on_response]}
    http = httpx.AsyncClient(event_hooks=hooks, limits=POOL, follow_redirects=True)
    scale = sandbox.config.time_scale
    return AsyncClient(secrets, base_url=sandbox.base_url, time_scale=scale, http_client=http), http


def succeeded(sandbox: Sandbox) -> int:
    return sum(1 for g in sandbox.world.generations.items.values() if g.status == "succeeded")


def contender(
    sandbox: Sandbox, keys: int, name: str, body: Callable[[AsyncClient, Path, Callable[[Any], None]], None]
) -> Result:
    """Run ``body`` (a way to sweep every row on every model) with fresh keys, ledger and counters."""
    secrets = prepare(sandbox, keys)
    counter = Counter()
    client, http = client_for(sandbox, secrets, counter)
    ended: dict[str, float] = {}
    lock = threading.Lock()
    began = time.monotonic()

    def on_row(row: Any) -> None:
        with lock:
            ended[row.model] = time.monotonic() - began

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", MappingWarning)  # flare-1-swift has no quality ...: said, not news
        body(client, Path(tmp) / "ledger.sqlite", on_row)
        real = time.monotonic() - began
    loop.submit(http.aclose()).result()
    return Result(name, keys, real, succeeded(sandbox), counter, ended)


def frame(rows: int) -> pd.DataFrame:
    return pd.DataFrame({"prompt": [f"a lighthouse in weather {i}" for i in range(rows)]})


def one_sweep(rows: int) -> Callable[[AsyncClient, Path, Callable[[Any], None]], None]:
    def body(client: AsyncClient, ledger: Path, on_row: Callable[[Any], None]) -> None:
        constants = {k: v for c in CONSTANTS.values() for k, v in c.items()}
        handle = frame(rows).mediagen.submit(
            MODELS, client=client, ledger=ledger, progress=False, on_row=on_row, **constants
        )
        out = handle.result()
        assert len(out) == rows * len(MODELS), len(out)

    return body


def loop_of_sweeps(rows: int) -> Callable[[AsyncClient, Path, Callable[[Any], None]], None]:
    def body(client: AsyncClient, ledger: Path, on_row: Callable[[Any], None]) -> None:
        parts = []
        for model in MODELS:
            handle = frame(rows).mediagen.submit(
                model, client=client, ledger=ledger, progress=False, on_row=on_row, **CONSTANTS[model]
            )
            parts.append(handle.result().assign(model=model))
        assert len(pd.concat(parts)) == rows * len(MODELS)

    return body


def sweeps_at_once(rows: int) -> Callable[[AsyncClient, Path, Callable[[Any], None]], None]:
    def body(client: AsyncClient, ledger: Path, on_row: Callable[[Any], None]) -> None:
        handles = [
            frame(rows).mediagen.submit(
                model, client=client, ledger=ledger, progress=False, on_row=on_row, **CONSTANTS[model]
            )
            for model in MODELS
        ]
        assert sum(len(h.result()) for h in handles) == rows * len(MODELS)

    return body


def estimate_rows(rows: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "prompt": [f"product shot {i}" for i in range(rows)],
            "quality": [("low", "medium", "high")[i % 3] for i in range(rows)],
            "resolution": [("480p", "720p")[i % 2] for i in range(rows)],
        }
    )


def estimates(sandbox: Sandbox, rows: int, runs: int) -> None:
    """One estimate of ``rows`` x 3 models against the loop of three, in the same sandbox and client:
    the requests of each, and the median of ``runs`` times (interleaved, after a warm-up)."""
    secrets = prepare(sandbox, 1)
    counter = Counter()
    client, http = client_for(sandbox, secrets, counter)
    df = estimate_rows(rows)
    times: dict[str, list[float]] = {"ours": [], "loop": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MappingWarning)
        df.head(3).mediagen.estimate(MODELS, client=client, show=False)  # warm-up: the catalog, imports
        for _ in range(runs):
            before = counter.estimates
            began = time.perf_counter()
            priced = df.mediagen.estimate(MODELS, client=client, show=False)
            times["ours"].append(time.perf_counter() - began)
            ours_requests = counter.estimates - before
            before = counter.estimates
            began = time.perf_counter()
            parts = [df.mediagen.estimate(m, client=client, show=False) for m in MODELS]
            times["loop"].append(time.perf_counter() - began)
            loop_requests = counter.estimates - before
    loop.submit(http.aclose()).result()
    summary = priced.attrs["mediagen_estimate"]
    classes = len(summary.by_class)
    loop_total = sum(int(p["credits"].sum()) for p in parts)
    ours_s, loop_s = statistics.median(times["ours"]), statistics.median(times["loop"])
    print(
        f"\nestimate of {rows:,} rows x {len(MODELS)} models ({rows * len(MODELS):,} generations), median of "
        f"{runs}: {summary.total:,} credits in {ours_requests} estimate requests for {classes} price classes "
        f"({ours_s:.2f} s); the loop of three estimates: {loop_total:,} credits in {loop_requests} requests "
        f"({loop_s:.2f} s; ours / loop {ours_s / loop_s:.2f}x); per-row estimates: {rows * len(MODELS):,} "
        f"requests ({rows * len(MODELS) / spec_limits.REQUESTS_PER_KEY:,.0f} minutes at 60 a minute, not run)"
    )
    for model, sub in summary.by_model.items():
        print(f"  {model:<20} {sub.credits:>9,} credits  {sub.per_row:>6.2f} a row  {sub.requests} requests")
    verdict = "met" if ours_requests <= classes and summary.total == loop_total else "MISSED"
    print(f"target (at most one estimate request per price class, the loop's total): {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=120, help="rows of the comparison")
    parser.add_argument("--time-scale", type=float, default=10.0, help="simulated seconds per real second")
    parser.add_argument(
        "--keys", type=int, nargs="*", default=[1, 2], help="key counts to run with (none: the estimate only)"
    )
    parser.add_argument("--estimate-rows", type=int, default=10_000, help="rows of the estimate")
    parser.add_argument("--estimate-runs", type=int, default=3, help="timed estimates of each kind")
    args = parser.parse_args()
    rows, scale = args.rows, args.time_scale
    with Sandbox(time_scale=scale, seed=7) as sandbox:
        results = []
        for keys in args.keys:
            results.append(contender(sandbox, keys, "df.mediagen.run([3 models])", one_sweep(rows)))
            results.append(contender(sandbox, keys, "loop: one run per model", loop_of_sweeps(rows)))
            results.append(contender(sandbox, keys, "3 sweeps submitted at once", sweeps_at_once(rows)))
        if results:
            report(results, rows, scale)
        estimates(sandbox, args.estimate_rows, args.estimate_runs)


def report(results: list[Result], rows: int, scale: float) -> None:
    """The run's table and verdict."""
    generations = rows * len(MODELS)
    runtimes = ", ".join(f"{m} {BY_ID[m].runtime_s:g} s" for m in MODELS)
    print(
        f"\n{rows} rows x {len(MODELS)} models = {generations} generations at x{scale:g} (catalog run times: "
        f"{runtimes}); times in simulated s"
    )
    print(
        f"{'contender':<30} {'keys':>4} {'makespan':>8} {'bound':>6} {'of bound':>8} {'vs ours':>7} "
        f"{'images done':>11} {'video done':>10} {'req/gen':>7} {'429s':>5} {'ok':>4}"
    )
    misses = []
    for r in results:
        ours = next(o for o in results if o.keys == r.keys)
        makespan, limit = r.real_s * scale, bound(generations, r.keys)
        images = max(t for m, t in r.ended.items() if m != VIDEO) * scale if r.ended else float("nan")
        video = r.ended.get(VIDEO, float("nan")) * scale
        per_generation = r.counter.requests / max(1, r.succeeded)
        print(
            f"{r.name:<30} {r.keys:>4} {makespan:>8.0f} {limit:>6.0f} {limit / makespan:>8.2f} "
            f"{r.real_s / ours.real_s:>6.2f}x {images:>11.0f} {video:>10.0f} {per_generation:>7.3f} "
            f"{r.counter.rate_limited:>5} {r.succeeded:>4}"
        )
        if r is ours:
            if limit / makespan < TARGET_OF_BOUND:
                misses.append(f"{r.keys} key(s): {limit / makespan:.2f} of bound")
            if r.counter.rate_limited:
                misses.append(f"{r.keys} key(s): {r.counter.rate_limited} 429s")
            if round(per_generation, 2) > TARGET_REQUESTS:
                misses.append(f"{r.keys} key(s): {per_generation:.3f} requests per generation")
            if r.succeeded != generations:
                misses.append(f"{r.keys} key(s): {generations - r.succeeded} generations not succeeded")
    verdict = "met" if not misses else "MISSED (" + "; ".join(misses) + ")"
    print(
        f"target (of bound >= {TARGET_OF_BOUND}, zero 429s, {TARGET_REQUESTS:.2f} requests per generation): "
        f"{verdict}"
    )


if __name__ == "__main__":
    main()
