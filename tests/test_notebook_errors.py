"""A notebook whose magic fails fails ``pytest`` in ``notebooks/``: an error output or a UsageError alike.

Each case writes a two-cell notebook beside a copy of ``notebooks/conftest.py``, runs it with the
project's own pytest configuration (nbval options from ``pyproject.toml``) in a child process, and
expects that cell to fail.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from _shared import environment

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("cell", "shown"),
    [
        ("%%generate gpt-image-2\nA gore scene", "Prompt rejected by content moderation"),
        ("%%generate gpt-image-2 --quality ultra\na fox", "quality must be one of"),
        ("%no_such_magic", "UsageError"),
    ],
    ids=["refused-by-the-service", "refused-by-the-client", "ipython-usage-error"],
)
@pytest.mark.timeout(180)
def test_a_failing_magic_fails_the_notebook(tmp_path: Path, cell: str, shown: str) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("%load_ext mediagen_nb"), nbformat.v4.new_code_cell(cell)]
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(ROOT / "notebooks" / "conftest.py", folder / "conftest.py")
    path = folder / "failing.ipynb"
    nbformat.write(notebook, path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            str(ROOT / "pyproject.toml"),
            str(path),
        ],
        cwd=tmp_path,
        env=environment(MEDIAGEN_LEDGER=str(tmp_path / "ledger.sqlite")),
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout and shown in done.stdout
