"""Run the notebooks (``pytest --nbval-lax notebooks/``) on a fast embedded sandbox.

nbval starts one kernel per notebook, in the notebook collector's setup, which pytest runs inside
the setup of the notebook's first cell, after this hook. The kernel inherits this process's
environment, so the hook sets it just before: the embedded sandbox's clock at ``NBVAL_TIME_SCALE``
(600 simulated seconds per real second; the notebooks default to 30), no ``MEDIAGEN_API_KEY``
or ``MEDIAGEN_BASE_URL``, so a key in the developer's shell never sends CI's notebooks to the real
service, a ledger of the test session's own (``MEDIAGEN_LEDGER``), and HOME, the data folder and the
cache folder of the session, never the developer's own. Each notebook gets a data folder of its own,
so its kernel's embedded sandbox is a kept sandbox of its own (a fresh demo account, as a newcomer's
first run), stopped when the notebook's last cell is done. The previous values come back when the
last notebook cell is done (and at the end of the session), so tests outside this folder never see
them.

``MEDIAGEN_NBVAL_SERVICE=1`` keeps the key, the base URL and the time scale of the environment:
the notebooks then run against the service (or a sandbox) they name, and spend what they say.
"""

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

NBVAL_TIME_SCALE = "600"
SESSION = Path(tempfile.mkdtemp(prefix="mediagen-nbval-"))
DATA = SESSION / "data"  # a folder per notebook in it: its kernel's XDG_DATA_HOME
SETTINGS = {
    "MEDIAGEN_TIME_SCALE": NBVAL_TIME_SCALE,
    "MEDIAGEN_API_KEY": None,  # None: removed for the kernels
    "MEDIAGEN_BASE_URL": None,
    "MEDIAGEN_BUDGET": None,
    # The notebooks' paid starts go to a ledger of this test session, not the developer's own.
    "MEDIAGEN_LEDGER": str(SESSION / "ledger.sqlite"),
    "HOME": str(SESSION / "home"),
    "XDG_CACHE_HOME": str(SESSION / "home" / ".cache"),
    "XDG_DATA_HOME": str(DATA),
}
_saved: dict[str, str | None] | None = None


def _is_notebook_cell(item: pytest.Item) -> bool:
    return type(item).__name__ == "IPyNbCell" and type(item).__module__.startswith("nbval")


def _apply() -> None:
    global _saved
    if _saved is not None or os.environ.get("MEDIAGEN_NBVAL_SERVICE") == "1":
        return
    _saved = {name: os.environ.get(name) for name in SETTINGS}
    for name, value in SETTINGS.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _notebook(item: pytest.Item) -> str:
    return Path(str(item.fspath)).stem


def _stop_sandbox(notebook: str) -> None:
    """Stop the kept sandbox the notebook's kernel started, if it did (bounded: SIGTERM, then SIGKILL)."""
    from mediagen_nb.sandbox import kept

    folder = DATA / notebook / "mediagen_nb" / "sandbox"
    if (folder / kept.RECORD).is_file():
        kept.stop(folder)


def _restore() -> None:
    global _saved
    if _saved is None:
        return
    for name, value in _saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _saved = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _is_notebook_cell(item):
        _apply()  # before nbval's collector setup starts this notebook's kernel
        if _saved is not None:
            os.environ["XDG_DATA_HOME"] = str(DATA / _notebook(item))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if not _is_notebook_cell(item):
        return
    if _saved is not None and (nextitem is None or _notebook(nextitem) != _notebook(item)):
        _stop_sandbox(_notebook(item))
    if nextitem is None or not _is_notebook_cell(nextitem):
        _restore()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Fail a cell that printed IPython's UsageError: a magic error that made no error output.

    Our magics raise errors that are real error outputs, which nbval fails on; IPython's own
    UsageError (an unknown magic, a bad ``%load_ext``) only prints to stderr, so it is caught here.
    """
    outcome = yield
    if outcome.excinfo is not None or not _is_notebook_cell(item):
        return
    for output in getattr(item, "test_outputs", None) or []:
        text = output.get("text", "") if output.get("name") == "stderr" else ""
        if "UsageError:" in text:
            pytest.fail(f"the cell printed a magic error: {text.strip()}", pytrace=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if DATA.is_dir():  # a session cut short: the sandboxes of notebooks it did not finish
        for folder in DATA.iterdir():
            _stop_sandbox(folder.name)
    _restore()
    shutil.rmtree(SESSION, ignore_errors=True)  # the session's ledger, HOME and data folders
