"""One max_credits for every process of a run: held per row key in the limits' store, all or none a batch.

Each rule on both stores (this machine's SQLite file, and Redis across machines): a batch over what is
left holds nothing; a key held again (a retried task, a speculative copy) adds nothing; an answer's
charge replaces the hold and a refund frees it; processes racing for the last credits never pass the
limit together; a store that cannot answer lets nothing start.
"""

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from mediagen_nb.client import BudgetExceeded, ConfigurationError, settings
from mediagen_nb.client.shared_budget import Holds, RedisHolds, SharedBudget, SQLiteHolds, holds

Opener = Callable[[], Holds]


@pytest.fixture(params=["sqlite", "redis"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens the store again each call: one more process's connection to the same holds."""
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        return lambda: RedisHolds(url)
    return lambda: SQLiteHolds(tmp_path / "limits.sqlite")


def budget(opener: Opener, limit: int, name: str = "run") -> SharedBudget:
    shared = SharedBudget(name, limit)
    shared._holds = opener  # type: ignore[method-assign]  # this store, not the environment's
    return shared


def test_a_batch_is_held_whole_or_not_at_all(opener: Opener) -> None:
    run = budget(opener, 10)
    run.hold({"a": 4, "b": 4}, "the first batch")
    with pytest.raises(BudgetExceeded, match=r"would cost 3 credits, but only 2 of max_credits=10 are left"):
        run.hold({"c": 1, "d": 2}, "the second batch")
    assert run.held() == 8  # nothing of the refused batch was held
    run.hold({"c": 2}, "a third batch")
    assert run.held() == 10


def test_a_key_held_again_adds_nothing(opener: Opener) -> None:
    """A retried task or a speculative copy holds the same rows again: they are the run's already."""
    run = budget(opener, 6)
    run.hold({"a": 3, "b": 3}, "a batch")
    run.hold({"a": 3, "b": 3}, "the batch again")
    assert run.held() == 6


def test_charges_replace_holds_and_a_refund_frees_its_hold(opener: Opener) -> None:
    run = budget(opener, 10)
    run.hold({"a": 5, "b": 5}, "a batch")
    run.settle({"a": 3, "b": 0})  # a charged less than its estimate; b refused, skipped or refunded
    assert run.held() == 3
    run.hold({"b": 7}, "b again")  # b was freed, so it is held anew at its price
    assert run.held() == 10


def test_budgets_of_two_runs_are_apart(opener: Opener) -> None:
    budget(opener, 5, "one").hold({"a": 5}, "a batch")
    budget(opener, 5, "two").hold({"a": 5}, "a batch")


def test_processes_racing_for_the_last_credits_never_pass_the_limit(opener: Opener) -> None:
    held: list[str] = []

    def worker(index: int) -> None:
        run = budget(opener, 10)  # a connection of its own, as another process has
        try:
            run.hold({f"{index}-a": 2, f"{index}-b": 2}, f"batch {index}")
            held.append(str(index))
        except BudgetExceeded:
            pass

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(held) == 2 and budget(opener, 10).held() == 8


def test_a_store_that_cannot_answer_starts_nothing(tmp_path: Path) -> None:
    from _shared import unused_port

    run = SharedBudget("run", 10, url=f"redis://127.0.0.1:{unused_port()}/0")
    pytest.importorskip("redis", reason="the redis extra is not installed")
    with pytest.raises(BudgetExceeded, match=r"cannot be read .*nothing was started"):
        run.hold({"a": 1}, "a batch")


def test_a_store_that_cannot_be_opened_starts_nothing_and_says_where(tmp_path: Path) -> None:
    """The file cannot be opened (here its folder is a file; in CI once, "disk I/O error"): a refusal that
    names the place, never a bare sqlite3 error."""
    (tmp_path / "a-file").write_text("")
    run = SharedBudget("run", 10, url=f"sqlite://{tmp_path / 'a-file' / 'limits.sqlite'}")
    where = r"budget at sqlite://.*a-file/limits.sqlite cannot be read .*nothing was started"
    with pytest.raises(BudgetExceeded, match=where):
        run.hold({"a": 1}, "a batch")


def test_a_budget_kept_in_one_process_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.ENV_LIMITS_URL, "memory")
    with pytest.raises(ConfigurationError, match="each process would keep a budget of its own"):
        holds()
