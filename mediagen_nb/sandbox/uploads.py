"""Files uploaded to the sandbox, so local files can be inputs (``PUT /_sandbox/uploads/{name}``).

The service takes only public https URLs and has no upload endpoint; on the sandbox a client puts a
file here instead of in its own storage, with the account's key. Only media the service's inputs take
are kept, recognised by their content (``media/identify.py``), never by their name: an SVG becomes a
PNG, and anything else (a page, a script, a document, a file that only starts like an image) is
refused before it is stored. A file is stored as the first 32 hex digits of its SHA-256 plus the
extension of what it is, so the same bytes uploaded twice are one file with one URL; on a sandbox with
an owner the digest is keyed by the owner's secret (an HMAC of the SHA-256), so no one who holds the
same file can tell its URL (reading an upload needs no token: a preview loads it). Uploads live in
``data_dir/uploads`` (or a private temporary folder), survive ``/_sandbox/reset`` like rendered media,
and are capped per file and in total, files still being received included.
"""

import asyncio
import hashlib
import hmac
import os
import re
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from mediagen_nb.sandbox.media import vector
from mediagen_nb.sandbox.media.identify import ACCEPTED, MEDIA_TYPES, NotMedia, identify
from mediagen_nb.sandbox.responses import ServiceError, bad_request

MAX_FILE_BYTES = 200 * 2**20  # the largest file the service's downloader reads (fetch.MAX_BYTES)
MAX_TOTAL_BYTES = 2 * 2**30
MAX_NAME_CHARS = 255
_NAME = re.compile(r"[A-Za-z0-9._-]+")
_EXTENSION = re.compile(r"[a-z0-9]{1,16}")
_STORED = re.compile(rf"[0-9a-f]{{32}}\.(?:{'|'.join(MEDIA_TYPES)})")


@dataclass(frozen=True)
class Upload:
    """One stored file: its name under ``/_sandbox/uploads/``, size and SHA-256."""

    name: str
    bytes: int
    sha256: str | None = None  # known for a file just stored


def check_name(name: str) -> None:
    """A 400 for an upload name refused (its extension says nothing: the content decides the type)."""
    if "/" in name or "\\" in name:
        raise bad_request("upload name must be a file name, without / or \\")
    if ".." in name:
        raise bad_request("upload name must not contain ..")
    if len(name) > MAX_NAME_CHARS:
        raise bad_request(f"upload name must be at most {MAX_NAME_CHARS} characters")
    if not _NAME.fullmatch(name):
        raise bad_request("upload name may hold only letters, digits, '.', '_' and '-'")
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem.strip(".") or not _EXTENSION.fullmatch(extension.lower()):
        raise bad_request(
            "upload name needs a stem and an extension of letters and digits, such as voice.wav"
        )


def content_type(name: str) -> str:
    """The media type a stored name is served as (its extension is the type its content was found to be)."""
    return MEDIA_TYPES[name.rsplit(".", 1)[-1]]


class Uploads:
    """The stored uploads of one sandbox, in a folder, with the bytes they take."""

    def __init__(
        self, data_dir: Path | None, max_total_bytes: int = MAX_TOTAL_BYTES, name_key: bytes | None = None
    ) -> None:
        self._name_key = name_key  # names are keyed by it (an owner's sandbox), else the plain digest
        self._temporary: tempfile.TemporaryDirectory[str] | None = None
        self._folder = Path(data_dir) / "uploads" if data_dir is not None else None
        self.max_total_bytes = max_total_bytes
        # Bytes stored, and bytes of uploads still being received (their temporary files): both count
        # toward the cap. Changed only on the event loop, each check-and-add without an await in between.
        self._stored = 0
        self._receiving = 0

    @property
    def folder(self) -> Path:
        """Where the files are; a private temporary folder, made on first use, without a data dir."""
        if self._folder is None:
            self._temporary = tempfile.TemporaryDirectory(prefix="mediagen-uploads-")
            self._folder = Path(self._temporary.name)
        self._folder.mkdir(parents=True, exist_ok=True)
        return self._folder

    def stored(self) -> list[Upload]:
        """Every stored file, by name."""
        if self._folder is None or not self._folder.is_dir():
            return []
        return [
            Upload(path.name, path.stat().st_size)
            for path in sorted(self._folder.iterdir())
            if _STORED.fullmatch(path.name)
        ]

    def stem(self, sha256: str) -> str:
        """The name (without extension) of the file whose content has SHA-256 ``sha256``."""
        if self._name_key is None:
            return sha256[:32]
        return hmac.new(self._name_key, sha256.encode(), hashlib.sha256).hexdigest()[:32]

    def by_digest(self, sha256: str) -> Upload | None:
        """The stored file whose content has SHA-256 ``sha256`` (a client asks before sending it again)."""
        if self._folder is None or not re.fullmatch(r"[0-9a-f]{64}", sha256):
            return None
        stem = self.stem(sha256)
        for extension in MEDIA_TYPES:
            path = self._folder / f"{stem}.{extension}"
            if path.is_file():
                return Upload(path.name, path.stat().st_size, sha256)
        return None

    def total_bytes(self) -> int:
        return sum(upload.bytes for upload in self.stored())

    @property
    def receiving_bytes(self) -> int:
        """Bytes held for uploads still being received (their temporary files count toward the cap)."""
        return self._receiving

    def _reserve(self, more: int) -> None:
        """Count ``more`` bytes of an upload being received, or refuse it if the store would pass its cap."""
        if self._stored + self._receiving + more > self.max_total_bytes:
            raise bad_request(
                f"uploads are full: {self._stored:,} bytes are stored and {self._receiving:,} are being "
                f"received, of {self.max_total_bytes:,}; restart the sandbox (or use another --data-dir) "
                "to clear them"
            )
        self._receiving += more

    async def put(self, name: str, chunks: AsyncIterator[bytes], declared: int | None) -> tuple[Upload, bool]:
        """Store the body of ``PUT /_sandbox/uploads/{name}``; the upload and whether it is new.

        A body over the file cap is refused as soon as it is declared or read that far, and one that
        would take the store past its total cap (counting the uploads still arriving) likewise; a file
        that is not an accepted medium is refused once read; nothing refused is kept.
        """
        check_name(name)
        if declared is not None and declared > MAX_FILE_BYTES:
            raise ServiceError(413, _too_large(declared))
        folder = self.folder
        self._stored = self.total_bytes()  # what is on disk now (another sandbox may share a data dir)
        reserved = 0
        handle, temp_name = tempfile.mkstemp(prefix=".upload-", dir=folder)
        temp = Path(temp_name)
        try:
            if declared:
                self._reserve(declared)
                reserved = declared
            digest, size = hashlib.sha256(), 0
            with os.fdopen(handle, "wb") as out:
                async for chunk in chunks:
                    size += len(chunk)
                    if size > MAX_FILE_BYTES:
                        raise ServiceError(413, _too_large(size))
                    if size > reserved:
                        self._reserve(size - reserved)
                        reserved = size
                    digest.update(chunk)
                    out.write(chunk)
            extension, converted = await asyncio.to_thread(_as_media, temp)
            if converted is not None:  # an SVG, now its PNG
                size, digest = len(converted), hashlib.sha256(converted)
                if size > reserved:
                    self._reserve(size - reserved)
                    reserved = size
                await asyncio.to_thread(temp.write_bytes, converted)
            sha256 = digest.hexdigest()
            upload = Upload(f"{self.stem(sha256)}.{extension}", size, sha256)
            final = folder / upload.name
            if final.exists():
                return upload, False
            os.replace(temp, final)
            self._stored += size
            return upload, True
        finally:
            self._receiving -= reserved
            temp.unlink(missing_ok=True)

    def path(self, name: str) -> Path | None:
        """The file of a stored name, or None."""
        if self._folder is None or not _STORED.fullmatch(name):
            return None
        path = self._folder / name
        return path if path.is_file() else None

    async def read(self, name: str) -> bytes | None:
        """A stored file's bytes, or None."""
        path = self.path(name)
        return None if path is None else await asyncio.to_thread(path.read_bytes)


def _as_media(temp: Path) -> tuple[str, bytes | None]:
    """The extension the received file is stored with, and for an SVG the PNG that replaces it.

    A 400 saying what the file looked like when it is none of the accepted media.
    """
    try:
        kind = identify(temp)
        if not kind.is_svg:
            return kind.extension, None
        with temp.open("rb") as file:
            return "png", vector.to_png(file.read(vector.MAX_SVG_BYTES + 1))  # a larger one is refused
    except (NotMedia, vector.NotDrawable) as refused:
        raise bad_request(
            f"upload refused: the file looks like {refused.looks_like}; the sandbox keeps only "
            f"{ACCEPTED}, recognised by their content"
        ) from None


def _too_large(size: int) -> str:
    return f"upload is too large: {size:,} bytes; the limit is {MAX_FILE_BYTES:,} bytes (200 MB)"
