"""The catalog's machine-readable documents: the OpenAPI document and llms.txt.

The OpenAPI document is ``openapi.json`` (a template: the operations, the Generation and Error schemas)
filled from the catalog (each model's input schema at ``components.schemas.Input_<modelId>``), the
paths, the ``wait`` bounds and the generation states, so none of those is written twice.
"""

import copy
import json
from importlib import resources
from typing import Any

from mediagen_nb.protocol import limits, states
from mediagen_nb.protocol.paths import GENERATION_ROOT, PATHS
from mediagen_nb.sandbox.catalog.model import ModelSpec

_TEMPLATE: dict[str, Any] = json.loads(
    resources.files(__package__ or __name__).joinpath("openapi.json").read_text(encoding="utf-8")
)


def _relative(name: str) -> str:
    """A generation-root path as the OpenAPI document writes it (``/v1/run``)."""
    return "/v1" + PATHS[name].removeprefix(GENERATION_ROOT)


def openapi_document(models: tuple[ModelSpec, ...], base_url: str) -> dict[str, Any]:
    """An OpenAPI 3.1 document of /v1/run and /v1/generations/{id}, each model at Input_<modelId>."""
    template = copy.deepcopy(_TEMPLATE)
    errors = template.pop("errors")
    errors.pop("description")
    schemas = template["components"]["schemas"]
    run = schemas["RunRequest"]["properties"]
    run["modelId"]["enum"] = [m.id for m in models]
    run["input"]["anyOf"] = [{"$ref": f"#/components/schemas/Input_{m.id}"} for m in models]
    schemas["Generation"]["properties"]["status"]["enum"] = list(states.GENERATION_STATES)
    paths = {_relative(name): operations for name, operations in template.pop("paths").items()}
    for operations in paths.values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["name"] == "wait":
                    parameter["schema"] |= {
                        "minimum": limits.WAIT_MIN_SECONDS,
                        "maximum": limits.WAIT_MAX_SECONDS,
                    }
            error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
            operation["responses"] |= {code: {"description": text, **error} for code, text in errors.items()}
    components = template["components"]
    components["schemas"] = {**{f"Input_{m.id}": copy.deepcopy(m.input_schema) for m in models}, **schemas}
    return {
        "openapi": template["openapi"],
        "info": template["info"],
        "servers": [{"url": base_url + GENERATION_ROOT.removesuffix("/v1")}],
        "security": template["security"],
        "paths": paths,
        "components": components,
    }


def llms_text(models: tuple[ModelSpec, ...]) -> str:
    """Model ids, output types and required inputs, one model a line."""
    lines = ["# Models", ""]
    for m in models:
        required = ", ".join(m.input_schema.get("required", [])) or "none"
        lines.append(f"- {m.id} ({m.kind}): required inputs: {required}")
    return "\n".join(lines) + "\n"
