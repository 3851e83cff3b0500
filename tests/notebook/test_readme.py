"""The README's notebook code runs as written: the 30-second tour, in a kernel's own folder.

Issue 20: the tour read ``notebooks/data/prompts.csv``, which a notebook made in JupyterLab (its kernel
starts in the notebook's folder) or a pip install does not have. The tour is read from README.md and
run as one cell in an empty working folder; its comments' figures are checked against what it did,
and the sandbox's own ledger says the run charged what the estimate said.
"""

import re
from pathlib import Path

import pytest
from _shell import Notebook

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_site_shows_the_same_tour() -> None:
    """The site's home page shows the tour as the README does (tests/notebook/test_site_code.py relies on
    this test to run it)."""
    home = (README.parent / "docs" / "index.md").read_text(encoding="utf-8")
    assert f"```python\n{tour()}```" in home


def tour() -> str:
    """The code block under "## A 30-second tour", exactly as the README shows it."""
    section = README.read_text(encoding="utf-8").split("## A 30-second tour", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_tour_runs_as_written_from_an_empty_folder(
    nb: Notebook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = tour()
    assert "notebooks/" not in code  # nothing relative to the repository
    empty = tmp_path / "somewhere-else"
    empty.mkdir()
    monkeypatch.chdir(empty)
    result = nb.run(code)
    assert result.success, result.error_in_exec or result.error_before_exec
    credits, requests = map(int, re.findall(r"# (\d+) credits, (\d+) estimate requests", code)[0])
    priced = nb.shell.user_ns["df"].mediagen.estimate(
        "gpt-image-2", prompt=nb.shell.user_ns["prompt"], show=False
    )
    summary = priced.attrs["mediagen_estimate"]
    assert (summary.total, summary.requests) == (credits, requests)  # the comment's figures
    done = nb.shell.user_ns["done"]
    assert (done["status"] == "succeeded").all() and len(done) == len(priced)
    ledger = nb.sandbox.world.accounts.ledger
    charged = sum(e["credits"] * (1 if e["kind"] == "charge" else -1) for e in ledger)
    assert charged == credits  # the sandbox charged what the estimate said
    gallery = result.result._repr_html_()  # the last line: done.mediagen.preview()
    assert gallery.count("<img") == len(done)
