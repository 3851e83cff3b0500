"""Measuring a media file's length the way the service meters it (mutagen: .wav, .mp3, .mp4)."""

import io
import math

from mutagen.mp3 import MP3
from mutagen.mp4 import MP4
from mutagen.wave import WAVE

_READERS: dict[str, type[WAVE] | type[MP3] | type[MP4]] = {"wav": WAVE, "mp3": MP3, "mp4": MP4}


def measure_seconds(data: bytes, ext: str) -> float | None:
    """Return the length mutagen reads from .wav/.mp3/.mp4 bytes (as the service meters), else None."""
    reader = _READERS.get(ext.lower().lstrip("."))
    if reader is None:
        return None
    try:
        info = reader(io.BytesIO(data)).info
        length = float(info.length or 0.0) if info is not None else 0.0
    except Exception:  # mutagen's parsers raise assorted errors on garbage; all mean "unreadable"
        return None
    return length if length > 0 and math.isfinite(length) else None
