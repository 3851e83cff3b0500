"""The session tests/test_suite_cleanup.py runs: each case starts a kept sandbox and ends in its own way.

Not collected by the suite itself (not ``test_*.py``); each case writes the pid it started to the file
``CLEANUP_PIDS`` names, so the outer test knows what must be gone.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mediagen_nb.sandbox import kept


def started(where: Path | None = None) -> None:
    record(kept.ensure(600, where).pid)


def record(pid: int) -> None:
    with open(os.environ["CLEANUP_PIDS"], "a") as pids:
        pids.write(f"{pid}\n")


def test_passes_with_a_kept_sandbox_outside_its_own_folder(tmp_path: Path) -> None:
    started(tmp_path / "elsewhere")  # no fixture of the test stops this one


def test_fails_with_its_kept_sandbox_running() -> None:
    started()
    pytest.fail("a failure, on purpose")


@pytest.fixture
def running(tmp_path: Path) -> None:
    """A kept sandbox started before the test's own time counts (however long a loaded machine takes)."""
    started(tmp_path / "elsewhere")


@pytest.mark.timeout(3, func_only=True)
@pytest.mark.usefixtures("running")
def test_times_out_with_a_kept_sandbox_running() -> None:
    time.sleep(60)


def test_kills_its_worker_with_a_kept_sandbox_running(tmp_path: Path) -> None:
    started(tmp_path / "elsewhere")
    # and a server of a fixture that will never be torn down, detached as JupyterLab's kernels are not
    waiting = [sys.executable, "-c", "import time; time.sleep(300)", str(tmp_path / "lab")]
    record(subprocess.Popen(waiting, start_new_session=True).pid)
    os._exit(1)  # no fixture teardown, no end of this worker's session
