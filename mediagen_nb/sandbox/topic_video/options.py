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


# The re-edit body's names are the spec's own (``flow``, ``captions``, ``music``), whatever the start's.
REEDIT = wire.Names(job_flow="flow", job_captions="captions", job_music="music")


def edit(body: Mapping[str, Any], default: Edit, names: wire.Names) -> Edit:
    """The edit choices of a body spelled ``names``; absent ones come from ``default``."""
    return Edit(
        bodies.choice(body, names.job_flow, FLOWS, default.flow),
        bodies.flag(body, names.job_captions, default.captions),
        bodies.flag(body, names.job_music, default.music),
    )


def _seconds(value: Any, name: str) -> float:
    """The target length: 45 when absent, else a number from 20 to 180."""
    if value is None:
        return float(limits.SHORT_VIDEO_SECONDS_DEFAULT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise bad_request(messages.wrong_type(name, "a number of seconds"))
    low, high = limits.SHORT_VIDEO_SECONDS_MIN, limits.SHORT_VIDEO_SECONDS_MAX
    if not low <= value <= high:
        raise bad_request(messages.out_of_range(name, low, high))
    return float(value)


def plan(body: Mapping[str, Any], names: wire.Names) -> Plan:
    """Every start body field's type, rule, default and fallback (the webhook's host is checked later),
    the body's names spelled ``names``."""
    topic = body.get(names.job_topic)
    if topic is not None and not isinstance(topic, str):
        raise bad_request(messages.wrong_type(names.job_topic, "a string"))
    seconds = _seconds(body.get(names.job_seconds), names.job_seconds)
    gender = bodies.choice(body, names.job_gender, GENDERS, GENDERS[0])
    look, voice = body.get(names.job_look), body.get(names.job_voice)
    return Plan(
        topic=cut_topic(topic.strip()) if topic and topic.strip() else None,
        seconds=seconds,
        gender=gender,
        look=look if isinstance(look, str) and look in LOOKS else LOOKS[0],
        voice=voice if isinstance(voice, str) and voice in VOICES[gender] else DEFAULT_VOICE[gender],
        edit=edit(body, Edit(DEFAULT_FLOW, True, True), names),
        webhook=body.get(names.job_webhook),
    )


def options(names: wire.Names) -> dict[str, Any]:
    """``GET {topic root}/options``: voices by gender, looks, edit styles, length bounds and defaults."""
    answer: dict[str, Any] = {}
    for name, value in (
        (names.options_voices, {gender: list(voices) for gender, voices in VOICES.items()}),
        (names.options_genders, list(GENDERS)),
        (names.options_looks, list(LOOKS)),
        (names.options_flows, list(FLOWS)),
        (
            names.options_seconds,
            {
                "min": limits.SHORT_VIDEO_SECONDS_MIN,
                "max": limits.SHORT_VIDEO_SECONDS_MAX,
                "default": limits.SHORT_VIDEO_SECONDS_DEFAULT,
            },
        ),
        (
            names.options_defaults,
            {
                names.job_gender: GENDERS[0],
                names.job_look: LOOKS[0],
                names.job_voice: dict(DEFAULT_VOICE),
                names.job_flow: DEFAULT_FLOW,
                names.job_captions: True,
                names.job_music: True,
            },
        ),
    ):
        wire.put(answer, name, value)
    return answer
