"""What our own limiter and engine cost a caller: an interactive estimate, and the CPU of each request.

Two figures, each against a baseline measured in the same run, on a sandbox served on 127.0.0.1:

- **estimate**: ``df.mediagen.estimate`` of ``--rows`` rows of ``gpt-image-2`` in its three price
  classes (three estimate requests), by a client paced at real time (``time_scale=1``: the
  service's own 60 s windows, as against the real service), against the same call paced to the
  sandbox's clock (x600: windows of 0.1 s, so our limiter cannot hold it back). Each sample uses a
  fresh key and limits file, so its window is empty, as an interactive call's usually is. Target:
  the real-time call within 1.2x of the paced one (our limiter holds it back by nothing), under a
  second in all (the frame's handling counts: on a loaded machine it alone may take longer). Before
  bursts, the limiter spaced the three requests a second apart: about 2 s of waiting.
- **CPU per request**: ``--reads`` reads of one generation (``GET generations/{id}``) in a worker
  process, its process CPU (``time.process_time``) per request, for a plain synchronous httpx loop
  (the baseline: what any client must spend), a sync ``Client`` and an ``AsyncClient`` (requests
  gathered, 16 at a time). The sandbox runs in this process, so its CPU is not counted. Target:
  as little over the plain loop as we can; the issue measured 4-4.6x before.

``--code DIR`` runs the worker processes on the package in DIR (e.g. a ``git worktree`` of main) as
well, so "before" and "after" are measured in one run, on one machine load.

    .venv/bin/python benchmarks/client_limits.py [--rows 1000] [--runs 5] [--reads 1000] [--repeat 3] \
        [--code DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import pandas as pd

import mediagen_nb.batch.accessor  # noqa: F401  registers df.mediagen
from mediagen_nb.batch import loop
from mediagen_nb.client import AsyncClient, Client, Limits
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

MODEL = "gpt-image-2"
IMAGE = {"prompt": "a lighthouse at dusk", "quality": "low"}
SCALE = 600.0
CPU_SCALE = 6000.0  # the reads' sandbox: 60 requests in 10 ms, more than a plain loop sends
INTERACTIVE = 1.0  # real seconds: the estimate answers within this (frame handling included)
PACED_RATIO = 1.2  # the real-time call against the paced one: our limiter holds it back by no more

# argv: case, base_url, key, generation id, reads, time scale. Prints process CPU and wall seconds.
WORKER = """
import asyncio, json, sys, time
case, base, key, gid, reads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
import httpx
import mediagen_nb
from mediagen_nb.client import AsyncClient, Client, Limits
from mediagen_nb.protocol.paths import path
limits, scale = Limits(url="memory"), float(sys.argv[6])
def plain():
    with httpx.Client() as http:
        url, auth = base + path("generation", id=gid), {"Authorization": f"Bearer {key}"}
        http.get(url, headers=auth).raise_for_status()
        start, wall = time.process_time(), time.perf_counter()
        for _ in range(reads):
            http.get(url, headers=auth).raise_for_status()
        return time.process_time() - start, time.perf_counter() - wall
def sync():
    with Client(key, base_url=base, limits=limits, time_scale=scale) as c:
        c.generation(gid)
        start, wall = time.process_time(), time.perf_counter()
        for _ in range(reads):
            c.generation(gid)
        return time.process_time() - start, time.perf_counter() - wall
async def gathered():
    async with AsyncClient(key, base_url=base, limits=limits, time_scale=scale) as c:
        await c.generation(gid)
        start, wall = time.process_time(), time.perf_counter()
        for _ in range(reads // 16):
            await asyncio.gather(*(c.generation(gid) for _ in range(16)))
        return time.process_time() - start, time.perf_counter() - wall
cpu, wall = {"plain": plain, "sync": sync, "async": lambda: asyncio.run(gathered())}[case]()
print(json.dumps({"cpu": cpu, "wall": wall, "reads": reads if case != "async" else reads // 16 * 16}))
"""


def control(sandbox: Sandbox, name: str, body: dict[str, Any] | None = None) -> Any:
    url = f"{sandbox.base_url}{path(name)}"
    response = httpx.post(url, json=body, timeout=30) if body is not None else httpx.get(url, timeout=30)
    response.raise_for_status()
    return response.json()["data"]


def rows(n: int) -> pd.DataFrame:
    qualities = [("low", "medium", "high")[i % 3] for i in range(n)]
    return pd.DataFrame({"prompt": [f"a lighthouse, take {i}" for i in range(n)], "quality": qualities})


def estimate_seconds(sandbox: Sandbox, frame: pd.DataFrame, scale: float, folder: Path) -> float:
    """One estimate of ``frame`` by a client on a fresh key and limits file, paced at ``scale``."""
    key = str(control(sandbox, "sandbox_keys", {"name": f"bench {time.time()}"})["key"])
    limits = Limits(url=str(folder / f"limits-{time.time_ns()}.sqlite"))
    ledger = str(folder / "ledger.sqlite")
    client = AsyncClient(key, base_url=sandbox.base_url, limits=limits, time_scale=scale, ledger=ledger)
    try:
        start = time.perf_counter()
        priced = frame.mediagen.estimate(MODEL, show=False, client=client)
        seconds = time.perf_counter() - start
    finally:
        loop.submit(client.aclose()).result(10)
    if priced["credits"].isna().any() or priced["billing"].nunique() < 1:
        raise SystemExit("the estimate left rows unpriced")
    return seconds


def cpu_per_request(sandbox: Sandbox, generation: str, case: str, reads: int, code: str | None) -> float:
    """Process CPU seconds per request of ``case`` in a worker process (on the package in ``code``)."""
    key = str(control(sandbox, "sandbox_keys", {"name": f"cpu {case} {time.time()}"})["key"])
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = code
    scale = str(sandbox.config.time_scale)
    command = [sys.executable, "-c", WORKER, case, str(sandbox.base_url), key, generation, str(reads), scale]
    done = subprocess.run(command, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["cpu"]) / int(result["reads"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reads", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each CPU case (the median is shown)")
    parser.add_argument("--code", help="also measure the package in this folder (e.g. a worktree of main)")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    frame = rows(args.rows)
    with tempfile.TemporaryDirectory() as tmp, Sandbox(SandboxConfig(time_scale=SCALE, seed=1)) as sandbox:
        folder = Path(tmp)
        control(sandbox, "sandbox_account", {"balance": 10_000_000})
        estimate_seconds(sandbox, frame, SCALE, folder)  # warm-up: imports, the catalog
        real, paced = [], []
        for _ in range(args.runs):
            paced.append(estimate_seconds(sandbox, frame, SCALE, folder))
            real.append(estimate_seconds(sandbox, frame, 1.0, folder))
        real_s, paced_s = statistics.median(real), statistics.median(paced)
        ratio = real_s / paced_s
        met = real_s < INTERACTIVE and ratio <= PACED_RATIO
        print(f"estimate of {args.rows:,} rows of {MODEL} in 3 price classes, median of {args.runs}")
        print(f"  paced to the sandbox (x{SCALE:g}, baseline) {paced_s:7.3f} s")
        print(f"  paced at real time (the service's)      {real_s:7.3f} s   {ratio:.2f}x")
        print(f"  target: under {INTERACTIVE} s and within {PACED_RATIO}x: {'met' if met else 'MISSED'}")

    with Sandbox(SandboxConfig(time_scale=CPU_SCALE, seed=1)) as sandbox:
        with Client.for_sandbox(sandbox) as c:
            generation = c.generate(MODEL, IMAGE, timeout=600).id
        codes: list[tuple[str, str | None]] = [("this tree", None)]
        if args.code:
            codes.append((args.code, args.code))
        print(
            f"CPU per request, {args.reads} reads of one generation (worker process CPU, sandbox apart), "
            f"median of {args.repeat} runs, the trees taking turns"
        )
        cases = ("plain", "sync", "async")
        seen: dict[tuple[str, str], list[float]] = {(name, case): [] for name, _ in codes for case in cases}
        for _ in range(args.repeat):
            for name, code in codes:
                for case in cases:
                    seen[name, case].append(cpu_per_request(sandbox, generation, case, args.reads, code))
        for name, _ in codes:
            plain, sync, gathered = (statistics.median(seen[name, case]) for case in cases)
            print(
                f"  {name}: plain httpx {plain * 1000:.2f} ms (baseline), Client {sync * 1000:.2f} ms "
                f"({sync / plain:.2f}x), AsyncClient {gathered * 1000:.2f} ms ({gathered / plain:.2f}x)"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
