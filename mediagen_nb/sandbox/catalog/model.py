"""One catalog model: its public record's fields plus the rules the sandbox prices and runs it by."""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mediagen_nb.protocol.schema import media_kind
from mediagen_nb.sandbox.pricing import PriceRule, input_defaults

Schema = dict[str, Any]

DEFAULT_OUTPUT_SECONDS = 5.0  # a video (or audio) model without a duration input makes this much
SPEECH_CHARS_PER_SECOND = 15.0  # text-to-speech output length: about 15 characters a second


@dataclass(frozen=True)
class ModelSpec:
    """One catalog model: its public record plus the rules the sandbox prices and runs it by.

    A run's mean simulated time is ``runtime_s + runtime_per_second * output seconds`` (see
    :func:`simulated_runtime`); for lip-sync and video-to-video the output is as long as the input media.
    """

    id: str
    name: str
    description: str
    kind: str
    group: str
    credits: int
    input_schema: Schema
    pricing: dict[str, Any] | None
    rule: PriceRule
    runtime_s: float
    runtime_per_second: float = 0.0
    media_field: str | None = None
    example: dict[str, Any] | None = None
    list_fields: tuple[str, ...] = ()
    min_media_seconds: tuple[tuple[str, float], ...] = ()  # (field, seconds) its media must be longer than

    def __post_init__(self) -> None:
        if not self.list_fields:
            props = self.input_schema.get("properties", {})
            lists = {n: p for n, p in props.items() if isinstance(p, dict) and p.get("type") == "array"}
            fields = tuple(n for n, p in lists.items() if media_kind(p))
            object.__setattr__(self, "list_fields", fields)


def output_seconds(model: ModelSpec, input: Mapping[str, Any], media_seconds: float | None) -> float | None:
    """Length of the audio or video a run produces; None for images.

    Speech (and zonos2) follows the text, at 15 characters a second; models with a ``duration`` input
    make that much; lip-sync and other media-driven models follow the measured input media.
    """
    if model.kind == "image":
        return None
    values = {**input_defaults(model.input_schema), **input}
    if model.kind == "audio" and "text" in model.input_schema["properties"]:
        return max(1.0, len(str(values.get("text") or "")) / SPEECH_CHARS_PER_SECOND)
    duration = values.get("duration")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool) and 0 < duration < math.inf:
        return float(duration)  # a snapshot's duration may be words ("5s"): the default length then
    if model.media_field is not None and media_seconds is not None:
        return float(media_seconds)
    return DEFAULT_OUTPUT_SECONDS


def simulated_runtime(model: ModelSpec, input: Mapping[str, Any], media_seconds: float | None) -> float:
    """Mean simulated run time of one run, in simulated seconds."""
    return model.runtime_s + model.runtime_per_second * (output_seconds(model, input, media_seconds) or 0.0)
