"""Import cost: ``import mediagen_nb`` and ``%load_ext mediagen_nb`` against ``import pandas``.

Every sample runs in a fresh interpreter and times one step with ``time.perf_counter``; the cases
are interleaved and each reports the median of ``--runs`` samples. ``%load_ext`` is timed alone in
an IPython ``InteractiveShell`` that is already started (IPython's own start-up is not counted).
Each case also lists the heavy modules the timed step pulled into ``sys.modules``.

Target: ``%load_ext mediagen_nb`` adds less than 30% to pandas' own import time, and neither
``import mediagen_nb`` nor ``%load_ext`` imports Starlette, uvicorn or Pillow.

    .venv/bin/python benchmarks/import_time.py [--runs 7]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HEAVY = ("starlette", "uvicorn", "PIL", "av", "pandas", "httpx", "ipywidgets")
FORBIDDEN = ("starlette", "uvicorn", "PIL")
TARGET = 0.30  # load_ext time / pandas import time

# One sample: set up (not timed), time the step, print its seconds and the heavy modules it pulled in.
CHILD = f"""
import json, sys, time
heavy = {HEAVY!r}
case = sys.argv[1]
if case.startswith("load_ext"):
    if case == "load_ext_after_pandas":
        import pandas  # a notebook that imported pandas first: registering df.mediagen is then due
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
before = {{m for m in heavy if m in sys.modules}}
start = time.perf_counter()
if case == "pandas":
    import pandas
elif case == "mediagen_nb":
    import mediagen_nb
else:
    shell.run_line_magic("load_ext", "mediagen_nb")
seconds = time.perf_counter() - start
pulled = [m for m in heavy if m in sys.modules and m not in before]
print(json.dumps({{"seconds": seconds, "pulled": pulled}}))
"""

CASES = {
    "pandas": "import pandas",
    "mediagen_nb": "import mediagen_nb",
    "load_ext": "%load_ext mediagen_nb (shell already started)",
    "load_ext_after_pandas": "%load_ext mediagen_nb after import pandas",
}


def sample(case: str, env: dict[str, str]) -> tuple[float, list[str]]:
    """One fresh interpreter: the step's seconds and the heavy modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, case], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{case}: the child failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["seconds"]), list(result["pulled"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per case (median)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "IPYTHONDIR": os.path.join(home, "ipython")}  # no user profile, no history
        for name in ("MEDIAGEN_API_KEY", "MEDIAGEN_BASE_URL"):
            env.pop(name, None)
        sample("pandas", env)  # warm the OS file cache once, not counted
        times: dict[str, list[float]] = {case: [] for case in CASES}
        pulled: dict[str, set[str]] = {case: set() for case in CASES}
        for _ in range(args.runs):
            for case in CASES:  # interleaved, so a noisy moment hits every case alike
                seconds, modules = sample(case, env)
                times[case].append(seconds)
                pulled[case].update(modules)

    median = {case: statistics.median(values) for case, values in times.items()}
    pandas = median["pandas"]
    print(f"Python {sys.version.split()[0]}, median of {args.runs} fresh interpreters per case")
    print(f"{'case':48} {'median':>9} {'min':>9} {'max':>9} {'vs pandas':>10}  heavy modules pulled in")
    for case, label in CASES.items():
        low, high, modules = min(times[case]), max(times[case]), [m for m in HEAVY if m in pulled[case]]
        print(
            f"{label:48} {median[case] * 1000:7.1f} ms {low * 1000:6.1f} ms {high * 1000:6.1f} ms"
            f" {median[case] / pandas:9.1%}  {', '.join(modules) or '-'}"
        )

    ratio = median["load_ext"] / pandas
    after = median["load_ext_after_pandas"] / pandas
    leaks = sorted({m for case in CASES if case != "pandas" for m in pulled[case] if m in FORBIDDEN})
    print()
    print(f"import mediagen_nb / import pandas: {median['mediagen_nb'] / pandas:.1%}")
    print(f"%load_ext mediagen_nb / import pandas: {ratio:.1%} (target < {TARGET:.0%})")
    print(
        f"%load_ext mediagen_nb after pandas / import pandas: {after:.1%} (target < {TARGET:.0%}; "
        "includes registering the df.mediagen accessor)"
    )
    ratio = max(ratio, after)  # the verdict holds for either order of a notebook's first cells
    fast = ratio < TARGET
    light = not leaks
    verdict = "PASS" if fast and light else "FAIL"
    print(
        f"verdict: {verdict}: %load_ext adds at most {ratio:.1%} to pandas' import time "
        f"({'under' if fast else 'over'} the {TARGET:.0%} target); "
        + ("no Starlette, uvicorn or Pillow imported" if light else f"imported {', '.join(leaks)}")
    )
    sys.exit(0 if verdict == "PASS" else 1)


if __name__ == "__main__":
    main()
