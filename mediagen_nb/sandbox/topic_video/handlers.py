"""The topic-to-video API's endpoints: read the request, call the backend, write the envelope."""

from starlette.responses import Response

from mediagen_nb.sandbox.pipeline import Call
from mediagen_nb.sandbox.responses import ok
from mediagen_nb.sandbox.topic_video import options as choices


async def start(call: Call) -> Response:
    """POST {topic root}: 201 with a new job; 200 with the one the body's idempotency key started."""
    job, created = await call.world.topic.start(
        call.who, await call.json(), at_capacity=call.at_capacity, base_url=call.base_url
    )
    return ok({"jobId": job.id}, 201 if created else 200)


async def options(call: Call) -> Response:
    """GET {topic root}/options: voices by gender, looks, edit styles, length bounds and defaults."""
    return ok(choices.options())


async def read(call: Call) -> Response:
    """GET {topic root}/{jobId}: the job, advanced to now."""
    return ok(call.world.topic.job(call.who, call.path("id")).public(call.world))


async def reedit(call: Call) -> Response:
    """POST {topic root}/{jobId}/reedit: a new job re-cutting a finished lip-sync."""
    body = await call.json()
    job = call.world.topic.reedit(
        call.who, call.path("id"), body, at_capacity=call.at_capacity, base_url=call.base_url
    )
    return ok({"jobId": job.id}, 201)
