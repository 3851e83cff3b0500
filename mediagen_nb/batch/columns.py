"""How a name finds a column of a table as people make them: ``Prompt Text `` with its trailing space,
``QUALITY``, ``aspect-ratio``.

One rule everywhere (a mapping, a template's ``{names}``, a column named like an input): the column
written exactly, else the one column equal to it with case, spaces, ``-`` and ``_`` ignored.
"""

import re
from collections.abc import Iterable


def loose(name: str) -> str:
    """A name as matching sees it: case, spaces, ``-`` and ``_`` ignored."""
    return re.sub(r"[\s_\-]+", "", name).lower()


def matching(name: str, columns: Iterable[str]) -> list[str]:
    """The columns ``name`` stands for: itself when it is one, else every column equal to it loosely
    (one for a match, several when the table is ambiguous, none when it has no such column)."""
    names = list(columns)
    if name in names:
        return [name]
    return [column for column in names if loose(column) == loose(name) and loose(name)]
