"""The layers import one way: client <- batch <- notebook; the sandbox and the protocol stand alone.

Read from the source (every import, also the lazy ones inside functions), so a shortcut across a
layer fails here rather than in a user's notebook without pandas, or in a sandbox run on its own.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mediagen_nb"

# layer -> what it must never import (module prefixes)
FORBIDDEN = {
    "protocol": (
        "mediagen_nb.client",
        "mediagen_nb.batch",
        "mediagen_nb.notebook",
        "mediagen_nb.sandbox",
        "httpx",
        "pandas",
        "IPython",
        "ipywidgets",
    ),
    "sandbox": (
        "mediagen_nb.client",
        "mediagen_nb.batch",
        "mediagen_nb.notebook",
        "mediagen_nb.doctor",
        "mediagen_nb.cli",
        "mediagen_nb.commands",
        "pandas",
        "IPython",
        "ipywidgets",
    ),
    "client": (
        "mediagen_nb.batch",
        "mediagen_nb.notebook",
        "mediagen_nb.sandbox",
        "pandas",
        "IPython",
        "ipywidgets",
    ),
    "batch": ("mediagen_nb.notebook", "IPython", "ipywidgets"),
}


def imports(module: Path) -> list[tuple[int, str]]:
    """Every module name ``module`` imports, with its line (relative imports resolved)."""
    package = ".".join(module.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


# The one allowed crossing: with no key, the client's connection starts the embedded sandbox.
ALLOWED = {("client/config.py", "mediagen_nb.sandbox")}


def crossings(layer: str) -> list[str]:
    bad = []
    for module in sorted((PACKAGE / layer).rglob("*.py")):
        where = module.relative_to(PACKAGE).as_posix()
        for line, name in imports(module):
            banned = [f for f in FORBIDDEN[layer] if name == f or name.startswith(f + ".")]
            if banned and (where, banned[0]) not in ALLOWED:
                bad.append(f"{module.relative_to(PACKAGE.parent)}:{line} imports {name}")
    return bad


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_only_what_lies_below_it(layer: str) -> None:
    assert crossings(layer) == []


# The engines' adapters, the only modules that may import Ray or Daft (the [ray] and [daft] extras).
ENGINE_ADAPTERS = {"ray.py": "ray", "daft.py": "daft"}


def test_only_the_engine_adapters_import_ray_or_daft() -> None:
    bad = []
    for module in sorted(PACKAGE.rglob("*.py")):
        where = module.relative_to(PACKAGE).as_posix()
        for line, name in imports(module):
            engine = name.split(".")[0]
            if engine in ENGINE_ADAPTERS.values() and ENGINE_ADAPTERS.get(where) != engine:
                bad.append(f"{module.relative_to(PACKAGE.parent)}:{line} imports {name}")
    assert bad == []
