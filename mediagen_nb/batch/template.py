"""Text inputs filled from DataFrame columns: ``template("A {style} photo of {subject}")``."""

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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
        return self.pattern.format_map({name: row[name] for name in self.columns})


def template(pattern: str) -> Template:
    """A text input built from columns, e.g. ``prompt=template("A {style} photo of {subject}")``."""
    return Template(pattern)
