"""The session budget at the layer that owns it (``client/spending.py`` and the one start path).

N concurrent starts never charge more than the budget (async gather, threads sharing a client); a
start the service refuses gives back what it held and leaves no intent in the ledger; a start resumed
after its answers were lost, or replayed by the service, is counted once. Every figure is checked
against the sandbox's own ledger (issue 35's "Why").
"""

import asyncio
import sqlite3
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mediagen_nb.client import (
    AsyncClient,
    BudgetExceeded,
    Client,
    ConfigurationError,
    InsufficientCreditsError,
    KeyCapReachedError,
    Ledger,
    MediagenError,
    ModerationError,
    RetryPolicy,
    StartUncertain,
    ValidationError,
    WebhookError,
    budget,
)
from mediagen_nb.client.assemble import session_budget as session
from mediagen_nb.client.spending import Budget, BudgetStatus
from mediagen_nb.sandbox import Sandbox

pytestmark = pytest.mark.anyio
MODEL, PRICE = "flare-1-pro", 5  # a flat price: the hold is the price, the charge equals it


def net_charged(sandbox: Sandbox) -> int:
    """Credits the sandbox's own ledger took, net of refunds."""
    entries = sandbox.world.accounts.ledger
    return sum(e["credits"] * (1 if e["kind"] == "charge" else -1) for e in entries if e["kind"] != "grant")


def starts_in(ledger: Path) -> int:
    """Rows of the client's ledger (every start written before it was sent, and not dropped since)."""
    with sqlite3.connect(ledger) as db:
        return int(db.execute("SELECT COUNT(*) FROM starts").fetchone()[0])


def prompt(n: int) -> dict[str, str]:
    return {"prompt": f"a lighthouse, take {n}"}


async def gather_starts(client: AsyncClient, count: int) -> list[Any]:
    """``count`` starts at once, each its own input; results and exceptions in order."""
    return await asyncio.gather(*(client.run(MODEL, prompt(n)) for n in range(count)), return_exceptions=True)


# --------------------------------------------------------------------------------- the Budget itself


def test_a_hold_counts_what_is_spent_and_what_is_held_by_starts_in_flight() -> None:
    session = Budget(12)
    first = session.hold(5, "one")
    second = session.hold(5, "two")  # 10 held: 2 left
    with pytest.raises(BudgetExceeded) as refused:
        session.hold(5, "three")
    assert refused.value.message == (
        "budget: three would cost 5 credits, but 0 of the session budget of 12 credits are spent and 10 "
        "held by starts in flight; nothing was sent. Raise it with mediagen_nb.budget(N) or %mediagen "
        "budget N"
    )
    assert session.status() == BudgetStatus(12, 0, 10)
    session.charge(first, "sandbox/a", 5)
    session.charge(second, "sandbox/b", 4)  # charged less than held: the hold goes, the charge stays
    assert session.status() == BudgetStatus(12, 9, 0) and session.status().left == 3
    third = session.hold(3, "three")  # exactly what is left
    assert session.status().left == 0
    with pytest.raises(BudgetExceeded, match="9 of the session budget of 12 credits are spent and 3 held"):
        session.hold(1, "four")
    session.release(third)
    assert session.status() == BudgetStatus(12, 9, 0)


def test_charges_are_kept_per_resource_so_a_second_answer_or_a_refund_is_exact() -> None:
    session = Budget(20)
    session.charge(session.hold(5, "one"), "sandbox/a", 5)
    session.charge(None, "sandbox/a", 5)  # the same resource answered again (a replay): counted once
    assert session.status() == BudgetStatus(20, 5, 0)
    session.correct("sandbox/a", 0)  # it failed and was refunded
    session.correct("sandbox/other", 7)  # not started here: nothing to correct
    assert session.status() == BudgetStatus(20, 0, 0)
    session.release(None)  # a start sent with no hold (no budget then) releases nothing
    assert session.status() == BudgetStatus(20, 0, 0)


def test_a_refusal_with_nothing_held_says_only_what_is_spent() -> None:
    session = Budget(4)
    with pytest.raises(BudgetExceeded) as refused:
        session.hold(5, "flare-1-pro")
    assert refused.value.message == (
        "budget: flare-1-pro would cost 5 credits, but 0 of the session budget of 4 credits are spent; "
        "nothing was sent. Raise it with mediagen_nb.budget(N) or %mediagen budget N"
    )


def test_a_hold_given_back_twice_or_charged_after_is_harmless() -> None:
    """A hold is released once by the start path, but a cancelled task's cleanup may race it."""
    session = Budget(10)
    hold = session.hold(5, "one")
    session.release(hold)
    session.release(hold)
    session.charge(hold, "sandbox/a", 5)
    assert session.status() == BudgetStatus(10, 5, 0)
    holds = {session.hold(1, f"n{n}") for n in range(5)}
    assert len(holds) == 5 and session.status().held == 5  # each hold its own


def test_the_budget_of_a_process_comes_from_mediagen_budget_on_first_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEDIAGEN_BUDGET", "12")
    assert budget() == BudgetStatus(12, 0, 0)
    monkeypatch.setenv("MEDIAGEN_BUDGET", "50")
    assert budget().limit == 12  # read once: the process's budget is one object


def test_a_budget_of_what_the_account_has_left_counts_what_this_process_spent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``budget("balance")``: from now on, no more than the account has left (the agent server's
    ``check_usage``, tested in test_balance.py), on top of what this process has spent already."""
    from mediagen_nb.client import balance as balances

    monkeypatch.setattr(balances, "balance", lambda: SimpleNamespace(remaining=40))
    budget(100)
    spent = session()
    spent.charge(spent.hold(7, "one"), "sandbox/a", 7)
    assert budget("balance") == BudgetStatus(47, 7, 0)


def test_without_a_limit_nothing_is_refused_and_the_status_says_so() -> None:
    session = Budget()
    session.charge(session.hold(10**9, "a large one"), "sandbox/a", 10**9)
    status = session.status()
    assert status.left is None and str(status) == f"no session budget; {10**9} credits spent by this process"
    assert (
        str(BudgetStatus(10, 4, 3))
        == "session budget 10 credits: 4 spent, 3 held by starts in flight, 3 left"
    )
    assert str(BudgetStatus(10, 12, 0)) == "session budget 10 credits: 12 spent, 0 left"


def test_budget_sets_reads_and_removes_the_process_budget() -> None:
    assert budget() == BudgetStatus(None, 0, 0)
    assert budget(12) == BudgetStatus(12, 0, 0) and budget("7").limit == 7
    assert budget().limit == 7  # reading changes nothing
    assert budget(None).limit is None
    for wrong in (-1, "a dozen", 1.5, True):
        with pytest.raises(ConfigurationError, match="budget must be"):
            budget(wrong)  # type: ignore[arg-type]
    assert budget().limit is None


# ------------------------------------------------------------------------------ starts at the same time


async def test_concurrent_async_starts_never_charge_past_the_budget(
    async_client: AsyncClient, sandbox: Sandbox
) -> None:
    """The issue's case: 12 credits left, three 5-credit starts at once: two are sent, the third is
    refused before sending (the two in flight hold 10), and the sandbox charged 10."""
    budget(12)
    results = await gather_starts(async_client, 3)
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], BudgetExceeded)
    message = refused[0].message  # the two others in flight, or one of them already answered
    assert (
        "10 held by starts in flight" in message
        or "5 of the session budget of 12 credits are spent and 5 held" in message
    )
    assert net_charged(sandbox) == 10 == budget().spent and budget().held == 0
    assert len(sandbox.world.generations.items) == 2


def test_threads_sharing_a_client_never_charge_past_the_budget(served: Sandbox) -> None:
    """Five threads start at once on one sync client (a thread pool, a form per thread) under 12."""
    budget(12)
    outcomes: list[Any] = []
    barrier = threading.Barrier(5)
    with Client.for_sandbox(served) as client:
        client.models()  # the catalog read once, so the threads race on the starts alone

        def start(n: int) -> None:
            barrier.wait()
            try:
                outcomes.append(client.run(MODEL, prompt(n)))
            except MediagenError as exc:
                outcomes.append(exc)

        threads = [threading.Thread(target=start, args=(n,)) for n in range(5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(type(o).__name__ for o in outcomes) == ["BudgetExceeded"] * 3 + ["Generation"] * 2
    assert net_charged(served) == 10 == budget().spent and budget().held == 0


# ------------------------------------------------------------------------------ refusals give back


def refuse(kind: str, sandbox: Sandbox) -> dict[str, Any]:
    """Set the sandbox up so a start of ``kind`` is refused; the run's keyword arguments."""
    accounts = sandbox.world.accounts
    if kind == "moderation":
        return {"input": {"prompt": "a gore scene"}}
    if kind == "credits":
        accounts.update_account({"balance": PRICE - 1})
        return {"input": prompt(0)}
    if kind == "webhook":
        return {"input": prompt(0), "webhook": "http://203.0.113.9/hook"}
    if kind == "service-validation":  # the client's checks off: the service names the field
        return {"input": {"prompt": "x", "num_inference_steps": 0}, "validate": False}
    raise AssertionError(kind)


REFUSALS = {
    "moderation": ModerationError,
    "credits": InsufficientCreditsError,
    "webhook": WebhookError,
    "service-validation": ValidationError,
}


@pytest.mark.parametrize("kind", sorted(REFUSALS))
async def test_a_refused_start_gives_back_its_hold_and_leaves_no_intent(
    kind: str, async_client: AsyncClient, sandbox: Sandbox, own_ledger: Path
) -> None:
    """Nothing was charged, so nothing stays held and the ledger keeps no start that might have been:
    the next three 5-credit starts under 12 send two, as if the refused one had never been."""
    budget(12)
    arguments = refuse(kind, sandbox)
    with pytest.raises(REFUSALS[kind]):
        await async_client.run(MODEL, reuse=True, **arguments)
    assert budget() == BudgetStatus(12, 0, 0)
    assert starts_in(own_ledger) == 0 and net_charged(sandbox) == 0
    sandbox.world.accounts.update_account({"balance": 3000})
    results = await gather_starts(async_client, 3)
    assert sum(not isinstance(r, BaseException) for r in results) == 2
    assert net_charged(sandbox) == 10 == budget().spent


async def test_a_start_past_the_key_cap_gives_back_its_hold(sandbox: Sandbox, own_ledger: Path) -> None:
    """429 for the key's monthly cap is a refusal too (never retried): nothing held, nothing written."""
    capped = sandbox.world.accounts.create_key({"name": "capped", "monthlyCap": PRICE - 1}).secret
    budget(12)
    async with AsyncClient(
        capped, base_url="http://sandbox.local", transport=sandbox.transport(), time_scale=600
    ) as client:
        with pytest.raises(KeyCapReachedError):
            await client.run(MODEL, prompt(0))
    assert budget() == BudgetStatus(12, 0, 0) and starts_in(own_ledger) == 0 and net_charged(sandbox) == 0


async def test_a_start_the_budget_refuses_is_never_written_or_sent(
    async_client: AsyncClient, sandbox: Sandbox, own_ledger: Path
) -> None:
    budget(PRICE - 1)
    with pytest.raises(BudgetExceeded, match=f"{MODEL} would cost {PRICE} credits"):
        await async_client.run(MODEL, prompt(0), reuse=True)
    assert starts_in(own_ledger) == 0 and not sandbox.world.generations.items
    assert budget() == BudgetStatus(PRICE - 1, 0, 0)


# ------------------------------------------------------------------- resumed and replayed: counted once


async def test_a_start_resumed_after_its_answers_were_lost_is_counted_once(
    sandbox: Sandbox, own_ledger: Path
) -> None:
    """The issue's case: every answer to a start is dropped (it was charged), so it may have been; the
    budget holds its price. Run again, it resumes with its key at no charge, and the budget still counts
    it once (5 held), not 5 spent and 5 held."""
    budget(20)
    sandbox.world.faults.configure({"script": ["drop", "drop"], "routes": ["run"]})
    async with AsyncClient.for_sandbox(sandbox, retry=RetryPolicy(max_attempts=2)) as client:
        with pytest.raises(StartUncertain) as lost:
            await client.run(MODEL, prompt(0), reuse=True)
        assert lost.value.credits == PRICE and net_charged(sandbox) == PRICE
        assert budget() == BudgetStatus(20, 0, PRICE)  # it may have been charged: held
        again = await client.run(MODEL, prompt(0), reuse=True)
    assert again.credits_spent == PRICE and list(sandbox.world.generations.items) == [again.id]
    assert again.reused  # the service's answer to the first start, not a new one
    assert net_charged(sandbox) == PRICE
    status = budget()
    assert status.spent + status.held == PRICE and status.left == 20 - PRICE
    entry = Ledger(own_ledger).lookup(lost.value.key, client.settings.where)
    assert entry is not None and entry.resource_id == again.id and not entry.sent_unanswered


async def test_a_start_the_service_replays_is_counted_once(
    async_client: AsyncClient, sandbox: Sandbox, tmp_path: Path
) -> None:
    """The same Idempotency-Key sent again from another ledger (another machine's, a copy): the service
    answers the generation it made, charging nothing; the budget counts it once too."""
    budget(20)
    first = await async_client.run(MODEL, prompt(0), idempotency_key="order-42")
    replayed = await async_client.run(
        MODEL, prompt(0), idempotency_key="order-42", ledger=str(tmp_path / "elsewhere.sqlite")
    )
    assert replayed.id == first.id and net_charged(sandbox) == PRICE
    assert budget() == BudgetStatus(20, PRICE, 0)
