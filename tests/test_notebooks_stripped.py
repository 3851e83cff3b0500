"""Every committed notebook is stored clean: valid nbformat v4, no outputs, no execution counts,
no widget state, and small sample data only. (nbval runs them: ``pytest --nbval-lax notebooks/``.)
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
EXPECTED = {
    "01-quickstart.ipynb",
    "02-bulk-prompt-sweep.ipynb",
    "03-cost-analysis.ipynb",
    "04-replicate-a-short.ipynb",
    "05-topic-to-video.ipynb",
    "06-resume-and-reliability.ipynb",
    "07-comparing-models.ipynb",
}
MAX_DATA_BYTES = 100_000  # the sample data shipped with the package stays small


def test_the_teaching_notebooks_are_all_there() -> None:
    assert {p.name for p in PATHS} >= EXPECTED


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_is_valid_nbformat_v4(path: Path) -> None:
    notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    assert notebook.nbformat == 4
    nbformat.validate(notebook)  # raises ValidationError with the offending cell
    assert notebook.metadata.get("kernelspec", {}).get("language") == "python"


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    code = [cell for cell in raw["cells"] if cell["cell_type"] == "code"]
    assert code, "a notebook without code cells teaches nothing to run"
    for number, cell in enumerate(raw["cells"]):
        where = f"{path.name} cell {number}: {''.join(cell['source'])[:60]!r}"
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{where} has saved outputs"
            assert cell["execution_count"] is None, f"{where} has an execution count"
        assert "widgets" not in cell.get("metadata", {}), f"{where} has widget state"
        assert "execution" not in cell.get("metadata", {}), f"{where} has execution timings"
    assert "widgets" not in raw["metadata"], f"{path.name} stores widget state in its metadata"


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_starts_by_saying_what_it_shows_and_where_it_runs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    first = notebook.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# ")
    assert "sandbox" in first.source and "MEDIAGEN_API_KEY" in first.source


def test_sample_data_ships_with_the_package_and_is_small() -> None:
    """The notebooks read their data from the package (``mg.sample_prompts()``, ``mg.sample_file()``),
    so they run from any folder: JupyterLab starts a kernel in the notebook's folder, papermill in the
    caller's (issue 20: ``data/prompts.csv`` was not found)."""
    data = [p for p in (NOTEBOOKS.parent / "mediagen_nb" / "data").rglob("*") if p.is_file()]
    assert {p.name for p in data} >= {"prompts.csv", "prompts.xlsx"}
    for path in data:
        assert path.stat().st_size <= MAX_DATA_BYTES, f"{path} is too large for sample data"
    for path in PATHS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                assert not re.search(r"read_(csv|excel)\(\s*[\"']", cell.source), (
                    f"{path.name}: {cell.source[:80]}"
                )


def test_what_the_notebooks_and_jupyter_leave_behind_is_ignored_by_git() -> None:
    """Checkpoints JupyterLab writes next to the notebooks, and the notebooks' outputs and ledgers."""
    if shutil.which("git") is None or not (NOTEBOOKS.parent / ".git").exists():
        pytest.skip("not a git checkout")
    for left in ("notebooks/.ipynb_checkpoints/01-quickstart-checkpoint.ipynb", "notebooks/output/x.png"):
        checked = subprocess.run(
            ["git", "check-ignore", "-q", left], cwd=NOTEBOOKS.parent, capture_output=True, check=False
        )
        assert checked.returncode == 0, f"{left} is not ignored by git"
