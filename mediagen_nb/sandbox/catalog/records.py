"""A catalog model as the catalog endpoints show it: its public record and its example."""

import copy
from typing import Any

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.paths import PATHS, path
from mediagen_nb.sandbox import shape
from mediagen_nb.sandbox.catalog.model import ModelSpec

SAMPLES_PREFIX = path("sandbox_samples", name="x").removesuffix("x")  # the folder of the samples


def record(model: ModelSpec, base_url: str, names: wire.Names = wire.DEFAULT) -> dict[str, Any]:
    """The public catalog record of ``model`` (list and single-model endpoints), spelled ``names``."""
    base = base_url.rstrip("/")
    pricing = copy.deepcopy(model.pricing)
    if pricing is not None:
        pricing["type"] = names.pricing_type(pricing.get("type"))
    answer: dict[str, Any] = {}
    for name, value in (
        (names.model_id, model.id),
        (names.model_name, model.name),
        (names.model_description, model.description),
        (names.model_output_type, shape.word(names, model.kind)),
        (names.model_group, model.group),
        (names.model_credits, shape.number(names, model.credits)),
        (names.model_preview, base + path("sandbox_media", name=f"preview-{model.id}.png")),
        ("input_schema", copy.deepcopy(model.input_schema)),
        ("pricing", pricing),
        (names.model_links, {"run": base + path("run"), "poll": base + PATHS["generation"]}),
    ):
        wire.put(answer, name, value)
    return answer


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
