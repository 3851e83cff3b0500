"""Issue 39: the suite left a kept sandbox running (24 minutes after it ended) and its ``mediagen-home-*``
and ``mediagen-limits-*`` folders behind.

A session of the suite's own conftest (tests/_cleanup.py) runs in a fresh temporary folder with the four
cases of tests/_cleanup_cases.py on an xdist worker: a test that passes with a kept sandbox no fixture
stops, one that fails, one that times out and one that kills its worker, each with a kept sandbox
running. When the session has ended, none of those sandboxes runs, no kept sandbox serves a folder of
that session, nor the other process the last case left, and its temporary folder holds nothing.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _cleanup import SUITE_ENV, alive, kept_sandboxes

TESTS = Path(__file__).resolve().parent


@pytest.mark.realtime  # a session of its own, with a time-out and four sandboxes to stop
def test_a_session_stops_every_kept_sandbox_it_started_and_removes_its_folders(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    pids = tmp_path / "pids.txt"
    env = {k: v for k, v in os.environ.items() if k != SUITE_ENV}
    # only the plugins the cases use: the others' imports took 8 s of CPU in each of its two processes
    env.update(TMPDIR=str(temporary), CLEANUP_PIDS=str(pids), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    plugins = ["-p", "xdist.plugin", "-p", "pytest_timeout", "-p", "no:cacheprovider", "-o", "addopts="]
    cases = TESTS / "_cleanup_cases.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, "-n", "1", "--max-worker-restart", "0", str(cases)],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "1 passed" in said and "Timeout" in said, said
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 5, said  # each case started its sandbox, the last one another process too
    assert not [pid for pid in started if alive(pid)]
    assert not kept_sandboxes(tmp_path)
    assert not list(temporary.iterdir())  # the session's folder (HOME, limits, tmp_path) is gone
