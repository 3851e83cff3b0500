"""JSON from outside nested no deeper than the sandbox reads: request bodies, a synced catalog's answers
and a snapshot's files alike.

Python's JSON parser and writer recurse once per level, so a document nested thousands deep raises
``RecursionError`` wherever it is parsed or written again (a traceback, or a 500). Nothing the service
sends or takes comes near ``MAX_DEPTH``: the bundled catalog's deepest record nests 6 levels, its
``openapi.json`` 11, a request body a few. Deeper documents are refused, in one line, before anything
recurses over them.
"""

import json
from typing import Any

MAX_DEPTH = 64


class TooDeep(ValueError):
    """A JSON document nested deeper than the sandbox reads."""

    def __init__(self, levels: int = MAX_DEPTH) -> None:
        super().__init__(f"nested more than {levels} levels deep")
        self.levels = levels


def check(value: Any, levels: int = MAX_DEPTH) -> None:
    """Raise :class:`TooDeep` when ``value`` nests lists and objects deeper than ``levels`` (a loop, not
    recursion, so any depth is measured)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= levels and children:
            raise TooDeep(levels)
        stack.extend((child, depth + 1) for child in children)


def loads(raw: str | bytes, **hooks: Any) -> Any:
    """``json.loads`` that refuses documents nested deeper than ``MAX_DEPTH`` (:class:`TooDeep`, also a
    ``ValueError`` as every parse error is)."""
    try:
        value = json.loads(raw, **hooks)
    except RecursionError:
        raise TooDeep() from None
    check(value)
    return value
