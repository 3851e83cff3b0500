"""The sandbox's package data (the model catalog, word lists), read from TOML files beside the code."""

import sys
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]  # installed on 3.10 only


def load(package: str, name: str) -> dict[str, Any]:
    """The TOML file ``name`` of ``package`` (e.g. ``mediagen_nb.sandbox.replication``), parsed."""
    table: dict[str, Any] = tomllib.loads(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
    return table


def words(table: dict[str, Any], name: str) -> tuple[str, ...]:
    """A list of strings of a loaded table, as a tuple; a ``ValueError`` naming it when it is not one."""
    value = table.get(name)
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise ValueError(f"word list {name!r} must be a non-empty list of strings")
    return tuple(value)
