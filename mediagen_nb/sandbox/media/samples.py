"""The sandbox's sample inputs (``/_sandbox/samples/{name}``): a face, voices, clips, music, a photo."""

import functools
import re
from collections.abc import Callable

from mediagen_nb.sandbox.media.images import face_png
from mediagen_nb.sandbox.media.rendering import render_music
from mediagen_nb.sandbox.media.spec import MediaSpec, seeded


def _broken_mp4() -> bytes:
    """Build bytes that look like an MP4 (ftyp + mdat) but have no moov box, so no duration can be read."""
    ftyp = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomavc1"
    payload = seeded("broken").randbytes(4096)
    return ftyp + (8 + len(payload)).to_bytes(4, "big") + b"mdat" + payload


_SCRIPT = (
    "Hello, and welcome back! Today I will show you three quick ideas that make a short video feel natural. "
    "Ready? Let's begin with the light."
)

SAMPLES: dict[str, MediaSpec | Callable[[], bytes]] = {
    "face.png": face_png,
    "voice.wav": MediaSpec(kind="audio", prompt=_SCRIPT, seconds=8.0, seed=1, fmt="wav"),
    "voice.mp3": MediaSpec(kind="audio", prompt=_SCRIPT, seconds=8.0, seed=1, fmt="mp3"),
    "short-voice.wav": MediaSpec(kind="audio", prompt="Hi there, this is a quick test.", seconds=3.0, seed=2),
    "clip.mp4": MediaSpec(
        kind="video",
        prompt="Source clip: a creator talks to camera about morning routines",
        seconds=24.0,
        seed=3,
        width=180,
        height=320,
        fmt="mp4",
        audio=True,
    ),
    "long.mp4": MediaSpec(
        kind="video", prompt="A long recording", seconds=150.0, seed=4, width=72, height=128
    ),
    "broken.mp4": _broken_mp4,
    "music.mp3": functools.partial(render_music, 20.0, seed=5, fmt="mp3"),
    "photo.jpg": MediaSpec(
        kind="image", prompt="A harbour at dawn", seed=6, width=640, height=480, fmt="jpg"
    ),
}

PREVIEW = re.compile(r"preview-([a-z0-9][a-z0-9._-]{0,79})\.png")  # a catalog-like model id
