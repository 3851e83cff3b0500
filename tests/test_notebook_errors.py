"""A notebook whose magic fails fails ``pytest`` in ``notebooks/``: an error output or a UsageError alike.

One notebook holds a failing cell per case, beside a copy of ``notebooks/conftest.py``; it runs with
the project's own pytest configuration (nbval options from ``pyproject.toml``) in a child process
(one kernel, one embedded sandbox for all cases), and each of those cells must fail on its own,
showing why, while the cell that loads the extension passes.
"""

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from _shared import environment

ROOT = Path(__file__).resolve().parents[1]
FAILING = {  # a cell that must fail: what its failure shows
    "%%generate gpt-image-2\nA gore scene": "Prompt rejected by content moderation",  # by the service
    "%%generate gpt-image-2 --quality ultra\na fox": "quality must be one of",  # by the client
    "%no_such_magic": "UsageError",  # by IPython
}


@pytest.mark.timeout(180)
def test_each_failing_magic_fails_its_cell_of_the_notebook(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    cells = ["%load_ext mediagen_nb", *FAILING]
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(ROOT / "notebooks" / "conftest.py", folder / "conftest.py")
    path = folder / "failing.ipynb"
    nbformat.write(notebook, path)
    report = tmp_path / "report.xml"
    child = ["-q", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"), f"--junitxml={report}"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *child, str(path)],
        cwd=tmp_path,
        env=environment(MEDIAGEN_LEDGER=str(tmp_path / "ledger.sqlite")),
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{len(FAILING)} failed, 1 passed" in done.stdout, done.stdout
    outcomes: dict[str | None, str | None] = {}
    for case in ET.parse(report).iter("testcase"):
        element = case.find("failure")
        shown_there = None if element is None else element.get("message", "") + (element.text or "")
        outcomes[case.get("name")] = shown_there
    assert list(outcomes) == [f"Cell {i}" for i in range(len(cells))], outcomes
    assert outcomes["Cell 0"] is None
    for i, shown in enumerate(FAILING.values(), start=1):
        failure = outcomes[f"Cell {i}"]
        assert failure is not None and shown in failure, (i, failure)
