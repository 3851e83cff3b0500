"""The catalog endpoints (no key, not counted): models, one model, the OpenAPI document, llms.txt."""

from starlette.responses import JSONResponse, PlainTextResponse, Response

from mediagen_nb.protocol import messages
from mediagen_nb.sandbox import shape
from mediagen_nb.sandbox.catalog.documents import llms_text, openapi_document
from mediagen_nb.sandbox.catalog.records import example_record, record
from mediagen_nb.sandbox.pipeline import Incoming
from mediagen_nb.sandbox.responses import not_found, ok


async def models(incoming: Incoming) -> Response:
    """GET /v1/models."""
    names = incoming.world.wire
    records = [record(m, incoming.base_url, names) for m in incoming.world.catalog.models]
    return ok(shape.page(names, records, incoming.request.query_params, incoming.base_url))


async def model(incoming: Incoming) -> Response:
    """GET /v1/models/{id}: the record plus ``example`` when one exists."""
    served = incoming.world.catalog.by_id
    found = served.get(incoming.path("id"))
    if found is None:
        raise not_found(messages.model_not_found(served))
    body = record(found, incoming.base_url, incoming.world.wire)
    example = example_record(found, incoming.base_url)
    if example is not None:
        body["example"] = example
    return ok(body)


async def openapi(incoming: Incoming) -> Response:
    """GET /v1/openapi.json."""
    return JSONResponse(openapi_document(incoming.world.catalog.models, incoming.base_url))


async def llms_txt(incoming: Incoming) -> Response:
    """GET /v1/llms.txt."""
    return PlainTextResponse(llms_text(incoming.world.catalog.models))
