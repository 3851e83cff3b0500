"""A test session leaves nothing behind: no kept sandbox running, no temporary folder.

The kept sandbox outlives the process that started it (that is its job), so a test that fails, times out
or loses its worker, or a kernel or JupyterLab started by a module's fixture, could leave one running,
and every session left its ``mediagen-home-*`` and ``mediagen-limits-*`` folders. So the session's first
process makes one folder (:func:`suite_folder`) and makes it the temporary folder of itself
(``tempfile.tempdir``) and of every process it starts (``TMPDIR``): pytest's ``tmp_path`` folders, the
session's HOME and every ``mkdtemp`` of a test, a kernel or a sandbox lie in it. When the session ends
(:func:`end_of_suite`, in that first process only, after its xdist workers) every kept sandbox serving a
folder in it is stopped, and so is any other process whose arguments name the folder (a JupyterLab and
its kernels left by a session cut short), SIGTERM first (a kept sandbox saves and ends), SIGKILL after
:data:`STOP_SECONDS`; then the folder is removed. ``tests/test_suite_cleanup.py`` runs a session with a
test that passes, one that fails, one that times out and one that kills its worker, and finds nothing
left.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

# The folder, for the session's workers (not named MEDIAGEN_*: tests drop those from their processes).
SUITE_ENV = "PYTEST_MEDIAGEN_SUITE"
KEPT = "mediagen_nb.sandbox.kept"
STOP_SECONDS = 5.0
_owned: list[Path] = []


def suite_folder() -> Path:
    """This session's folder: made here in its first process (which removes it at the end), or the one
    its first process made (an xdist worker, a pytest a test runs with this environment)."""
    given = os.environ.get(SUITE_ENV)
    if given and Path(given).is_dir():
        folder = Path(given)
    else:
        folder = Path(tempfile.mkdtemp(prefix="mediagen-tests-")).resolve()
        os.environ[SUITE_ENV] = str(folder)
        _owned.append(folder)
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = str(folder)
    return folder


def kept_sandboxes(folder: Path) -> dict[int, Path]:
    """Pid -> data folder of every running kept sandbox whose data folder lies in ``folder``."""
    found: dict[int, Path] = {}
    for pid, argv in _processes():
        if KEPT not in argv or "--data-dir" not in argv[:-1]:
            continue
        data = Path(argv[argv.index("--data-dir") + 1])
        with contextlib.suppress(OSError, ValueError):
            if data.resolve().is_relative_to(folder):
                found[pid] = data
    return found


def started_there(folder: Path) -> set[int]:
    """Every other process whose arguments name ``folder``: kept sandboxes serving a folder in it, and what
    a fixture cut short left (a JupyterLab whose settings live there, its kernels' connection files)."""
    mark, ours = str(folder), {os.getpid(), os.getppid()}
    return {pid for pid, argv in _processes() if pid not in ours and any(mark in arg for arg in argv)}


def _processes() -> list[tuple[int, list[str]]]:
    """Every process of the machine with its arguments (from /proc, else ``ps``)."""
    proc = Path("/proc")
    if proc.is_dir():
        listed = []
        for entry in proc.iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    argv = (entry / "cmdline").read_bytes().split(b"\0")
                    listed.append((int(entry.name), [a.decode(errors="replace") for a in argv if a]))
        return listed
    lines = subprocess.run(["ps", "-A", "-o", "pid=,args="], capture_output=True, text=True).stdout
    rows = (line.strip().partition(" ") for line in lines.splitlines())
    return [(int(pid), args.split()) for pid, _, args in rows]


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended and waiting for its parent, does not)."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_processes(folder: Path) -> set[int]:
    """Stop every process started there (:func:`started_there`): SIGTERM (a kept sandbox saves and ends),
    then SIGKILL; what was stopped."""
    running = started_there(folder)
    for pid in running:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    left = set(running)
    while left and time.monotonic() < deadline:
        left = {pid for pid in left if alive(pid)}
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return running


def end_of_suite(folder: Path) -> None:
    """In the process that made ``folder``: stop its kept sandboxes, then remove it."""
    if folder not in _owned:
        return
    _owned.remove(folder)
    stop_processes(folder)
    shutil.rmtree(folder, ignore_errors=True)
