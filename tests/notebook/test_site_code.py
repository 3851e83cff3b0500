"""Issue 39: every code block of the README and of the site runs as written, on the bundled data.

Each page's ``python`` blocks run in order in a fresh IPython shell (magics loaded by the page itself,
as a reader's notebook would), from an empty folder, with the environment pointing ``mg.Client()`` and
``mediagen`` at a served sandbox (as ``MEDIAGEN_BASE_URL`` and ``MEDIAGEN_API_KEY`` would at the
service). Its ``bash`` blocks run each command: ``mediagen ...`` through the command's own ``main`` in
this process (the same parsers and code, without an interpreter each), anything else in bash. A command
that must fail says so at its end (``# exit 2``). Blocks marked ``<!-- not run: WHY -->`` are checked by
tests/test_site.py instead. ``text`` blocks are outputs; ``toml`` blocks must parse.
"""

import os
import re
import shlex
import subprocess
import sys

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from pathlib import Path

import pytest
from _pages import LANGUAGES, ROOT, Block, blocks, commands, pages
from _shell import Notebook

from mediagen_nb.cli import main

RUN = {"python", "bash"}
# The tour (the README's, and the site's home page shows the same) runs in tests/notebook/test_readme.py,
# which checks its figures against the sandbox's ledger too: a block with its very code is not run again.
TOUR = next(b.code for b in blocks(ROOT / "README.md") if b.language == "python")
PAGES = [
    page
    for page in pages()
    if any(b.language in RUN and b.not_run is None and b.code != TOUR for b in blocks(page))
]
EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def test_every_block_names_a_language_it_is_tested_by() -> None:
    odd = [f"{b} ```{b.language}" for p in pages() for b in blocks(p) if b.language not in LANGUAGES]
    assert not odd, f"say python, bash, text or toml: {odd}"
    for page in pages():
        for block in blocks(page):
            if block.language == "toml":
                tomllib.loads(block.code)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_code_of_a_page_runs_as_written(
    page: Path, nb: Notebook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "reader"
    work.mkdir()
    monkeypatch.chdir(work)
    for name, value in nb.sandbox.client_env().items():
        monkeypatch.setenv(name, value)
    for block in blocks(page):
        if block.not_run is not None or block.language not in RUN or block.code == TOUR:
            continue
        if block.language == "python":
            result = nb.run(block.code)
            assert result.success, f"{block}: {result.error_in_exec or result.error_before_exec}"
        else:
            for line in commands(block.code):
                run_command(block, line, work, monkeypatch)


def run_command(block: Block, line: str, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = EXIT.search(line)
    want = int(expected.group(1)) if expected else 0
    line = EXIT.sub("", line)
    argv = shlex.split(line, comments=True)
    env = {}
    while argv and ASSIGNMENT.match(argv[0]):
        name, _, value = argv.pop(0).partition("=")
        env[name] = value
    if argv[:1] == ["mediagen"] and not any(c in line for c in "|;&$`><"):
        with monkeypatch.context() as scoped:
            for name, value in env.items():
                scoped.setenv(name, value)
            code = main(argv[1:])
    else:
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=work,
            env={**os.environ, "PATH": path, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        code = done.returncode
        assert "Traceback" not in done.stderr, f"{block}: {line}\n{done.stderr}"
    assert code == want, f"{block}: `{line}` exited {code}, not {want}"
