"""The catalog endpoints (no key, not counted): models, one model, the OpenAPI document, llms.txt."""

from typing import Any

from starlette.responses import JSONResponse, PlainTextResponse, Response

from mediagen_nb.protocol import messages, wire
from mediagen_nb.protocol.paths import GENERATION_ROOT, PATHS
from mediagen_nb.sandbox import catalog
from mediagen_nb.sandbox.pipeline import Call
from mediagen_nb.sandbox.responses import not_found, ok


def _relative(name: str) -> str:
    """A generation-root path as the OpenAPI document writes it (``/v1/run``)."""
    return "/v1" + PATHS[name].removeprefix(GENERATION_ROOT)


def openapi_document(base_url: str) -> dict[str, Any]:
    """An OpenAPI 3.1 document of /v1/run and /v1/generations/{id}, each model at Input_<modelId>."""
    schemas: dict[str, Any] = {f"Input_{m.id}": m.input_schema for m in catalog.MODELS}
    schemas["RunRequest"] = {
        "type": "object",
        "required": ["modelId", "input"],
        "properties": {
            "modelId": {"type": "string", "enum": [m.id for m in catalog.MODELS]},
            "input": {
                "description": "Validated against the model's schema, components.schemas.Input_<modelId>.",
                "anyOf": [{"$ref": f"#/components/schemas/Input_{m.id}"} for m in catalog.MODELS],
            },
            "webhook": {"type": "string", "format": "uri", "description": "https URL on a public host"},
        },
    }
    schemas["Generation"] = {
        "type": "object",
        "required": ["id", "modelId", "status", "output", "error", "creditsSpent", "createdAt"],
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "modelId": {"type": "string"},
            "status": {"type": "string", "enum": ["queued", "processing", "succeeded", "failed"]},
            "output": {
                "type": ["object", "null"],
                "properties": {
                    "type": {"type": "string", "enum": ["image", "video", "audio"]},
                    "urls": {"type": "array", "items": {"type": "string", "format": "uri"}},
                },
            },
            "error": {"type": ["string", "null"]},
            "creditsSpent": {"type": "integer"},
            "createdAt": {"type": "string", "format": "date-time"},
            "mediaDurationSec": {"type": "number"},
            "stillRunning": {"type": "boolean"},
        },
    }
    schemas["Error"] = {
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "statusCode": {"type": "integer"},
                    "message": {"type": "string"},
                    "error": {"type": "string"},
                },
            },
            {"type": "string", "description": "429 bodies are a plain JSON string"},
        ]
    }

    def envelope(ref: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"success": {"type": "boolean"}, "data": {"$ref": f"#/components/schemas/{ref}"}},
        }

    def answer(description: str, ref: str) -> dict[str, Any]:
        return {"description": description, "content": {"application/json": {"schema": envelope(ref)}}}

    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    errors = {
        str(code): {"description": text, **error}
        for code, text in [
            (400, "invalid request, moderation rejection or low balance"),
            (401, "key missing, wrong, expired or revoked"),
            (403, "account suspended"),
            (404, "not found for the account"),
            (429, "rate limit or key's monthly cap"),
            (500, "unexpected server error"),
            (503, "model at capacity; credits refunded"),
        ]
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Media Generation Service (sandbox)", "version": "1"},
        "servers": [{"url": base_url + GENERATION_ROOT.removesuffix("/v1")}],
        "security": [{"bearer": []}],
        "paths": {
            _relative("run"): {
                "post": {
                    "operationId": "run",
                    "summary": "Start a generation (charges credits)",
                    "parameters": [
                        {
                            "name": "Idempotency-Key",
                            "in": "header",
                            "required": False,
                            "schema": {"type": "string"},
                            "description": "First 255 characters count; reuse returns the generation",
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/RunRequest"}}
                        },
                    },
                    "responses": {"201": answer("generation started", "Generation"), **errors},
                }
            },
            _relative("generation"): {
                "get": {
                    "operationId": "getGeneration",
                    "summary": "Read a generation, optionally holding the request until it ends",
                    "parameters": [
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "format": "uuid"},
                        },
                        {
                            "name": "wait",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "integer", "minimum": 5, "maximum": 55},
                        },
                    ],
                    "responses": {"200": answer("the generation", "Generation"), **errors},
                }
            },
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def llms_text() -> str:
    """Model ids, output types and required inputs, one model a line."""
    lines = ["# Models", ""]
    for m in catalog.MODELS:
        required = ", ".join(m.input_schema.get("required", [])) or "none"
        lines.append(f"- {m.id} ({m.kind}): required inputs: {required}")
    return "\n".join(lines) + "\n"


async def models(call: Call) -> Response:
    """GET /v1/models."""
    return ok({wire.MODELS_LIST: [catalog.record(m, call.base_url) for m in catalog.MODELS]})


async def model(call: Call) -> Response:
    """GET /v1/models/{id}: the record plus ``example`` when one exists."""
    found = catalog.BY_ID.get(call.path("id"))
    if found is None:
        raise not_found(messages.model_not_found(catalog.BY_ID))
    record = catalog.record(found, call.base_url)
    example = catalog.example_record(found, call.base_url)
    if example is not None:
        record["example"] = example
    return ok(record)


async def openapi(call: Call) -> Response:
    """GET /v1/openapi.json."""
    return JSONResponse(openapi_document(call.base_url))


async def llms_txt(call: Call) -> Response:
    """GET /v1/llms.txt."""
    return PlainTextResponse(llms_text())
