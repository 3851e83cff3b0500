"""``check_usage``: what the account has left and this calendar month's credits and runs, from the ledger.

The spec's meaning, and where it leaves a choice, ours:

* ``remainingCredits``: the account's balance, shared by every key, token and the web app.
* A run is one paid start: a generation, an analysis, a replication run, a topic-to-video job (a
  re-edit is a job), or a run of the web app. It belongs to the calendar month (UTC, simulated time) of
  its first charge, and counts with every credit charged for it, net of refunds.
* Failed runs are left out, runs and credits: a resource that ended ``failed``, and a start refused at
  capacity (charged and refunded in one request) or a web-app run that failed, whose credits all came
  back.
* ``monthApiRuns`` counts runs started with an API key, through the REST API or the agent server;
  ``monthRuns`` also counts runs started with an agent client's access token and in the web app.
* ``topUpUrl``: the web app's billing page, as the ``Not enough credits`` message names it.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mediagen_nb.protocol import states
from mediagen_nb.sandbox.accounts import GRANT, Account
from mediagen_nb.sandbox.lifecycle import top_up_url

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

USAGE_FIELDS = ("remainingCredits", "monthCredits", "monthRuns", "monthApiRuns", "topUpUrl")


@dataclass
class _Run:
    month: str
    with_key: bool
    credits: int = 0
    refunded: bool = False


def _status(world: "World", resource: str, resource_id: str) -> str | None:
    """The status of a run's resource, None when the sandbox holds none (a refused start, a web-app run)."""
    resources: dict[str, dict[str, Any]] = {
        "generation": world.generations.items,
        "analysis": world.replication.analyses,
        "replication": world.replication.runs,
        "job": world.topic.jobs,
    }
    found = resources.get(resource, {}).get(resource_id)
    return None if found is None else str(found.status)


def check_usage(world: "World", account: Account, base_url: str) -> dict[str, Any]:
    """The five fields of ``check_usage`` for ``account`` now."""
    runs: dict[tuple[str, str], _Run] = {}
    for entry in world.accounts.entries():
        if entry["account"] != account.id or entry["kind"] == GRANT:
            continue  # a month's plan credits are no run
        run = runs.setdefault(
            (entry["resource"], entry["resourceId"]), _Run(entry["at"][:7], entry["keyId"] is not None)
        )
        if entry["kind"] == "charge":
            run.credits += entry["credits"]
        else:
            run.credits -= entry["credits"]
            run.refunded = True
    month = world.clock.month()
    counted = [
        run
        for (resource, resource_id), run in runs.items()
        if run.month == month and not _failed(world, resource, resource_id, run)
    ]
    return {
        "remainingCredits": account.balance,
        "monthCredits": sum(run.credits for run in counted),
        "monthRuns": len(counted),
        "monthApiRuns": sum(run.with_key for run in counted),
        "topUpUrl": top_up_url(base_url),
    }


def _failed(world: "World", resource: str, resource_id: str, run: _Run) -> bool:
    status = _status(world, resource, resource_id)
    if status is None:
        return run.refunded and run.credits == 0
    return status == states.FAILED
