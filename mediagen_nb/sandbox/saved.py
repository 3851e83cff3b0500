"""What a part of the sandbox keeps across restarts, as rows it dumps and loads itself.

Each part that holds state (the accounts, the agent's access tokens, each API's backend, the webhook
outbox) knows its own resources: :meth:`Saved.dump` gives what changed since the last dump as rows,
:meth:`Saved.load` takes back every row it saved. ``state.py`` only stores the rows, so it knows no
resource, and a new kind of resource is saved where it is defined (as moto's backends keep their own).
"""

import json
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

Row = tuple[str, str, Any]  # kind, id, body: anything JSON writes, or None to forget the row
Rows = Mapping[str, Mapping[str, Any]]  # the saved bodies by kind, then id, in the order first saved
IDEMPOTENCY = "idempotency:"  # + a kind of start: the rows of its Idempotency-Keys


class Saved(Protocol):
    """A part of the sandbox that saves its own state."""

    def dump(self) -> Iterator[Row]:
        """The rows changed since the last dump (their marks cleared as they are given)."""
        ...

    def load(self, rows: Rows) -> None:
        """Take back what earlier dumps saved (into a part built empty)."""
        ...


def marked(kind: str, unsaved: set[str], items: Mapping[str, Any]) -> Iterator[Row]:
    """The rows of ``kind`` of the ``items`` whose ids are marked ``unsaved`` (made or changed since the
    last dump), their marks cleared; an id marked and since removed gives no row."""
    ids = list(unsaved)
    unsaved.clear()
    for key in ids:
        if key in items:
            yield kind, key, items[key].to_dict()


def text(value: Any) -> str:
    """``value`` as the state file writes it: compact JSON, Unicode kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
