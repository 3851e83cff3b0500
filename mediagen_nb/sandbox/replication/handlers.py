"""The replication API's endpoints: read the request, call the backend, write the envelope."""

from starlette.responses import Response

from mediagen_nb.sandbox.pipeline import Call
from mediagen_nb.sandbox.responses import ok


async def analyze(call: Call) -> Response:
    """POST /v1/analyze: 201 with a new analysis; 200 with the one an Idempotency-Key already started."""
    body = await call.json()
    analysis, created = await call.world.replication.analyze(
        call.who,
        body.get("url"),
        idempotency_key=call.idempotency_key(),
        at_capacity=call.at_capacity,
        base_url=call.base_url,
    )
    return ok(analysis.started(), 201 if created else 200)


async def read_analysis(call: Call) -> Response:
    """GET /v1/analyses/{id}: the analysis and its blueprint."""
    return ok(call.world.replication.analysis(call.who, call.path("id")).public())


async def build_blueprint(call: Call) -> Response:
    """POST /v1/analyses/{id}/blueprint: start writing the clip prompts of a shot list (no body)."""
    return ok(call.world.replication.build(call.who, call.path("id")))


async def replicate(call: Call) -> Response:
    """POST /v1/analyses/{id}/replicate: 201 with a new run; 200 with the one a key already started."""
    body = await call.json()
    run, created = await call.world.replication.replicate(
        call.who,
        call.path("id"),
        body,
        idempotency_key=call.idempotency_key(),
        at_capacity=call.at_capacity,
        base_url=call.base_url,
    )
    return ok({"runId": run.id, "modelId": run.model.id}, 201 if created else 200)


async def read_run(call: Call) -> Response:
    """GET /v1/runs/{id}: the run, advanced to now."""
    return ok(call.world.replication.run(call.who, call.path("id")).public(call.world))
