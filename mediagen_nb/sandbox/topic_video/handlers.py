"""The topic-to-video API's endpoints: read the request, incoming the backend, write the envelope."""

from starlette.responses import Response

from mediagen_nb.sandbox.pipeline import Incoming
from mediagen_nb.sandbox.responses import ok
from mediagen_nb.sandbox.topic_video import options as choices


async def start(incoming: Incoming) -> Response:
    """POST {topic root}: 201 with a new job; 200 with the one the body's idempotency key started."""
    job, created = await incoming.world.topic.start(
        incoming.who, await incoming.json(), at_capacity=incoming.at_capacity, base_url=incoming.base_url
    )
    return ok({"jobId": job.id}, 201 if created else 200)


async def options(incoming: Incoming) -> Response:
    """GET {topic root}/options: voices by gender, looks, edit styles, length bounds and defaults."""
    return ok(choices.options(incoming.world.wire))


async def read(incoming: Incoming) -> Response:
    """GET {topic root}/{jobId}: the job, advanced to now."""
    return ok(incoming.world.topic.job(incoming.who, incoming.path("id")).public(incoming.world))


async def reedit(incoming: Incoming) -> Response:
    """POST {topic root}/{jobId}/reedit: a new job re-cutting a finished lip-sync."""
    body = await incoming.json()
    job = incoming.world.topic.reedit(
        incoming.who, incoming.path("id"), body, at_capacity=incoming.at_capacity, base_url=incoming.base_url
    )
    return ok({"jobId": job.id}, 201)
