"""What one process shares, in one place: its connection, ledgers, limits stores, budget and agent tokens.

The client's assembler (:mod:`.assemble`) reads it and hands each part to what uses it; the public
functions that own each part (``mediagen_nb.use``, ``budget`` ...) change it, never another module's
globals. Two choices that concern one module each are kept by it: the preview mode and width
(:mod:`.previews`) and what was uploaded where (:mod:`.uploads`). Settings read from the environment
are :mod:`.settings`'.
"""

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from mediagen_nb.client.clients import AsyncClient, Client
    from mediagen_nb.client.config import Embedded, Secret
    from mediagen_nb.client.ledger import Ledger
    from mediagen_nb.client.limits_store import Store
    from mediagen_nb.client.spending import Budget


@dataclass
class Context:
    """The state of this process that every layer shares."""

    client: "Client | None" = None  # the current connection (None: made from the environment on use)
    async_client: "AsyncClient | None" = None  # made like ``client``, on first use by a batch
    embedded: "Embedded | None" = None  # the user's kept sandbox, once found or started
    budget: "Budget | None" = None  # the session budget (None: read from the environment on use)
    ledgers: "dict[Path, Ledger]" = field(default_factory=dict)  # every ledger file opened, once each
    stores: "dict[str, Store]" = field(default_factory=dict)  # where the limiters' windows are shared
    told: set[str] = field(default_factory=set)  # topics of the lines said once per process
    agent_tokens: "dict[str, Secret]" = field(default_factory=dict)  # agent server URL -> its signed-in token
    notices: TextIO | None = None  # where notice() writes (None: standard output); see notices_to()


PROCESS = Context()


def notice(text: str) -> None:
    """A line the toolkit says once (which sandbox it uses, a start made again): in a notebook, plain
    output of the cell; from the ``mediagen`` command, standard error, as its standard output is the
    result a script reads."""
    print(text, file=PROCESS.notices or sys.stdout, flush=True)


def notices_to(stream: TextIO | None) -> TextIO | None:
    """Send :func:`notice` lines to ``stream`` (None: standard output); the stream they went to before."""
    before, PROCESS.notices = PROCESS.notices, stream
    return before
