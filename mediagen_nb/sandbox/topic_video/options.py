"""The choices of a short-video job (voices, looks, edit styles, length) and its start body's rules.

An unknown edit style is refused (400); an unknown look falls back to ``creator``, and a voice name not
offered for the chosen gender to that gender's default voice.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mediagen_nb.protocol import limits, messages, wire
from mediagen_nb.sandbox import bodies
from mediagen_nb.sandbox.responses import bad_request
from mediagen_nb.sandbox.topic_video.script import cut_topic
from mediagen_nb.sandbox.topic_video.steps import FLOW_INSERTS

GENDERS = ("man", "woman")
VOICES = {
    "man": ("Archer", "Miles", "Jasper", "Theo", "Dax"),
    "woman": ("Lucy", "Nova", "Ivy", "Maren", "Sage"),
}
DEFAULT_VOICE = {"man": "Archer", "woman": "Lucy"}
LOOKS = ("creator", "newscaster", "pixar")
FLOWS = tuple(FLOW_INSERTS)
DEFAULT_FLOW = "classic"


@dataclass(frozen=True)
class Edit:
    """The edit choices of a start or re-edit body."""

    flow: str
    captions: bool
    music: bool


@dataclass(frozen=True)
class Plan:
    """A validated start body with its defaults and fallbacks applied."""

    topic: str | None
    seconds: float
    gender: str
    look: str
    voice: str
    edit: Edit
    webhook: Any


def edit(body: Mapping[str, Any], default: Edit) -> Edit:
    """The edit choices of a body; absent ones come from ``default``."""
    return Edit(
        bodies.choice(body, wire.JOB_FLOW, FLOWS, default.flow),
        bodies.flag(body, wire.JOB_CAPTIONS, default.captions),
        bodies.flag(body, wire.JOB_MUSIC, default.music),
    )


def _seconds(value: Any) -> float:
    """The target length: 45 when absent, else a number from 20 to 180."""
    if value is None:
        return float(limits.SHORT_VIDEO_SECONDS_DEFAULT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise bad_request(messages.wrong_type(wire.JOB_SECONDS, "a number of seconds"))
    low, high = limits.SHORT_VIDEO_SECONDS_MIN, limits.SHORT_VIDEO_SECONDS_MAX
    if not low <= value <= high:
        raise bad_request(messages.out_of_range(wire.JOB_SECONDS, low, high))
    return float(value)


def plan(body: Mapping[str, Any]) -> Plan:
    """Every start body field's type, rule, default and fallback (the webhook's host is checked later)."""
    topic = body.get(wire.JOB_TOPIC)
    if topic is not None and not isinstance(topic, str):
        raise bad_request(messages.wrong_type(wire.JOB_TOPIC, "a string"))
    seconds = _seconds(body.get(wire.JOB_SECONDS))
    gender = bodies.choice(body, wire.JOB_GENDER, GENDERS, GENDERS[0])
    look, voice = body.get(wire.JOB_LOOK), body.get(wire.JOB_VOICE)
    return Plan(
        topic=cut_topic(topic.strip()) if topic and topic.strip() else None,
        seconds=seconds,
        gender=gender,
        look=look if isinstance(look, str) and look in LOOKS else LOOKS[0],
        voice=voice if isinstance(voice, str) and voice in VOICES[gender] else DEFAULT_VOICE[gender],
        edit=edit(body, Edit(DEFAULT_FLOW, True, True)),
        webhook=body.get(wire.JOB_WEBHOOK),
    )


def options() -> dict[str, Any]:
    """``GET {topic root}/options``: voices by gender, looks, edit styles, length bounds and defaults."""
    return {
        wire.OPTIONS_VOICES: {gender: list(names) for gender, names in VOICES.items()},
        wire.OPTIONS_GENDERS: list(GENDERS),
        wire.OPTIONS_LOOKS: list(LOOKS),
        wire.OPTIONS_FLOWS: list(FLOWS),
        wire.OPTIONS_SECONDS: {
            "min": limits.SHORT_VIDEO_SECONDS_MIN,
            "max": limits.SHORT_VIDEO_SECONDS_MAX,
            "default": limits.SHORT_VIDEO_SECONDS_DEFAULT,
        },
        wire.OPTIONS_DEFAULTS: {
            wire.JOB_GENDER: GENDERS[0],
            wire.JOB_LOOK: LOOKS[0],
            wire.JOB_VOICE: dict(DEFAULT_VOICE),
            wire.JOB_FLOW: DEFAULT_FLOW,
            wire.JOB_CAPTIONS: True,
            wire.JOB_MUSIC: True,
        },
    }
