"""The replication API's endpoints: read the request, incoming the backend, write the envelope."""

from starlette.responses import Response

from mediagen_nb.sandbox.pipeline import Incoming
from mediagen_nb.sandbox.responses import ok


async def analyze(incoming: Incoming) -> Response:
    """POST /v1/analyze: 201 with a new analysis; 200 with the one an Idempotency-Key already started."""
    body = await incoming.json()
    analysis, created = await incoming.world.replication.analyze(
        incoming.who,
        body.get("url"),
        idempotency_key=incoming.idempotency_key(),
        at_capacity=incoming.at_capacity,
        base_url=incoming.base_url,
    )
    return ok(analysis.started(), 201 if created else 200)


async def read_analysis(incoming: Incoming) -> Response:
    """GET /v1/analyses/{id}: the analysis and its blueprint."""
    return ok(incoming.world.replication.analysis(incoming.who, incoming.path("id")).public())


async def build_blueprint(incoming: Incoming) -> Response:
    """POST /v1/analyses/{id}/blueprint: start writing the clip prompts of a shot list (no body)."""
    return ok(incoming.world.replication.build(incoming.who, incoming.path("id")))


async def replicate(incoming: Incoming) -> Response:
    """POST /v1/analyses/{id}/replicate: 201 with a new run; 200 with the one a key already started."""
    body = await incoming.json()
    run, created = await incoming.world.replication.replicate(
        incoming.who,
        incoming.path("id"),
        body,
        idempotency_key=incoming.idempotency_key(),
        at_capacity=incoming.at_capacity,
        base_url=incoming.base_url,
    )
    return ok({"runId": run.id, "modelId": run.model.id}, 201 if created else 200)


async def read_run(incoming: Incoming) -> Response:
    """GET /v1/runs/{id}: the run, advanced to now."""
    return ok(incoming.world.replication.run(incoming.who, incoming.path("id")).public(incoming.world))
