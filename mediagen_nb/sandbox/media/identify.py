"""What a file really is, decided by its bytes (its signature, then a real parse), never by its name.

The sandbox keeps only the media the service's inputs take: images (PNG, JPEG, WebP, GIF; an SVG is
converted to PNG, see ``vector.py``), audio (WAV, MP3: what its length meter reads) and video (MP4,
MOV, WebM). A file that starts like one of them but does not parse (a PNG signature in front of an
HTML page) is not that medium (a video is taken on its container's signature: the start reads its
length); anything else is described in a few words, for the refusal.
"""

import warnings
from dataclasses import dataclass
from pathlib import Path

from mediagen_nb.media_formats import HEAD, brand, signature
from mediagen_nb.media_formats import MEDIA_TYPES as BY_EXTENSION
from mediagen_nb.sandbox.media import vector

HEAD_BYTES = HEAD  # what the signature checks and the description read

# Every type the sandbox stores and serves, by the extension it stores it with.
MEDIA_TYPES: dict[str, str] = {
    ext: BY_EXTENSION[f".{ext}"] for ext in ("png", "jpg", "webp", "gif", "wav", "mp3", "mp4", "mov", "webm")
}
# What it keeps of each signature (any MPEG audio frame claims an MP3: its parse decides).
_KEPT = {
    "png": "png",
    "jpeg": "jpg",
    "gif": "gif",
    "webp": "webp",
    "wav": "wav",
    "id3": "mp3",
    "mpeg-audio": "mp3",
    "adts": "mp3",
}
ACCEPTED = "images (PNG, JPEG, WebP, GIF; SVG is stored as PNG), audio (WAV, MP3) and video (MP4, MOV, WebM)"
_PILLOW_FORMATS = {"png": "PNG", "jpg": "JPEG", "webp": "WEBP", "gif": "GIF"}
_NAMES = {"png": "a PNG image", "jpg": "a JPEG image", "webp": "a WebP image", "gif": "a GIF image"} | {
    "wav": "a WAV file",
    "mp3": "an MP3 file",
    "mp4": "an MP4 video",
    "mov": "a QuickTime video",
    "webm": "a WebM video",
}
_AUDIO_MP4_BRANDS = (b"M4A ", b"M4B ", b"M4P ")


class NotMedia(ValueError):
    """The file is none of the accepted media; ``looks_like`` says what it seemed to be."""

    def __init__(self, looks_like: str) -> None:
        super().__init__(looks_like)
        self.looks_like = looks_like


@dataclass(frozen=True)
class Kind:
    """An accepted medium: the extension a file is stored with (``svg`` until converted)."""

    extension: str

    @property
    def is_svg(self) -> bool:
        return self.extension == "svg"


def identify(path: Path) -> Kind:
    """The medium of the file at ``path``; :class:`NotMedia` saying what it looks like otherwise."""
    with path.open("rb") as file:
        head = file.read(HEAD_BYTES)
    found = signature(head)
    if found == "svg":
        return Kind("svg")
    claimed = _claimed(found, head)
    if claimed is None:
        raise NotMedia(describe(head))
    if not _parses(path, claimed):
        raise NotMedia(f"something that starts like {_NAMES[claimed]} but is not one")
    return Kind(claimed)


def _claimed(found: str | None, head: bytes) -> str | None:
    """The medium a file of signature ``found`` starts like, among those the sandbox keeps."""
    if found == "iso-media" and brand(head) not in _AUDIO_MP4_BRANDS:
        return "mov" if brand(head) == b"qt  " else "mp4"
    if found == "ebml" and b"webm" in head[:64]:
        return "webm"
    return _KEPT.get(found or "")


def _parses(path: Path, claimed: str) -> bool:
    """Whether the file really is ``claimed``: Pillow, mutagen or PyAV reads it through."""
    try:
        if claimed in _PILLOW_FORMATS:
            from PIL import Image

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a large image is fine; a decompression bomb still raises
                with Image.open(path, formats=[_PILLOW_FORMATS[claimed]]) as image:
                    image.verify()
            return True
        if claimed in ("wav", "mp3"):
            from mutagen.mp3 import MP3
            from mutagen.wave import WAVE

            info = (WAVE if claimed == "wav" else MP3)(path).info  # sound with a length, at a real rate
            if info is None:
                return False
            channels, rate, length = int(info.channels), int(info.sample_rate), float(info.length)
            return length > 0 and 0 < channels <= 32 and 1000 <= rate <= 768_000
        # A video is taken on its container's signature: one whose length cannot be read is the start's
        # to refuse, with the service's own message (``Could not read the video duration``), and it is
        # served as video with nosniff and a no-script policy whatever its bytes hold.
        return True
    except Exception:  # each reader raises its own errors on garbage; all mean "not this medium"
        return False


def describe(head: bytes) -> str:
    """What a file that is none of the accepted media looks like, from its first bytes."""
    if not head.strip():
        return "an empty file"
    if head.startswith(b"%PDF"):
        return "a PDF document"
    if head.startswith(b"PK\x03\x04"):
        return "a ZIP archive (or an Office document)"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "a Matroska (MKV) video"
    if head[4:8] == b"ftyp":
        return "an MP4 audio file (M4A)"
    if head.startswith(vector.GZIP):
        return vector.SVGZ if vector.is_svgz(head) else "a gzip-compressed file"
    try:
        text = head.decode("utf-8").lstrip("\ufeff \t\r\n").lower()
    except UnicodeDecodeError:
        return f"binary data of no accepted kind (it starts with {head[:8].hex(' ')})"
    if "xhtml" in text[:512] and text.startswith("<"):
        return "an XHTML page"
    if text.startswith(("<!doctype html", "<html", "<head", "<body", "<script")) or "<script" in text:
        return "an HTML page"
    if text.startswith("<"):
        return "an XML document"
    if text.startswith(("{", "[")):
        return "a JSON document"
    return "text (a script, a document or a page)"
