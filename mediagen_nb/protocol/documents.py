"""What the service's free documents say of its catalog: ``llms.txt`` and ``openapi.json``.

The spec shows what each holds (llms.txt: "a plain-text list of model ids, output types and required
inputs"; openapi.json: ``/v1/run``, ``/v1/generations/{id}`` and each model's input schema at
``components.schemas.Input_<modelId>``) but not llms.txt's layout, so it is read loosely: a line that
starts with an id (after a list mark or a backtick) and names an output kind is a model, and what
follows ``required`` on it its required inputs. OpenAPI's schema names are exact.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KINDS = ("image", "video", "audio")  # a model's output kinds: the only definition
INPUT_PREFIX = "Input_"
_LINE = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])?\s*[`*\"']*([A-Za-z0-9][A-Za-z0-9._:/-]{0,127}?)[`*\"']*(?=[\s:(,|]|$)"
)
_KIND = re.compile(r"\b(image|video|audio)\b", re.IGNORECASE)
_REQUIRED = re.compile(r"required(?:\s+inputs?)?\s*[:=-]?\s*(.*)$", re.IGNORECASE)
_NONE = ("none", "-", "—", "")


@dataclass(frozen=True)
class Listed:
    """One model as llms.txt lists it."""

    id: str
    kind: str | None
    required: tuple[str, ...] | None  # None: the line names none it can be read from


def llms_models(text: str) -> dict[str, Listed]:
    """The models an llms.txt lists, by id (see the module for how loosely it is read)."""
    found: dict[str, Listed] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        head = _LINE.match(line)
        kind = _KIND.search(line[head.end() :] if head else "")
        if head is None or kind is None:
            continue
        required = None
        said = _REQUIRED.search(line)
        if said is not None:
            words = [w.strip(" `*'\".;") for w in re.split(r"[,;]|\band\b", said.group(1))]
            required = tuple(w for w in words if w.lower() not in _NONE)
        found.setdefault(head.group(1), Listed(head.group(1), kind.group(1).lower(), required))
    return found


def openapi_inputs(document: Any) -> dict[str, Mapping[str, Any]]:
    """Each model's input schema in an OpenAPI document, by model id (``Input_<modelId>``)."""
    components = document.get("components") if isinstance(document, Mapping) else None
    schemas = components.get("schemas") if isinstance(components, Mapping) else None
    if not isinstance(schemas, Mapping):
        return {}
    return {
        name[len(INPUT_PREFIX) :]: schema
        for name, schema in schemas.items()
        if isinstance(name, str) and name.startswith(INPUT_PREFIX) and isinstance(schema, Mapping)
    }


def openapi_fields(document: Any, schema: str) -> tuple[str, ...]:
    """The property names of one of an OpenAPI document's schemas (``Generation``, ``RunRequest``)."""
    components = document.get("components") if isinstance(document, Mapping) else None
    schemas = components.get("schemas") if isinstance(components, Mapping) else None
    found = schemas.get(schema) if isinstance(schemas, Mapping) else None
    properties = found.get("properties") if isinstance(found, Mapping) else None
    return tuple(str(name) for name in properties) if isinstance(properties, Mapping) else ()
