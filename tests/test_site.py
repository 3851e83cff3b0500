"""Issue 39: the README is a front door to a documentation site, and both stay true.

The README is at most 250 lines; the blocks it and the site do not run (installs, servers) are checked
here: each install names extras that exist, the README's main job installs the toolkit alone, its test
line is the one `.ci/run` runs. Each notebook's page on the site is an executed copy of the notebook
(docs/notebooks/, made by docs/notebooks/refresh.py): the same cells, every code cell run, no error, its
media inlined. (tests/notebook/test_site_code.py runs every other block; CI builds the site strictly.)
"""

import re
import shlex
import sys
from pathlib import Path

import nbformat
import pytest
from _pages import ROOT, blocks, commands, pages

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

README = ROOT / "README.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def test_the_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for section in ("## Set up (two commands)", "## A 30-second tour"):
        assert section in text
    assert "](docs/images/sweep-gallery.png)" in text and (ROOT / "docs/images/sweep-gallery.png").is_file()


def test_the_main_job_installs_the_toolkit_alone_and_the_tests_run_as_ci_does() -> None:
    installs = [b.code.strip() for b in blocks(README) if "mediagen demo" in b.code]
    assert installs == ["python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/mediagen demo"]
    [tests] = [b.code.strip() for b in blocks(README) if "pytest" in b.code]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert any(line.startswith(tests + " ") for line in ci), (
        "the README's test line is not the one .ci/run runs"
    )


def test_every_block_not_run_says_why_and_its_installs_name_real_extras() -> None:
    unrun = [b for page in pages() for b in blocks(page) if b.not_run is not None]
    assert unrun
    for block in unrun:
        assert len(block.not_run or "") > 20, f"{block}: say why it is not run and what checks it"
        for line in commands(block.code) if block.language == "bash" else block.code.splitlines():
            for spec in re.findall(r"""-e\s+(?:"|')?\.\[([^\]]+)\]""", line):
                missing = set(spec.split(",")) - EXTRAS
                assert not missing, f"{block}: no extra {missing} in pyproject.toml"
            for spec in re.findall(r"mediagen-nb\[([^\]]+)\]", line):
                assert not set(spec.split(",")) - EXTRAS, f"{block}: {spec}"
            if line.startswith(("python3 ", ".venv/bin/")):
                shlex.split(line)  # a line a shell can read


def test_the_colab_environment_of_ci_installs_what_the_colab_line_brings() -> None:
    [line] = [b.code.strip() for b in blocks(ROOT / "docs/guides/front-ends.md") if "%pip install" in b.code]
    extra = re.search(r"mediagen-nb\[(\w+)\]", line)
    assert extra and f'-e ".[{extra.group(1)}]"' in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_page_is_the_notebook_run(source: Path) -> None:
    page = ROOT / "docs" / "notebooks" / source.name
    assert page.is_file(), f"run docs/notebooks/refresh.py: {page.name} has no page"
    shown, asked = nbformat.read(page, as_version=4), nbformat.read(source, as_version=4)
    refresh = "changed since its page was made: run .venv/bin/python docs/notebooks/refresh.py"
    assert [(c.cell_type, c.source) for c in shown.cells] == [(c.cell_type, c.source) for c in asked.cells], (
        f"{source.name} {refresh}"
    )
    code = [c for c in shown.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"{page.name}: a cell was not run"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{page.name}: {errors[0].ename}: {errors[0].evalue}"
    html = "".join(str(o.get("data", {}).get("text/html", "")) for c in code for o in c.outputs)
    assert not re.search(r"""<(?:img|audio|video|source)[^>]*src=["']https?://""", html), (
        f"{page.name}: a media source is a URL the site cannot reach; refresh inlines them"
    )
    assert "/tmp/" not in page.read_text(encoding="utf-8")  # the refresh's temporary folders read as ~
