"""What one process shares, in one place: its connection, ledgers, budget, preview choices and uploads.

The client's assembler (:mod:`.assemble`) reads it and hands each part to what uses it; the public
functions that own each part (``mediagen_nb.use``, ``budget``, ``preview_mode``, ``uploads`` ...)
change it, never another module's globals. Settings read from the environment are :mod:`.settings`'.
"""

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from mediagen_nb.client.clients import AsyncClient, Client
    from mediagen_nb.client.config import Embedded, Secret
    from mediagen_nb.client.ledger import Ledger
    from mediagen_nb.client.limits_store import Store
    from mediagen_nb.client.spending import Budget

RESULT_WIDTH = 320  # px of a result's media when none is given (%config MediagenMagics.preview_width)


@dataclass
class Uploaded:
    """What this process has put where the service can read it, so a file goes up once."""

    digests: dict[tuple[str, int, int], str] = field(default_factory=dict)  # (path, size, mtime) -> sha256
    urls: dict[tuple[str, str, str], tuple[str, float]] = field(default_factory=dict)  # place -> (URL, until)
    sources: dict[str, str] = field(default_factory=dict)  # URL handed out -> the file's content name
    sent: int = 0  # uploads really sent (the same file twice counts once)


@dataclass
class Context:
    """The state of this process that every layer shares."""

    client: "Client | None" = None  # the current connection (None: made from the environment on use)
    async_client: "AsyncClient | None" = None  # made like ``client``, on first use by a batch
    embedded: "Embedded | None" = None  # the user's kept sandbox, once found or started
    budget: "Budget | None" = None  # the session budget (None: read from the environment on use)
    ledgers: "dict[Path, Ledger]" = field(default_factory=dict)  # every ledger file opened, once each
    stores: "dict[str, Store]" = field(default_factory=dict)  # where the limiters' windows are shared
    preview_mode: str | None = None  # preview_mode(...): None follows MEDIAGEN_PREVIEW
    result_width: int = RESULT_WIDTH  # preview_width(...)
    inlined: dict[str, str | None] = field(default_factory=dict)  # media URL -> its data: URI, read once
    upload_target: Any = None  # uploads(...): (fsspec URL or function, StorageOptions), or None
    uploaded: Uploaded = field(default_factory=Uploaded)
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
