"""The notebook layer's fixture ``nb``: a fresh shell, its sandbox and a recorded session client."""

import atexit
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from _shell import Notebook
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from mediagen_nb.client import Client, settings
from mediagen_nb.notebook.session import SESSION
from mediagen_nb.sandbox import Sandbox


@pytest.fixture
def nb(
    served: Sandbox, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Notebook]:
    """A fresh InteractiveShell with ``%load_ext mediagen_nb`` and a session client on ``served``."""
    monkeypatch.chdir(tmp_path)  # the local ledger (.mediagen/ledger.sqlite) goes here
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    for name in (settings.ENV_KEY, settings.ENV_BASE_URL, settings.ENV_TIME_SCALE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])  # the shell replaces it
    monkeypatch.setattr(SESSION, "history", [])  # restored after the test
    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    atexit.unregister(shell.atexit_operations)
    control = httpx.Client(base_url=str(served.base_url), timeout=10)
    notebook = Notebook(shell, served, control)
    SESSION.use(Client.for_sandbox(served, http_client=notebook.http()))
    try:
        shell.run_line_magic("load_ext", "mediagen_nb")
        yield notebook
    finally:
        out, err = capsys.readouterr()
        sys.stdout.write(out)
        sys.stderr.write(err)
        SESSION.client.close()
        for client in notebook.transports:
            client.close()
        control.close()
        InteractiveShell.clear_instance()
    assert "Traceback" not in out + err, "a magic printed a traceback"
