"""The engine as a pure thing: its operations driven by hand with scripted answers, no sandbox, no sleeps.

The core is built here from its collaborators (what the assembler hands it), on a manual clock: each
step the engine yields is looked at and answered by the test (a Record run, a Call answered with a
scripted httpx.Response or a transport error, a Pause moving the clock), so retries, uncertain starts
and the money rules are checked at the layer that owns them. The sandbox tests keep the end-to-end cases.
"""

import asyncio
import json
import socket
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from mediagen_nb.client import errors, pacing
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.config import Secret, Settings
from mediagen_nb.client.core import Collaborators, Core
from mediagen_nb.client.engine import Engine
from mediagen_nb.client.ledger import Ledger
from mediagen_nb.client.limits_store import SQLiteStore
from mediagen_nb.client.pacing import Limits
from mediagen_nb.client.resources import Generation
from mediagen_nb.client.retry import RetryPolicy
from mediagen_nb.client.spelling import SpellingLearned
from mediagen_nb.client.spending import Budget
from mediagen_nb.client.starts import Recorded, Start, Starts, listed
from mediagen_nb.client.steps import READ, START, Call, Op, Pause, Record
from mediagen_nb.client.timing import ServiceClock
from mediagen_nb.client.transport import SentLate
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_WIRE
from mediagen_nb.runtime.clock import ManualClock, SteppingClock

BASE = "http://service.test"


class Told:
    """A notice sink that keeps what it is told."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.topics: set[str] = set()

    def say(self, text: str) -> None:
        self.lines.append(text)

    def once(self, topic: str, text: str) -> None:
        if topic not in self.topics:
            self.topics.add(topic)
            self.lines.append(text)

    def warn(self, text: str) -> None:
        self.lines.append(f"warning: {text}")


def core(
    tmp_path: Any, *, scale: float = 1.0, budget: Budget | None = None, retry: RetryPolicy | None = None
) -> Core:
    """A core on a manual clock run at ``scale``, its windows in memory on that clock, a ledger in tmp."""
    machine = SteppingClock(ManualClock(start=1_000_000.0))
    settings = Settings(BASE, (Secret("pk_test_engine"),), "keys:test", Limits(margin=0.0), False)
    book = Ledger(tmp_path / "ledger.sqlite")
    parts = Collaborators(
        clock=ServiceClock(machine, scale),
        windows=SQLiteStore(":memory:", machine.now),
        budget=budget or Budget(),
        ledger=lambda override: book,
        notices=Told(),
    )
    return Core(settings, retry or RetryPolicy(), 30.0, parts)


def ok(data: Any, status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=json.dumps({"data": data}).encode())


def fail(status: int, message: str = "busy") -> httpx.Response:
    return httpx.Response(status, content=json.dumps({"error": {"message": message}}).encode())


Answer = httpx.Response | BaseException


def drive(
    op: Op[Any],
    engine: Core,
    answers: list[Answer],
    calls: list[Call] | None = None,
    seen: Callable[[Call], None] | None = None,
) -> tuple[Any, list[Call], list[float]]:
    """Run ``op`` by hand: Records run here (what they raise is thrown in), each Call gets the next
    scripted answer (a response, or an error raised into the operation), each Pause moves the manual
    clock. The result, the Calls sent and the Pauses (service seconds). ``seen`` looks at each Call as
    it is yielded, before its answer."""
    calls = [] if calls is None else calls
    pauses: list[float] = []
    reply: Any = None
    failure: BaseException | None = None
    while True:
        try:
            step = op.throw(failure) if failure is not None else op.send(reply)
        except StopIteration as done:
            return done.value, calls, pauses
        reply, failure = None, None
        if isinstance(step, Record):
            try:
                reply = step.fn()
            except Exception as exc:  # as the clients do: thrown into the operation
                failure = exc
        elif isinstance(step, Pause):
            pauses.append(step.seconds)
            engine.clock.sleep(step.seconds)
        else:
            calls.append(step)
            if seen is not None:
                seen(step)
            answer = answers.pop(0)
            if isinstance(answer, BaseException):
                failure = answer
            else:
                answer.request = httpx.Request(step.method, BASE + "/x")
                reply = answer


def raised(
    op: Op[Any], engine: Core, answers: list[Answer], seen: Callable[[Call], None] | None = None
) -> tuple[BaseException, list[Call]]:
    calls: list[Call] = []
    try:
        drive(op, engine, list(answers), calls, seen)
    except BaseException as exc:
        return exc, calls
    raise AssertionError("the operation did not fail")


def timeout() -> httpx.ReadTimeout:
    return httpx.ReadTimeout("no answer", request=httpx.Request("POST", BASE))


def test_a_503_is_retried_after_the_backoff_in_service_seconds(tmp_path: Any) -> None:
    engine = core(tmp_path, scale=30.0)  # a sandbox 30 times faster: the backoff is still 5 service s
    before = engine.clock.monotonic()
    data, calls, pauses = drive(engine.send(Call("GET", "models")), engine, [fail(503), ok({"a": 1})])
    assert data == {"a": 1} and len(calls) == 2
    assert [p for p in pauses if p >= 1] and 3.75 <= max(pauses) <= 6.25  # 5 s, +-25 % jitter
    assert engine.clock.monotonic() - before == pytest.approx(sum(pauses))  # one unit, no conversion


def test_a_429_pauses_the_key_for_the_service_s_window_as_the_clock_reads_it(tmp_path: Any) -> None:
    """An unexpected 429 rests its key for a window: 60 service seconds at any time scale, the windows'
    real seconds coming from the one clock (at x30, 2 real s), not from a second conversion."""
    engine = core(tmp_path, scale=30.0, retry=RetryPolicy(rate_limit_wait=0.0, jitter=0.0))
    read = Call("GET", "generation", READ, params={"id": G1})
    data, calls, pauses = drive(engine.send(read), engine, [fail(429, "slow down"), ok({"id": G1})])
    assert data == {"id": G1} and len(calls) == 2
    assert sum(pauses) == pytest.approx(60.0, abs=0.5)  # the window, in service seconds


def stamps_of(engine: Core) -> list[tuple[float, float]]:
    """Every stamp in the engine's windows (kept in memory here): (slot, spread)."""
    db = engine._windows._db  # type: ignore[attr-defined]
    return [(at, spread) for at, spread in db.execute("SELECT at, spread FROM stamps ORDER BY at, rowid")]


def test_a_request_about_to_leave_later_than_its_slot_allows_is_not_sent_and_its_stamp_is_given_back(
    tmp_path: Any,
) -> None:
    """A stamp says its request reaches the service within its spread; half of it is for leaving. One
    that is about to be written later (a busy event loop, a worker thread that got no CPU) is stopped
    (:class:`SentLate`, raised by its send-by hook), gives its stamp back and books another."""
    engine = core(tmp_path)
    engine.settings = replace(engine.settings, limits=Limits(margin=0.2))
    engine.latency = pacing.Latency(engine.settings.limits, 60.0)
    read = Call("GET", "generation", READ, params={"id": G1})
    began = engine.clock.now()
    calls: list[Call] = []

    def busy(call: Call) -> None:  # the first is handed to httpx 0.4 s after its slot
        if len(calls) == 1:
            engine.clock.sleep(0.4)

    data, _, _ = drive(engine.send(read), engine, [SentLate(0.3), ok({"id": G1})], calls, busy)
    assert data == {"id": G1} and len(calls) == 2
    assert calls[0].send_by == began + 0.1  # half the margin of 0.2
    assert calls[1].send_by == began + 0.4 + 0.4  # booked at once, with twice the 0.4 s just seen
    assert len(stamps_of(engine)) == 1  # the first stamp was given back: one request, one stamp


def test_a_slot_woken_up_to_late_is_given_back_and_the_next_allows_what_was_seen(tmp_path: Any) -> None:
    """Each booking's answer comes later than the last (another process holds the file): 0.3 s after its
    slot, then 0.7, 1.5, 3.1. Each slot woken up to later than half its margin is given back before
    anything is built, and the next is booked with twice the lateness seen; after LATE_WAKES slots the
    request goes as late as it is, with no deadline."""
    engine = core(tmp_path)
    engine.settings = replace(engine.settings, limits=Limits(margin=0.2))
    engine.latency = pacing.Latency(engine.settings.limits, 60.0)
    store, reserve = engine._windows, engine._windows.reserve
    delays, margins = [0.3, 0.7, 1.5, 3.1], []

    def slow(choices: Any, margin: float) -> Any:
        margins.append(margin)
        booked = reserve(choices, margin)
        engine.clock.sleep(delays[len(margins) - 1])
        return booked

    store.reserve = slow  # type: ignore[method-assign]
    data, calls, _ = drive(engine.send(Call("GET", "generation", READ, params={"id": G1})), engine, [ok({})])
    assert data == {} and len(calls) == 1 and calls[0].send_by is None  # after LATE_WAKES slots
    assert margins == pytest.approx([0.2, 0.6, 1.4, 3.0])
    assert len(stamps_of(engine)) == 1  # the three given up were freed


def test_a_slot_woken_up_a_little_late_once_goes_with_the_wider_margin(tmp_path: Any) -> None:
    engine = core(tmp_path)
    engine.settings = replace(engine.settings, limits=Limits(margin=0.2))
    engine.latency = pacing.Latency(engine.settings.limits, 60.0)
    store, reserve = engine._windows, engine._windows.reserve

    def slow(choices: Any, margin: float) -> Any:
        booked = reserve(choices, margin)
        engine.clock.sleep(0.3)
        return booked

    store.reserve = slow  # type: ignore[method-assign]
    began = engine.clock.now()
    data, calls, _ = drive(engine.send(Call("GET", "generation", READ, params={"id": G1})), engine, [ok({})])
    assert data == {} and len(calls) == 1
    assert calls[0].send_by == pytest.approx(began + 0.3 + 0.3)  # half of 2 x 0.3


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_request_past_its_send_by_is_never_written_on_the_wire(tmp_path: Any, asynchronous: bool) -> None:
    """Through httpx and httpcore to a socket that accepts: the send-by hook (httpcore's trace) stops the
    request as its headers are about to be written (:class:`SentLate`), so not one byte reaches the
    server; one in time goes on, and so do the redirects it follows; a request with no deadline has no
    hook."""
    engine = core(tmp_path)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        engine.settings = replace(engine.settings, base_url=url)
        late = Call("GET", "models", send_by=engine.clock.now() - 0.001)
        if asynchronous:

            async def send() -> None:
                async with httpx.AsyncClient() as http:
                    await http.send(engine.build(http, late))

            with pytest.raises(SentLate):
                asyncio.run(send())
        else:
            with httpx.Client() as http, pytest.raises(SentLate):
                http.send(engine.build(http, late))
        connection, _ = server.accept()  # the connection was opened, then closed unwritten
        with connection:
            connection.settimeout(5)
            assert connection.recv(1024) == b""
    in_time = Call("GET", "models", send_by=engine.clock.now() + 60)
    with httpx.Client() as http:
        hook = engine.build(http, in_time).extensions["trace"]
        hook("http11.send_request_headers.started", {})  # in time: goes on
        engine.clock.sleep(120)
        hook("http11.send_request_headers.started", {})  # a redirect it follows: sent whatever the time
    assert "trace" not in engine.build(httpx.Client(), Call("GET", "models")).extensions  # no deadline


def test_a_ledger_that_fails_after_an_answer_is_told_to_the_notice_sink_once(tmp_path: Any) -> None:
    """The engine never prints: a read's ledger write that fails is one warning through its sink, and the
    read's answer is still returned."""
    engine = core(tmp_path)
    book: Ledger = engine.parts.ledger(None)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ledgers.LedgerError("the ledger is full")

    book.update = broken  # type: ignore[method-assign]
    for _ in range(2):
        drive(engine.observed(G1, "succeeded", credits=4), engine, [])
    said = "the ledger is full; results are still returned, and a re-run reads them again from the service"
    assert isinstance(engine.notices, Told) and engine.notices.lines == [f"warning: {said}"]


def test_a_404_is_never_retried(tmp_path: Any) -> None:
    engine = core(tmp_path)
    error, calls = raised(engine.send(Call("GET", "models")), engine, [fail(404, "no such model")])
    assert isinstance(error, errors.NotFoundError) and len(calls) == 1


def test_a_start_is_retried_under_the_same_idempotency_key(tmp_path: Any) -> None:
    """A start the service can deduplicate gets a key before it is first sent, and every retry after an
    ambiguous failure (it may have reached the service) carries that same key: a replay, not a charge."""
    engine = core(tmp_path)
    answer, calls, _ = drive(
        engine.answer(Call("POST", "models", kind=START)),
        engine,
        [timeout(), fail(500), ok({"id": "g1"}, 201)],
    )
    keys = {call.idempotency_key for call in calls}
    assert len(calls) == 3 and len(keys) == 1 and None not in keys
    assert answer.retried and answer.status == 201


def test_an_uncertain_start_that_cannot_be_deduplicated_is_never_sent_again(tmp_path: Any) -> None:
    """No idempotency the service confirmed (``replayable=False``): a start with no whole answer may have
    been charged, so it fails as possibly sent instead of being sent blind a second time."""
    engine = core(tmp_path)
    error, calls = raised(
        engine.answer(Call("POST", "models", kind=START, replayable=False)), engine, [timeout()]
    )
    assert isinstance(error, errors.ConnectionFailed) and error.sent and len(calls) == 1


def test_a_refused_connection_is_tried_again_and_never_counts_as_sent(tmp_path: Any) -> None:
    engine = core(tmp_path)
    refused = httpx.ConnectError("refused", request=httpx.Request("GET", BASE))
    error, calls = raised(engine.send(Call("GET", "models")), engine, [refused, refused, refused])
    assert isinstance(error, errors.ConnectionFailed) and not error.sent and len(calls) == 3


def test_a_read_past_its_deadline_is_a_wait_timeout_on_the_service_clock(tmp_path: Any) -> None:
    """``poll`` counts its timeout in service seconds on the one clock: at x30 a 60-second timeout is
    60 service seconds of pauses, not 60 real ones converted twice."""
    engine = core(tmp_path, scale=30.0)

    def read() -> Op[dict[str, Any]]:
        return (yield from engine.send(Call("GET", "models", kind=READ)))

    finished: Callable[[dict[str, Any]], bool] = lambda r: r["status"] == "done"  # noqa: E731
    error, calls = raised(
        engine.poll(read, finished, 5.0, 60.0, None, "run r1"), engine, [ok({"status": "running"})] * 20
    )
    assert isinstance(error, errors.WaitTimeout) and 12 <= len(calls) <= 14


def test_the_engine_says_things_through_its_notice_sink_once(tmp_path: Any) -> None:
    engine = core(tmp_path)
    engine.notices.once("forgotten", "first")
    engine.notices.once("forgotten", "second")
    assert isinstance(engine.notices, Told) and engine.notices.lines == ["first"]


def test_a_budget_hold_refuses_a_start_before_anything_is_sent_and_a_refusal_gives_it_back() -> None:
    budget = Budget(100)
    hold = budget.hold(60, "a start")
    with pytest.raises(errors.BudgetExceeded):
        budget.hold(50, "another start")  # 60 held + 50 > 100: refused, nothing sent
    budget.release(hold)  # the start was refused by the service: nothing charged
    again = budget.hold(50, "another start")
    budget.charge(again, "svc/g1", 40)  # answered: the hold becomes the charge
    assert (budget.status().spent, budget.status().held) == (40, 0)


# -- a start answered with what existed before it: reuse, not spend (Starts._replayed) ------------------

SENT = datetime(2026, 11, 28, 12, 0, 10, tzinfo=timezone.utc)  # the answer's Date: the start's first send
G1 = "5f0c3a2e-8b1d-4c7e-9a6f-2d4b8e1c7a90"


def made(created: datetime, status: str = "processing", generation_id: str = G1) -> dict[str, Any]:
    """A generation as a start's answer shows it, created at ``created``."""
    output = {"type": "image", "urls": ["https://x.test/a.png"]} if status == "succeeded" else None
    return {
        "id": generation_id,
        "modelId": "flare-1-swift",
        "status": status,
        "output": output,
        "error": None,
        "creditsSpent": 1,
        "createdAt": created.isoformat().replace("+00:00", "Z"),
    }


def started(data: dict[str, Any], status: int = 201) -> httpx.Response:
    answer = ok(data, status)
    answer.headers["Date"] = format_datetime(SENT, usegmt=True)
    return answer


def start(engine: Engine, answers: list[Answer], key: str = "k-1") -> Any:
    """``generations.run`` with the given key (no catalog read: validate=False, no budget) by hand."""
    result, _, _ = drive(
        engine.generations.run("flare-1-swift", {"prompt": "a fox"}, validate=False, idempotency_key=key),
        engine.core,
        answers,
    )
    return result


@pytest.mark.parametrize(
    ("before", "reused"),
    [(0.0, False), (1.0, False), (2.0, False), (2.001, True), (30.0, True)],
    ids=["at the send", "1 s before", "at the margin", "past the margin", "long before"],
)
def test_a_start_answered_with_what_was_created_before_it_was_sent_is_reuse(
    tmp_path: Any, before: float, reused: bool
) -> None:
    """Created more than ``REPLAY_MARGIN`` (2 service seconds: machines' clocks differ) before the request
    first left, on the service's own clock: a replay of the key made elsewhere, so nothing was spent here
    and its intent is dropped; within the margin, it is this start's."""
    engine = Engine(core(tmp_path))
    result = start(engine, [started(made(SENT - timedelta(seconds=before)))])
    assert result.reused is reused
    entry = engine.core.parts.ledger(None).lookup("k-1", engine.core.where)
    assert (entry is None) is reused  # a replay's intent is dropped: no spend of this ledger counts it


def test_a_first_send_answered_with_a_state_no_new_start_has_is_reuse_but_a_retry_s_is_not(
    tmp_path: Any,
) -> None:
    """One send answered ``succeeded`` (a new start answers processing or queued): made before. After a
    retry the same answer may be the first try's own start, so only its creation time can tell."""
    now = SENT
    assert start(Engine(core(tmp_path / "a")), [started(made(now, "succeeded"))]).reused
    retried = start(Engine(core(tmp_path / "b")), [timeout(), started(made(now, "succeeded"))])
    assert not retried.reused
    queued = start(Engine(core(tmp_path / "c")), [started(made(now, "queued"))])
    assert not queued.reused


def test_a_start_answered_with_a_generation_the_ledger_holds_under_another_key_is_reuse(
    tmp_path: Any,
) -> None:
    engine = Engine(core(tmp_path))
    assert not start(engine, [started(made(SENT))], key="k-1").reused
    again = start(engine, [started(made(SENT))], key="k-2")  # the service answered k-2 with k-1's generation
    assert again.reused and again.id == G1


# -- learned spellings: names the spec does not show, met spelt otherwise ----------------------------

MODELS = [  # two catalog records whose id is spelt 'slug' (ours: 'id'), in a list ours calls 'models'
    {"slug": "flare-1-swift", "name": "Flare 1 Swift", "outputType": "image", "credits": 1},
    {"slug": "gpt-image-2", "name": "GPT Image 2", "outputType": "image", "credits": 3},
]
UNREAD = [fail(404, "no such page"), fail(404, "no such page")]  # llms.txt and openapi.json: not published


def listed_as(data: Any) -> httpx.Response:
    """A models answer: ``data`` whole, as ``GET /models`` sends it."""
    return httpx.Response(200, content=json.dumps({"success": True, "data": data}).encode())


def test_the_engine_learns_a_models_list_and_an_id_spelt_otherwise_says_so_and_uses_them(
    tmp_path: Any,
) -> None:
    """A models answer holding its one list of records as 'items', each record's id as 'slug': the only
    members that can be them, so the engine learns both, says each once (naming the names-file setting),
    and reads later answers by them, even where the answer alone would no longer settle them."""
    engine = Engine(core(tmp_path))
    with pytest.warns(SpellingLearned) as said:
        models, calls, _ = drive(
            engine.catalog.models(), engine.core, [listed_as({"items": MODELS}), *UNREAD]
        )
    assert [m.id for m in models] == ["flare-1-swift", "gpt-image-2"] and [m.credits for m in models] == [
        1,
        3,
    ]
    assert engine.core.spelling.learned == {"models_list": "items", "model_id": "slug"}
    told = [str(w.message) for w in said]
    assert len(told) == 2
    assert "'items', not 'models'" in told[0] and wire.setting("models_list") in told[0]
    assert "'slug', not 'id'" in told[1] and wire.setting("model_id") in told[1]
    assert [c.endpoint for c in calls] == ["models", "llms_txt", "openapi"] and all(
        c.kind != START for c in calls
    )
    # Two lists of records, two id-like members: unsettled alone, read by what was learned, nothing said.
    crowded = [{**m, "code": m["slug"].upper()} for m in MODELS]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpellingLearned)
        again, _, _ = drive(
            engine.catalog.models(refresh=True),
            engine.core,
            [listed_as({"items": crowded, "featured": crowded[:1]}), *UNREAD],
        )
    assert [m.id for m in again] == ["flare-1-swift", "gpt-image-2"]


@pytest.mark.parametrize(
    ("data", "field", "attribute"),
    [
        ({"items": MODELS, "featured": MODELS[:1]}, "models", "models_list"),  # which is the catalog?
        (
            {"models": [{**m, "code": m["slug"].upper()} for m in MODELS]},
            "id",
            "model_id",
        ),  # which is its id?
    ],
    ids=["two lists of records", "two id-like members"],
)
def test_a_spelling_the_answer_cannot_settle_is_refused_naming_the_field_and_the_setting(
    tmp_path: Any, data: dict[str, Any], field: str, attribute: str
) -> None:
    """Where more than one member could be the name, nothing is guessed and nothing learned: the read fails
    naming the field and the names-file setting that settles it, never an empty or a wrong catalog."""
    engine = Engine(core(tmp_path))
    error, calls = raised(engine.catalog.models(), engine.core, [listed_as(data), *UNREAD])
    assert isinstance(error, errors.ServiceResponseError) and error.field == field
    assert wire.setting(attribute) in error.message and ENV_WIRE in error.message
    assert engine.core.spelling.learned == {} and all(c.kind != START for c in calls)


# -- the ledger before the send, through Starts --------------------------------------------------------

PRICE = 5  # what the start is priced at (given, as a sweep that priced its rows in bulk gives it)


def run(engine: Engine, key: str | None = "k-1", **options: Any) -> Op[Any]:
    """``generations.run`` at a known price, by hand (no catalog read: validate=False, no budget)."""
    return engine.generations.run(
        "flare-1-swift", {"prompt": "a fox"}, validate=False, idempotency_key=key, price=PRICE, **options
    )


def test_a_start_is_in_the_ledger_with_its_key_and_price_before_it_is_sent(tmp_path: Any) -> None:
    """When the start's request is yielded, the ledger already holds its intent: its Idempotency-Key and
    price, the charge not yet known. A kernel killed at that instant leaves a start a re-run resumes."""
    engine = Engine(core(tmp_path))
    book, where = engine.core.parts.ledger(None), engine.core.where
    held: list[ledgers.Entry | None] = []
    result, calls, _ = drive(
        run(engine),
        engine.core,
        [started(made(SENT))],
        seen=lambda call: held.append(book.lookup("k-1", where)),
    )
    assert [(c.kind, c.idempotency_key) for c in calls] == [(START, "k-1")]
    [intent] = held
    assert intent is not None and intent.sent_unanswered
    assert (intent.credits, intent.credits_known, intent.resource_id) == (PRICE, False, None)
    answered = book.lookup("k-1", where)
    assert answered is not None and answered.resource_id == G1 and not answered.sent_unanswered
    assert not result.reused and engine.core.budget.status().spent == 1  # the answer's creditsSpent


def test_a_start_whose_answer_is_lost_stays_uncertain_and_a_re_run_resumes_it_under_its_key(
    tmp_path: Any,
) -> None:
    """No answer after every retry (each under the start's key): the start fails as uncertain, possibly
    charged at its price, and stays in the ledger so. A re-run (a new engine on the same ledger: a
    restarted kernel) sends it again under that same key, which the service answers with what the lost
    send made: reused, nothing charged again."""
    first = Engine(core(tmp_path))
    book, where = first.core.parts.ledger(None), first.core.where
    error, calls = raised(run(first), first.core, [timeout()] * 6)
    assert isinstance(error, errors.StartUncertain) and (error.key, error.credits) == ("k-1", PRICE)
    assert len(calls) > 1 and {c.idempotency_key for c in calls} == {"k-1"}
    lost = book.lookup("k-1", where)
    assert lost is not None and lost.sent_unanswered and lost.credits == PRICE and lost.resource_id is None

    again = Engine(core(tmp_path))
    result, resent, _ = drive(run(again), again.core, [started(made(SENT), status=200)])
    assert [(c.kind, c.idempotency_key) for c in resent] == [(START, "k-1")]
    assert result.reused and result.id == G1 and again.core.budget.status().spent == 0
    resumed = book.lookup("k-1", where)
    assert resumed is not None and resumed.resource_id == G1 and resumed.owner == lost.owner


def test_a_replay_of_a_generation_the_ledger_holds_leaves_its_run_time_as_its_start_measured(
    tmp_path: Any,
) -> None:
    """A generation started by k-1 and timed by its reads; another process's start k-2 is answered with
    it (a replay): that process's reads of it record its status, never a run time of their own."""
    first = Engine(core(tmp_path))
    assert not start(first, [started(made(SENT))], key="k-1").reused
    first.core.clock.sleep(12.0)
    drive(first.generations.generation(G1), first.core, [ok(made(SENT, "succeeded"))])
    book, where = first.core.parts.ledger(None), first.core.where
    timed = book.lookup("k-1", where)
    assert timed is not None and timed.elapsed_s == pytest.approx(12.0)
    second = Engine(core(tmp_path))
    assert start(second, [started(made(SENT))], key="k-2").reused
    second.core.clock.sleep(3.0)
    drive(second.generations.generation(G1), second.core, [ok(made(SENT, "succeeded"))])
    after = book.lookup("k-1", where)
    assert after is not None and after.status == "succeeded" and after.elapsed_s == pytest.approx(12.0)


def test_the_reads_of_a_replayed_generation_go_to_the_ledger_that_holds_it(tmp_path: Any) -> None:
    """A sweep's own ledger holds k-1's generation, queued; another process's start k-2 to that ledger is
    answered with it (a replay), and its read (processing) is recorded there, not in its default ledger."""
    sweep, book = Ledger(tmp_path / "sweep.sqlite"), Ledger(tmp_path / "default.sqlite")

    def engine() -> Engine:
        made_here = Engine(core(tmp_path))
        made_here.core.parts = replace(
            made_here.core.parts, ledger=lambda override: sweep if override else book
        )
        return made_here

    def run_to(on: Engine, key: str) -> Any:
        op = on.generations.run(
            "flare-1-swift", {"prompt": "a fox"}, validate=False, idempotency_key=key, ledger=sweep
        )
        return drive(op, on.core, [started(made(SENT, "queued"))])[0]

    assert not run_to(engine(), "k-1").reused
    other = engine()
    assert run_to(other, "k-2").reused
    drive(other.generations.generation(G1), other.core, [ok(made(SENT, "processing"))])
    held = sweep.lookup("k-1", other.core.where)
    assert held is not None and held.status == "processing"
    assert book.lookup("k-1", other.core.where) is None


def test_a_start_on_the_embedded_sandbox_asks_which_state_it_holds_first(tmp_path: Any) -> None:
    """The kept sandbox may have been reset or restarted from another state: a start learns which state
    it talks to (a Record step: the check may start it again) before its key is looked up, and is kept
    under that state's instance."""
    from types import SimpleNamespace

    from mediagen_nb.client.config import Embedded

    class Launcher:
        found = 0

        def find(self, data_dir: Any) -> Any:
            Launcher.found += 1
            return running

    running = SimpleNamespace(
        base_url=BASE,
        demo_key="pk_test_engine",
        time_scale=1.0,
        instance="i-1",
        data_dir=tmp_path,
        token="owner",
        agent_token="agent",
    )
    engine = Engine(core(tmp_path))
    embedded = Embedded(running, Launcher())  # type: ignore[arg-type]
    engine.core.settings = replace(engine.core.settings, sandbox=True, embedded=embedded)
    embedded._checked = -1e9  # due: the start's check asks the launcher
    assert not start(engine, [started(made(SENT))]).reused and Launcher.found == 1
    entry = engine.core.parts.ledger(None).lookup("k-1", engine.core.where)
    assert entry is not None and entry.instance == "sandbox:i-1"


def test_a_start_with_no_key_gets_a_new_one_as_its_first_variation(tmp_path: Any) -> None:
    """Neither a key nor ``reuse``: a random key, recorded as the first (and only) variation of the ask."""
    engine = Engine(core(tmp_path))
    _, calls, _ = drive(run(engine, None), engine.core, [started(made(SENT))])
    [call] = calls
    assert call.idempotency_key is not None and len(call.idempotency_key) == 32
    entry = engine.core.parts.ledger(None).lookup(call.idempotency_key, engine.core.where)
    assert entry is not None and entry.variation == 1 and entry.resource_id == G1


def test_a_start_of_no_known_price_under_a_budget_holds_nothing_and_is_charged_what_it_cost(
    tmp_path: Any,
) -> None:
    """Unvalidated (no model read, no price): the budget holds 0 for it, sends it, then counts the
    answer's charge."""
    engine = Engine(core(tmp_path, budget=Budget(100)))
    unpriced = Starts(engine.core).start(
        Start(
            ledgers.GENERATION,
            "flare-1-swift",
            "flare-1-swift",
            {"prompt": "a fox"},
            request=lambda key: Call("POST", "run", START, body={}, idempotency_key=key),
            parse=Generation.from_api,
            recorded=lambda made, answer, _: Recorded(made.status, made.credits_spent, resource=answer),
            read=engine.generations.generation,
            price=listed(None),
            key="k-1",
        )
    )
    result, _, _ = drive(unpriced, engine.core, [started(made(SENT))])
    assert not result.reused
    assert (engine.core.budget.status().spent, engine.core.budget.status().held) == (1, 0)


def test_a_start_another_process_of_the_ledger_sent_too_stays_ours_however_old_its_answer(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While this start is in flight, another process sharing the ledger sends the same start (its intent
    touches ours). The answer, made long before by one of the two sends, is then this ledger's own
    start, as the ledger says: not reuse (the other process counts it as the other's)."""
    from mediagen_nb.client import processes

    engine = Engine(core(tmp_path))
    book, where, mine = engine.core.parts.ledger(None), engine.core.where, processes.me()

    def other_sends_too(call: Call) -> None:
        monkeypatch.setattr(processes, "me", lambda: "elsewhere/1/1")
        time.sleep(0.002)  # real: the ledger's times are the wall clock's, and must differ
        asked = {
            "kind": "generation",
            "via": "call",
            "model_id": "flare-1-swift",
            "input": {"prompt": "a fox"},
        }
        assert book.intent("k-1", where, **asked) is False  # the row was there: not its to own
        monkeypatch.setattr(processes, "me", lambda: mine)

    result, _, _ = drive(
        run(engine), engine.core, [started(made(SENT - timedelta(seconds=30)))], seen=other_sends_too
    )
    assert not result.reused
    entry = book.lookup("k-1", where)
    assert entry is not None and entry.resource_id == G1 and entry.input == {"prompt": "a fox"}


def test_a_replay_answering_another_process_s_uncertain_start_leaves_it_that_process_s(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process of this ledger sent a start and lost its answer; this one sends it again under its
    key and the service replays it (200): the start stays the other process's in the ledger, which
    counts it as theirs, and is reuse here, nothing spent."""
    from mediagen_nb.client import processes

    mine = processes.me()
    monkeypatch.setattr(processes, "me", lambda: "elsewhere/1/1")
    other = Engine(core(tmp_path))
    raised(run(other), other.core, [timeout()] * 6)
    monkeypatch.setattr(processes, "me", lambda: mine)
    again = Engine(core(tmp_path))
    result, _, _ = drive(run(again), again.core, [started(made(SENT), status=200)])
    assert result.reused and again.core.budget.status().spent == 0
    entry = again.core.parts.ledger(None).lookup("k-1", again.core.where)
    assert entry is not None and entry.resource_id == G1 and entry.owner == "elsewhere/1/1"


def test_a_re_run_of_an_unanswered_start_keeps_its_derived_key_never_a_new_variation(tmp_path: Any) -> None:
    """``reuse=True``: the key derives from what is asked. A start that got no answer is sent again
    under that key on a re-run (the service replays it), never as the next variation, whose new key
    would be a second charge."""
    first = Engine(core(tmp_path))
    error, calls = raised(run(first, None, reuse=True), first.core, [timeout()] * 6)
    assert isinstance(error, errors.StartUncertain)
    [key] = {c.idempotency_key for c in calls}
    again = Engine(core(tmp_path))
    result, resent, _ = drive(run(again, None, reuse=True), again.core, [started(made(SENT), status=200)])
    assert [c.idempotency_key for c in resent] == [key] and result.reused


def test_an_uncertain_start_the_service_may_not_deduplicate_is_never_sent_blind(tmp_path: Any) -> None:
    """A start whose Idempotency-Key the service may not read (``resend=False``, its request not
    ``replayable``): a lost answer is not retried, and a re-run refuses it before any request, naming the
    credits it may have cost; the ledger keeps it as possibly charged."""

    def blind(engine: Engine) -> Op[Any]:
        body = {"modelId": "flare-1-swift", "input": {"prompt": "a fox"}}
        return Starts(engine.core).start(
            Start(
                ledgers.GENERATION,
                "flare-1-swift",
                "flare-1-swift",
                body["input"],
                request=lambda key: Call(
                    "POST", "run", START, body=body, idempotency_key=key, replayable=False
                ),
                parse=Generation.from_api,
                recorded=lambda made, answer, _: Recorded(made.status, made.credits_spent, resource=answer),
                read=engine.generations.generation,
                price=listed(PRICE),
                key="k-1",
                resend=False,
                unkeyed="its key's name is not confirmed",
            )
        )

    first = Engine(core(tmp_path))
    error, calls = raised(blind(first), first.core, [timeout()] * 6)
    assert isinstance(error, errors.StartUncertain) and len(calls) == 1
    again = Engine(core(tmp_path))
    error, calls = raised(blind(again), again.core, [started(made(SENT))])
    assert isinstance(error, errors.StartUncertain) and error.credits == PRICE and calls == []
    entry = again.core.parts.ledger(None).lookup("k-1", again.core.where)
    assert entry is not None and entry.sent_unanswered
