"""``usage()`` reports charges, never an estimate as a charge: the replica render of issue 19.

The case of the issue: ``%mediagen usage`` showed a one-clip replica at its estimate (20 credits, the
clip count times the model's listed price) when the sandbox had charged 8 to 12. The replication run
resource carries no credits field; a sandbox tells its charge from its own ledger once the run ends,
the service does not, so there the row stays an estimate, says so, and stays out of the total.
"""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from _kit import Kit, open_kit

from mediagen_nb.batch.usage import ESTIMATED, usage
from mediagen_nb.client import AsyncClient, Client
from mediagen_nb.sandbox import Sandbox

pytestmark = pytest.mark.anyio
POLL, WAIT = 5.0, 3 * 3600.0
LINK = "https://www.tiktok.com/@someone/video/7"


@pytest.fixture(params=["sync", "async"])
async def kit(request: pytest.FixtureRequest, served: Sandbox) -> AsyncIterator[Kit]:
    """A sync or an async client on a sandbox served on 127.0.0.1 (so both know it is a sandbox)."""
    async with open_kit(request.param, served) as made:
        yield made


@pytest.fixture
async def service(sandbox: Sandbox) -> AsyncIterator[Kit]:
    """An async client on an in-process sandbox at ``http://sandbox.local``: to the client, a service."""
    async with open_kit("async", sandbox) as made:
        yield made


async def one_clip_replica(kit: Kit, client: Client | AsyncClient) -> Any:
    analysis = await kit.call("analyze", LINK, client=client)
    analysis = await kit.call("wait_analysis", analysis, poll=POLL, timeout=WAIT, client=client)
    run = await kit.call("replicate", analysis.id, clips=[0], quality="low", client=client)
    return await kit.call("wait_replication", run, poll=POLL, timeout=WAIT, client=client)


def net(kit: Kit, resource: str | None = None) -> int:
    return sum(
        e["credits"] * (1 if e["kind"] == "charge" else -1)
        for e in kit.ledger()
        if resource is None or e["resourceId"] == resource
    )


def rows(frame: Any) -> dict[str, dict[str, Any]]:
    return {row["model"]: row for row in frame.to_dict("records")}


async def test_usage_shows_what_a_sandbox_charged_for_a_replica(kit: Kit) -> None:
    done = await one_clip_replica(kit, kit.client)
    assert done.status == "done"
    charged = net(kit, done.id)
    assert 0 < charged < 20  # priced by the clip's length at low quality, not the listed 20
    shown = rows(usage(kit.client))
    replica = shown["seedance-2-fast-i2v"]
    assert replica["credits"] == charged and replica["note"] == "" and replica["via"] == "call"
    assert shown["total"]["credits"] == net(kit) == charged + 5  # with the analysis's flat 5
    assert shown["total"]["note"] == ""


async def test_on_the_service_a_replica_is_an_estimate_kept_out_of_the_total(service: Kit) -> None:
    done = await one_clip_replica(service, service.client)
    assert done.status == "done" and service.client.base_url == "http://sandbox.local"
    assert service.recorder.count("sandbox_ledger") == 0  # the service has no such thing to read
    shown = rows(usage(service.client))
    replica = shown["seedance-2-fast-i2v"]
    assert replica["credits"] == 20 and replica["note"] == ESTIMATED  # clips x listed, said so
    assert shown["total"]["credits"] == 5  # the analysis alone: charges only
    assert shown["total"]["note"] == "charges only; apart: about 20 credits estimated"
    assert net(service) == 5 + net(service, done.id) and net(service, done.id) != 20
