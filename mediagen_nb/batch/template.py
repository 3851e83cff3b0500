"""Text inputs filled from DataFrame columns: ``template("A {style} photo of {subject}")``."""

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mediagen_nb.batch.columns import matching


@dataclass(frozen=True)
class Template:
    """A ``str.format`` pattern whose ``{names}`` are columns; ``{{`` and ``}}`` are literal braces."""

    pattern: str

    def __post_init__(self) -> None:
        for _, name, spec, conversion in string.Formatter().parse(self.pattern):
            if name is not None and (not name.strip() or spec or conversion):
                raise ValueError(
                    f"template {self.pattern!r}: use plain {{column}} names, without ! or : parts"
                )

    @property
    def columns(self) -> tuple[str, ...]:
        """The column names the pattern reads, in order, without repeats."""
        names = [n for _, n, _, _ in string.Formatter().parse(self.pattern) if n is not None]
        return tuple(dict.fromkeys(names))

    def render(self, row: Mapping[str, Any]) -> str:
        """The pattern filled from ``row``; a ``{name}`` finds its column as a mapping does (``{subject}``
        reads ``Subject ``: :mod:`mediagen_nb.batch.columns`)."""
        return self.pattern.format_map({name: row[self.column(name, row)] for name in self.columns})

    @staticmethod
    def column(name: str, row: Mapping[str, Any]) -> str:
        """The column of ``row`` that ``{name}`` reads (``name`` itself when none matches: a KeyError)."""
        found = matching(name, [str(key) for key in row])
        return found[0] if len(found) == 1 else name


def template(pattern: str) -> Template:
    """A text input built from columns, e.g. ``prompt=template("A {style} photo of {subject}")``."""
    return Template(pattern)
