"""Local media files judged by their bytes: which medium a file is, its extension, and its length.

A local file becomes an input only when its content is an image, audio or video of the kind its
field takes (a ``credentials.json``, even one renamed ``voice.wav``, is none of them), and an
estimate measures a length-billed file here instead of uploading it. Lengths are read with mutagen,
the way the service meters ``.wav``, ``.mp3`` and ``.mp4`` files.
"""

import math
import re
from dataclasses import dataclass
from pathlib import Path

HEAD = 4096  # bytes read to tell a file's format (an SVG's root element may follow a long prolog)
_SVG = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*>\s*)?(?:(?:<!--.*?-->|<!DOCTYPE[^>]*>)\s*)*<svg[\s>]",
    re.DOTALL | re.IGNORECASE,
)
_IMAGE_BRANDS = {b"avif": ".avif", b"avis": ".avif", b"heic": ".heic", b"heix": ".heic", b"mif1": ".heic"}
_AUDIO_BRANDS = {b"M4A ", b"M4B "}
_BMP_HEADERS = {12, 40, 52, 56, 108, 124}


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


def sniff(head: bytes) -> Format | None:
    """The media format of a file that starts with ``head``, or None when it is no image, audio or video."""
    box, brand = head[4:8], head[8:12]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return _format("image", ".png")
    if head.startswith(b"\xff\xd8\xff"):
        return _format("image", ".jpg", ".jpeg")
    if head.startswith((b"GIF87a", b"GIF89a")):
        return _format("image", ".gif")
    if head.startswith(b"RIFF") and brand in (b"WEBP", b"WAVE", b"AVI "):
        return {
            b"WEBP": _format("image", ".webp"),
            b"WAVE": _format("audio", ".wav"),
            b"AVI ": _format("video", ".avi"),
        }[brand]
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return _format("image", ".tiff", ".tif")
    if head.startswith(b"BM") and len(head) > 18 and int.from_bytes(head[14:18], "little") in _BMP_HEADERS:
        return _format("image", ".bmp")
    if box == b"ftyp":
        if brand in _IMAGE_BRANDS:
            return _format("image", _IMAGE_BRANDS[brand])
        if brand in _AUDIO_BRANDS:
            return _format("audio", ".m4a")
        return _format("video audio", ".mp4", ".m4v", ".mov", ".m4a")  # an MP4 may hold sound only
    if head.startswith(b"ID3"):
        return _format("audio", ".mp3")
    if len(head) > 1 and head[0] == 0xFF and (head[1] & 0xE0) == 0xE0:  # an MPEG audio frame
        return _format("audio", ".mp3") if (head[1] >> 1) & 3 else _format("audio", ".aac")  # layer 0: ADTS
    if head.startswith(b"fLaC"):
        return _format("audio", ".flac")
    if head.startswith(b"OggS"):
        return _format("audio video", ".ogg", ".oga", ".ogv", ".opus")
    if head.startswith(b"FORM") and brand in (b"AIFF", b"AIFC"):
        return _format("audio", ".aiff", ".aif")
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return _format("video audio", ".webm", ".mkv")
    if _SVG.match(head):
        return _format("image", ".svg")
    return None


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
