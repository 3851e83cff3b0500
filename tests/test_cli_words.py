"""Issue 39: the ``mediagen`` command says what it does in a terminal's words, beside its result.

Each case is one the issue met: ``SpellingLearned`` warnings printed as Python's file, line and source;
"1 credits" on ``mediagen models``; ``mcp-config --write`` wrote ``./.jupyter/mcp_settings.json`` where
its help said only ``.jupyter/``; ``mediagen sandbox``'s default clock (real time) was not stated; the
embedded sandbox's banner went to standard output, which a script reads (tests/test_kept_sandbox.py).
"""

import json
import re
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout, suppress
from io import StringIO
from pathlib import Path

import pytest
from _shared import call_mediagen, environment
from _spellings import THEIRS

from mediagen_nb.cli import main
from mediagen_nb.sandbox import Sandbox, SandboxConfig


@pytest.fixture(scope="module")
def theirs() -> Iterator[Sandbox]:
    """A sandbox spelling the unshown names otherwise, with no names file given to the client."""
    with Sandbox(SandboxConfig(time_scale=600.0, seed=3, wire=THEIRS)) as served:
        yield served


def test_warnings_are_one_line_each_and_credits_are_counted_in_words(theirs: Sandbox, tmp_path: Path) -> None:
    env = environment(**theirs.client_env(), MEDIAGEN_LEDGER=str(tmp_path / "ledger.sqlite"))
    env.pop("MEDIAGEN_WIRE", None)
    done = call_mediagen("models", "--kind", "image", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if line.strip()]
    assert warned and all(line.startswith("mediagen: warning: ") for line in warned), done.stderr
    assert any("MEDIAGEN_WIRE" in line for line in warned)  # the learned spelling, with its setting
    assert not re.search(r"\.py:\d+|SpellingLearned|warnings\.warn", done.stderr), done.stderr
    assert " 1 credit per run" in done.stdout and "1 credits" not in done.stdout


def test_mcp_config_write_says_the_folder_it_writes_in(served: Sandbox, tmp_path: Path) -> None:
    env = environment(**served.client_env(), MEDIAGEN_LEDGER=str(tmp_path / "ledger.sqlite"))
    folder = tmp_path / "project"
    folder.mkdir()
    done = call_mediagen("mcp-config", "--write", env=env, cwd=folder)
    assert done.returncode == 0, done.stderr
    written = folder / ".jupyter" / "mcp_settings.json"
    assert json.loads(written.read_text())["mcp_servers"][0]["name"] == "mediagen"
    assert str(written) in done.stdout  # the whole path, not ".jupyter/..."
    said = help_of("mcp-config")
    assert "current folder" in said and "start JupyterLab" in said


def test_the_sandbox_states_its_default_clock() -> None:
    said = help_of("sandbox")
    assert "default 1: real time" in said


def help_of(command: str) -> str:
    out = StringIO()
    with redirect_stdout(out), redirect_stderr(out), suppress(SystemExit):
        main([command, "--help"])
    return " ".join(out.getvalue().split())  # argparse's line breaks folded
