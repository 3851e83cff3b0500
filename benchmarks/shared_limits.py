"""Several processes, one account: makespan against one process with all the rows, requests per run, 429s.

Every case runs its sweeps (``df.mediagen.run`` of a fast, flat-priced image model) as separate
processes against a fresh sandbox served on 127.0.0.1 at ``--time-scale``; the rows are split evenly
between the processes. Makespan is from the first sweep's start to the last one's end (interpreter
start-up is not counted), in simulated seconds; "first done" is when the first process ended (close
to the makespan when the processes share fairly); the sandbox counts every request with a key and
every 429 it gave. Cases: one process with all rows (the baseline), two and four processes on one
key, two processes on two keys of one account (``MEDIAGEN_ACCOUNT``), two processes through Redis
(when ``redis-server`` is installed), and two processes that pace alone (``memory``: the behaviour
before limits were shared). Targets: two processes <= 1.10x the baseline and four <= 1.15x, with zero
429s and 2.00 requests per generation.

    .venv/bin/python benchmarks/shared_limits.py [--rows 240] [--time-scale 60]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

MODEL = "flare-1-swift"  # flat price, about 5 s a run
TARGETS = {2: 1.10, 4: 1.15}

WORKER = """
import json, sys, time
import pandas as pd
import mediagen_nb
rows = pd.DataFrame({"prompt": [f"{sys.argv[2]} {i}" for i in range(int(sys.argv[1]))]})
start = time.time()
out = rows.mediagen.run("flare-1-swift", progress=False, run_name=sys.argv[2])
print(json.dumps({"start": start, "end": time.time(), "ok": int((out["status"] == "succeeded").sum())}))
"""


def control(sandbox: Sandbox, name: str, body: dict[str, Any] | None = None) -> Any:
    url = f"{sandbox.base_url}{path(name)}"
    response = httpx.post(url, json=body, timeout=30) if body is not None else httpx.get(url, timeout=30)
    response.raise_for_status()
    return response.json()["data"]


def case(scale: float, rows: int, processes: int, limits_url: str, two_keys: bool = False) -> dict[str, Any]:
    """Run one case on a fresh sandbox; its makespan (simulated s), requests per generation and 429s."""
    with Sandbox(SandboxConfig(time_scale=scale, seed=7)) as sandbox:
        control(sandbox, "sandbox_account", {"balance": 10_000_000})
        keys = [sandbox.demo_key] * processes
        if two_keys:
            keys = [str(control(sandbox, "sandbox_keys", {"name": f"k{i}"})["key"]) for i in range(processes)]
        started = []
        for index, key in enumerate(keys):
            env = {
                **os.environ,
                **sandbox.client_env(key),
                "MEDIAGEN_LIMITS_URL": limits_url,
                "MEDIAGEN_LEDGER": str(Path(tempfile.mkdtemp(prefix="mediagen-bench-")) / "ledger.sqlite"),
            }
            if two_keys:
                env["MEDIAGEN_ACCOUNT"] = "bench-team"
            tag = f"p{index}-{time.time()}"
            command = [sys.executable, "-c", WORKER, str(rows // processes), tag]
            started.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True))
        results = [json.loads(p.communicate(timeout=1800)[0].strip().splitlines()[-1]) for p in started]
        counts = control(sandbox, "sandbox_info")["counts"]
    makespan = (max(r["end"] for r in results) - min(r["start"] for r in results)) * scale
    made = sum(r["ok"] for r in results)
    return {
        "makespan": makespan,
        "rows": made,
        "per_generation": counts["requests"] / max(1, made),
        "429s": counts["requestsOverLimit"] + counts["startsOverLimit"],
        "first_done": (min(r["end"] for r in results) - min(r["start"] for r in results)) * scale,
    }


def redis_server() -> tuple[subprocess.Popen[bytes], str] | None:
    server = shutil.which("redis-server")
    if server is None:
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    return process, f"redis://127.0.0.1:{port}/0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=240)
    parser.add_argument("--time-scale", type=float, default=60.0)
    args = parser.parse_args()
    machine = str(Path(tempfile.mkdtemp(prefix="mediagen-limits-")) / "limits.sqlite")
    cases: list[tuple[str, int, str, bool]] = [
        ("1 process, all rows (baseline)", 1, machine, False),
        ("2 processes, 1 key", 2, machine, False),
        ("4 processes, 1 key", 4, machine, False),
        ("2 processes, 2 keys of 1 account", 2, machine, True),
        ("2 processes, 1 key, each alone (memory)", 2, "memory", False),
    ]
    redis = redis_server()
    if redis is not None:
        cases.insert(4, ("2 processes, 1 key, through Redis", 2, redis[1], False))
    print(f"{args.rows} rows of {MODEL} at time x{args.time_scale:g}, split between the processes")
    print(f"{'case':<42} {'makespan':>9} {'ratio':>6} {'first done':>10} {'req/gen':>8} {'429s':>5}")
    baseline = None
    try:
        for name, processes, url, two_keys in cases:
            result = case(args.time_scale, args.rows, processes, url, two_keys)
            baseline = baseline or result["makespan"]
            ratio = result["makespan"] / baseline
            target = TARGETS.get(processes) if url != "memory" and not two_keys else None
            verdict = "" if target is None else (" met" if ratio <= target else f" MISSED {target}x")
            print(
                f"{name:<42} {result['makespan']:>8.0f}s {ratio:>5.2f}x {result['first_done']:>9.0f}s "
                f"{result['per_generation']:>8.2f} "
                f"{result['429s']:>5}{verdict}"
            )
    finally:
        if redis is not None:
            redis[0].kill()
    if redis is None:
        print("(redis-server is not installed: the Redis case was left out)")


if __name__ == "__main__":
    main()
