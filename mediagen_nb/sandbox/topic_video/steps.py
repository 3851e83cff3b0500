"""The steps of a short-video job: each a generation charged as it starts, placed in simulated time.

Steps, in order (credits): ``script`` 2, ``portrait`` 8, ``voice`` 5, ``lipsync`` 1 per started second
of speech; then, with ``captions`` on, the edit: ``captions`` 1, ``broll`` 2 per clip, ``images`` 1 per
still; with ``music`` on, ``music`` 2; last a free ``render`` (cut, mix and loudness normalization).
Stages: ``scripting`` (script), ``portrait``, ``animating`` (voice, lip-sync), ``captioning`` (edit,
music, render). The edit style sets the inserts: ``classic`` a b-roll clip per 10 s of speech,
``reveal`` a still per 12 s, ``hook-reveal`` both per 15 s, ``broll-punch`` a b-roll clip per 6 s,
``clean-punch`` and ``karaoke`` none. Simulated step times: script 20 s, portrait 30 s, voice 10 s +
0.25 s and lip-sync 40 s + 1 s per second of speech, captions 10 s, b-roll 10 s + 6 s a clip, stills
8 s + 3 s each, music 10 s, render 10 s + 0.2 s per second of speech.
"""

import math
from dataclasses import dataclass

from mediagen_nb.protocol import states
from mediagen_nb.sandbox import lifecycle

SCRIPT_CREDITS = 2
PORTRAIT_CREDITS = 8
VOICE_CREDITS = 5
LIPSYNC_CREDITS_PER_SECOND = 1
CAPTIONS_CREDITS = 1
BROLL_CREDITS = 2  # per clip
IMAGE_CREDITS = 1  # per still
MUSIC_CREDITS = 2

# Seconds of speech per b-roll clip and per still image, by edit style; 0 = none.
FLOW_INSERTS = {
    "classic": (10.0, 0.0),
    "reveal": (0.0, 12.0),
    "hook-reveal": (15.0, 15.0),
    "broll-punch": (6.0, 0.0),
    "clean-punch": (0.0, 0.0),
    "karaoke": (0.0, 0.0),
}
CORE_STEPS = ("script", "portrait", "voice", "lipsync")  # a failure of one of these fails the job
MEDIA_STEPS = ("voice", "lipsync")  # their time limit grows with the speech, like input media's
RENDER = "render"  # free, and never fails
LABELS = {
    "script": "script",
    "portrait": "presenter image",
    "voice": "voiceover",
    "lipsync": "lip-sync",
    "captions": "captions",
    "broll": "b-roll",
    "images": "stills",
    "music": "music bed",
}


@dataclass
class Step(lifecycle.PaidStep):
    """One generation of a job, placed in simulated time."""

    name: str
    stage: str
    credits: int
    seconds: float  # simulated run time
    count: int = 0  # b-roll clips or stills


def core_steps(speech: float) -> list[Step]:
    """The steps before the edit: script, portrait, voice and lip-sync."""
    return [
        Step("script", states.SCRIPTING, SCRIPT_CREDITS, 20.0),
        Step("portrait", states.PORTRAIT, PORTRAIT_CREDITS, 30.0),
        Step("voice", states.ANIMATING, VOICE_CREDITS, 10.0 + 0.25 * speech),
        Step("lipsync", states.ANIMATING, LIPSYNC_CREDITS_PER_SECOND * math.ceil(speech), 40.0 + speech),
    ]


def edit_steps(flow: str, captions: bool, music: bool, speech: float) -> list[Step]:
    """The ``captioning`` stage's steps for an edit style and the captions and music switches."""
    stage = states.CAPTIONING
    steps = []
    if captions:
        steps.append(Step("captions", stage, CAPTIONS_CREDITS, 10.0))
        broll_every, image_every = FLOW_INSERTS[flow]
        if broll_every:
            count = max(1, int(speech // broll_every))
            steps.append(Step("broll", stage, BROLL_CREDITS * count, 10.0 + 6.0 * count, count))
        if image_every:
            count = max(1, int(speech // image_every))
            steps.append(Step("images", stage, IMAGE_CREDITS * count, 8.0 + 3.0 * count, count))
    if music:
        steps.append(Step("music", stage, MUSIC_CREDITS, 10.0))
    steps.append(Step(RENDER, stage, 0, 10.0 + 0.2 * speech))
    return steps
