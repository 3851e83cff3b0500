"""Packing a run's clips into takes, and the input each take is priced and timed by.

* ``seedance-2-fast-i2v`` and ``seedance-2-fast-t2v`` are multi-shot: ``fast`` packs up to 3 consecutive
  selected clips, 12 seconds at most (Seedance 2's longest generation), into one take; ``balanced``
  packs the same way but starts a new take at every ``hard-fade``; ``exact`` renders one take per clip.
  The other models render one take per clip whatever the accuracy.
* A take's price is ``pricing.price`` of the model with ``duration`` set to the take's length (rounded
  up to a length the model accepts) and ``resolution`` set by quality: ``low`` the lowest option,
  ``medium`` the model's default, ``high`` the highest.
"""

import math
from dataclasses import dataclass
from typing import Any

from mediagen_nb.sandbox import catalog, lifecycle
from mediagen_nb.sandbox.replication.blueprint import HARD_FADE

MULTI_SHOT_MODELS = frozenset({"seedance-2-fast-i2v", "seedance-2-fast-t2v"})
TAKE_MAX_CLIPS = 3
TAKE_MAX_SECONDS = 12.0


@dataclass
class Take(lifecycle.PaidStep):
    """One generation of a run: consecutive clips rendered together."""

    clips: tuple[int, ...]
    seconds: float
    credits: int
    input: dict[str, Any]  # what the take is priced and timed by


def pack(
    clips: list[dict[str, Any]], selected: list[int], accuracy: str, multi_shot: bool
) -> list[list[int]]:
    """The takes of a run: groups of consecutive selected clips per the accuracy rules above."""
    takes: list[list[int]] = []
    for index in selected:
        current = takes[-1] if takes else None
        joins = (
            current is not None
            and multi_shot
            and accuracy != "exact"
            and current[-1] == index - 1
            and len(current) < TAKE_MAX_CLIPS
            and clips[index]["end"] - clips[current[0]]["start"] <= TAKE_MAX_SECONDS
            and not (accuracy == "balanced" and clips[index]["transition"] == HARD_FADE)
        )
        if joins and current is not None:
            current.append(index)
        else:
            takes.append([index])
    return takes


def take_input(model: catalog.ModelSpec, quality: str, seconds: float) -> dict[str, Any]:
    """The input a take is priced and timed by: its length and the quality's resolution."""
    props = model.input_schema["properties"]
    values: dict[str, Any] = {}
    duration = props.get("duration")
    if duration is not None:
        wanted = math.ceil(seconds - 1e-6)
        if "enum" in duration:
            values["duration"] = min(
                (o for o in duration["enum"] if o >= wanted), default=max(duration["enum"])
            )
        else:
            values["duration"] = min(max(wanted, duration["minimum"]), duration["maximum"])
    resolution = props.get("resolution")
    if resolution is not None and "enum" in resolution:
        options = resolution["enum"]
        values["resolution"] = {"low": options[0], "high": options[-1]}.get(
            quality, resolution.get("default")
        )
    return values
