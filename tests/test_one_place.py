"""Names defined once: the package's version (``_version.py``, which the sandbox reads instead of the
package's front door) and a model's output kinds (``protocol/documents.py``'s ``KINDS``)."""

import ast
import importlib.metadata
from pathlib import Path

import mediagen_nb
from mediagen_nb._version import __version__

PACKAGE = Path(mediagen_nb.__file__).parent


def modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(PACKAGE.rglob("*.py"))]


def test_the_version_is_kept_in_one_place() -> None:
    assert mediagen_nb.__version__ == __version__ == importlib.metadata.version("mediagen-nb")


def test_the_sandbox_does_not_import_the_package_front_door() -> None:
    for path, tree in modules():
        if "sandbox" not in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "mediagen_nb":
                raise AssertionError(f"{path}: from mediagen_nb import {[a.name for a in node.names]}")


def test_the_output_kinds_are_defined_once() -> None:
    where = []
    for path, tree in modules():
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            value = node.value if isinstance(node, ast.Assign) else None
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            literal = isinstance(value, (ast.Tuple, ast.List, ast.Set)) and {
                e.value for e in value.elts if isinstance(e, ast.Constant)
            } >= {"image", "video", "audio"}
            if any(n.endswith("KINDS") for n in names) and literal:
                where.append(str(path.relative_to(PACKAGE)))
    assert where == ["protocol/documents.py"]
