"""The generation API's endpoints: read the request, incoming the backend, write the envelope."""

from typing import Any

from starlette.responses import Response

from mediagen_nb.protocol import limits, messages, wire
from mediagen_nb.sandbox import pricing, shape
from mediagen_nb.sandbox.pipeline import Incoming
from mediagen_nb.sandbox.responses import bad_request, ok


async def start(incoming: Incoming) -> Response:
    """POST /v1/run: 201 with a new generation; 200 with the one an Idempotency-Key already started."""
    body = await incoming.json()
    generation, created = await incoming.world.generations.start(
        incoming.who,
        body.get("modelId"),
        body.get("input"),
        body.get("webhook"),
        idempotency_key=incoming.idempotency_key(),
        at_capacity=incoming.at_capacity,
        base_url=incoming.base_url,
    )
    return ok(generation.public(incoming.world), 201 if created else 200)


def wait_seconds(raw: str | None) -> int:
    """The ``wait`` query parameter: absent (0), or an integer from 5 to 55."""
    if raw is None:
        return 0
    try:
        wait = int(raw)
    except ValueError:
        wait = -1
    if not limits.WAIT_MIN_SECONDS <= wait <= limits.WAIT_MAX_SECONDS:
        raise bad_request(messages.wait_out_of_range(limits.WAIT_MIN_SECONDS, limits.WAIT_MAX_SECONDS))
    return wait


async def read(incoming: Incoming) -> Response:
    """GET /v1/generations/{id}?wait=: the generation, held until it ends or the wait expires."""
    wait = wait_seconds(incoming.request.query_params.get("wait"))
    generation, still_running = await incoming.world.generations.read(incoming.who, incoming.path("id"), wait)
    data = generation.public(incoming.world)
    if still_running:
        data["stillRunning"] = True
    return ok(data)


async def estimate(incoming: Incoming) -> Response:
    """POST /v1/estimate: the price a run of the same body would charge; never charges."""
    body = await incoming.json()
    priced = await incoming.world.generations.estimate(body.get("modelId"), body.get("input"))
    names, flagged = incoming.world.wire, incoming.world.catalog.flagged.get(priced.model.id)
    billing = pricing.billing_text(priced.model, priced.values, priced.media_seconds, assumed=priced.assumed)
    if flagged is not None:  # a snapshot's model whose price rule the sandbox could not know
        billing += f"; the sandbox approximates this price: {flagged}"
    answer: dict[str, Any] = {}
    for name, value in (
        (names.estimate_model, priced.model.id),
        (names.estimate_credits, shape.number(names, priced.credits)),
        (names.estimate_billing, billing),
    ):
        wire.put(answer, name, value)
    balance = incoming.who.account.balance
    answer.update(shape.extra_numbers(names, priced.model.credits, balance, priced.credits))
    return ok(answer)
