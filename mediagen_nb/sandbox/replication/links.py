"""The analyze link rules: which links are videos of which platform, and what a direct file holds.

* TikTok: ``tiktok.com/@user/video/<id>``, ``tiktok.com/t/<code>``, ``vm.``/``vt.tiktok.com/<code>``.
  YouTube: ``youtube.com/watch?v=<id>``, ``youtube.com/shorts/<id>``, ``youtu.be/<id>``. Instagram:
  ``instagram.com/reel/<id>``, ``/reels/<id>``, ``/p/<id>``. Any other https URL must be a direct file
  whose path ends in ``.mp4``, ``.mov`` or ``.webm``.
* Photo posts: a TikTok link with a ``photo`` path segment (``tiktok.com/@user/photo/<id>``) and an
  Instagram ``/p/<id>`` whose id contains ``photo`` (any case).
* Frame shape: TikTok, Shorts, Reels and direct files are 9:16 unless a direct file's frames say
  otherwise; YouTube watch and youtu.be links are 16:9.
"""

import io
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from mediagen_nb.protocol import messages, schema
from mediagen_nb.sandbox.media import measure_seconds
from mediagen_nb.sandbox.responses import bad_request

VIDEO_EXTENSIONS = (".mp4", ".mov", ".webm")
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Source:
    """An accepted analyze link: which platform (None for a direct file) and its frame shape."""

    url: str
    platform: str | None
    aspect: str


def words(url: str) -> set[str]:
    """The lower-case words of a URL's path and query, for the ``long`` and ``shots`` rules."""
    parts = urlsplit(url)
    return set(_WORD.findall(unquote(parts.path + " " + parts.query).lower()))


def classify(url: Any) -> Source:
    """The link rules of ``POST /v1/analyze`` that need no download."""
    if url is None or (isinstance(url, str) and not url.strip()):
        raise bad_request(messages.missing_field("url"))
    if not isinstance(url, str):
        raise bad_request(messages.wrong_type("url", "a string"))
    url = url.strip()
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:  # e.g. an unclosed IPv6 bracket
        raise bad_request(messages.UNSUPPORTED_LINK) from None
    if parts.scheme.lower() != "https":
        raise bad_request(messages.URL_MUST_BE_HTTPS)
    for prefix in ("www.", "m."):
        host = host.removeprefix(prefix)
    segments = [s for s in unquote(parts.path).split("/") if s]
    first = segments[0].lower() if segments else ""
    if host in ("tiktok.com", "vm.tiktok.com", "vt.tiktok.com"):
        if "photo" in (s.lower() for s in segments):
            raise bad_request(messages.PHOTO_POST)
        video = len(segments) >= 3 and first.startswith("@") and segments[1].lower() == "video"
        short = (host != "tiktok.com" and len(segments) >= 1) or (first == "t" and len(segments) >= 2)
        if video or short:
            return Source(url, "tiktok", "9:16")
    elif host in ("youtube.com", "youtu.be"):
        if host == "youtu.be" and segments:
            return Source(url, "youtube", "16:9")
        if first == "shorts" and len(segments) >= 2:
            return Source(url, "youtube", "9:16")
        if first == "watch" and parse_qs(parts.query).get("v"):
            return Source(url, "youtube", "16:9")
    elif host == "instagram.com" and len(segments) >= 2:
        if first == "p" and "photo" in segments[1].lower():
            raise bad_request(messages.PHOTO_POST)
        if first in ("reel", "reels", "p"):
            return Source(url, "instagram", "9:16")
    if schema.url_extension(url) in VIDEO_EXTENSIONS:
        return Source(url, None, "9:16")
    raise bad_request(messages.UNSUPPORTED_LINK)


def probe(data: bytes, ext: str) -> tuple[float | None, str | None]:
    """Length (``.mp4``/``.mov`` as the service meters MP4, ``.webm`` by container) and frame shape."""
    import av  # about 0.1 s, loaded by the first upload it probes

    seconds = measure_seconds(data, ".mp4") if ext in (".mp4", ".mov") else None
    aspect = None
    try:
        with av.open(io.BytesIO(data)) as container:
            if seconds is None and ext == ".webm" and container.duration:
                seconds = container.duration / av.time_base
            if container.streams.video:
                stream = container.streams.video[0]
                aspect = "16:9" if stream.width > stream.height else "9:16"
    except (av.FFmpegError, ValueError, OSError):
        pass
    return seconds, aspect
