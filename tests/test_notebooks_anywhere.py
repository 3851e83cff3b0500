"""A notebook runs wherever its kernel starts, as papermill runs it without ``--cwd``.

Issue 20: ``papermill 02-bulk-prompt-sweep.ipynb out.ipynb`` from the repository's root failed with
``FileNotFoundError: data/prompts.xlsx``: the kernel ran in the caller's folder, and the notebook read
its data relative to its own. The notebooks now read the data shipped with the package. Here the
sweep notebook runs whole (nbclient, as papermill does) in a kernel started in an empty folder, on an
embedded sandbox at x600 with a ledger of its own; what it writes lands in that folder.
"""

import os
import sys
from pathlib import Path

import nbformat
import pytest

nbclient = pytest.importorskip("nbclient", reason="nbclient comes with nbconvert: pip install -e '.[dev]'")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "02-bulk-prompt-sweep.ipynb"


def test_the_sweep_notebook_runs_in_a_kernel_started_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith("MEDIAGEN_")]:
        monkeypatch.delenv(name)  # no key of the developer's: the embedded sandbox
    monkeypatch.setenv("MEDIAGEN_TIME_SCALE", "600")
    monkeypatch.setenv("MEDIAGEN_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(elsewhere)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on any error
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert errors == []
    assert (elsewhere / "output" / "sweep-results.xlsx").is_file()  # its outputs go where it runs
