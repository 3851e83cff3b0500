"""File names from untrusted parts, and the proof that a file lies inside its folder.

A generation id, a column of someone else's spreadsheet, a model id or a URL's extension all come
from outside. Every file the toolkit saves is named here: the parts are cut down to letters, digits,
``.``, ``-`` and ``_`` (no separator, control character, ``.``/``..`` or hidden name survives), the
name is kept short, the extension comes from the output's media type, and the place is resolved
(links followed) and proven to lie inside the folder, or the save is refused with one line.
"""

import re
from collections.abc import Iterable
from pathlib import Path

from mediagen_nb.client.errors import DownloadFailed
from mediagen_nb.protocol.schema import url_extension

MAX_STEM = 120  # characters of a name before its extension; far under every file system's 255 bytes
# kind (a generation's ``output.type``) -> its media extensions, the usual one first
EXTENSIONS: dict[str, tuple[str, ...]] = {
    "image": (".png", ".jpg", ".jpeg", ".webp", ".gif", ".avif"),
    "video": (".mp4", ".webm", ".mov", ".m4v"),
    "audio": (".mp3", ".wav", ".ogg", ".m4a", ".flac", ".aac"),
}
# a response's media type -> the extension of a file of that type
CONTENT_TYPES = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/webp": ".webp",
    "image/gif": ".gif",
    "image/avif": ".avif",
    "video/mp4": ".mp4",
    "video/webm": ".webm",
    "video/quicktime": ".mov",
    "audio/mpeg": ".mp3",
    "audio/mp3": ".mp3",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/wave": ".wav",
    "audio/ogg": ".ogg",
    "audio/mp4": ".m4a",
    "audio/flac": ".flac",
    "audio/aac": ".aac",
}
UNKNOWN = ".bin"  # nothing says what the bytes are
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"[-.]*\.\.[-.]*")  # a run of separators left with ``..`` in it: one ``-``
_RESERVED = re.compile(r"(?i)(con|prn|aux|nul|com\d|lpt\d)(\..*)?")  # names Windows will not create


def _kinds(kind: str | None) -> Iterable[str]:
    return [kind] if kind in EXTENSIONS else list(EXTENSIONS)


def extension(kind: str | None, url: object = None, content_type: str | None = None) -> str:
    """The extension of a saved output: its URL's when that is a media extension of ``kind``, else its
    media type's, else the kind's usual one; :data:`UNKNOWN` when nothing says.

    ``kind`` is a generation's ``output.type`` (image, video, audio; None or anything else: any media).
    """
    kinds = _kinds(kind)
    suffix = url_extension(url) if isinstance(url, str) else ""
    if any(suffix in EXTENSIONS[k] for k in kinds):
        return suffix
    typed = CONTENT_TYPES.get((content_type or "").split(";")[0].strip().lower(), "")
    if any(typed in EXTENSIONS[k] for k in kinds):
        return typed
    return EXTENSIONS[kind][0] if kind in EXTENSIONS else UNKNOWN


def _safe(text: str) -> str:
    return _DOTS.sub("-", _UNSAFE.sub("-", text)).strip("-.")


def name(*parts: object, extension: str = "", fallback: str = "output") -> str:
    """A safe file name from untrusted ``parts`` (joined by ``-``), ``fallback`` when nothing is left."""
    text = "-".join(str(part) for part in parts if part is not None and str(part) != "")
    stem = _safe(text)[:MAX_STEM].rstrip("-.") or _safe(fallback) or "output"
    if _RESERVED.fullmatch(stem):
        stem = "_" + stem
    suffix = extension if re.fullmatch(r"\.[a-z0-9]{1,8}", extension) else (UNKNOWN if extension else "")
    return stem + suffix


def inside(folder: Path, file_name: str) -> Path:
    """``folder / file_name``, proven to lie inside ``folder`` once links are followed; else DownloadFailed.

    ``file_name`` must be one plain name (no separator, not ``.`` or ``..``): a path from outside is
    never joined as it is.
    """
    if (
        not file_name
        or file_name in (".", "..")
        or "/" in file_name
        or "\\" in file_name
        or "\0" in file_name
    ):
        raise DownloadFailed(f"refused to save as {file_name[:80]!r}: not a plain file name")
    target = folder / file_name
    try:
        outside = not target.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError) as exc:  # a link that loops, a folder that cannot be read
        raise DownloadFailed(f"refused to save {file_name[:80]!r} in {folder}: {exc}") from None
    if outside:
        raise DownloadFailed(
            f"refused to save {file_name[:80]!r}: {target} leads outside {folder} (a link in the folder?)"
        )
    return target


def place(folder: Path, *parts: object, extension: str, fallback: str = "output") -> Path:
    """Where an output named by untrusted ``parts`` is saved in ``folder`` (:func:`name`, :func:`inside`)."""
    return inside(folder, name(*parts, extension=extension, fallback=fallback))
