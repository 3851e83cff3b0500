"""Mutation testing of the money and secrecy rules: ``.venv/bin/python .ci/mutation.py`` (docs/testing.md).

Runs mutmut as ``[tool.mutmut]`` in pyproject.toml configures it (the modules behind the rules, listed by
path, and the fast tests that cover them), then reads what it found. A mutant no test kills must be
recorded in ``.ci/mutation-equivalents.toml`` as equivalent (its function, its changed line as it was
and as the mutant has it, and why no test can tell them apart); any other survivor, and any record
that matches no survivor any more, fails the run. It prints the counts (generated, killed,
equivalent, survived) and the time the run took.

    .venv/bin/python .ci/mutation.py                  # what changed since the last run (mutmut's cache)
    .venv/bin/python .ci/mutation.py --fresh          # every mutant again (after others' work landed)
    .venv/bin/python .ci/mutation.py "mediagen_nb.client.spending*"   # these mutants only (a glob)
    .venv/bin/python .ci/mutation.py --again          # the last run's survivors again (after new tests)
    .venv/bin/python .ci/mutation.py --report         # read the last run's results, run nothing
"""

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import tomllib
except ImportError:  # Python 3.10: the project depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / ".ci" / "mutation-equivalents.toml"
KILLED = {"killed", "timeout", "segfault", "caught by type check"}  # a test (or the run) noticed
NOT_RUN = "not checked"  # a run stopped before it (or a run of other globs)


@dataclass(frozen=True)
class Mutant:
    name: str  # mutmut's: mediagen_nb.client.ledger.xǁLedgerǁ_open__mutmut_3
    status: str
    module: str  # mediagen_nb.client.ledger
    function: str  # mediagen_nb.client.ledger.Ledger._open
    was: str  # the changed lines, as they were (stripped, one per line)
    now: str  # ... and as the mutant has them


def function_of(name: str) -> tuple[str, str]:
    """The module of a mutant's name, and its ``module.Class.function``."""
    from mutmut.utils.format_utils import mangled_name_from_mutant_name, parse_mutant_key

    module, _, key = mangled_name_from_mutant_name(name).rpartition(".")
    function, cls = parse_mutant_key(key)
    return module, ".".join(part for part in (module, cls, function) if part)


def changed(name: str, path: Path) -> tuple[str, str]:
    """The lines a mutant changes, as they were and as it has them."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    diff = get_diff_for_mutant(name, path=path).splitlines()[2:]  # after the ---/+++ header
    was = [line[1:].strip() for line in diff if line.startswith("-")]
    now = [line[1:].strip() for line in diff if line.startswith("+")]
    return "\n".join(was), "\n".join(now)


def results(globs: list[str]) -> list[Mutant]:
    """Every mutant of the configured modules (or of ``globs``) with its status, and, for one no test
    killed, its change."""
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.file_utils import walk_mutatable_files

    found = []
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        for name, code in sorted(data.exit_code_by_key.items()):
            if globs and not any(fnmatch.fnmatch(name, glob) for glob in globs):
                continue
            status = status_by_exit_code[code]
            was, now = ("", "") if status in KILLED or status == NOT_RUN else changed(name, data.path)
            found.append(Mutant(name, status, *function_of(name), was, now))
    return found


def equivalents() -> list[dict[str, Any]]:
    """The records of ``.ci/mutation-equivalents.toml``, each checked for its fields: a function and a
    reason, and either the change (``was``, ``now``) or ``case_only`` with the text ``contains`` must match
    (for strings whose reader ignores case, such as SQL: the record's ``function`` may then be a glob)."""
    records: list[dict[str, Any]] = tomllib.loads(EQUIVALENTS.read_text()).get("equivalent", [])
    for n, record in enumerate(records, 1):
        needed = {"function", "why"} | ({"contains"} if record.get("case_only") else {"was", "now"})
        missing = needed - set(record)
        if missing or not str(record.get("why", "")).strip():
            sys.exit(f"{EQUIVALENTS.name}: record {n} needs {', '.join(sorted(missing)) or 'a reason'}")
    return records


def recorded(record: dict[str, Any], mutant: Mutant) -> bool:
    """Whether ``record`` says ``mutant`` is equivalent."""
    if record.get("case_only"):
        return (
            fnmatch.fnmatchcase(mutant.function, record["function"])
            and mutant.was != mutant.now
            and mutant.was.lower() == mutant.now.lower()
            and re.search(record["contains"], mutant.was) is not None
        )
    return (record["function"], record["was"].strip(), record["now"].strip()) == (
        mutant.function,
        mutant.was,
        mutant.now,
    )


def refresh_copies() -> None:
    """Bring mutmut's copies of the modules it does not mutate up to date (it copies them only once):
    after others' work lands, the tests must run against today's code."""
    import filecmp

    from mutmut.configuration import config

    mutated = {Path(p) for p in config().only_mutate}
    for source in config().source_paths:
        for path in Path(source).rglob("*"):
            copy = Path("mutants") / path
            kept = path.is_file() and path not in mutated and "__pycache__" not in path.parts
            if kept and copy.exists() and not filecmp.cmp(path, copy, shallow=False):
                shutil.copy2(path, copy)


def run_mutmut(globs: list[str], max_children: int) -> float:
    """``mutmut run``; the seconds it took. Its progress goes to the terminal."""
    began = time.monotonic()
    # Every mutant's pytest session is a session of the suite's folder made here (tests/_cleanup.py):
    # none of them owns it, so none removes it (or stops what names it) when it ends, as the first
    # process of a session does. pytest's numbered tmp folders lie there too, apart from any other run's
    # (pytest would clear the oldest of every run's at the end of each session).
    suite = ROOT / "mutants" / "suite"
    shutil.rmtree(suite, ignore_errors=True)
    (suite / "tmp").mkdir(parents=True)
    environment = {
        **os.environ,
        "PYTEST_MEDIAGEN_SUITE": str(suite),
        "PYTEST_DEBUG_TEMPROOT": str(suite / "tmp"),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *globs],
            cwd=ROOT,
            env=environment,
        )
    finally:
        shutil.rmtree(suite, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(f"mutmut run failed (exit {done.returncode}); see its output above")
    return time.monotonic() - began


def report(found: list[Mutant], records: list[dict[str, Any]], seconds: float | None) -> int:
    """Print the counts and every survivor not recorded; 1 if there is one, a stale record, or a mutant
    not run yet."""
    used: set[int] = set()
    unexplained: list[Mutant] = []
    counts: Counter[str] = Counter()
    per_module: dict[str, Counter[str]] = {}
    for mutant in found:
        matching = [n for n, record in enumerate(records) if recorded(record, mutant)]
        if mutant.status in KILLED:
            outcome = "killed"
        elif mutant.status == NOT_RUN:
            outcome = "not run"
        elif matching and mutant.status == "survived":
            outcome = "equivalent"
            used.update(matching)
        else:
            outcome = "survived"
            unexplained.append(mutant)
        counts[outcome] += 1
        counts["timeout"] += mutant.status == "timeout"
        per_module.setdefault(mutant.module, Counter())[outcome] += 1
    for module, seen in sorted(per_module.items()):
        print(
            f"  {module:36} {sum(seen.values()):5} mutants {seen['killed']:5} killed "
            f"{seen['equivalent']:4} equivalent {seen['survived']:4} survived"
            + (f" {seen['not run']:5} not run" if seen["not run"] else "")
        )
    for mutant in unexplained:
        print(f"\n{mutant.status}: {mutant.name}\n  in {mutant.function}\n  - {mutant.was}\n  + {mutant.now}")
    checked = {m.function for m in found if m.status != NOT_RUN}
    stale = [
        record
        for n, record in enumerate(records)
        if n not in used and any(fnmatch.fnmatchcase(f, record["function"]) for f in checked)
    ]
    for record in stale:
        change = "case only" if record.get("case_only") else f"- {record['was']}\n  + {record['now']}"
        print(f"\nstale record (no surviving mutant matches it): {record['function']}\n  {change}")
    took = f"; {seconds / 60:.0f} min {seconds % 60:02.0f} s" if seconds is not None else ""
    print(
        f"\n{len(found)} mutants generated: {counts['killed']} killed ({counts['timeout']} by a timeout), "
        f"{counts['equivalent']} equivalent (recorded in {EQUIVALENTS.relative_to(ROOT)}), "
        f"{counts['survived']} survived unrecorded"
        + (f", {counts['not run']} not run yet" if counts["not run"] else "")
        + took
    )
    return 1 if unexplained or stale or counts["not run"] else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("globs", nargs="*", help="mutant names (globs) to run again; default: all")
    parser.add_argument("--fresh", action="store_true", help="forget earlier results: run every mutant")
    parser.add_argument("--again", action="store_true", help="run the last run's unrecorded survivors again")
    parser.add_argument("--report", action="store_true", help="report the last run's results only")
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested at once (default 2)")
    args = parser.parse_args()
    try:
        import mutmut  # noqa: F401
    except ImportError:
        sys.exit(
            'mutmut is not installed: .venv/bin/uv pip install --python .venv/bin/python -e ".[dev,mutation]"'
        )
    if args.fresh:
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    if args.again:
        os.chdir(ROOT)
        # mutmut maps tests to the functions they call once, and does not notice tests added since: a test
        # written for a survivor would not be run against it. Mapped again (a minute) before running again.
        (ROOT / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
        records = equivalents()
        args.globs = [
            m.name
            for m in results(args.globs)
            if m.status not in KILLED | {NOT_RUN} and not any(recorded(r, m) for r in records)
        ]
        if not args.globs:
            print("no survivor to run again")
            return 0
    os.chdir(ROOT)
    if not args.report:
        refresh_copies()
    seconds = None if args.report else run_mutmut(args.globs, args.max_children)
    os.chdir(ROOT)  # mutmut reads its configuration and results from here
    return report(results(args.globs), equivalents(), seconds)


if __name__ == "__main__":
    sys.exit(main())
