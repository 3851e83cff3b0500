"""The sandbox's money and limits, each rule on its own (``accounts.py``, ``lifecycle.py``, ``windows.py``).

A charge takes credits from the shared balance and the key's month; a refund gives them back to the
months they were taken in; the last checks before a charge come in the spec's order (cap, moderation,
balance); a start at capacity is charged and refunded in the same request; a job's paid steps charge
as they start; an idempotency key starts once per account, for as long as it is kept; a run's time
limit is 15 minutes plus 5 s per second of media, 30 at most; a rolling window counts its 60 events.
Every test builds the parts on a manual clock; nothing is served.
"""

import asyncio
import re
import time
from collections import Counter
from datetime import datetime, timezone
from typing import Any

import pytest

from mediagen_nb.protocol import limits, messages
from mediagen_nb.runtime.clock import ManualClock
from mediagen_nb.sandbox import lifecycle
from mediagen_nb.sandbox.accounts import (
    DEMO_ACCOUNT,
    DEMO_KEY,
    GRANT,
    VIA_AGENT,
    VIA_APP,
    VIA_PLAN,
    Accounts,
    ApiKey,
    Caller,
    bearer,
)
from mediagen_nb.sandbox.faults import Faults
from mediagen_nb.sandbox.lifecycle import PaidStep
from mediagen_nb.sandbox.responses import ServiceError
from mediagen_nb.sandbox.windows import RollingWindow

MID_MAY = datetime(2026, 5, 15, 12, tzinfo=timezone.utc).timestamp()
DAY = 86400.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(MID_MAY)


@pytest.fixture
def accounts(clock: ManualClock) -> Accounts:
    return Accounts(clock)


def demo(accounts: Accounts, cap: int | None = None) -> Caller:
    key = (
        accounts.create_key({"name": "k", "monthlyCap": cap}) if cap is not None else accounts.keys[DEMO_KEY]
    )
    return Caller(accounts.account(DEMO_ACCOUNT), key)


def entries(accounts: Accounts) -> list[tuple[str, int, str | None, int]]:
    return [(e["kind"], e["credits"], e["resourceId"], e["balance"]) for e in accounts.ledger]


# ------------------------------------------------------------------------------- charges, refunds


def test_a_charge_takes_from_the_balance_and_the_key_s_month_and_is_recorded(accounts: Accounts) -> None:
    caller = demo(accounts, cap=100)
    entry = accounts.charge(caller, 30, "generation", "g1", modelId="m")
    assert caller.account.balance == 2970 and caller.key is not None and caller.key.spent == {"2026-05": 30}
    assert entry == {
        "seq": 1,
        "at": "2026-05-15T12:00:00.000Z",
        "kind": "charge",
        "credits": 30,
        "account": DEMO_ACCOUNT,
        "keyId": caller.key.id,
        "tokenId": None,
        "via": "api",
        "resource": "generation",
        "resourceId": "g1",
        "balance": 2970,
        "modelId": "m",
    }
    assert accounts.unsaved


def test_a_refund_gives_back_to_the_months_the_credits_were_taken_in_latest_first(
    accounts: Accounts, clock: ManualClock
) -> None:
    caller = demo(accounts, cap=1000)
    accounts.charge(caller, 10, "job", "j1")
    clock.advance(20 * DAY)  # into June
    accounts.charge(caller, 5, "job", "j1")
    accounts.charge(caller, 7, "job", "j2")
    key = caller.key
    assert key is not None and key.spent == {"2026-05": 10, "2026-06": 12}
    accounts.refund(caller, 8, "job", "j1")  # 5 of June's, then 3 of May's
    assert key.spent == {"2026-05": 7, "2026-06": 7}
    accounts.refund(caller, 9, "job", "j1")  # 7 left of j1's; the 2 more come off this month
    assert key.spent == {"2026-05": 0, "2026-06": 5}
    assert caller.account.balance == 3000 + 3000 - 22 + 17  # June's plan credits were granted
    assert [e["kind"] for e in accounts.ledger] == ["charge", GRANT, "charge", "charge", "refund", "refund"]


def test_a_month_s_grant_is_booked_for_the_plan_on_its_first_day_in_utc(
    accounts: Accounts, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dated the first of the month in UTC whatever the machine's time zone."""
    accounts.book_grants()
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        clock.advance(20 * DAY)  # into June
        accounts.book_grants()
    finally:
        monkeypatch.undo()
        time.tzset()
    grants = [e for e in accounts.ledger if e["kind"] == GRANT]
    assert [
        (g["at"], g["credits"], g["resource"], g["resourceId"], g["via"], g["keyId"]) for g in grants
    ] == [("2026-06-01T00:00:00.000Z", 3000, "plan", "2026-06", VIA_PLAN, None)]


def test_a_month_turn_is_kept_even_for_an_account_granted_nothing(
    accounts: Accounts, clock: ManualClock
) -> None:
    account = accounts.account(DEMO_ACCOUNT)
    account.plan = "creator"  # a plan without API credits
    accounts.book_grants()
    accounts.unsaved = False
    clock.advance(20 * DAY)
    accounts.book_grants()
    assert account.granted_month == "2026-06" and accounts.unsaved  # saved, so not granted again
    assert account.balance == 3000 and not [e for e in accounts.ledger if e["kind"] == GRANT]


def test_two_charges_of_one_resource_in_a_month_are_both_given_back_to_that_month(
    accounts: Accounts, clock: ManualClock
) -> None:
    """A run's paid steps charged twice in May, refunded whole in June: all of it comes off May."""
    caller = demo(accounts, cap=1000)
    accounts.charge(caller, 4, "analysis", "a1")
    accounts.charge(caller, 6, "analysis", "a1")
    clock.advance(20 * DAY)  # into June
    accounts.refund(caller, 10, "analysis", "a1")
    assert caller.key is not None and caller.key.spent == {"2026-05": 0, "2026-06": 0}


def test_a_new_sandbox_s_demo_account_counts_its_grants_from_the_month_it_began(
    accounts: Accounts, clock: ManualClock
) -> None:
    """Made in May with May's plan credits (its demo key named and dated then): when the clock reaches
    June before anything reads a balance, June's grant is still booked."""
    key = accounts.keys[DEMO_KEY]
    assert (key.name, key.created_at) == ("demo", MID_MAY)
    clock.advance(20 * DAY)  # into June, nothing read
    accounts.book_grants()
    demo_account = accounts.accounts[DEMO_ACCOUNT]
    assert (demo_account.balance, demo_account.granted_month) == (3000 + 3000, "2026-06")


def test_an_account_saved_before_grants_were_kept_is_saved_again_with_the_month_it_counts_from(
    accounts: Accounts, clock: ManualClock
) -> None:
    old = accounts.accounts[DEMO_ACCOUNT]
    old.granted_month = ""  # a state from before grants were kept
    accounts.restore([old], list(accounts.keys.values()), [])
    assert list(accounts.dump()) == []  # just restored: nothing to save
    accounts.book_grants()
    saved = {name: row for kind, name, row in accounts.dump() if kind == "account"}
    assert saved[DEMO_ACCOUNT]["grantedMonth"] == "2026-05"


def test_a_refund_whose_charge_is_not_on_record_comes_off_this_month(accounts: Accounts) -> None:
    caller = demo(accounts, cap=1000)
    accounts.charge(caller, 10, "job", "j1")
    accounts.refund(caller, 4, "job", "j2")  # no charge of j2 kept (a state saved before it)
    assert caller.key is not None and caller.key.spent == {"2026-05": 6}
    assert caller.account.balance == 3000 - 10 + 4


def test_a_refund_of_a_token_s_or_the_app_s_run_moves_no_key(accounts: Accounts) -> None:
    account = accounts.account(DEMO_ACCOUNT)
    for caller in (Caller(account, None, token="tok_1", via=VIA_AGENT), Caller(account, None, via=VIA_APP)):
        accounts.charge(caller, 4, "generation", f"g-{caller.credential}")
        accounts.refund(caller, 4, "generation", f"g-{caller.credential}")
    assert account.balance == 3000 and all(k.spent == Counter() for k in accounts.keys.values())
    assert [(e["keyId"], e["tokenId"], e["via"]) for e in accounts.ledger][::2] == [
        (None, "tok_1", VIA_AGENT),
        (None, None, VIA_APP),
    ]


def test_charges_survive_a_restart_so_a_refund_still_finds_its_months(clock: ManualClock) -> None:
    before = Accounts(clock)
    caller = demo(before, cap=1000)
    before.charge(caller, 10, "job", "j1")
    clock.advance(20 * DAY)
    before.charge(caller, 5, "job", "j1")
    before.refund(caller, 3, "job", "j1")  # June's first: May 10, June 2
    after = Accounts(clock)
    after.restore(
        [before.accounts[DEMO_ACCOUNT]],
        [ApiKey.from_dict(k.to_dict()) for k in before.keys.values()],
        [dict(e) for e in before.ledger],
    )
    assert not after.unsaved
    key = next(k for k in after.keys.values() if k.name == "k")
    again = after.caller({"account": DEMO_ACCOUNT, "key": key.id, "via": "agent"})
    assert again.key is key and again.via == VIA_AGENT and again.token is None
    after.refund(again, 9, "job", "j1")
    assert key.spent == {"2026-05": 3, "2026-06": 0}
    plain = after.caller({"account": DEMO_ACCOUNT, "token": "tok_9"})
    assert plain.key is None and plain.token == "tok_9" and plain.via == "api"


def test_two_charges_of_one_month_are_both_read_back_after_a_restart(clock: ManualClock) -> None:
    before = Accounts(clock)
    caller = demo(before, cap=1000)
    before.charge(caller, 10, "job", "j1")
    before.charge(caller, 5, "job", "j1")  # May: 15 for j1
    clock.advance(20 * DAY)
    after = Accounts(clock)
    after.restore(
        [before.accounts[DEMO_ACCOUNT]],
        [ApiKey.from_dict(k.to_dict()) for k in before.keys.values()],
        [dict(e) for e in before.ledger],
    )
    key = next(k for k in after.keys.values() if k.name == "k")
    after.refund(after.caller({"account": DEMO_ACCOUNT, "key": key.id}), 12, "job", "j1")
    assert key.spent == {"2026-05": 3, "2026-06": 0}  # all 12 from May's 15


def test_a_caller_is_kept_and_read_back_by_its_ids(accounts: Accounts) -> None:
    account = accounts.account(DEMO_ACCOUNT)
    key = accounts.keys[DEMO_KEY]
    assert Caller(account, key).to_dict() == {"account": DEMO_ACCOUNT, "via": "api", "key": key.id}
    token = Caller(account, None, token="tok", via=VIA_AGENT)
    assert token.to_dict() == {"account": DEMO_ACCOUNT, "via": VIA_AGENT, "token": "tok"}
    assert (Caller(account, key).credential, token.credential, Caller(account, None).credential) == (
        key.id,
        "tok",
        VIA_APP,
    )


def test_plan_credits_are_granted_once_for_each_month_begun(accounts: Accounts, clock: ManualClock) -> None:
    account = accounts.account(DEMO_ACCOUNT)
    accounts.update_account({"plan": "ultra"})
    clock.advance(80 * DAY)  # mid-May to early August: June, July and August begin
    accounts.account(DEMO_ACCOUNT)
    assert account.balance == 3000 + 3 * 8000 and account.granted_month == "2026-08"
    grants = [(e["resourceId"], e["credits"], e["at"], e["via"]) for e in accounts.ledger]
    assert grants == [
        ("2026-06", 8000, "2026-06-01T00:00:00.000Z", VIA_PLAN),
        ("2026-07", 8000, "2026-07-01T00:00:00.000Z", VIA_PLAN),
        ("2026-08", 8000, "2026-08-01T00:00:00.000Z", VIA_PLAN),
    ]
    accounts.account(DEMO_ACCOUNT)
    assert len(accounts.ledger) == 3  # seen again: nothing more


def test_a_year_turns_and_a_plan_without_api_access_is_granted_nothing(clock: ManualClock) -> None:
    accounts = Accounts(clock)
    account = accounts.account(DEMO_ACCOUNT)
    account.granted_month = "2025-12"
    accounts.account(DEMO_ACCOUNT)
    assert [e["resourceId"] for e in accounts.ledger][:2] == ["2026-01", "2026-02"]
    free = accounts.account("free-one")
    accounts.update_account({"account": "free-one", "plan": "free", "balance": 0})
    free.granted_month = "2026-01"
    accounts.account("free-one")
    assert free.balance == 0 and free.granted_month == "2026-05"
    other = Accounts(clock)
    fresh = other.account("new")
    fresh.granted_month = ""  # a state saved before grants were kept: counting starts now
    other.book_grants()
    assert fresh.granted_month == "2026-05" and fresh.balance == limits.PLAN_CREDITS[fresh.plan]


def test_a_key_s_cap_allows_up_to_the_cap_this_month(accounts: Accounts, clock: ManualClock) -> None:
    capped = demo(accounts, cap=10)
    assert accounts.cap_allows(capped, 10) and not accounts.cap_allows(capped, 11)
    accounts.charge(capped, 6, "generation", "g1")
    assert accounts.cap_allows(capped, 4) and not accounts.cap_allows(capped, 5)
    clock.advance(20 * DAY)
    assert accounts.cap_allows(capped, 10)
    uncapped = demo(accounts)
    token = Caller(accounts.account(DEMO_ACCOUNT), None, token="t")
    assert accounts.cap_allows(uncapped, 10**9) and accounts.cap_allows(token, 10**9)


# ------------------------------------------------------------------------------- the last checks


def test_the_last_checks_come_in_the_spec_s_order(accounts: Accounts) -> None:
    capped = demo(accounts, cap=5)
    accounts.update_account({"balance": 3})
    seen: list[str] = []

    def moderate() -> None:
        seen.append("moderated")
        raise ServiceError(400, messages.PROMPT_MODERATED)

    with pytest.raises(ServiceError) as cap:
        lifecycle.admit(accounts, capped, 6, "https://app/billing", moderate)
    assert (cap.value.status, cap.value.message) == (429, messages.key_cap_reached(5)) and seen == []
    with pytest.raises(ServiceError) as moderated:
        lifecycle.admit(accounts, capped, 5, "https://app/billing", moderate)
    assert moderated.value.message == messages.PROMPT_MODERATED and seen == ["moderated"]
    with pytest.raises(ServiceError) as poor:
        lifecycle.admit(accounts, capped, 5, "https://app/billing")
    assert (poor.value.status, poor.value.message) == (
        400,
        messages.not_enough_credits(5, 3, "https://app/billing"),
    )
    lifecycle.admit(accounts, capped, 3, "https://app/billing")  # exactly the balance and under the cap
    token = Caller(accounts.account(DEMO_ACCOUNT), None, token="t")
    lifecycle.admit(accounts, token, 3, "x")
    with pytest.raises(ServiceError, match=r"\(0 credits\)"):
        lifecycle.admit(accounts, demo(accounts, cap=0), 1, "x")
    assert accounts.ledger == []


def test_a_start_at_capacity_is_charged_and_refunded_then_refused(accounts: Accounts) -> None:
    caller = demo(accounts)
    with pytest.raises(ServiceError) as refused:
        lifecycle.refuse_at_capacity(accounts, caller, 5, "generation", "g1", modelId="m")
    assert (refused.value.status, refused.value.message) == (503, messages.AT_CAPACITY)
    assert entries(accounts) == [("charge", 5, "g1", 2995), ("refund", 5, "g1", 3000)]
    assert [(e["resource"], e["modelId"]) for e in accounts.ledger] == [("generation", "m")] * 2
    assert accounts.ledger[1]["note"] == lifecycle.CAPACITY_NOTE and "note" not in accounts.ledger[0]
    with pytest.raises(ServiceError):
        lifecycle.refuse_at_capacity(accounts, caller, 0, "generation", "g2")
    assert len(accounts.ledger) == 2  # a free start leaves no entry


def test_a_job_s_paid_step_charges_as_it_starts_or_says_why_not(accounts: Accounts) -> None:
    capped = demo(accounts, cap=8)
    short = lambda balance: f"needs more than {balance}"  # noqa: E731
    assert lifecycle.charge_step(accounts, capped, 5, "job", "j1", short, step="script") is None
    assert entries(accounts) == [("charge", 5, "j1", 2995)] and accounts.ledger[0]["step"] == "script"
    assert accounts.ledger[0]["resource"] == "job"
    assert lifecycle.charge_step(accounts, capped, 4, "job", "j1", short) == messages.key_cap_reached(8)
    accounts.update_account({"balance": 2})
    assert lifecycle.charge_step(accounts, capped, 3, "job", "j1", short) == "needs more than 2"
    assert lifecycle.charge_step(accounts, capped, 2, "job", "j1", short) is None
    assert len(accounts.ledger) == 2 and accounts.account(DEMO_ACCOUNT).balance == 0


def test_the_top_up_link_is_the_web_app_s_billing_page() -> None:
    assert lifecycle.top_up_url("https://sandbox.example") == "https://sandbox.example/_sandbox/app/billing"


# ------------------------------------------------------------------------------------ idempotency


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "Idempotency-Key must be a non-empty string"),
        (7, "Idempotency-Key must be a non-empty string"),
        (
            "ab\ncd",
            "Idempotency-Key has a line break at position 2; use letters, digits and -_.: (ASCII only)",
        ),
        (
            "k\u00e9y",
            "Idempotency-Key has the non-ASCII character 'é' at position 1; use letters, digits and -_.: "
            "(ASCII only)",
        ),
    ],
    ids=["empty", "a number", "a line break", "non-ASCII"],
)
def test_an_idempotency_key_no_header_could_carry_is_refused_naming_where_it_was_and_why(
    value: Any, message: str
) -> None:
    """Before anything is charged: a 400 naming the field it came in and what is wrong with it."""
    with pytest.raises(ServiceError) as refused:
        lifecycle.idempotency_key(value, "Idempotency-Key")
    assert (refused.value.status, refused.value.message) == (400, message)
    assert lifecycle.idempotency_key(None, "Idempotency-Key") is None
    assert lifecycle.idempotency_key("run-1:a_b.c", "idempotencyKey") == "run-1:a_b.c"


@pytest.mark.anyio
async def test_an_idempotency_key_starts_once_per_account_and_only_its_first_chars_count(
    clock: ManualClock,
) -> None:
    kept = lifecycle.Idempotency(clock, retention=None, chars=5)
    made: list[str] = []

    async def start() -> str:
        await asyncio.sleep(0)  # another start with the same key comes in meanwhile
        made.append(f"r{len(made) + 1}")
        return made[-1]

    both = await asyncio.gather(kept.once("a", "key-1xxx", start), kept.once("a", "key-1yyy", start))
    assert both == [("r1", True), ("r1", False)] and made == ["r1"]
    assert await kept.once("b", "key-1", start) == ("r2", True)  # another account's
    assert await kept.once("a", None, start) == ("r3", True)
    assert await kept.once("a", None, start) == ("r4", True)  # no key: every call starts
    assert kept.unsaved == {("a", "key-1"), ("b", "key-1")}
    assert kept.to_dict(("a", "key-1")) == {"account": "a", "key": "key-1", "id": "r1", "at": MID_MAY}
    saved = sorted(kept.dump("generation"), key=lambda row: row[1])  # the keys made since the last save
    assert saved == [
        ("idempotency:generation", '["a","key-1"]', kept.to_dict(("a", "key-1"))),
        ("idempotency:generation", '["b","key-1"]', kept.to_dict(("b", "key-1"))),
    ]
    assert list(kept.dump("generation")) == [] and not kept.unsaved  # saved once
    again = lifecycle.Idempotency(clock, retention=None, chars=5)  # a restarted sandbox, from those rows
    again.load({"idempotency:generation": {name: row for _, name, row in saved}}, "generation")
    assert await again.once("a", "key-1zzz", start) == ("r1", False)
    clock.advance(10 * 365 * DAY)
    assert await kept.once("a", "key-1", start) == ("r1", False)  # kept for ever


@pytest.mark.anyio
async def test_a_refused_start_leaves_its_key_unused(clock: ManualClock) -> None:
    kept = lifecycle.Idempotency(clock, retention=None)

    async def refused() -> str:
        raise ServiceError(400, "no")

    async def start() -> str:
        return "r1"

    with pytest.raises(ServiceError):
        await kept.once("a", "k", refused)
    assert await kept.once("a", "k", start) == ("r1", True)


@pytest.mark.anyio
async def test_a_key_kept_24_hours_starts_anew_after_them(clock: ManualClock) -> None:
    kept = lifecycle.Idempotency(clock, retention=DAY)
    ids = iter(["first", "second"])

    async def start() -> str:
        return next(ids)

    assert await kept.once("a", "k", start) == ("first", True)
    clock.advance(DAY)
    assert await kept.once("a", "k", start) == ("first", False)  # at 24 hours: still the same
    clock.advance(1)
    assert await kept.once("a", "k", start) == ("second", True)
    restored = lifecycle.Idempotency(clock, retention=DAY)
    restored.restore([kept.to_dict(("a", "k"))])
    assert await restored.once("a", "k", start) == ("second", False)
    assert restored.unsaved == set()


# ------------------------------------------------------------------------------- time and steps


def test_a_run_s_time_limit_is_15_minutes_plus_5_s_per_media_second_30_at_most() -> None:
    assert lifecycle.time_limit() == 900 and lifecycle.time_limit(30) == 1050
    assert lifecycle.time_limit(180) == 1800 and lifecycle.time_limit(500) == 1800


def test_a_run_s_outcome_follows_the_fault_plan_and_its_time_limit() -> None:
    faults = Faults(seed=1)
    faults.configure({"modelScript": ["fail", "hang", "ok"]})
    assert lifecycle.plan(faults, 10.0) == ("fail", 10.0)
    assert lifecycle.plan(faults, 10.0, 60) == ("timeout", 1200.0)
    assert lifecycle.plan(faults, 10.0) == ("succeed", 10.0)
    assert lifecycle.plan(faults, 900.0) == ("timeout", 900.0)  # exactly at the limit: timed out
    assert lifecycle.plan(faults, 899.0) == ("succeed", 899.0)
    assert lifecycle.timed_out(100.0, 1000.0) == messages.generation_timed_out(15)
    assert lifecycle.timed_out(0.0, 1234.0) == messages.generation_timed_out(20.6)


def test_steps_are_laid_out_one_after_another() -> None:
    steps = [PaidStep(), PaidStep(), PaidStep()]
    durations = iter([10.0, 0.0, 5.0])

    def plan_step(step: PaidStep) -> float:
        step.outcome = "fail"
        return next(durations)

    lifecycle.lay_out(steps, 100.0, plan_step)
    assert [(s.start_at, s.end_at, s.outcome) for s in steps] == [
        (100.0, 110.0, "fail"),
        (110.0, 110.0, "fail"),
        (110.0, 115.0, "fail"),
    ]
    assert lifecycle.moments(steps, 200.0, 100.0) == [100.0, 110.0, 115.0, 200.0]


def test_steps_are_charged_as_they_start_and_settled_as_they_end() -> None:
    steps = [PaidStep(start_at=0, end_at=10), PaidStep(start_at=10, end_at=20)]
    events: list[str] = []
    running = [True]

    def begin(step: PaidStep) -> bool:
        events.append(f"begin {step.start_at:g}")
        step.charged = True
        return True

    def end(step: PaidStep) -> None:
        events.append(f"end {step.end_at:g}")

    go = lambda now: lifecycle.advance_steps(steps, now, lambda: running[0], begin, end)  # noqa: E731
    assert go(-1) is False and events == []
    assert go(5) is False and events == ["begin 0"]
    assert go(10) is False and events == ["begin 0", "end 10", "begin 10"]
    assert go(10) is False and events == ["begin 0", "end 10", "begin 10"]  # nothing happens twice
    assert go(25) is True and events[-1] == "end 20"
    assert go(30) is True and len(events) == 4
    running[0] = False
    assert go(40) is False


def test_a_step_that_cannot_be_charged_stops_the_job() -> None:
    steps = [PaidStep(start_at=0, end_at=10), PaidStep(start_at=10, end_at=20)]
    assert lifecycle.advance_steps(steps, 50, lambda: True, lambda step: False, lambda step: None) is False
    assert not steps[0].settled


def test_another_account_s_resource_is_answered_as_unknown(accounts: Accounts) -> None:
    class Item:
        def __init__(self, caller: Caller) -> None:
            self.caller = caller

    mine = demo(accounts)
    theirs = Caller(accounts.account("other"), None, token="t")
    items: dict[str, Any] = {"r1": Item(mine)}
    assert lifecycle.owned(items, "r1", mine, "Not here") is items["r1"]
    for who, ident in ((theirs, "r1"), (mine, "r2")):
        with pytest.raises(ServiceError) as refused:
            lifecycle.owned(items, ident, who, "Not here")
        assert (refused.value.status, refused.value.message) == (404, "Not here")


# --------------------------------------------------------------------------------------- keys


def test_a_bearer_header_gives_its_credential_or_the_spec_s_401() -> None:
    assert bearer("Bearer pk_live_x") == "pk_live_x" and bearer("bearer   pk_live_y  ") == "pk_live_y"
    for header in (None, "", "Bearer", "Bearer   ", "Basic pk_live_x", "pk_live_x"):
        with pytest.raises(ServiceError) as refused:
            bearer(header)
        assert (refused.value.status, refused.value.message) == (401, messages.MISSING_CREDENTIALS)


# ------------------------------------------------------------------------------------- windows


def test_a_rolling_window_counts_its_events_and_lets_them_go_a_window_later(clock: ManualClock) -> None:
    window = RollingWindow(clock, limit=2, window=60.0)
    first = window.acquire("k")
    clock.advance(10)
    assert window.acquire("k") is not None and window.acquire("k") is None
    assert (window.accepted, window.refused, window.count("k"), window.count("other")) == (2, 1, 2, 0)
    assert window.acquire("k") is None and window.refused == 2  # every refusal counts (each is a 429)
    clock.advance(50)  # exactly a window after the first: it has left
    assert window.count("k") == 1 and window.acquire("k") is not None
    assert first == MID_MAY
    window.release("k", MID_MAY + 60)
    assert window.count("k") == 1
    window.release("k", 12345.0)  # not an event of it: nothing happens
    window.release("nobody", MID_MAY)
    assert window.count("k") == 1


# ----------------------------------------------------------------------------- keys and accounts


def test_a_key_is_made_as_the_developer_page_makes_it(accounts: Accounts, clock: ManualClock) -> None:
    key = accounts.create_key({"name": "ci", "monthlyCap": 250, "expires": "30d", "account": "team"})
    assert key.secret.startswith("pk_live_") and len(key.secret) > 30 and key.id.startswith("key_")
    assert (key.account, key.name, key.monthly_cap, key.state) == ("team", "ci", 250, "active")
    assert (key.created_at, key.expires_at) == (MID_MAY, MID_MAY + 30 * DAY)
    assert accounts.keys[key.secret] is key and accounts.accounts["team"].balance == 3000
    never = accounts.create_key({})
    assert (never.account, never.name, never.monthly_cap, never.expires_at) == (
        DEMO_ACCOUNT,
        None,
        None,
        None,
    )
    assert accounts.create_key({"expires": "1y"}).expires_at == MID_MAY + 365 * DAY
    assert accounts.create_key({"monthlyCap": 0}).monthly_cap == 0
    assert key.public(clock) == {
        "id": key.id,
        "account": "team",
        "name": "ci",
        "monthlyCap": 250,
        "state": "active",
        "createdAt": "2026-05-15T12:00:00.000Z",
        "expiresAt": "2026-06-14T12:00:00.000Z",
        "spentThisMonth": 0,
    }
    assert key.public(clock, reveal=True)["key"] == key.secret and never.public(clock)["expiresAt"] is None
    assert ApiKey.from_dict(key.to_dict()) == key and key.secret not in repr(key)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"name": 5}, "name must be a string"),
        ({"monthlyCap": -1}, "monthlyCap must be a whole number of credits from 0 to 1000000000000"),
        ({"monthlyCap": 10**12 + 1}, "monthlyCap must be a whole number of credits from 0 to 1000000000000"),
        ({"monthlyCap": True}, "monthlyCap must be a whole number of credits from 0 to 1000000000000"),
        ({"monthlyCap": 1.5}, "monthlyCap must be a whole number of credits from 0 to 1000000000000"),
        ({"state": "paused"}, "state must be one of: active, expired, revoked"),
        ({"state": 1}, "state must be one of: active, expired, revoked"),
        ({"expires": "7d"}, "expires must be one of: never, 30d, 90d, 1y"),
        ({"expires": None}, "expires must be one of: never, 30d, 90d, 1y"),
        ({"account": ""}, "account must be a non-empty string"),
        ({"account": 3}, "account must be a non-empty string"),
    ],
)
def test_a_key_the_controls_cannot_make_is_refused_naming_the_field(
    accounts: Accounts, body: dict[str, Any], says: str
) -> None:
    with pytest.raises(ServiceError) as refused:
        accounts.create_key(body)
    assert (refused.value.status, refused.value.message) == (400, says)
    assert list(accounts.keys) == [DEMO_KEY]


def test_keys_need_a_plan_with_api_access(accounts: Accounts) -> None:
    accounts.update_account({"account": "hobby", "plan": "free"})
    with pytest.raises(ServiceError) as refused:
        accounts.create_key({"account": "hobby"})
    assert (refused.value.status, refused.value.message) == (403, messages.PLAN_WITHOUT_API)
    accounts.update_account({"account": "hobby", "plan": "ultra"})
    assert accounts.create_key({"account": "hobby"}).account == "hobby"


def test_an_account_s_balance_plan_and_suspension_are_set_by_the_controls(accounts: Accounts) -> None:
    accounts.unsaved = False
    account = accounts.update_account({"balance": 0, "plan": "ultra", "suspended": True})
    assert (account.balance, account.plan, account.suspended) == (0, "ultra", True) and accounts.unsaved
    assert accounts.update_account({"balance": 10**12}).balance == 10**12
    assert accounts.update_account({}).public() == {
        "id": DEMO_ACCOUNT,
        "plan": "ultra",
        "balance": 10**12,
        "suspended": True,
        "grantedMonth": "2026-05",
    }
    assert accounts.update_account({"suspended": False}).suspended is False
    for body, says in (
        ({"balance": -1}, "balance must be a whole number of credits from 0 to 1000000000000"),
        ({"balance": "5"}, "balance must be a whole number of credits from 0 to 1000000000000"),
        ({"plan": 3}, "plan must be a string such as scale, ultra or free"),
        ({"suspended": "yes"}, "suspended must be true or false"),
        ({"account": ""}, "account must be a non-empty string"),
        ({"account": None}, "account must be a non-empty string"),
    ):
        with pytest.raises(ServiceError) as refused:
            accounts.update_account(body)
        assert (refused.value.status, refused.value.message) == (400, says)
    assert account.balance == 10**12
    saved = account.to_dict()
    assert type(account).from_dict(saved) == account
    del saved["grantedMonth"]  # a state saved before grants were kept
    assert type(account).from_dict(saved).granted_month == ""


def test_a_key_authenticates_while_it_is_active_and_unexpired(accounts: Accounts, clock: ManualClock) -> None:
    key = accounts.create_key({"expires": "30d"})
    caller = accounts.authenticate(f"Bearer {key.secret}", via=VIA_AGENT)
    assert (caller.key, caller.account.id, caller.via) == (key, DEMO_ACCOUNT, VIA_AGENT)
    assert accounts.authenticate(f"Bearer {DEMO_KEY}").via == "api"
    clock.advance(30 * DAY - 1)
    accounts.authenticate(f"Bearer {key.secret}")
    clock.advance(1)  # at its expiry: no longer valid
    for header in (f"Bearer {key.secret}", "Bearer pk_live_unknown"):
        with pytest.raises(ServiceError) as refused:
            accounts.authenticate(header)
        assert (refused.value.status, refused.value.message) == (401, messages.INVALID_KEY)
    for state in ("revoked", "expired"):
        made = accounts.create_key({"state": state})
        with pytest.raises(ServiceError, match=messages.INVALID_KEY):
            accounts.authenticate(f"Bearer {made.secret}")
    accounts.update_account({"suspended": True})
    with pytest.raises(ServiceError) as suspended:
        accounts.authenticate(f"Bearer {DEMO_KEY}")
    assert (suspended.value.status, suspended.value.message) == (403, messages.SUSPENDED)


def test_a_state_kept_with_the_public_key_moves_it_to_the_owner_s_keeping_its_id(accounts: Accounts) -> None:
    """The demo key's value becomes the owner's secret (what it started and spent stays its own); other
    keys stay as they are; a key already the owner's moves nothing."""
    other = demo(accounts, cap=1000).key
    public = accounts.keys[DEMO_KEY]
    accounts.unsaved = False
    accounts.use_demo_key(DEMO_KEY)
    assert accounts.keys[DEMO_KEY] is public and not accounts.unsaved
    accounts.use_demo_key("sk_owner")
    assert DEMO_KEY not in accounts.keys and accounts.keys["sk_owner"] is public and accounts.unsaved
    assert public.id == "key_demo" and public.secret == "sk_owner"
    assert other is not None and accounts.keys[other.secret] is other and other.id != "key_demo"


def test_a_new_key_has_an_unguessable_secret_and_its_own_id_and_creation_time(
    accounts: Accounts, clock: ManualClock
) -> None:
    """24 random bytes of secret (32 URL-safe characters), 6 of id; the time it was made, kept."""
    made = accounts.create_key({"name": "k"})
    assert re.fullmatch(r"pk_live_[A-Za-z0-9_-]{32}", made.secret) and re.fullmatch(
        r"key_[0-9a-f]{12}", made.id
    )
    clock.advance(DAY)
    assert made.public(accounts.clock)["createdAt"] == "2026-05-15T12:00:00.000Z"
