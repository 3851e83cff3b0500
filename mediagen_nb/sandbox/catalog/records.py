"""A catalog model as the catalog endpoints show it: its public record and its example."""

import copy
from typing import Any

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.paths import PATHS, path
from mediagen_nb.sandbox.catalog.model import ModelSpec

SAMPLES_PREFIX = path("sandbox_samples", name="x").removesuffix("x")  # the folder of the samples


def record(model: ModelSpec, base_url: str) -> dict[str, Any]:
    """The public catalog record of ``model`` (list and single-model endpoints)."""
    base = base_url.rstrip("/")
    return {
        wire.MODEL_ID: model.id,
        wire.MODEL_NAME: model.name,
        wire.MODEL_DESCRIPTION: model.description,
        wire.MODEL_OUTPUT_TYPE: model.kind,
        wire.MODEL_GROUP: model.group,
        wire.MODEL_CREDITS: model.credits,
        wire.MODEL_PREVIEW: base + path("sandbox_media", name=f"preview-{model.id}.png"),
        "input_schema": copy.deepcopy(model.input_schema),
        "pricing": copy.deepcopy(model.pricing),
        wire.MODEL_LINKS: {"run": base + path("run"), "poll": base + PATHS["generation"]},
    }


def example_record(model: ModelSpec, base_url: str) -> dict[str, Any] | None:
    """``model.example`` with its sample paths (output and input) made absolute; None without one."""
    if model.example is None:
        return None
    base = base_url.rstrip("/")

    def absolute(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(SAMPLES_PREFIX):
            return base + value
        if isinstance(value, dict):
            return {key: absolute(item) for key, item in value.items()}
        if isinstance(value, list):
            return [absolute(item) for item in value]
        return value

    result: dict[str, Any] = absolute(model.example)
    return result
