"""The engine's core: sending under the limits and retries, polling, and reads into the ledger.

Operations are generators of steps (:mod:`mediagen_nb.client.steps`);
:mod:`mediagen_nb.client.clients` drives them with httpx's sync or async client, so request
building, parsing, limits, retries, waiting and money are written once. Every paid start goes
through :mod:`mediagen_nb.client.starts`, over this core.
"""

import json
import random
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import partial
from typing import Any, NamedTuple, Protocol, TypeVar

import httpx

from mediagen_nb.client import errors, pacing, transport
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.checks import header_value
from mediagen_nb.client.config import BearerAuth, Secret, Settings, Where, normalize_url, on_this_machine
from mediagen_nb.client.limits_store import Booking, Store, Window, scope_of
from mediagen_nb.client.retry import RetryPolicy
from mediagen_nb.client.spelling import Spelling
from mediagen_nb.client.spending import Budget
from mediagen_nb.client.steps import CATALOG, START, Call, Op, Pause, Record
from mediagen_nb.client.timing import ServiceClock
from mediagen_nb.protocol import states
from mediagen_nb.protocol.paths import path

T = TypeVar("T")
R = TypeVar("R")

POLL_SECONDS = 5.0  # replication and topic-to-video have no ``wait``: poll every few seconds
HTTP_SLACK = 30.0  # real seconds a request may take beyond the time the service holds it
CONNECT_TIMEOUT = 5.0  # real seconds to open a connection: a wrong address fails within seconds
CONNECT_RETRIES = (0.5, 1.0)  # real seconds before each new try of a refused connection (never sent)
WORK_WAIT = 3 * 3600.0  # service seconds a wait for a replica or a video lasts by default
SILENT_RETRIES = 1  # a request that got no answer in time is tried once more, then fails
LATE_WAKES = 3  # slots given up in a row for waking or sending too late, before a request goes late anyway


@dataclass(frozen=True)
class Slot:
    """A request's booked slot: when it may go (this machine's clock), its stamp in the store and its
    ticket, the windows it is booked in (none for a catalog read), how much earlier the slot may have
    been (:class:`Booking`'s ``skew``), and how many slots the request gave up before this one."""

    at: float
    stamp: float
    windows: list[Window]
    skew: float = 0.0
    ticket: str = ""
    late: int = 0


class Notices(Protocol):
    """Where the engine's lines to the user go (the assembler's sink): the engine never prints."""

    def say(self, text: str) -> None: ...

    def once(self, topic: str, text: str) -> None:
        """Say ``text`` unless a line of ``topic`` was said in this process already."""
        ...

    def warn(self, text: str) -> None:
        """Say that something failed but lost nothing (a ledger write after an answer): on stderr."""
        ...


@dataclass(frozen=True)
class Collaborators:
    """What the assembler (:mod:`~mediagen_nb.client.assemble`) hands an engine: its clock in the
    service's seconds, where its limiters' windows are kept, the budget, how a ledger is opened
    (None: the default one), where its notices go, the agent server's address and tokens, and how
    long a replica's wait gives its marketing cuts."""

    clock: ServiceClock
    windows: Store
    budget: Budget
    ledger: "Callable[[ledgers.Ledger | str | None], ledgers.Ledger]"
    notices: Notices
    agent_token: Callable[[str], Secret | None] = lambda url: None
    mcp_url: Callable[[], str | None] = lambda: None
    marketing_wait: Callable[[], float] = lambda: 60.0  # service seconds past a run's end for its cuts


class Answer(NamedTuple):
    """A whole answer: its ``data``, its HTTP status (a start's 201 says this request made it), whether
    an earlier try of the same call may have reached the service (then a replay is of it), and when it
    came on the service's clock: its ``Date`` (Unix seconds, None when it sent none) and the service
    seconds since the request was first sent (retries included). A resource created before
    ``date - since_first`` existed before this client asked: a replay."""

    data: Any
    status: int
    retried: bool = False
    date: float | None = None
    since_first: float = 0.0
    again: int = 0  # times the request was sent before the one answered (retries)

    @property
    def first_sent(self) -> float | None:
        """The latest the request can have been first sent, on the service's clock."""
        return None if self.date is None else self.date - self.since_first


class Core:
    """State shared by every operation: settings, limiters, retries, the ledger and the budget."""

    def __init__(self, settings: Settings, retry: RetryPolicy, timeout: float, parts: Collaborators) -> None:
        self.settings = settings
        self.parts = parts
        self.clock = parts.clock  # in service seconds: answers Pause steps and keeps deadlines
        self.notices = parts.notices
        self.retry = retry
        self.timeout = timeout
        lim = settings.limits
        # The windows are kept on the machine's clock (shared with other processes on wall time).
        seconds, where = self.clock.real(lim.window), normalize_url(settings.base_url)
        self._windows = parts.windows
        per_key, per_account = lim.requests_per_key, lim.starts_per_account
        self._keys = [
            Window(scope_of("key", where, k.digest), per_key, seconds, lim.burst_of(per_key))
            for k in settings.keys
        ]
        account = scope_of("account", where, settings.account)
        self._account = Window(account, per_account, seconds, lim.burst_of(per_account))
        self.latency = pacing.Latency(lim, seconds)
        self._pause = lim.pause(seconds)  # a 429's pause: a window in real seconds and its margin
        self._started: OrderedDict[str, float] = OrderedDict()  # resource id -> clock.monotonic() at start
        self._rng = random.Random()
        self.budget = parts.budget
        self._ledger_warned = False
        self._booked: dict[str, ledgers.Ledger] = {}  # resource id -> the ledger that holds its start

    @property
    def where(self) -> Where:
        return self.settings.where

    @property
    def spelling(self) -> Spelling:
        """How this client spells the names the spec does not show (set, or learned from answers)."""
        return self.settings.spelling

    def sandbox_url(self) -> str | None:
        """The base URL of a sandbox (embedded, or served on this machine) to upload local files to and
        read the ledger of; None on the service."""
        if self.settings.sandbox or on_this_machine(self.settings.base_url):
            return self.settings.base_url
        return None

    # -- transport-neutral helpers -------------------------------------------------------------

    def build(self, http: httpx.Client | httpx.AsyncClient, call: Call) -> httpx.Request:
        """The httpx request for ``call``, without its key (that is :meth:`auth`'s)."""
        headers = {"Accept": "application/json"}
        if call.idempotency_key is not None:
            headers["Idempotency-Key"] = header_value("idempotency_key", call.idempotency_key)
        timeout = httpx.Timeout(self.deadline(call), connect=CONNECT_TIMEOUT)
        extensions = {}
        if call.send_by is not None:  # stopped if about to be written later (see transport.SendBy)
            hook = transport.ASendBy if isinstance(http, httpx.AsyncClient) else transport.SendBy
            extensions["trace"] = hook(self.clock.now, call.send_by)
        return http.build_request(
            call.method,
            self.settings.base_url + path(call.endpoint, **call.params),
            params=call.query,
            json=call.body,
            headers=headers,
            timeout=timeout,
            extensions=extensions,
        )

    def auth(self, call: Call) -> BearerAuth | None:
        """How ``call`` carries its key: an httpx Auth flow (None: a catalog read, sent without one); to a
        sandbox that answers its owner alone, with the owner's token, catalog reads too."""
        return self.settings.auth(call.key)

    def deadline(self, call: Call) -> float:
        """Real seconds the whole exchange of ``call`` may take: the service's hold plus a margin."""
        return self.timeout + self.clock.real(call.hold) + (HTTP_SLACK if call.hold else 0.0)

    def _reserve(
        self, call: Call, only: int | None = None, late: int = 0, wider: float = 0.0
    ) -> Op[tuple[Call, Slot]]:
        """Book the key with budget first (with the account's start budget for starts); wait for its slot.

        Returns the call with its key and the moment it must be written by, and its slot. The booking
        runs off the event loop (a Record step): the shared store may be a file another process holds,
        or Redis. A stamp's spread is the margin it was booked with: half of it is for the request to
        leave (the other half for its way to the service), so a slot woken up to later than that is
        given back for a new one, and a request about to be written later is stopped
        (:class:`~mediagen_nb.client.transport.SendBy`); else it would reach the service later than
        the slots a window after it were booked against. The slot booked after one given up ``s``
        seconds late has a margin of ``2 s`` at least (``wider``), so it allows what was just seen;
        after ``LATE_WAKES`` slots given up (``late``), the request goes as late as it is.
        """
        if call.kind == CATALOG:
            return call, Slot(self.clock.now(), 0.0, [])
        keys = self._keys if only is None else [self._keys[only]]
        choices = [[key] + ([self._account] if call.kind == START else []) for key in keys]
        while True:
            margin = max(self.latency.margin(), wider)
            booking: Booking = yield Record(partial(self._windows.reserve, choices, margin))
            wait = booking.at - self.clock.now()  # from the slot itself: the answer may have come late
            if wait > 0:
                yield Pause(self.clock.service(wait))
            if booking.index is None:
                continue
            windows = choices[booking.index]
            slot = Slot(booking.at, booking.stamp, windows, booking.skew, booking.ticket, late)
            strict = late < LATE_WAKES
            woke = self.clock.now() - booking.at
            if woke > margin / 2 and strict:
                yield from self._give_back(slot, woke)
                late, wider = late + 1, 2 * woke
                continue
            index = booking.index if only is None else only
            send_by = booking.at + margin / 2 if strict else None
            return Call(**{**call.__dict__, "key": self.settings.keys[index], "send_by": send_by}), slot

    def _give_back(self, slot: Slot, late: float) -> Op[None]:
        """A request ``late`` seconds after its slot was not sent: its stamp is freed for others, and the
        margin follows (this machine is slower than it was)."""
        self.latency.record(late)
        yield Record(partial(self._windows.release, slot.windows, slot.stamp, slot.ticket))

    def requests(self, endpoint: str, count: int) -> Op[Secret]:
        """Book ``count`` requests to ``endpoint`` on one key (waiting for the slots), for a caller that sends
        them itself (the agent server's client, ``agent.py``); that key."""
        booked, _ = yield from self._reserve(Call("POST", endpoint))
        assert booked.key is not None
        index = self.settings.keys.index(booked.key)
        for _ in range(count - 1):
            yield from self._reserve(Call("POST", endpoint), only=index)
        return booked.key

    def _penalize(self, call: Call, error: errors.RateLimitError) -> None:
        """An unexpected 429: that key (or the account) sends nothing for a window, in every process."""
        if error.scope == "account":
            self._windows.pause(self._account, self._pause)
        elif call.key is not None:
            self._windows.pause(self._keys[self.settings.keys.index(call.key)], self._pause)

    def send(self, call: Call) -> Op[Any]:
        """Send ``call`` under the limiters and the retry policy; return ``data`` (or the raw body)."""
        return (yield from self.answer(call)).data

    def answer(self, call: Call) -> Op[Answer]:
        """Send ``call`` under the limiters and the retry policy; its whole answer.

        A try that cannot connect never left this machine, but an earlier try of the same call that
        got no whole answer may have reached the service: the call then fails as possibly received.
        """
        first: float | None = None
        if call.kind == START and call.idempotency_key is None and call.replayable:
            call = Call(**{**call.__dict__, "idempotency_key": uuid.uuid4().hex})
        attempt, refused, silent = 0, 0, 0
        reached: errors.MediagenError | None = None  # an earlier try's error that may have reached it
        late, wider = 0, 0.0  # slots given up for being too late to send in; the margin that allows it
        while True:
            call, slot = yield from self._reserve(call, late=late, wider=wider)
            error: errors.MediagenError
            if first is None:
                first = self.clock.monotonic()
            try:
                response: httpx.Response = yield call
            except transport.SentLate:  # never written: another slot, as for a late wake
                lateness = self.clock.now() - slot.at
                yield from self._give_back(slot, lateness)
                late, wider = slot.late + 1, 2 * lateness
                continue
            except httpx.ConnectError as exc:  # nothing was sent: safe to try again, briefly
                try:
                    if refused < len(CONNECT_RETRIES):
                        if refused == 0 and self.settings.embedded is not None:
                            yield Record(partial(self.settings.check, now=True))  # died: start it again
                        yield Pause(self.clock.service(CONNECT_RETRIES[refused]))
                        refused += 1
                        continue
                    raise errors.ConnectionFailed(
                        f"cannot connect to {self.settings.base_url} ({exc or type(exc).__name__}): check "
                        "MEDIAGEN_BASE_URL (or base_url=) and that the service is running",
                        sent=False,
                    ) from None
                except errors.ConnectionFailed as failed:
                    if reached is None or failed.sent:
                        raise
                    raise errors.ConnectionFailed(
                        f"{failed.message}; an earlier try ({reached.message}) may have reached the service"
                    ) from None
            except httpx.TransportError as exc:
                what = f"{call.method} {path(call.endpoint, **call.params)}"
                if isinstance(exc, httpx.TimeoutException):
                    silent += 1
                    error = errors.ConnectionFailed(
                        f"{what}: no answer from {self.settings.base_url} in time ({exc or 'timed out'})"
                    )
                    if silent > SILENT_RETRIES:
                        error.retryable = False
                else:
                    error = errors.ConnectionFailed(f"{what}: {exc or type(exc).__name__}")
            else:
                if call.kind != CATALOG and not call.hold:  # a long poll's time is the service's
                    spread = self.clock.now() - slot.at + slot.skew  # how late it went, and its round trip
                    self.latency.record(spread)
                    yield Record(
                        partial(self._windows.confirm, slot.windows, slot.stamp, slot.ticket, spread)
                    )
                if response.is_success:  # a whole answer: one that is not what the spec says is not retried
                    waited = self.clock.monotonic() - first
                    return Answer(
                        _decode(call, response),
                        response.status_code,
                        reached is not None,
                        _service_time(response),
                        waited,
                        attempt + refused + silent,
                    )
                else:
                    error = errors.from_response(response.status_code, response.content)
                    if isinstance(error, errors.RateLimitError):
                        self._penalize(call, error)
            ambiguous = isinstance(error, (errors.ConnectionFailed, errors.ServerError))
            if ambiguous:
                reached = error
            wait = None if ambiguous and not call.replayable else self.retry.delay(error, attempt, self._rng)
            if wait is None:
                raise error from None
            yield Pause(wait)
            attempt += 1

    # -- the ledger and the budget ----------------------------------------------------------------

    def book(self, override: "ledgers.Ledger | str | None" = None) -> Op[ledgers.Ledger]:
        """The ledger this start is written to (opening it may wait on the file: a Record step)."""
        ledger: ledgers.Ledger = yield Record(partial(self.parts.ledger, override))
        return ledger

    def track(self, resource_id: str, book: ledgers.Ledger, *, started: bool = True) -> None:
        """``resource_id`` is held by ``book``: its reads are recorded there (and timed, when ``started``
        here)."""
        self._booked[resource_id] = book
        if started:
            self._started.setdefault(resource_id, self.clock.monotonic())
            while len(self._started) > 10_000:
                self._started.popitem(last=False)

    def untrack(self, resource_id: str) -> None:
        """``resource_id`` is none of this client's starts (an earlier start's id another resource holds)."""
        self._booked.pop(resource_id, None)
        self._started.pop(resource_id, None)

    def ledger_failed(self, exc: ledgers.LedgerError, consequence: str) -> None:
        """A ledger write after an answer failed: said once; the answer is still returned."""
        if not self._ledger_warned:
            self._ledger_warned = True
            self.notices.warn(f"{exc}; results are still returned, and {consequence}")

    def observed(
        self,
        resource_id: str,
        status: str | None,
        *,
        credits: int | None,
        urls: tuple[str, ...] = (),
        error: str | None = None,
        resource: Mapping[str, Any] | None = None,
    ) -> Op[None]:
        """A read of a resource: its status, charge and outputs into the ledger and the budget.

        Written for resources this client started or resumed, and for any that has ended (an id of
        an earlier process); reads never fail because of the ledger: a failing ledger is said once.
        """
        if credits is not None:
            self.budget.correct(f"{self.where.instance}/{resource_id}", credits)
        if status is None or (resource_id not in self._booked and status not in states.FINAL):
            return  # a read without a status says nothing the ledger can keep
        try:
            book = self._booked.get(resource_id) or (yield from self.book())
            yield Record(
                partial(
                    book.update,
                    self.where,
                    resource_id,
                    status,
                    credits=credits,
                    urls=urls,
                    error=error,
                    elapsed_s=self.elapsed(resource_id),
                    resource=resource,
                )
            )
        except ledgers.LedgerError as exc:
            self.ledger_failed(exc, "a re-run reads them again from the service")

    def elapsed(self, resource_id: str) -> float | None:
        started = self._started.get(resource_id)
        return None if started is None else round(self.clock.monotonic() - started, 3)

    # -- polling -----------------------------------------------------------------------------------

    def poll(
        self,
        read: Callable[[], Op[R]],
        finished: Callable[[R], bool],
        poll: float,
        timeout: float | None,
        on_update: Callable[[R], None] | None,
        what: str,
    ) -> Op[R]:
        """Read every ``poll`` service seconds (through the limiters) until ``finished``, for at most
        ``timeout`` service seconds (default: WORK_WAIT; the spec gives these jobs no time limit)."""
        deadline = self.clock.monotonic() + (WORK_WAIT if timeout is None else timeout)
        while True:
            current = yield from read()
            if on_update is not None:
                on_update(current)
            if finished(current):
                return current
            if self.clock.monotonic() >= deadline:
                raise errors.WaitTimeout(
                    f"{what} has not finished; it goes on and can be read again (timeout= waits longer)",
                    current,
                )
            yield Pause(poll)


def _service_time(response: httpx.Response) -> float | None:
    """An answer's ``Date`` header as Unix seconds (None when absent or unreadable)."""
    raw = response.headers.get("date")
    if not raw:
        return None
    try:
        return parsedate_to_datetime(raw).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _decode(call: Call, response: httpx.Response) -> Any:
    """The ``data`` of a success envelope; the whole document for openapi.json; text for llms.txt.

    A body that is not JSON, nests too deeply, or is not an object whose ``data`` is an object (a list
    too, for the model list) is a ServiceResponseError naming what is wrong, at once: a whole answer
    that is not the spec's does not get better by asking again. Any API key in it is masked.
    """
    if call.endpoint == "llms_txt":
        return errors.mask(response.text)
    what = f"the answer to {call.method} {response.request.url.path}"
    try:  # JSON is UTF-8 (RFC 8259); a key a server echoes is masked before anything keeps the answer
        body = json.loads(errors.mask(response.content.decode("utf-8")))
    except (ValueError, RecursionError) as exc:
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        problem = "nests too deeply" if isinstance(exc, RecursionError) else f"is not JSON ({kind})"
        raise errors.ServiceResponseError(
            f"{what} {problem}: is MEDIAGEN_BASE_URL the service's address?"
        ) from None
    if not isinstance(body, Mapping):
        raise errors.ServiceResponseError(
            f"{what} is {_shape(body)}, not an object: is MEDIAGEN_BASE_URL the service's address?"
        )
    if call.endpoint == "openapi":
        return body
    data = body.get("data")
    if "data" not in body or not isinstance(data, (Mapping, list) if call.endpoint == "models" else Mapping):
        raise errors.ServiceResponseError(
            f"{what} has {'no data' if 'data' not in body else 'data = ' + _shape(data)}, not the object "
            "the service sends: is MEDIAGEN_BASE_URL the service's address?",
            field="data",
        )
    return body if call.whole else data


def _shape(value: Any) -> str:
    """A short description of a JSON value for a message: ``a list``, ``null``, ``'text…'``."""
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        return repr(value[:40] + ("…" if len(value) > 40 else ""))
    return repr(value)[:40]
