"""A topic-to-video start under a budget holds the most the job can spend, or is refused (issue 19).

The case of the issue: under ``mg.budget(...)`` with 35 credits left, a 45-second job held only the
catalog's "at least 28" and was then charged 51 to 59. Each test runs on a sync ``Client`` over real
HTTP and an ``AsyncClient`` in-process; charges come from the sandbox's own ledger.
"""

import pytest
from _kit import Kit

from mediagen_nb.client import BudgetExceeded, budget

pytestmark = pytest.mark.anyio
POLL, WAIT = 5.0, 3 * 3600.0


def net(kit: Kit, resource_id: str) -> int:
    return sum(e["credits"] * (1 if e["kind"] == "charge" else -1) for e in kit.ledger(resource_id))


async def test_a_job_the_budget_left_cannot_cover_at_its_most_is_refused(kit: Kit) -> None:
    estimate = await kit.call("video_estimate", 45)
    assert estimate.at_least == 28 and estimate.at_most > 59  # the job was charged 51 to 59
    budget(38)
    await kit.call("generate", "gpt-image-2", prompt="a kite", quality="low")  # 3 spent: 35 left
    with pytest.raises(BudgetExceeded) as raised:
        await kit.call("make_video", "why owls turn their heads", seconds=45)
    message = raised.value.message
    assert f"can spend up to {estimate.at_most} credits at 45 s" in message
    assert "35 of the session budget of 38 credits are left; nothing was sent" in message
    assert kit.recorder.count("job_start") == 0
    assert [e["resource"] for e in kit.ledger() if e["kind"] == "charge"] == ["generation"]
    assert budget().spent == 3 and budget().held == 0


async def test_a_job_holds_its_most_until_it_ends_then_its_charge(kit: Kit) -> None:
    estimate = await kit.call("video_estimate", 45)
    budget(estimate.at_most + 10)
    job = await kit.call("make_video", "why owls turn their heads", seconds=45)
    assert budget().spent == estimate.at_most  # held while it runs, whatever it has charged so far
    with pytest.raises(BudgetExceeded):  # so another start cannot take what the job may still spend
        await kit.call("generate", "gpt-image-2", prompt="a kite", quality="high")
    done = await kit.call("wait_job", job, poll=POLL, timeout=WAIT)
    assert done.status == "done"
    charged = net(kit, job.id)
    assert 0 < charged <= estimate.at_most
    assert budget().spent == charged == done.credits_used  # the hold became the real charge
    assert kit.recorder.count("job_start") == 1


@pytest.mark.parametrize(("seconds", "flow"), [(20, "broll-punch"), (45, "classic"), (180, "broll-punch")])
async def test_the_most_bounds_what_the_sandbox_charges(kit: Kit, seconds: int, flow: str) -> None:
    """At both ends of the length range, with the edit that inserts the most b-roll."""
    estimate = await kit.call("video_estimate", seconds)
    job = await kit.call("make_video", "why owls turn their heads", seconds=seconds, flow=flow)
    done = await kit.call("wait_job", job, poll=POLL, timeout=WAIT)
    assert done.status == "done" and 0 < net(kit, job.id) <= estimate.at_most
    assert kit.recorder.count("job_start") == 1


async def test_a_reedit_holds_what_its_edit_can_spend_or_is_refused_naming_it(kit: Kit) -> None:
    """Issue 33: with 1 credit of the budget left, ``reedit`` was sent and charged 3. A re-edit runs its
    job's edit steps, which the catalog does not price: it holds the most they can spend at the job's
    length, is refused naming that figure when the budget left is less, and its charge replaces the
    hold once it ends."""
    job = await kit.call("make_video", "why owls turn their heads", seconds=20)
    done = await kit.call("wait_job", job, poll=POLL, timeout=WAIT)
    edit = (await kit.call("video_estimate", 20)).edit_at_most
    assert done.status == "done" and 0 < edit < (await kit.call("video_estimate", 20)).at_most
    spent = budget().spent
    budget(spent + 1)
    with pytest.raises(BudgetExceeded) as raised:
        await kit.call("reedit", job.id, flow="karaoke")
    assert raised.value.message == (
        f"budget: the re-edit of job {job.id} can spend up to {edit} credits (the edit steps of a 20 s "
        f"video), but 1 of the session budget of {spent + 1} credits are left; nothing was sent. Raise it "
        "with mediagen_nb.budget(N) or %mediagen budget N"
    )
    assert kit.recorder.count("reedit") == 0 and len(kit.sandbox.world.topic.jobs) == 1
    budget(spent + edit)
    recut = await kit.call("reedit", job.id, flow="broll-punch")
    assert budget().spent == spent + edit  # held while it runs
    finished = await kit.call("wait_job", recut, poll=POLL, timeout=WAIT)
    charged = net(kit, recut.id)
    assert finished.status == "done" and 0 < charged <= edit
    assert budget().spent == spent + charged == spent + finished.credits_used
