"""Media formats, told once for the client and the sandbox: by a file's first bytes, or by a URL's extension.

:func:`signature` names the format a file's first bytes start like (its magic bytes); each side then
decides what it takes of it (the client: which medium a local file is; the sandbox: what it keeps).
:data:`MEDIA_TYPES` and :func:`kind_of_url` say what a media URL is by its extension.
"""

import re

from mediagen_nb.protocol.schema import url_extension

HEAD = 4096  # bytes read to tell a file's format (an SVG's root element may follow a long prolog)

# Every media type the toolkit names, by the extension a URL or a file ends with.
MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".mp4": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
}
_BMP_HEADERS = {12, 40, 52, 56, 108, 124}
_RIFF = {b"WEBP": "webp", b"WAVE": "wav", b"AVI ": "avi"}
_PROLOGUE = re.compile(
    r"\s*(?:<\?xml[^>]*\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>)", re.DOTALL | re.IGNORECASE
)


def kind_of_url(url: object) -> str | None:
    """``image``, ``audio`` or ``video`` by the URL's file extension, or None."""
    mime = MEDIA_TYPES.get(url_extension(url)) if isinstance(url, str) else None
    return mime.split("/", 1)[0] if mime else None


def brand(head: bytes) -> bytes:
    """The major brand of an ISO media file (MP4, MOV, M4A, AVIF ...): ``b"isom"``, ``b"qt  "`` ..."""
    return head[8:12]


def signature(head: bytes) -> str | None:
    """The format a file starting with ``head`` has by its magic bytes, or None.

    One of ``png``, ``jpeg``, ``gif``, ``webp``, ``wav``, ``avi``, ``tiff``, ``bmp``, ``iso-media``
    (see :func:`brand`), ``id3`` and ``mpeg-audio`` (MP3), ``adts`` (AAC), ``flac``, ``ogg``, ``aiff``,
    ``ebml`` (WebM, Matroska) and ``svg``.
    """
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head.startswith(b"RIFF") and head[8:12] in _RIFF:
        return _RIFF[head[8:12]]
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return "tiff"
    if head.startswith(b"BM") and len(head) > 18 and int.from_bytes(head[14:18], "little") in _BMP_HEADERS:
        return "bmp"
    if head[4:8] == b"ftyp":
        return "iso-media"
    if head.startswith(b"ID3"):
        return "id3"
    if len(head) > 1 and head[0] == 0xFF and (head[1] & 0xE0) == 0xE0:  # an MPEG audio frame
        return "mpeg-audio" if (head[1] >> 1) & 3 else "adts"  # layer 0: AAC in ADTS
    if head.startswith(b"fLaC"):
        return "flac"
    if head.startswith(b"OggS"):
        return "ogg"
    if head.startswith(b"FORM") and head[8:12] in (b"AIFF", b"AIFC"):
        return "aiff"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "ebml"
    if looks_like_svg(head):
        return "svg"
    return None


def looks_like_svg(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) is XML whose first element is ``<svg``."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    while True:
        prologue = _PROLOGUE.match(text)
        if prologue is None:
            break
        text = text[prologue.end() :]
    return re.match(r"\s*<(?:\w+:)?svg[\s>/]", text) is not None
