"""Requests spent per finished generation: ``Client.wait()`` against a naive poll-every-2-s loop.

Both run in the same process against the same time-scaled sandbox, one generation at a time, for
models whose runs take about 20 s, 2 min and 6 min (simulated). A generation costs one start plus
its reads; the target for ``wait()`` is at most 1 + ceil(T/55) requests for a run of T seconds.

    .venv/bin/python benchmarks/requests_per_generation.py [--runs 3] [--time-scale 60]
"""

import argparse
import math
import time

import httpx

from mediagen_nb import Client, Sandbox
from mediagen_nb.protocol.paths import path

CASES = (
    ("about 20 s", "seedbloom-4"),
    ("about 2 min", "cogent-video-5b-t2v"),
    ("about 6 min", "aurora-2-pro-t2v"),
)
NAIVE_POLL_SECONDS = 2.0


class Counter:
    """Counts authenticated requests (catalog reads excluded) and 429s seen on one httpx client."""

    def __init__(self) -> None:
        self.requests = self.rate_limited = 0

    def on_request(self, request: httpx.Request) -> None:
        if "authorization" in request.headers:
            self.requests += 1

    def on_response(self, response: httpx.Response) -> None:
        self.rate_limited += response.status_code == 429


def run_time(sandbox: Sandbox, generation_id: str) -> float:
    """The simulated run time the sandbox gave this generation."""
    gen = sandbox.world.generations.items[generation_id]
    return gen.finish_at - gen.created_at


def ours(sandbox: Sandbox, model: str, runs: int) -> tuple[list[int], list[float], int]:
    counter = Counter()
    hooks = {"request": [counter.on_request], "response": [counter.on_response]}
    spent, times = [], []
    with Client.for_sandbox(sandbox, http_client=httpx.Client(event_hooks=hooks)) as client:
        client.models()
        for i in range(runs):
            before = counter.requests
            generation = client.wait(client.run(model, prompt=f"benchmark {i}"))
            assert generation.status == "succeeded", generation
            spent.append(counter.requests - before)
            times.append(run_time(sandbox, generation.id))
    return spent, times, counter.rate_limited


def naive(sandbox: Sandbox, model: str, runs: int, scale: float) -> tuple[list[int], list[float], int]:
    """What a user writes by hand: start, then GET every 2 seconds until it ends."""
    counter = Counter()
    hooks = {"request": [counter.on_request], "response": [counter.on_response]}
    headers = {"Authorization": f"Bearer {sandbox.demo_key}"}
    spent, times = [], []
    with httpx.Client(base_url=sandbox.base_url, headers=headers, event_hooks=hooks) as http:
        for i in range(runs):
            before = counter.requests
            body = {"modelId": model, "input": {"prompt": f"naive {i}"}}
            gen_id = http.post(path("run"), json=body).json()["data"]["id"]
            while http.get(path("generation", id=gen_id)).json()["data"]["status"] == "processing":
                time.sleep(NAIVE_POLL_SECONDS / scale)
            spent.append(counter.requests - before)
            times.append(run_time(sandbox, gen_id))
    return spent, times, counter.rate_limited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="generations per model and method")
    parser.add_argument("--time-scale", type=float, default=60.0, help="simulated seconds per real second")
    args = parser.parse_args()
    with Sandbox(time_scale=args.time_scale, seed=7) as sandbox:
        httpx.post(sandbox.base_url + path("sandbox_account"), json={"balance": 10_000_000})
        print(f"requests per generation (start + reads), {args.runs} runs each, time x{args.time_scale:g}")
        print(
            f"{'run time':<12} {'mean T':>8} {'target':>7} {'wait() max':>10} {'wait() mean':>11} "
            f"{'naive mean':>10} {'naive/ours':>10} {'429s':>5}"
        )
        worst = 0.0
        for label, model in CASES:
            spent, times, limited = ours(sandbox, model, args.runs)
            naive_spent, _, naive_limited = naive(sandbox, model, args.runs, args.time_scale)
            targets = [1 + math.ceil(t / 55) for t in times]
            worst = max(worst, max(s / t for s, t in zip(spent, targets, strict=True)))
            mean_ours, mean_naive = sum(spent) / len(spent), sum(naive_spent) / len(naive_spent)
            print(
                f"{label:<12} {sum(times) / len(times):>7.0f}s {max(targets):>7} {max(spent):>10} "
                f"{mean_ours:>11.2f} {mean_naive:>10.1f} {mean_naive / mean_ours:>9.1f}x "
                f"{limited + naive_limited:>5}"
            )
        verdict = "met" if worst <= 1 else "MISSED"
        print(f"target (requests <= 1 + ceil(T/55) for every generation): {verdict}, worst ratio {worst:.2f}")


if __name__ == "__main__":
    main()
