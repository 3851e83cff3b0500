"""Files uploaded to the sandbox, so local files can be inputs (``PUT /_sandbox/uploads/{name}``).

The service takes only public https URLs and has no upload endpoint; on the sandbox a client puts a
file here instead of in its own storage. Uploads are content-addressed: a file is stored as the first
32 hex digits of its SHA-256 plus the original extension, lower-cased, so the same bytes uploaded twice
are one file with one URL. They live in ``data_dir/uploads`` (or a private temporary folder), survive
``/_sandbox/reset`` like rendered media, and are capped per file and in total.
"""

import asyncio
import hashlib
import mimetypes
import os
import re
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from mediagen_nb.sandbox.media import CONTENT_TYPES
from mediagen_nb.sandbox.responses import bad_request

MAX_FILE_BYTES = 200 * 2**20  # the largest file the service's downloader reads (fetch.MAX_BYTES)
MAX_TOTAL_BYTES = 2 * 2**30
MAX_NAME_CHARS = 255
_NAME = re.compile(r"[A-Za-z0-9._-]+")
_EXTENSION = re.compile(r"[a-z0-9]{1,16}")
_STORED = re.compile(r"[0-9a-f]{32}\.[a-z0-9]{1,16}")


@dataclass(frozen=True)
class Upload:
    """One stored file: its name under ``/_sandbox/uploads/``, size and SHA-256."""

    name: str
    bytes: int
    sha256: str | None = None  # known for a file just stored


def stored_extension(name: str) -> str:
    """The lower-case extension an upload named ``name`` is stored with; a 400 for a name refused."""
    if "/" in name or "\\" in name:
        raise bad_request("upload name must be a file name, without / or \\")
    if ".." in name:
        raise bad_request("upload name must not contain ..")
    if len(name) > MAX_NAME_CHARS:
        raise bad_request(f"upload name must be at most {MAX_NAME_CHARS} characters")
    if not _NAME.fullmatch(name):
        raise bad_request("upload name may hold only letters, digits, '.', '_' and '-'")
    stem, dot, extension = name.rpartition(".")
    extension = extension.lower()
    if not dot or not stem.strip(".") or not _EXTENSION.fullmatch(extension):
        raise bad_request(
            "upload name needs a stem and an extension of letters and digits, such as voice.wav"
        )
    return extension


def content_type(name: str) -> str:
    """The MIME type served for a stored name."""
    extension = name.rsplit(".", 1)[-1]
    return CONTENT_TYPES.get(extension) or mimetypes.guess_type(name)[0] or "application/octet-stream"


class Uploads:
    """The stored uploads of one sandbox, in a folder, with the bytes they take."""

    def __init__(self, data_dir: Path | None, max_total_bytes: int = MAX_TOTAL_BYTES) -> None:
        self._temporary: tempfile.TemporaryDirectory[str] | None = None
        self._folder = Path(data_dir) / "uploads" if data_dir is not None else None
        self.max_total_bytes = max_total_bytes
        self._lock = asyncio.Lock()

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

    def total_bytes(self) -> int:
        return sum(upload.bytes for upload in self.stored())

    async def put(self, name: str, chunks: AsyncIterator[bytes], declared: int | None) -> tuple[Upload, bool]:
        """Store the body of ``PUT /_sandbox/uploads/{name}``; the upload and whether it is new.

        A body over the file cap is refused as soon as it is declared or read that far; a new file that
        would take the store over its total cap is refused and not kept.
        """
        extension = stored_extension(name)
        if declared is not None and declared > MAX_FILE_BYTES:
            raise bad_request(_too_large(declared))
        folder = self.folder
        digest, size = hashlib.sha256(), 0
        handle, temp_name = tempfile.mkstemp(prefix=".upload-", dir=folder)
        temp = Path(temp_name)
        try:
            with os.fdopen(handle, "wb") as out:
                async for chunk in chunks:
                    size += len(chunk)
                    if size > MAX_FILE_BYTES:
                        raise bad_request(_too_large(size))
                    digest.update(chunk)
                    out.write(chunk)
            sha256 = digest.hexdigest()
            upload = Upload(f"{sha256[:32]}.{extension}", size, sha256)
            async with self._lock:
                final = folder / upload.name
                if final.exists():
                    return upload, False
                total = self.total_bytes()
                if total + size > self.max_total_bytes:
                    raise bad_request(
                        f"uploads are full: {total:,} of {self.max_total_bytes:,} bytes are stored; "
                        "restart the sandbox (or use another --data-dir) to clear them"
                    )
                os.replace(temp, final)
                return upload, True
        finally:
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


def _too_large(size: int) -> str:
    return f"upload is too large: {size:,} bytes; the limit is {MAX_FILE_BYTES:,} bytes (200 MB)"
