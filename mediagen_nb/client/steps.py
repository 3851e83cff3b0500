"""What an operation yields to the client that drives it: a request, a pause, a ledger record.

An operation is a generator that yields steps and receives their results: :class:`Call` (send
this request), :class:`Pause` (sleep) and :class:`Record` (read or write the ledger, off the event
loop). The sync and the async client drive the same generators.
"""

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mediagen_nb.client.config import Secret

T = TypeVar("T")

CATALOG, READ, START = "catalog", "read", "start"  # the kinds of call: which limiters each passes


@dataclass(frozen=True)
class Call:
    """One request to send. ``kind`` decides which limiters it passes through."""

    method: str
    endpoint: str  # a name of mediagen_nb.protocol.paths.PATHS
    kind: str = READ
    params: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, Any] | None = None
    body: Any = None
    idempotency_key: str | None = None
    hold: float = 0.0  # service seconds the service may hold the request (long poll)
    # False for a start the service cannot deduplicate (reedit has no idempotency key): after an
    # ambiguous failure (a broken connection, a 500) it may have started, so it is not sent again.
    replayable: bool = True
    whole: bool = False  # the whole answer (its ``data`` checked), not only ``data``: a page's members
    key: Secret | None = None  # filled by the engine
    # The latest moment (this machine's clock) the request may be written: past it, its stamp no longer
    # says when it reaches the service, and it is not sent (filled by the engine; None: any time).
    send_by: float | None = None


@dataclass(frozen=True)
class Pause:
    """Wait this many of the service's seconds (on the client's one clock)."""

    seconds: float


@dataclass(frozen=True)
class Record:
    """Run ``fn`` (ledger I/O, which may wait on another process) where it cannot stall an event loop."""

    fn: Callable[[], Any]


Step = Call | Pause | Record
Op = Generator[Step, Any, T]


def records_here(op: Op[T]) -> T:
    """Drive ``op`` in the calling thread: for operations that yield only Record steps (no requests)."""
    send: Callable[[Any], Step] = op.send
    value: Any = None
    while True:
        try:
            step = send(value)
        except StopIteration as done:
            result: T = done.value
            return result
        if not isinstance(step, Record):
            op.close()
            raise TypeError(f"{step!r} needs a client to drive it")
        try:
            value, send = step.fn(), op.send
        except Exception as exc:
            value, send = exc, op.throw
