"""Ray Data against the accessor: 240 rows through 4 actors, on one key and on two keys of one account.

Every case runs the same rows (a fast, flat-priced image model) against a fresh sandbox served on
127.0.0.1 at ``--time-scale`` (x10: a service minute is 6 real seconds). The accessor
(``df.mediagen.run`` in this process) is the baseline; Ray runs ``ds.map_batches(mediagen_nb.ray.Generate
(...))`` on a local Ray (``num_cpus=2``, no dashboard) with a pool of ``--actors`` actors, each asking
for a quarter of a CPU (they wait on the network). The dataset is cut in ``2 x actors`` blocks, so
every actor has work until the end.

Makespan runs from the first start the sandbox charged to the moment the last result is in the
caller's hands (the frame returned), in simulated seconds: Ray's own start-up (the cluster, the
actors, their imports) comes before the first start and is left out, as the accessor's is. The
bound is the least makespan the spec's limits allow: the account's 60 starts a minute admit
``rows`` starts in ``rows / 60`` minutes, and the keys' 60 requests a minute each admit the ``2 x
rows`` requests (one start and one read a generation) in ``2 x rows / (60 x keys)`` minutes; the
larger of the two (one key: 480 s for 240 rows; two keys: 240 s). "of bound" is bound / makespan;
"start rate" is the starts a minute the sandbox charged from the first start to the last, as a share
of the account's 60 (one key allows half of it: a generation is a start and a read on that key);
"tail" runs from the last start to the last result (its run, its read, the frame coming back).

Targets: Ray >= 0.90 of the bound on one key and on two, 0 429s, 2.00 requests per generation.

    .venv-engines/bin/python benchmarks/engines.py [--rows 240] [--actors 4] [--time-scale 10] [--keys 1 2]
"""

import argparse
import os
import shutil
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import ray

import mediagen_nb.ray  # also registers df.mediagen (importing pandas)
from mediagen_nb.client import connection, settings
from mediagen_nb.protocol import limits
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

MODEL = "flare-1-swift"  # flat price (no estimate request), about 5 s a run
TARGET = 0.90  # of the bound, for Ray
REQUESTS_PER_GENERATION = 2  # one start and one read


def control(sandbox: Sandbox, name: str, body: dict[str, Any] | None = None) -> Any:
    url = f"{sandbox.base_url}{path(name)}"
    response = httpx.post(url, json=body, timeout=30) if body is not None else httpx.get(url, timeout=30)
    response.raise_for_status()
    return response.json()["data"]


def bound(rows: int, keys: int) -> float:
    """The least makespan (simulated s) the account's start limit and the keys' request limits allow."""
    starts = rows / limits.STARTS_PER_ACCOUNT
    requests = REQUESTS_PER_GENERATION * rows / (limits.REQUESTS_PER_KEY * keys)
    return max(starts, requests) * limits.WINDOW_SECONDS


def moment(iso: str) -> float:
    """Unix seconds of the sandbox's ISO 8601 time (its simulated clock)."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def environment(sandbox: Sandbox, keys: list[str], folder: Path) -> dict[str, str]:
    """What the caller and every worker of a case need: the sandbox, its keys (a pool), one account, a
    ledger and the limits file of the case."""
    return {
        **sandbox.client_env(",".join(keys)),
        settings.ENV_ACCOUNT: "bench-team",
        settings.ENV_LEDGER: str(folder / "ledger.sqlite"),
        settings.ENV_LIMITS_URL: str(folder / "limits.sqlite"),
    }


def case(scale: float, rows: int, keys: int, actors: int | None) -> dict[str, Any]:
    """One case on a fresh sandbox: the accessor (``actors`` None) or Ray with that many actors."""
    folder = Path(tempfile.mkdtemp(prefix="mediagen-bench-"))
    frame = pd.DataFrame({"prompt": [f"a lighthouse at dusk, take {i}" for i in range(rows)]})
    with Sandbox(SandboxConfig(time_scale=scale, seed=7)) as sandbox:
        control(sandbox, "sandbox_account", {"balance": 10_000_000})
        secrets = [sandbox.demo_key] + [
            str(control(sandbox, "sandbox_keys", {"name": f"k{i}"})["key"]) for i in range(1, keys)
        ]
        env = environment(sandbox, secrets, folder)
        os.environ.update(env)
        connection.use(None)
        tag = f"{'ray' if actors else 'accessor'} {keys} {time.time()}"
        if actors is None:
            out = frame.mediagen.run(MODEL, run_name=tag, progress=False)
        else:
            size = -(-rows // (2 * actors))
            ds = ray.data.from_pandas([frame[i : i + size] for i in range(0, rows, size)])
            udf = mediagen_nb.ray.Generate(MODEL, run_name=tag)
            out = ds.map_batches(
                udf,
                compute=ray.data.ActorPoolStrategy(size=actors),
                num_cpus=0.25,
                batch_format="pandas",
                runtime_env={"env_vars": env},
            ).to_pandas()
        ended = moment(sandbox.world.clock.iso())  # the last result is in the caller's hands
        counts = control(sandbox, "sandbox_info")["counts"]
        entries = control(sandbox, "sandbox_ledger")["entries"]
    shutil.rmtree(folder, ignore_errors=True)
    charged = sorted(moment(e["at"]) for e in entries if e["kind"] == "charge")
    made = int((out["status"] == "succeeded").sum())
    makespan = ended - charged[0]
    return {
        "makespan": makespan,
        "start_rate": (len(charged) - 1)
        / (charged[-1] - charged[0])
        * limits.WINDOW_SECONDS
        / limits.STARTS_PER_ACCOUNT,
        "tail": ended - charged[-1],
        "rows": made,
        "per_generation": counts["requests"] / max(1, made),
        "429s": counts["requestsOverLimit"] + counts["startsOverLimit"],
        "of_bound": bound(rows, keys) / makespan,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=240)
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--time-scale", type=float, default=10.0)
    parser.add_argument("--keys", type=int, nargs="+", default=[1, 2], help="the key counts to run (1, 2)")
    args = parser.parse_args()
    temp = tempfile.mkdtemp(prefix="mgray-")  # short: Ray's socket paths must fit 107 characters
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    began = time.monotonic()
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp, log_to_driver=False)
    print(f"Ray started in {time.monotonic() - began:.1f} s (not counted)")
    print(f"{args.rows} rows of {MODEL} at time x{args.time_scale:g}; Ray: {args.actors} actors")
    print(
        f"{'case':<36} {'makespan':>9} {'ratio':>6} {'of bound':>8} {'start rate':>10} {'tail':>6} "
        f"{'req/gen':>8} {'429s':>5} {'rows':>5}"
    )
    try:
        for keys in args.keys:
            baseline = None
            for actors in (None, args.actors):
                result = case(args.time_scale, args.rows, keys, actors)
                baseline = baseline or result["makespan"]
                name = f"{'accessor (baseline)' if actors is None else f'Ray, {actors} actors'}, {keys} key"
                name += "s of 1 account" if keys > 1 else ""
                met = ""
                if actors is not None:
                    ok = (
                        result["of_bound"] >= TARGET
                        and result["429s"] == 0
                        and round(result["per_generation"], 2) == REQUESTS_PER_GENERATION
                        and result["rows"] == args.rows
                    )
                    met = " met" if ok else " MISSED"
                print(
                    f"{name:<36} {result['makespan']:>8.0f}s {result['makespan'] / baseline:>5.2f}x "
                    f"{result['of_bound']:>8.2f} {result['start_rate']:>10.2f} {result['tail']:>5.0f}s "
                    f"{result['per_generation']:>8.2f} {result['429s']:>5} {result['rows']:>5}{met}"
                )
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
