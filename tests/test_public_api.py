"""The flat public API: ``mediagen_nb.X`` for all a user names, each documented (as httpx tests it)."""

import inspect
import re
from pathlib import Path

from _shared import fresh_python

import mediagen_nb as mg
from mediagen_nb import client

ROOT = Path(__file__).resolve().parents[1]


def test_every_exported_name_resolves_and_is_documented() -> None:
    assert mg.__all__ == sorted(set(mg.__all__))
    assert set(client.__all__) <= set(mg.__all__)  # the client's names are the package's
    for name in mg.__all__:
        value = getattr(mg, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.startswith("mediagen_nb"), name
            assert inspect.getdoc(value), f"mediagen_nb.{name} has no docstring"


def test_dir_lists_the_public_api() -> None:
    assert [name for name in dir(mg) if not name.startswith("_")] == [
        name for name in mg.__all__ if not name.startswith("_")
    ]


def test_the_client_exports_what_it_defines() -> None:
    """Every public class of the client's exception hierarchy is reachable from the top."""
    errors = [
        name
        for name, value in vars(client.errors).items()
        if inspect.isclass(value) and issubclass(value, client.MediagenError) and not name.startswith("_")
    ]
    assert errors and set(errors) <= set(mg.__all__)


def test_every_name_the_docs_use_exists() -> None:
    """``mg.X`` and ``mediagen_nb.X`` in the README, the site's pages and the notebooks name real members."""
    texts = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "notebooks").glob("*.ipynb")),
    ]
    used = {
        name
        for path in texts
        for name in re.findall(r"\b(?:mg|mediagen_nb)\.([A-Za-z_]\w*)\b(?!\.py)", path.read_text())
    }
    subpackages = {
        "client",
        "batch",
        "notebook",
        "sandbox",
        "protocol",
        "cli",
        "commands",
        "demo",
        "agent_cli",
        "doctor",
        "ray",
        "daft",
    }
    missing = sorted(name for name in used - subpackages if not hasattr(mg, name))
    assert used and not missing, f"named in the docs but not in mediagen_nb: {missing}"


def test_star_import_gives_the_flat_api() -> None:
    code = "from mediagen_nb import *; print(Client.__name__, template.__name__, ValidationError.__name__)"
    assert fresh_python(code).split() == ["Client", "template", "ValidationError"]
