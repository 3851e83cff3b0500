"""``%%make_video`` under ``%mediagen budget``: refused before sending when the budget left cannot cover
the most the job can spend at its length (issue 19); the sandbox's own ledger shows nothing charged."""

from _shell import Notebook, assert_short


def test_make_video_is_refused_when_its_most_passes_the_budget_left(nb: Notebook) -> None:
    estimate = nb.ok("%%make_video --seconds 45 --estimate\nwhy owls turn their heads")
    assert f"at most {estimate.at_most}" in str(estimate)
    nb.ok("%mediagen budget 38")
    nb.ok("%%generate gpt-image-2 --quality low\na swift")  # 3 credits: 35 left
    kind, message = nb.error_kind("%%make_video --seconds 45\nwhy owls turn their heads")
    assert kind == "BudgetExceeded"
    assert_short(message, f"budget: the topic-to-video job can spend up to {estimate.at_most} credits")
    assert "35 of the session budget of 38 credits are left" in message
    assert nb.sent("job_start") == [] and [e["resource"] for e in nb.charges()] == ["generation"]
    nb.ok(f"%mediagen budget {estimate.at_most + 3}")
    job = nb.ok("%%make_video --seconds 45 -o job\nwhy owls turn their heads")
    assert job.status == "done" and len(nb.sent("job_start")) == 1
    charged = [e["credits"] for e in nb.charges() if e["resourceId"] == job.id]
    assert 0 < sum(charged) <= estimate.at_most
    nb.ok("%mediagen budget off")


def test_reedit_is_refused_naming_what_its_edit_can_spend(nb: Notebook) -> None:
    """Issue 33: ``%mediagen reedit`` was refused saying the re-edit "would cost 0 credits"."""
    nb.ok("%%make_video --seconds 20 -o job\nwhy owls turn their heads")
    edit = nb.ok("%%make_video --seconds 20 --estimate\nwhy owls turn their heads").edit_at_most
    spent = nb.ok("import mediagen_nb; mediagen_nb.budget()").spent
    nb.ok(f"%mediagen budget {spent + 1}")
    kind, message = nb.error_kind("%mediagen reedit job --flow karaoke")
    assert kind == "BudgetExceeded" and f"can spend up to {edit} credits" in message
    assert "would cost 0" not in message and len(nb.sandbox.world.topic.jobs) == 1  # no re-edit job
    nb.ok("%mediagen budget off")
