"""Writing a source video's blueprint: clips with camera, beats, on-screen text, overlays and prompts.

A blueprint is drawn from a generator seeded by the link, so the same video read twice gives the same
blueprint; its words come from ``words.toml``. Each clip's ``transition`` (a member of our choosing) is
``cut`` or ``hard-fade``; the first clip's is ``cut``.
"""

import math
import random
from typing import Any

from mediagen_nb.sandbox import datafiles

HARD_FADE = "hard-fade"
CUT = "cut"

_WORDS = datafiles.load(__package__ or __name__, "words.toml")
TITLES = datafiles.words(_WORDS, "titles")
SUBJECTS = datafiles.words(_WORDS, "subjects")
SETTINGS = datafiles.words(_WORDS, "settings")
ACTIONS = datafiles.words(_WORDS, "actions")
BEATS = datafiles.words(_WORDS, "beats")
FRAMINGS = datafiles.words(_WORDS, "framings")
MOVEMENTS = datafiles.words(_WORDS, "movements")
CAPTIONS = datafiles.words(_WORDS, "captions")
CAPTION_POSITIONS = datafiles.words(_WORDS, "caption_positions")
OVERLAYS = datafiles.words(_WORDS, "overlays")
SPLIT_DIRECTIONS = datafiles.words(_WORDS, "split_directions")
GRADES = datafiles.words(_WORDS, "grades")
LIGHTING = datafiles.words(_WORDS, "lighting")
LENSES = datafiles.words(_WORDS, "lenses")
PALETTE = datafiles.words(_WORDS, "palette")
PACING = datafiles.words(_WORDS, "pacing")
MUSIC = datafiles.words(_WORDS, "music")


def _cuts(rng: random.Random, duration: float) -> list[tuple[float, float]]:
    """Clip bounds covering ``duration``: 1.5 to 5.5 seconds each, no sliver at the end."""
    bounds: list[tuple[float, float]] = []
    start = 0.0
    while duration - start > 0.05:
        end = round(min(duration, start + rng.uniform(1.5, 5.5)), 2)
        if duration - end < 1.0:
            end = round(duration, 2)
        bounds.append((round(start, 2), end))
        start = end
    return bounds


def _clip(
    rng: random.Random,
    index: int,
    start: float,
    end: float,
    subject: str,
    setting: str,
    style: dict[str, Any],
) -> tuple[dict[str, Any], str, str]:
    """One clip of the blueprint, its shot description and its prompt."""
    framing, movement, action = rng.choice(FRAMINGS), rng.choice(MOVEMENTS), rng.choice(ACTIONS)
    description = f"{framing} of {subject} who {action}, in {setting}"
    prompt = f"{description}; {movement} camera; {style['grade']} grade, {style['lighting']}"
    length = end - start
    clip: dict[str, Any] = {
        "index": index,
        "start": start,
        "end": end,
        "transition": HARD_FADE if index and rng.random() < 0.25 else CUT,
        "prompt": prompt,
        "camera": {"framing": framing, "movement": movement},
        "beats": [
            {"t": round(start + second, 2), "action": rng.choice(BEATS)}
            for second in range(math.ceil(length))
        ],
        "onScreenText": (
            [
                {
                    "text": rng.choice(CAPTIONS),
                    "start": start,
                    "end": end,
                    "position": rng.choice(CAPTION_POSITIONS),
                }
            ]
            if rng.random() < 0.5
            else []
        ),
        "overlays": (
            [{"type": rng.choice(OVERLAYS), "start": start, "end": round(start + length / 2, 2)}]
            if rng.random() < 0.3
            else []
        ),
        "keyframes": [
            {"t": start, "description": f"{framing}: {subject} in {setting}"},
            {"t": end, "description": f"{subject} {action}"},
        ],
    }
    if rng.random() < 0.15:
        clip["layout"] = {
            "type": "split-screen",
            "direction": rng.choice(SPLIT_DIRECTIONS),
            "panels": [f"{subject} reacting", f"close-up of {rng.choice(SUBJECTS)}"],
        }
    return clip, description, prompt


def build_blueprint(rng: random.Random, duration: float, aspect: str) -> tuple[dict[str, Any], list[str]]:
    """A deterministic blueprint for a source video, and every clip's prompt (also in the clips)."""
    subject, setting = rng.choice(SUBJECTS), rng.choice(SETTINGS)
    style = {
        "grade": rng.choice(GRADES),
        "lighting": rng.choice(LIGHTING),
        "lens": rng.choice(LENSES),
        "palette": rng.sample(PALETTE, 3),
        "pacing": rng.choice(PACING),
    }
    clips: list[dict[str, Any]] = []
    shots: list[dict[str, Any]] = []
    prompts: list[str] = []
    for index, (start, end) in enumerate(_cuts(rng, duration)):
        clip, description, prompt = _clip(rng, index, start, end, subject, setting, style)
        clips.append(clip)
        shots.append({"index": index, "start": start, "end": end, "description": description})
        prompts.append(prompt)
    blueprint = {
        "clips": clips,
        "styleBible": style,
        "soundtrack": {
            "music": rng.choice(MUSIC),
            "bpm": rng.randint(80, 140),
            "voiceover": rng.random() < 0.7,
        },
        "aspect": aspect,
        "shots": shots,
        "speakers": [{"id": "S1", "description": f"{subject}, speaking to camera"}],
        "characters": [{"id": "C1", "description": subject}],
    }
    return blueprint, prompts
