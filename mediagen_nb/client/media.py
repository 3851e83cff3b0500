"""Local media files judged by their bytes: which medium a file is, its extension, and its length.

A local file becomes an input only when its content is an image, audio or video of the kind its
field takes (a ``credentials.json``, even one renamed ``voice.wav``, is none of them), and an
estimate measures a length-billed file here instead of uploading it. Lengths are read with mutagen,
the way the service meters ``.wav``, ``.mp3`` and ``.mp4`` files.
"""

import math
from dataclasses import dataclass
from pathlib import Path

from mediagen_nb import media_formats
from mediagen_nb.media_formats import HEAD

_IMAGE_BRANDS = {b"avif": ".avif", b"avis": ".avif", b"heic": ".heic", b"heix": ".heic", b"mif1": ".heic"}
_AUDIO_BRANDS = {b"M4A ", b"M4B "}


@dataclass(frozen=True)
class Format:
    """A media format: the media kinds its files can be, and the extensions its files are named with."""

    kinds: frozenset[str]  # "image", "audio", "video"
    extensions: tuple[str, ...]  # the first is the one a file gets when its own name does not fit

    def fits(self, kind: str | None) -> bool:
        """Whether a field of media ``kind`` (None: any medium) takes this format."""
        return kind is None or kind in self.kinds


def _format(kinds: str, *extensions: str) -> Format:
    return Format(frozenset(kinds.split()), extensions)


# What each signature is as an input: its media and the extensions its files go by.
_FORMATS = {
    "png": _format("image", ".png"),
    "jpeg": _format("image", ".jpg", ".jpeg"),
    "gif": _format("image", ".gif"),
    "webp": _format("image", ".webp"),
    "wav": _format("audio", ".wav"),
    "avi": _format("video", ".avi"),
    "tiff": _format("image", ".tiff", ".tif"),
    "bmp": _format("image", ".bmp"),
    "id3": _format("audio", ".mp3"),
    "mpeg-audio": _format("audio", ".mp3"),
    "adts": _format("audio", ".aac"),
    "flac": _format("audio", ".flac"),
    "ogg": _format("audio video", ".ogg", ".oga", ".ogv", ".opus"),
    "aiff": _format("audio", ".aiff", ".aif"),
    "ebml": _format("video audio", ".webm", ".mkv"),
    "svg": _format("image", ".svg"),
}


def sniff(head: bytes) -> Format | None:
    """The media format of a file that starts with ``head``, or None when it is no image, audio or video."""
    found = media_formats.signature(head)
    if found != "iso-media":
        return _FORMATS.get(found or "")
    brand = media_formats.brand(head)
    if brand in _IMAGE_BRANDS:
        return _format("image", _IMAGE_BRANDS[brand])
    if brand in _AUDIO_BRANDS:
        return _format("audio", ".m4a")
    return _format("video audio", ".mp4", ".m4v", ".mov", ".m4a")  # an MP4 may hold sound only


def format_of(path: Path) -> Format | None:
    """The media format of the file at ``path`` by its content (OSError when it cannot be read)."""
    with path.open("rb") as file:
        return sniff(file.read(HEAD))


def extension(path: Path, found: Format) -> str:
    """The extension a file of format ``found`` is named with: its own when it fits, else the format's."""
    own = path.suffix.lower()
    return own if own in found.extensions else found.extensions[0]


def measure_seconds(path: Path, ext: str) -> float | None:
    """The length mutagen reads from a ``.wav``, ``.mp3`` or ``.mp4`` file (as the service meters), or
    None when it cannot be read."""
    from mutagen.mp3 import MP3
    from mutagen.mp4 import MP4
    from mutagen.wave import WAVE

    reader = {".wav": WAVE, ".mp3": MP3, ".mp4": MP4}.get(ext)
    if reader is None:
        return None
    try:
        info = reader(str(path)).info
        length = float(info.length or 0.0) if info is not None else 0.0
    except Exception:  # mutagen's parsers raise assorted errors on a damaged file: all mean "unreadable"
        return None
    return length if length > 0 and math.isfinite(length) else None
