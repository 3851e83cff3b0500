"""How a sweep's messages name what the user wrote: Python's words in a notebook, the CLI's in a terminal.

A refusal names the fix in the words the user can type where they are: ``columns={'Prompt': 'prompt'}``
and ``quality='high'`` for ``df.mediagen``, ``--map "Prompt=prompt"`` and ``--set quality=high`` for
``mediagen sweep``. The CLI says which it speaks with :func:`speaking` around its calls.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Words:
    """One vocabulary: how the table, a mapping, a constant, a template and an option are written."""

    table: str  # "this DataFrame", "the sheet"
    cli: bool

    def mapping(self, column: str, field: str) -> str:
        """How to say "this column fills that input"."""
        if self.cli:
            pair = f"{column}={field}"
            return f"--map {_shell(pair)}"
        return f"columns={{{column!r}: {field!r}}}"

    @property
    def mapping_option(self) -> str:
        return "--map" if self.cli else "columns"

    def constant(self, field: str = "FIELD", value: str = "VALUE") -> str:
        """How to give every row the same value."""
        return f"--set {_shell(f'{field}={value}')}" if self.cli else f"{field}={value} constants"

    @property
    def template_option(self) -> str:
        return "--template" if self.cli else "template"

    def option(self, name: str, value: object = None) -> str:
        """A keyword of ``df.mediagen`` (``max_credits=500``) as the CLI writes it (``--max-credits 500``)."""
        if self.cli:
            flag = "--" + name.replace("_", "-")
            return flag if value is None else f"{flag} {_shell(str(value))}"
        return f"{name}=" if value is None else f"{name}={value!r}"


def _shell(text: str) -> str:
    """``text`` quoted for a shell when it needs it (spaces, quotes): ``"Prompt Text =prompt"``."""
    plain = all(c.isalnum() or c in "-_=.,:/+@%" for c in text)
    return text if plain and text else '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


PYTHON = Words(table="this DataFrame", cli=False)
CLI = Words(table="the sheet", cli=True)
_SPOKEN: ContextVar[Words] = ContextVar("mediagen_words", default=PYTHON)


def words() -> Words:
    """The vocabulary of the current call: Python's, unless a :func:`speaking` block says otherwise."""
    return _SPOKEN.get()


@contextmanager
def speaking(vocabulary: Words) -> Iterator[None]:
    """Messages raised or warned inside speak ``vocabulary``."""
    token = _SPOKEN.set(vocabulary)
    try:
        yield
    finally:
        _SPOKEN.reset(token)
