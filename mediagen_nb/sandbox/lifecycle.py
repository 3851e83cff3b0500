"""What every paid start of the service shares, written once for generations, analyses, runs and jobs.

* Idempotency: a key names one start per account; a replay returns what it started, for ever (run,
  topic-to-video) or for 24 hours (analyze, replicate), and concurrent starts with one key create once.
  Every door checks a key alike (:func:`idempotency_key`): the REST header, the topic-to-video body,
  the agent server's tools.
* The spec's last pre-charge checks, in its order: the key's monthly cap (429), content moderation,
  then the balance (400 ``Not enough credits``). Earlier checks belong to each API's own rules.
* Charging: a start that meets a capacity fault is charged and refunded in the same request (503);
  a paid step of a running job charges as it starts, or gives the reason it cannot.
* Outcomes: each run's fate (succeed, fail, time out) comes from the fault plan, and a run that would
  outlast the time limit (15 minutes plus 5 s per second of input media, 30 minutes at most) times out.
* Paid steps: a replication run's takes and a short-video job's steps run one after another, each
  charged as it starts and settled as it ends, advanced whenever simulated time has passed a moment.
* Ownership: another account's resource is answered like an unknown one (404).
"""

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, Protocol, TypeVar

from mediagen_nb.protocol import headers, limits, messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime.clock import SimulatedClock
from mediagen_nb.sandbox.accounts import Accounts, Caller
from mediagen_nb.sandbox.faults import Faults
from mediagen_nb.sandbox.responses import ServiceError, bad_request, not_found, too_many
from mediagen_nb.sandbox.saved import IDEMPOTENCY, Row, Rows, text

Outcome = Literal["succeed", "fail", "timeout"]
SUCCEED: Outcome = "succeed"
FAIL: Outcome = "fail"
TIMEOUT: Outcome = "timeout"
_OUTCOMES: dict[str, Outcome] = {"fail": FAIL, "hang": TIMEOUT}
CAPACITY_NOTE = "the model could not start the job; refunded in the same request"


def idempotency_key(value: Any, field: str) -> str | None:
    """A start's idempotency key as given in ``field`` (None: none), or a 400 naming ``field``: a
    non-empty string an HTTP header can carry (``protocol.headers``), wherever it was sent."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise bad_request(messages.wrong_type(field, "a non-empty string"))
    problem = headers.problem(value)
    if problem is not None:
        raise bad_request(messages.not_a_header_value(field, problem))
    return value


class Idempotency:
    """Idempotency keys of one kind of start, per account, kept ``retention`` simulated seconds (None: for
    ever); only the first ``chars`` characters of a key count (None: all)."""

    def __init__(self, clock: SimulatedClock, *, retention: float | None, chars: int | None = None) -> None:
        self.clock = clock
        self.retention = retention
        self.chars = chars
        self._records: dict[tuple[str, str], tuple[str, float]] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.unsaved: set[tuple[str, str]] = set()  # (account, key) recorded since the state was saved

    def to_dict(self, scoped: tuple[str, str]) -> dict[str, Any]:
        """One record as saved state: the account, the key, the id it started and when."""
        resource_id, at = self._records[scoped]
        return {"account": scoped[0], "key": scoped[1], "id": resource_id, "at": at}

    def restore(self, saved: Iterable[dict[str, Any]]) -> None:
        """Take back saved records (:meth:`to_dict`)."""
        for record in saved:
            self._records[(record["account"], record["key"])] = (record["id"], record["at"])

    def dump(self, start: str) -> Iterator[Row]:
        """The records made since the last dump, as saved rows of the keys of ``start`` (a kind of start)."""
        marked = list(self.unsaved)
        self.unsaved.clear()
        for scoped in marked:
            yield IDEMPOTENCY + start, text(list(scoped)), self.to_dict(scoped)

    def load(self, rows: Rows, start: str) -> None:
        """Take back the saved rows of the keys of ``start`` (:meth:`dump`)."""
        self.restore(rows.get(IDEMPOTENCY + start, {}).values())

    def _live(self, scoped: tuple[str, str]) -> str | None:
        record = self._records.get(scoped)
        if record is None or (self.retention is not None and self.clock.now() - record[1] > self.retention):
            return None
        return record[0]

    async def once(
        self, account: str, key: str | None, start: Callable[[], Awaitable[str]]
    ) -> tuple[str, bool]:
        """The id ``key`` already started and False, or the id ``start()`` makes and True.

        Without a key every call starts. Concurrent starts with one key wait for each other, so only
        the first creates; a start that is refused leaves the key unused.
        """
        if key is None:
            return await start(), True
        scoped = (account, key[: self.chars] if self.chars is not None else key)
        async with self._locks.setdefault(scoped, asyncio.Lock()):
            existing = self._live(scoped)
            if existing is not None:
                return existing, False
            resource_id = await start()
            self._records[scoped] = (resource_id, self.clock.now())
            self.unsaved.add(scoped)
            return resource_id, True


def top_up_url(base_url: str) -> str:
    """The web app's billing page, named by the ``Not enough credits`` message."""
    return base_url + path("sandbox_app", page="billing")


def admit(
    accounts: Accounts,
    caller: Caller,
    credits: int,
    top_up: str,
    moderate: Callable[[], None] | None = None,
) -> None:
    """The last checks before a charge, in the spec's order: key cap, moderation, balance."""
    if not accounts.cap_allows(caller, credits):
        raise too_many(messages.key_cap_reached(_cap(caller)))
    if moderate is not None:
        moderate()
    if caller.account.balance < credits:
        raise bad_request(messages.not_enough_credits(credits, caller.account.balance, top_up))


def _cap(caller: Caller) -> int:
    return (caller.key.monthly_cap or 0) if caller.key is not None else 0


def refuse_at_capacity(
    accounts: Accounts, caller: Caller, credits: int, resource: str, resource_id: str, **extra: Any
) -> NoReturn:
    """The spec's failure after the charge: credits taken and given back in the same request, then 503."""
    if credits:
        accounts.charge(caller, credits, resource, resource_id, **extra)
        accounts.refund(caller, credits, resource, resource_id, **extra, note=CAPACITY_NOTE)
    raise ServiceError(503, messages.AT_CAPACITY)


def charge_step(
    accounts: Accounts,
    caller: Caller,
    credits: int,
    resource: str,
    resource_id: str,
    short_of_credits: Callable[[int], str],
    **extra: Any,
) -> str | None:
    """Charge a paid step of a running job as it starts; else why not (key cap, or the balance, whose
    message ``short_of_credits`` writes from the balance)."""
    if not accounts.cap_allows(caller, credits):
        return messages.key_cap_reached(_cap(caller))
    if caller.account.balance < credits:
        return short_of_credits(caller.account.balance)
    accounts.charge(caller, credits, resource, resource_id, **extra)
    return None


def time_limit(media_seconds: float = 0.0) -> float:
    """Simulated seconds a run may take: 15 minutes plus 5 s per second of input media, 30 at most."""
    limit = limits.RUNTIME_BASE_SECONDS + limits.RUNTIME_PER_MEDIA_SECOND * media_seconds
    return min(limit, limits.RUNTIME_HARD_SECONDS)


def plan(faults: Faults, runtime: float, media_seconds: float = 0.0) -> tuple[Outcome, float]:
    """A run's outcome, drawn from the fault plan, and how long it takes: a run that would outlast its
    time limit, or hangs, times out at the limit."""
    outcome = _OUTCOMES.get(faults.model_outcome() or "", SUCCEED)
    limit = time_limit(media_seconds)
    if outcome == TIMEOUT or runtime >= limit:
        return TIMEOUT, limit
    return outcome, runtime


def timed_out(started_at: float, ended_at: float) -> str:
    """The failed run's error: ``Generation timed out after N minutes; credits refunded``."""
    return messages.generation_timed_out(round((ended_at - started_at) / 60, 1))


@dataclass(kw_only=True)
class PaidStep:
    """One generation of a longer job, placed in simulated time: charged as it starts, settled as it ends."""

    outcome: Outcome = SUCCEED
    start_at: float = 0.0
    end_at: float = 0.0
    charged: bool = False
    settled: bool = False


S = TypeVar("S", bound=PaidStep)


def lay_out(steps: Sequence[S], start: float, plan_step: Callable[[S], float]) -> None:
    """Place ``steps`` one after another from ``start``; ``plan_step`` sets a step's outcome and returns
    how long it takes."""
    at = start
    for step in steps:
        step.start_at = at
        step.end_at = at = at + plan_step(step)


def moments(steps: Iterable[PaidStep], *more: float) -> list[float]:
    """The simulated times something happens to ``steps`` (and ``more``), in order, once each."""
    return sorted({*(s.start_at for s in steps), *(s.end_at for s in steps), *more})


def advance_steps(
    steps: Sequence[S],
    now: float,
    running: Callable[[], bool],
    begin: Callable[[S], bool],
    end: Callable[[S], None],
) -> bool:
    """Apply, in order, every step event whose time has come: ``begin`` (charge; False stops the job)
    as a step starts, ``end`` as it ends. True once every step has ended and the job still runs."""
    for step in steps:
        if not running():
            return False
        if step.settled:
            continue
        if not step.charged and (now < step.start_at or not begin(step)):
            return False
        if now < step.end_at:
            return False
        step.settled = True
        end(step)
    return running()


class Owned(Protocol):
    @property
    def caller(self) -> Caller: ...


T = TypeVar("T", bound=Owned)


def owned(items: Mapping[str, T], resource_id: str, caller: Caller, message: str) -> T:
    """The caller's resource ``resource_id``; 404 ``message`` for an unknown id or another account's."""
    item = items.get(resource_id)
    if item is None or item.caller.account.id != caller.account.id:
        raise not_found(message)
    return item
