"""The one paid start (``client/starts.py``), each of its rules on its own, on an in-process sandbox.

Its key (given, derived, or new), an earlier start resumed at no charge (from the ledger, or read by
id and adopted), a start the service no longer knows begun again, the intent written before sending,
an unanswered start kept as uncertain, a refused one dropped, and a ledger that fails after the answer
(the answer is still returned). Money is read from the sandbox's own ledger.
"""

import json
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from mediagen_nb.client import (
    AsyncClient,
    BudgetExceeded,
    ConnectionFailed,
    Ledger,
    LedgerError,
    RetryPolicy,
    StartUncertain,
    ValidationError,
    budget,
    idempotency,
    starts,
)
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.context import PROCESS
from mediagen_nb.client.ledger import STARTING
from mediagen_nb.client.spending import BudgetStatus
from mediagen_nb.sandbox import Sandbox

pytestmark = pytest.mark.anyio
MODEL, PRICE = "flare-1-pro", 5
INPUT = {"prompt": "a lighthouse at dawn"}
URL = "http://sandbox.local"
SCALE = 600.0


class Sent:
    """Start and read requests as they leave the client (an httpx event hook)."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    async def __call__(self, request: httpx.Request) -> None:
        self.requests.append(request)

    def starts(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == "POST" and r.url.path.endswith(("/run", "/analyze"))]

    def reads(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == "GET" and "/generations/" in r.url.path]


@pytest.fixture
async def sent(sandbox: Sandbox) -> AsyncIterator[tuple[AsyncClient, Sent]]:
    recorder = Sent()
    async with (
        httpx.AsyncClient(transport=sandbox.transport(), event_hooks={"request": [recorder]}) as http,
        AsyncClient.for_sandbox(sandbox, http_client=http) as client,
    ):
        yield client, recorder


def charged(sandbox: Sandbox) -> int:
    entries = sandbox.world.accounts.ledger
    return sum(e["credits"] * (1 if e["kind"] == "charge" else -1) for e in entries if e["kind"] != "grant")


def rows(path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM starts")]


# ------------------------------------------------------------------------------------------- keys


async def test_a_given_key_is_sent_as_it_is_cut_at_255_and_resumed_from_the_ledger(
    sent: tuple[AsyncClient, Sent], sandbox: Sandbox
) -> None:
    client, recorder = sent
    long_key = "order-" + "7" * 300
    first = await client.run(MODEL, INPUT, idempotency_key=long_key)
    assert [r.headers["idempotency-key"] for r in recorder.starts()] == [long_key[:255]]
    again = await client.run(MODEL, INPUT, idempotency_key=long_key[:255] + "anything after 255")
    assert again.id == first.id and again.reused and len(recorder.starts()) == 1
    assert charged(sandbox) == PRICE


async def test_a_given_key_httpx_cannot_send_is_refused_before_anything(
    sent: tuple[AsyncClient, Sent], own_ledger: Path
) -> None:
    client, recorder = sent
    with pytest.raises(ValidationError, match="idempotency_key has the non-ASCII character"):
        await client.run(MODEL, INPUT, idempotency_key="commande-é")
    assert (recorder.starts() == [] and not own_ledger.exists()) or rows(own_ledger) == []


async def test_without_reuse_each_call_is_a_new_start_with_a_new_random_key(
    sent: tuple[AsyncClient, Sent], sandbox: Sandbox
) -> None:
    client, recorder = sent
    first = await client.run(MODEL, INPUT)
    second = await client.run(MODEL, INPUT)
    keys = [r.headers["idempotency-key"] for r in recorder.starts()]
    assert first.id != second.id and len(set(keys)) == 2
    assert all(len(k) == 32 and int(k, 16) >= 0 for k in keys) and charged(sandbox) == 2 * PRICE


# ---------------------------------------------------------------------------------------- resumes


async def test_an_ended_start_is_answered_from_the_ledger_without_a_request(
    sent: tuple[AsyncClient, Sent], sandbox: Sandbox
) -> None:
    client, recorder = sent
    done = await client.generate(MODEL, INPUT, reuse=True)
    before = len(recorder.requests)
    again = await client.run(MODEL, INPUT, reuse=True)
    assert len(recorder.requests) == before  # nothing sent: the ledger kept the whole answer
    assert (again.id, again.status, again.url, again.reused) == (done.id, "succeeded", done.url, True)
    assert charged(sandbox) == PRICE


async def test_a_start_still_running_is_read_by_id(sent: tuple[AsyncClient, Sent], sandbox: Sandbox) -> None:
    client, recorder = sent
    started = await client.run(MODEL, INPUT, reuse=True)
    again = await client.run(MODEL, INPUT, reuse=True)
    assert again.id == started.id and again.reused
    assert len(recorder.starts()) == 1 and [r.url.path.rsplit("/", 1)[1] for r in recorder.reads()] == [
        started.id
    ]
    assert charged(sandbox) == PRICE


async def test_a_failed_start_is_asked_anew_as_the_next_variation(
    async_client: AsyncClient, sandbox: Sandbox
) -> None:
    sandbox.world.faults.configure({"modelScript": ["fail"]})
    failed = await async_client.wait(await async_client.run(MODEL, INPUT, reuse=True))
    assert failed.status == "failed"
    again = await async_client.run(MODEL, INPUT, reuse=True)
    assert again.id != failed.id and not again.reused
    assert charged(sandbox) == PRICE  # the failed one was refunded


def as_embedded(sandbox: Sandbox) -> AsyncClient:
    """A client of ``sandbox`` that counts it as the embedded sandbox (service ``embedded-sandbox``,
    instance its address): rows of another instance of that service are then looked up too."""
    probe = AsyncClient(sandbox.demo_key, base_url=URL, transport=sandbox.transport(), time_scale=SCALE)
    settings = replace(probe.settings, sandbox=True)
    return AsyncClient(settings=settings, transport=sandbox.transport())


def gone_start(client: AsyncClient, book: Ledger, values: dict[str, Any]) -> None:
    """A start of ``values`` that another (reset) instance of the service ran, with an id unknown here."""
    where = client.settings.where
    gone = ledgers.Where(where.service, "sandbox:gone", where.account)
    key = idempotency.derive("generation", idempotency.SINGLE, MODEL, values, occurrence=1)
    asked = idempotency.ask("generation", MODEL, values)
    book.intent(key, gone, kind="generation", via="call", model_id=MODEL, input=values, ask=asked)
    book.started(key, gone, "0b7e6a3c-2f4e-4b8a-9c1d-5e6f7a8b9c0d", "processing", PRICE)


async def test_a_start_the_service_no_longer_knows_is_begun_again_and_said_once(
    sandbox: Sandbox, own_ledger: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows of another instance of the service (a kept sandbox since reset) whose ids it does not know:
    each start begins again, charged, as this instance's; that is said once per process."""
    monkeypatch.setattr(PROCESS, "told", set())
    book = Ledger(own_ledger)
    inputs = [{"prompt": f"a lighthouse, take {n}"} for n in range(2)]
    async with as_embedded(sandbox) as client:
        assert client.settings.where.service == "embedded-sandbox"
        for values in inputs:
            gone_start(client, book, values)
            made = await client.run(MODEL, values, reuse=True)
            assert not made.reused and made.id != "0b7e6a3c-2f4e-4b8a-9c1d-5e6f7a8b9c0d"
        instances = sorted(r["instance"] for r in rows(own_ledger))
    assert capsys.readouterr().out.count("is gone (reset, or its state lost); they are started again") == 1
    assert "forgotten" in PROCESS.told and charged(sandbox) == 2 * PRICE
    assert instances == [URL, URL, "sandbox:gone", "sandbox:gone"]
    book.close()


async def test_a_forgotten_start_in_a_sweep_is_left_to_the_sweep_s_summary(
    sandbox: Sandbox, own_ledger: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(PROCESS, "told", set())
    book = Ledger(own_ledger)
    async with as_embedded(sandbox) as client:
        gone_start(client, book, INPUT)
        with ledgers.via("sweep"):
            await client.run(MODEL, INPUT, reuse=True)
    assert "is gone" not in capsys.readouterr().out and "forgotten" not in PROCESS.told
    book.close()


async def test_a_forgotten_start_of_this_very_instance_is_begun_again_silently(
    async_client: AsyncClient,
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An id this instance itself handed out and no longer has (its state lost): nothing to tell."""
    monkeypatch.setattr(PROCESS, "told", set())
    await async_client.run(MODEL, INPUT, reuse=True)
    sandbox.world.reset()  # its state lost; the ledger's rows are of this same address
    again = await async_client.run(MODEL, INPUT, reuse=True)
    assert not again.reused and charged(sandbox) == PRICE and "is gone" not in capsys.readouterr().out


async def test_another_resource_under_the_same_id_is_never_attached_to(
    async_client: AsyncClient, sandbox: Sandbox
) -> None:
    """A sandbox reset with the same seed hands the same ids out again: the id the ledger holds is now
    another model's generation, so the start begins again instead of returning that one."""
    mine = await async_client.run(MODEL, INPUT, reuse=True)
    sandbox.world.reset()
    other = await async_client.run("flare-1-dev", {"prompt": "something else"})
    assert other.id == mine.id  # the same seed: the same first id
    again = await async_client.run(MODEL, INPUT, reuse=True)
    assert again.id != mine.id and again.model_id == MODEL and not again.reused


async def test_a_start_recorded_for_another_account_label_is_read_and_adopted(
    sandbox: Sandbox, own_ledger: Path
) -> None:
    """The same account under another label (``account=``): the earlier start is read by id, found
    fine, and recorded for this label, so a re-run trusts it; nothing is started or charged again."""
    options: dict[str, Any] = {"base_url": URL, "transport": sandbox.transport(), "time_scale": SCALE}
    async with AsyncClient(sandbox.demo_key, account="first", **options) as first:
        made = await first.run(MODEL, INPUT, reuse=True)
    async with AsyncClient(sandbox.demo_key, account="second", **options) as second:
        again = await second.run(MODEL, INPUT, reuse=True)
    assert again.id == made.id and again.reused and charged(sandbox) == PRICE
    assert again.elapsed_s is None  # started elsewhere: its time is not counted from this read
    assert sorted(r["account"] for r in rows(own_ledger)) == ["second"]


async def test_earlier_reads_an_earlier_start_and_never_starts_one(
    sent: tuple[AsyncClient, Sent], sandbox: Sandbox
) -> None:
    client, recorder = sent
    link = "https://www.tiktok.com/@someone/video/7000000000000000001"
    assert await client.analysis_of(link) is None
    analysis = await client.analyze(link, reuse=True)
    found = await client.analysis_of(link)
    assert found is not None and found.id == analysis.id and found.reused
    assert len(recorder.starts()) == 1 and charged(sandbox) == 5


# -------------------------------------------------------------------------------- what is unknown


async def test_a_start_whose_answers_are_lost_is_uncertain_held_and_kept(
    sandbox: Sandbox, own_ledger: Path
) -> None:
    budget(20)
    sandbox.world.faults.configure({"script": ["drop"], "routes": ["run"]})
    async with AsyncClient.for_sandbox(sandbox, retry=RetryPolicy(max_attempts=1)) as client:
        with pytest.raises(StartUncertain) as lost:
            await client.run(MODEL, INPUT, reuse=True)
    error = lost.value
    assert error.message.startswith(f"{MODEL}: no answer to the start (")
    assert error.message.endswith(
        f"); the service may have started it and charged up to {PRICE} credits. Running the same start "
        "again resumes it at no cost"
    )
    assert error.credits == PRICE and error.key.startswith("mgnb-") and error.__cause__ is None
    [row] = rows(own_ledger)
    assert (row["key"], row["status"], row["resource_id"], row["credits"]) == (
        error.key,
        STARTING,
        None,
        PRICE,
    )
    assert row["error"] and row["credits_known"] == 0
    assert budget() == BudgetStatus(20, 0, PRICE)


async def test_a_start_answered_with_a_server_error_is_uncertain(sandbox: Sandbox) -> None:
    sandbox.world.faults.configure({"script": ["500"], "routes": ["run"]})
    async with AsyncClient.for_sandbox(sandbox, retry=RetryPolicy(max_attempts=1)) as client:
        with pytest.raises(StartUncertain, match="no answer to the start"):
            await client.run(MODEL, INPUT)


async def test_a_start_answered_with_no_usable_id_says_so_and_keeps_the_cause(own_ledger: Path) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(404, json={"statusCode": 404, "message": "no catalog here"})
        return httpx.Response(201, json={"success": True, "data": {"status": "processing"}})

    async with AsyncClient(
        "pk_live_x",
        base_url="https://service.example",
        transport=httpx.MockTransport(answer),
        time_scale=SCALE,
    ) as client:
        with pytest.raises(StartUncertain) as lost:
            await client.run(MODEL, INPUT, validate=False, price=PRICE)
    assert lost.value.message.startswith(f"{MODEL}: no usable answer to the start (")
    assert lost.value.__cause__ is not None and rows(own_ledger)[0]["status"] == STARTING


async def test_a_start_that_never_left_the_machine_is_dropped(sandbox: Sandbox, own_ledger: Path) -> None:
    """The start's connection is refused (the catalog answered): it was never sent, so it holds nothing
    and leaves no intent."""
    service = sandbox.transport()

    async def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/run"):
            raise httpx.ConnectError("connection refused", request=request)
        return await service.handle_async_request(request)

    budget(20)
    async with AsyncClient(
        sandbox.demo_key, base_url=URL, transport=httpx.MockTransport(answer), time_scale=SCALE
    ) as client:
        with pytest.raises(ConnectionFailed) as refused:
            await client.run(MODEL, INPUT, reuse=True)
    assert refused.value.sent is False and "cannot connect" in refused.value.message
    assert budget() == BudgetStatus(20, 0, 0) and rows(own_ledger) == [] and charged(sandbox) == 0


async def test_an_unpriced_start_says_its_price_is_unknown(sandbox: Sandbox, own_ledger: Path) -> None:
    sandbox.world.faults.configure({"script": ["drop"], "routes": ["run"]})
    async with AsyncClient.for_sandbox(sandbox, retry=RetryPolicy(max_attempts=1)) as client:
        with pytest.raises(StartUncertain) as lost:
            await client.run(MODEL, INPUT, validate=False)  # no catalog read: the price is not known
    assert "may have started it and charged its price" in lost.value.message and lost.value.credits is None
    assert [(r["credits"], r["credits_known"]) for r in rows(own_ledger)] == [(0, 0)]


# ------------------------------------------------------------------------------ the ledger failing


async def test_a_ledger_that_cannot_take_the_intent_sends_nothing_and_holds_nothing(
    sent: tuple[AsyncClient, Sent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, recorder = sent
    monkeypatch.setattr(ledgers, "LOCK_NOTICE", 0.05)
    book = Ledger(tmp_path / "locked.sqlite", lock_wait=0.1)
    holder = sqlite3.connect(book.path, isolation_level=None, timeout=0)
    holder.execute("BEGIN IMMEDIATE")
    budget(20)
    try:
        with pytest.raises(LedgerError, match="is locked"):
            await client.run(MODEL, INPUT, ledger=book)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        book.close()
    assert recorder.starts() == [] and budget() == BudgetStatus(20, 0, 0)


async def test_a_ledger_failing_after_the_answer_still_returns_it_and_says_so_once(
    async_client: AsyncClient, sandbox: Sandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book = Ledger(tmp_path / "ledger.sqlite")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise LedgerError(f"ledger {book.path} is locked: another process holds it")

    book.started = broken  # type: ignore[method-assign]
    budget(20)
    first = await async_client.run(MODEL, INPUT, ledger=book)
    second = await async_client.run(MODEL, {"prompt": "another"}, ledger=book)
    assert first.credits_spent == second.credits_spent == PRICE and charged(sandbox) == 2 * PRICE
    assert budget() == BudgetStatus(20, 2 * PRICE, 0)
    said = capsys.readouterr().err
    assert said.count("results are still returned, and a re-run finds what was started by its ") == 1
    assert "is locked: another process holds it; results are still returned" in said  # the failure, named
    book.close()


async def test_an_answer_is_recorded_in_the_start_s_own_ledger_and_its_reads_too(
    async_client: AsyncClient, tmp_path: Path, own_ledger: Path
) -> None:
    """A start made with ``ledger=`` is answered, read and ended in that ledger, not the default one."""
    chosen = tmp_path / "chosen.sqlite"
    started = await async_client.run(MODEL, INPUT, ledger=str(chosen))
    [row] = rows(chosen)
    assert (row["resource_id"], row["status"], row["credits"], row["credits_known"]) == (
        started.id,
        "processing",
        PRICE,
        1,
    )
    assert json.loads(row["resource"])["id"] == started.id
    done = await async_client.wait(started)
    [row] = rows(chosen)
    assert row["status"] == "succeeded" and json.loads(row["urls"]) == list(done.urls)
    assert not own_ledger.exists() or rows(own_ledger) == []


async def test_a_start_resumed_by_another_client_has_its_reads_recorded_in_its_own_ledger(
    async_client: AsyncClient, sandbox: Sandbox, tmp_path: Path, own_ledger: Path
) -> None:
    """A re-run in a new process (a new client) resumes the start from its ledger: what it then reads
    (the start ending) is written there, not into the default ledger; charged once."""
    chosen = str(tmp_path / "chosen.sqlite")
    started = await async_client.run(MODEL, INPUT, reuse=True, ledger=chosen)
    async with AsyncClient.for_sandbox(sandbox) as later:
        resumed = await later.run(MODEL, INPUT, reuse=True, ledger=chosen)
        assert resumed.id == started.id and resumed.reused
        await later.wait(resumed)
    [row] = rows(Path(chosen))
    assert row["status"] == "succeeded" and row["resource_id"] == started.id
    assert not own_ledger.exists() or rows(own_ledger) == []
    assert charged(sandbox) == PRICE


def test_a_created_at_is_read_only_when_it_says_its_zone() -> None:
    """A replay is told by the answer's ``createdAt`` against when the start was sent: a time without a
    zone, or no time, says nothing (never a guess in the machine's zone)."""
    noon = datetime(2026, 5, 15, 12, tzinfo=timezone.utc).timestamp()
    assert starts._instant("2026-05-15T12:00:00.000Z") == noon
    assert starts._instant("2026-05-15T14:00:00+02:00") == noon
    for unreadable in ("2026-05-15T12:00:00", "", "yesterday", None, 5):
        assert starts._instant(unreadable) is None  # type: ignore[arg-type]


async def test_a_failed_run_is_given_back_to_the_budget_once_read(
    async_client: AsyncClient, sandbox: Sandbox
) -> None:
    budget(20)
    sandbox.world.faults.configure({"modelScript": ["fail"]})
    started = await async_client.run(MODEL, INPUT)
    assert budget() == BudgetStatus(20, PRICE, 0)
    assert (await async_client.wait(started)).status == "failed"
    assert budget() == BudgetStatus(20, 0, 0) and charged(sandbox) == 0


async def test_a_flat_priced_analysis_holds_its_price(async_client: AsyncClient, sandbox: Sandbox) -> None:
    budget(4)
    link = "https://www.tiktok.com/@someone/video/7000000000000000002"
    with pytest.raises(BudgetExceeded, match=f"the analysis of {link} would cost 5 credits"):
        await async_client.analyze(link)
    assert charged(sandbox) == 0


async def test_a_ledger_row_whose_id_is_no_id_is_begun_again(
    async_client: AsyncClient, sandbox: Sandbox, own_ledger: Path
) -> None:
    """A row of an older release (or a hand-edited file) whose id is not a UUID: read, it is refused
    before sending, and the start begins anew instead of failing."""
    book = Ledger(own_ledger)
    where = async_client.settings.where
    key = idempotency.derive("generation", idempotency.SINGLE, MODEL, INPUT, occurrence=1)
    asked = idempotency.ask("generation", MODEL, INPUT)
    book.intent(key, where, kind="generation", via="call", model_id=MODEL, input=INPUT, ask=asked)
    book.started(key, where, "gen_123", "processing", PRICE)
    again = await async_client.run(MODEL, INPUT, reuse=True)
    assert not again.reused and charged(sandbox) == PRICE
    assert [r["resource_id"] for r in rows(own_ledger)] == [again.id]
    book.close()


async def test_a_plain_reuse_start_sends_the_derived_key_of_its_first_variation(
    sent: tuple[AsyncClient, Sent],
) -> None:
    """Every path (a magic, a form, the CLI, a call) derives the same key for the same ask, so each
    finds the others' starts: the first variation's, then the next for ``fresh``."""
    client, recorder = sent
    await client.run(MODEL, INPUT, reuse=True)
    await client.run(MODEL, INPUT, reuse=True, fresh=True)
    derived = [
        idempotency.derive("generation", idempotency.SINGLE, MODEL, INPUT, occurrence=n) for n in (1, 2)
    ]
    assert [r.headers["idempotency-key"] for r in recorder.starts()] == derived


async def test_an_earlier_start_is_looked_up_and_followed_in_its_own_ledger(
    async_client: AsyncClient, sandbox: Sandbox, tmp_path: Path
) -> None:
    chosen = str(tmp_path / "chosen.sqlite")
    link = "https://www.tiktok.com/@someone/video/7000000000000000003"
    analysis = await async_client.analyze(link, reuse=True, ledger=chosen)
    assert await async_client.analysis_of(link) is None  # not in the default ledger
    found = await async_client.analysis_of(link, ledger=chosen)
    assert found is not None and found.id == analysis.id
    ready = await async_client.wait_analysis(found)
    assert ready.status == "ready" and [r["status"] for r in rows(Path(chosen))] == ["ready"]
