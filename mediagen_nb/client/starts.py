"""The one paid start: every operation that charges describes its start, and :meth:`Starts.start` runs it.

A start is, in order: its Idempotency-Key (derived from what is asked, or given, or new), an earlier
start of the same key resumed at no charge, its price held against the session budget, its intent
written to the ledger, the request sent, the answer read and recorded. Whose charge a start is, the
service's answer says: a resource this request made is this process's (it pays for it and counts
it), whoever wrote the intent (an earlier run left unanswered, a killed kernel that never sent it);
a replay (what an earlier request with the key made) is reuse, counted where that request was made.
So a new paid endpoint is one :class:`Start`: what it asks, how it is sent, read and recorded.
"""

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any, ClassVar, Generic, NamedTuple, Protocol, TypeVar

from mediagen_nb.client import errors, idempotency
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.checks import header_value
from mediagen_nb.client.core import Answer, Core
from mediagen_nb.client.steps import Call, Op, Record
from mediagen_nb.protocol import limits as spec_limits
from mediagen_nb.protocol import states


class Resource(Protocol):
    """What a start returns: a resource (a dataclass) with an id and a status, that says it was reused."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str | None: ...

    @property
    def reused(self) -> bool: ...


R = TypeVar("R", bound=Resource)
# Service seconds a resource must predate a start's first send by to count as made before it: the
# service's machines' clocks may differ by this much (the Date header's own second is already allowed).
REPLAY_MARGIN = 2.0


def _instant(text: str | None) -> float | None:
    """An ISO 8601 time (``createdAt``) as Unix seconds, None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo is not None else None


class Recorded(NamedTuple):
    """What the ledger keeps of a start's answer: its status, charge and (when whole) the answer."""

    status: str
    credits: int
    credits_known: bool = True
    resource: Mapping[str, Any] | None = None


def listed(price: int | None) -> Callable[[], Op[int | None]]:
    """A price known without asking (a flat price): for :attr:`Start.price`."""

    def known() -> Op[int | None]:
        return price
        yield  # a generator of no steps

    return known


def known(value: Any) -> Op[Any]:
    """``value``, as an operation of no steps."""
    return value
    yield  # a generator of no steps


@dataclass(frozen=True)
class Start(Generic[R]):
    """A paid start as its operation describes it.

    ``request(key)`` is the request carrying the start's Idempotency-Key; ``parse`` reads its answer as
    the resource; ``recorded(resource, answer, price)`` is what the ledger keeps of it; ``price()``
    what the start holds against the budget (every paid start has one; asked only when it is sent).
    ``read`` reads the resource of an earlier start by id, and ``same`` says whether what it read is
    that start's (a restarted sandbox hands the same ids out again); ``kept`` says the ledger keeps its
    whole answer, so an earlier start that has ended is returned from it without a request.
    """

    kind: str  # ledgers.GENERATION, ANALYSIS, REPLICATION or JOB
    what: str  # for messages: "gpt-image-2", "the analysis of <url>"
    model_id: str | None
    asked: Mapping[str, Any]  # what is asked: the derived Idempotency-Key comes from it
    request: Callable[[str], Call]
    parse: Callable[[Any], R]
    recorded: Callable[[R, Any, int | None], Recorded]
    read: Callable[[str], Op[R]]
    price: Callable[[], Op[int | None]]
    same: Callable[[R, ledgers.Entry], bool] = lambda current, entry: True
    kept: bool = False
    key: str | None = None  # an Idempotency-Key given by the caller, sent as it is
    reuse: bool = False  # the key derives from the ask: an earlier start of it is returned
    fresh: bool = False  # with ``reuse``: the next variation instead
    ledger: "ledgers.Ledger | str | None" = None
    # False when the service may not read the start's idempotency key (its name is not confirmed): a
    # start whose answer was lost is then never sent again, by a retry or a re-run; ``unkeyed`` says why.
    resend: bool = True
    unkeyed: str = ""
    # What tells a replay (a start the service answers with what was made before it was asked, by this
    # key elsewhere: another machine, a colleague, an agent): when the resource was made, on the service's
    # clock, and the statuses a new start answers with (an answer in another was made earlier).
    born: "Callable[[R], Op[str | None]]" = lambda resource: known(None)
    new_statuses: tuple[str, ...] = ()


@dataclass(frozen=True)
class Found:
    """A start's key, and the ledger's earlier start of it if any."""

    key: str
    ask: str | None
    variation: int
    entry: ledgers.Entry | None


@dataclass(frozen=True)
class Hold:
    """A sent start's share of the money: its budget hold, and whether the start is this process's."""

    budget: int | None
    ours: bool = True


def replayed(answered: Answer) -> bool:
    """Whether the service answered a start with what an earlier request with its Idempotency-Key made
    (charged then, reused now) rather than with a resource this call made: the spec answers a start 201,
    and the sandbox a replay 200. A replay after a try of this call that got no answer is of that try."""
    return answered.status != 201 and not answered.retried


class Starts:
    """Paid starts over one core: keys, resumes, the budget, the ledger."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def start(self, start: Start[R]) -> Op[R]:
        """The resource of ``start``: an earlier start of its key (no charge) or a new one (charged once)."""
        book = yield from self.core.book(start.ledger)
        found = yield from self._keyed(start, book)
        if found.entry is not None:
            earlier = yield from self._resume(start, found.entry, book)
            if earlier is not None:
                return earlier
            if found.entry.sent_unanswered and not start.resend:
                raise errors.StartUncertain(
                    f"{start.what}: an earlier start of it got no answer and may have been charged; it is "
                    f"not sent again, {start.unkeyed} (a new start, fresh=True or another key, may be "
                    "charged too)",
                    key=found.key,
                    credits=found.entry.credits or None,
                )
        price = yield from start.price()
        resource, answer, hold, answered = yield from self._send(start, found, price, book)
        # A replay of a start no process of this ledger wrote was made elsewhere (another machine, a
        # colleague): its intent here is dropped. One of an intent already held is that writer's.
        elsewhere = not hold.ours and found.entry is None
        if hold.ours or elsewhere:
            replayed = elsewhere or (yield from self._replayed(start, found.key, resource, answered, book))
            if replayed:
                self.core.budget.release(hold.budget)
                yield Record(partial(book.replayed, found.key, self.core.where))
                self.core.track(resource.id, book, started=False)
                return replace(resource, reused=True)
        yield from self._record(found.key, hold, book, resource.id, start.recorded(resource, answer, price))
        return resource if hold.ours else replace(resource, reused=True)

    def _replayed(
        self, start: Start[R], key: str, resource: R, answered: Answer, book: ledgers.Ledger
    ) -> Op[bool]:
        """Whether the service answered this start with what existed before it was sent (a replay of its
        key made elsewhere): a resource in a state no new start answers with, one created before the
        request first left (on the service's clock, :class:`Answer`), or one the ledger holds under
        another start. Such a start is reuse: nothing was spent now. A start another process sharing
        this ledger sent too (it touched our intent) stays ours, as the ledger says: that process
        counts it as the other's."""
        entry: ledgers.Entry | None = yield Record(partial(book.lookup, key, self.core.where))
        if entry is not None and entry.updated_at > entry.started_at:
            return False  # another process of this ledger sent the same start: the ledger says it is ours
        fresh = start.new_statuses
        if not answered.again and fresh and resource.status is not None and resource.status not in fresh:
            return True  # one send, answered with what has moved on: made before (a retry's may be ours)
        born = _instant((yield from start.born(resource)))
        sent = answered.first_sent
        if born is not None and sent is not None and born < sent - REPLAY_MARGIN:
            return True
        holder: ledgers.Entry | None = yield Record(partial(book.of_resource, resource.id, self.core.where))
        return holder is not None and holder.key != key

    def earlier(self, start: Start[R]) -> Op[R | None]:
        """The resource an earlier start of the same ask made, read again (no charge); None if none."""
        book = yield from self.core.book(start.ledger)
        found = yield from self._keyed(start, book)
        if found.entry is None:
            return None
        return (yield from self._resume(start, found.entry, book))

    def _keyed(self, start: Start[Any], book: ledgers.Ledger) -> Op[Found]:
        """The Idempotency-Key of a start and an earlier start of the same ask, if the ledger has one.

        A given key is used as it is; ``reuse`` derives the key from the ask (``fresh``: the next
        variation); otherwise the start gets a new random key (one call, one start).
        """
        settings = self.core.settings
        if settings.embedded is not None:  # which state it holds: none other's starts are trusted
            yield Record(settings.check)
        if start.key is not None:
            key = header_value("idempotency_key", str(start.key))[: spec_limits.IDEMPOTENCY_KEY_CHARS]
            entry = yield Record(partial(book.lookup, key, self.core.where))
            return Found(key, None, 1, entry)
        if not start.reuse:
            return Found(uuid.uuid4().hex, None, 1, None)
        asked = idempotency.ask(start.kind, start.model_id, start.asked)
        latest: ledgers.Entry | None = yield Record(partial(book.latest, asked, self.core.where))
        # A failed start was refunded and the service returns it again for its key: ask anew instead.
        again = start.fresh or (latest is not None and latest.status == states.FAILED)
        variation = (latest.variation if latest else 1) + (1 if again and latest else 0)
        key = idempotency.derive(
            start.kind, idempotency.SINGLE, start.model_id, start.asked, occurrence=variation
        )
        return Found(key, asked, variation, None if again else latest)

    def _resume(self, start: Start[R], entry: ledgers.Entry, book: ledgers.Ledger) -> Op[R | None]:
        """The resource an earlier start of this key made, or None to start it (again) with its key.

        An ended start recorded by this connection is returned from the ledger when it keeps whole
        answers; any other is read by id, and one this account does not know (another account, a
        restarted sandbox) or that is another resource under the same id is None.
        """
        where = self.core.where
        if start.kept and entry.final and entry.trusted(where) and isinstance(entry.resource, Mapping):
            return replace(start.parse(entry.resource), reused=True)
        if entry.resource_id is None:
            return None
        self.core.track(entry.resource_id, book, started=False)  # its reads are recorded where it was
        try:
            current = yield from start.read(entry.resource_id)
        except (errors.NotFoundError, errors.BadRequestError):
            self.core.untrack(entry.resource_id)
            self._forgotten(entry)
            return None
        if not start.same(current, entry):
            self.core.untrack(entry.resource_id)
            self._forgotten(entry)
            return None  # another resource under the same id (a restarted sandbox): never attach to it
        if not entry.trusted(where):  # read fine here: recorded for this connection, so a re-run trusts it
            yield Record(partial(book.adopt, entry, where))
        return replace(current, reused=True)

    def _forgotten(self, entry: ledgers.Entry) -> None:
        """An earlier start that the current service does not know: when another instance of it made it
        (a sandbox reset, or whose state is gone), say once per process that such starts begin again
        (a sweep counts them in its summary instead)."""
        if entry.instance == self.core.where.instance or ledgers.current_via() == "sweep":
            return
        self.core.notices.once(
            "forgotten",
            "mediagen_nb: the sandbox that ran earlier starts of these inputs is gone (reset, or its state "
            "lost); they are started again here, and charged",
        )

    def _send(
        self, start: Start[R], found: Found, price: int | None, book: ledgers.Ledger
    ) -> Op[tuple[R, Any, Hold, Answer]]:
        """Hold the price, write the intent, send; the answer read as a resource, the answer, the hold.

        A refused start drops its intent and hold (nothing was charged). A start that got no answer
        after every retry, or an answer ``parse`` refuses, keeps both and raises
        :class:`StartUncertain`: it may have been charged, and sending it again with its key resumes
        it at no cost. A start the ledger already held is sent too and its intent is left to whoever
        wrote it (a refusal drops none). The hold is charged when this request made the resource,
        and released when the answer is a replay.
        """
        core, key = self.core, found.key
        hold = None
        if core.budget.limit is not None:
            hold = core.budget.hold(price if price is not None else 0, start.what)
        try:
            ours: bool = yield Record(
                partial(
                    book.intent,
                    key,
                    core.where,
                    kind=start.kind,
                    via=ledgers.current_via(),
                    model_id=start.model_id,
                    input=start.asked,
                    ask=found.ask,
                    variation=found.variation,
                    credits=price or 0,
                    credits_known=False,
                    replaces=found.entry.resource_id if found.entry is not None else None,
                )
            )
        except ledgers.LedgerError:
            core.budget.release(hold)
            raise
        try:
            answered = yield from core.answer(start.request(key))
            answer = answered.data
            resource = start.parse(answer)  # an answer without a usable id is no answer: still uncertain
        except (errors.ConnectionFailed, errors.ServerError, errors.ServiceResponseError) as exc:
            if isinstance(exc, errors.ConnectionFailed) and not exc.sent:  # never left this machine
                core.budget.release(hold)
                if ours:
                    yield Record(partial(book.refused, key, core.where))
                raise
            if ours:
                yield Record(partial(book.unanswered, key, core.where, str(exc)))
            cost = f"up to {price} credits" if price is not None else "its price"
            unusable = isinstance(exc, errors.ServiceResponseError)
            again = (
                "Running the same start again resumes it at no cost"
                if start.resend
                else f"It is not sent again, {start.unkeyed}"
            )
            raise errors.StartUncertain(
                f"{start.what}: no {'usable ' if unusable else ''}answer to the start ({exc.message}); the "
                f"service may have started it and charged {cost}. {again}",
                key=key,
                credits=price,
            ) from (exc if unusable else None)
        except errors.MediagenError:
            core.budget.release(hold)
            if ours:
                yield Record(partial(book.refused, key, core.where))
            raise
        # Anything else (a Ctrl-C, a cancelled task) leaves the intent and the hold: it may have started.
        made = not replayed(answered)
        if not made:
            core.budget.release(hold)
        return resource, answer, Hold(hold if made else None, made), answered

    def _record(
        self, key: str, hold: Hold, book: ledgers.Ledger, resource_id: str, seen: Recorded
    ) -> Op[None]:
        """The start's answer: its id and charge, into the budget (when the start is ours) and the ledger.

        It was charged whatever the ledger does now: a failing write is said once and the answer is
        returned (the intent, written before sending, lets a re-run find it by its key at no charge).
        """
        core = self.core
        if hold.ours:
            core.budget.charge(hold.budget, f"{core.where.instance}/{resource_id}", seen.credits)
        core.track(resource_id, book)
        try:
            yield Record(
                partial(
                    book.started,
                    key,
                    core.where,
                    resource_id,
                    seen.status,
                    seen.credits,
                    credits_known=seen.credits_known,
                    resource=seen.resource,
                    made=hold.ours,
                )
            )
        except ledgers.LedgerError as exc:
            core.ledger_failed(exc, "a re-run finds what was started by its Idempotency-Key, at no charge")
