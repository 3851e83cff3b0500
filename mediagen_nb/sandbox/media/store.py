"""The media store: registered files rendered on first read (in a worker thread) and cached.

Every output is a pure function of its ``MediaSpec``, so a name hashed from the spec always maps to the
same bytes; the store renders a name on first read and caches the result in memory (LRU) and optionally
on disk, so a sweep over hundreds of outputs only pays for what is fetched.
"""

import asyncio
import functools
import hashlib
import hmac
import json
import os
import threading
from concurrent.futures import Future
from dataclasses import asdict
from pathlib import Path

from mediagen_nb.sandbox.media import rendering
from mediagen_nb.sandbox.media.images import render_preview
from mediagen_nb.sandbox.media.lru import BytesLRU
from mediagen_nb.sandbox.media.samples import PREVIEW, SAMPLES
from mediagen_nb.sandbox.media.spec import CONTENT_TYPES, MediaSpec


def _media_name(spec: MediaSpec, key: bytes | None = None) -> str:
    """Return the file name of `spec`: a hash of its fields (stable across processes) plus its format;
    with ``key`` (an owner's sandbox) an HMAC, so no one can derive an output's URL from its prompt."""
    payload = json.dumps(asdict(spec), sort_keys=True, separators=(",", ":")).encode()
    digest = hmac.new(key, payload, hashlib.sha256) if key is not None else hashlib.sha256(payload)
    return f"{digest.hexdigest()[:20]}.{spec.fmt}"


class MediaStore:
    """Registered media files, rendered on first read (in a worker thread) and cached."""

    def __init__(
        self, data_dir: Path | None = None, memory_bytes: int = 64 * 2**20, name_key: bytes | None = None
    ) -> None:
        """Open the store; with `data_dir`, rendered files and registrations persist under data_dir/media;
        with `name_key`, names are keyed by it."""
        self._name_key = name_key
        self._dir = Path(data_dir) / "media" if data_dir is not None else None
        self._lock = threading.Lock()
        self._specs: dict[str, MediaSpec] = {}
        self._cache: BytesLRU[str] = BytesLRU(memory_bytes)
        self._pending: dict[str, Future[bytes]] = {}
        if self._dir is not None:
            self._dir.mkdir(parents=True, exist_ok=True)
            self._load_index(self._dir / "index.jsonl")

    @property
    def cached_bytes(self) -> int:
        """Bytes currently held by the in-memory LRU cache (never above memory_bytes)."""
        return self._cache.bytes

    def _load_index(self, index: Path) -> None:
        """Re-register the specs recorded by earlier runs, so their names stay readable after a restart."""
        try:
            lines = index.read_text().splitlines()
        except FileNotFoundError:
            return
        for line in lines:
            try:
                record = json.loads(line)
                self._specs[record["name"]] = MediaSpec(**record["spec"])
            except (ValueError, TypeError, KeyError):
                continue  # a torn last line from a crash: skip it

    def add(self, spec: MediaSpec) -> str:
        """Register `spec` without rendering it and return its file name "<hex id>.<fmt>"."""
        name = _media_name(spec, self._name_key)
        with self._lock:
            if name not in self._specs:
                self._specs[name] = spec
                if self._dir is not None:
                    with (self._dir / "index.jsonl").open("a") as index:
                        index.write(json.dumps({"name": name, "spec": asdict(spec)}) + "\n")
        return name

    def known(self, name: str) -> bool:
        """Tell whether `name` is a registered file, a sample file or a "preview-<model id>.png" card."""
        return name in self._specs or name in SAMPLES or PREVIEW.fullmatch(name) is not None

    async def read(self, name: str) -> tuple[bytes, str] | None:
        """Return (bytes, content type) of `name`, rendered in a worker thread on first read, or None."""
        if not self.known(name):
            return None
        claim = self._claim(name)
        if isinstance(claim, bytes):
            return claim, _content_type(name)
        pending, owner = claim
        data = (
            await asyncio.to_thread(self._fulfil, name, pending)
            if owner
            else await asyncio.wrap_future(pending)
        )
        return data, _content_type(name)

    def read_sync(self, name: str) -> tuple[bytes, str] | None:
        """Blocking `read`, for worker threads."""
        if not self.known(name):
            return None
        claim = self._claim(name)
        if isinstance(claim, bytes):
            return claim, _content_type(name)
        pending, owner = claim
        return (self._fulfil(name, pending) if owner else pending.result()), _content_type(name)

    def _claim(self, name: str) -> bytes | tuple[Future[bytes], bool]:
        """Return cached bytes, else the in-flight render's future and whether this caller must run it."""
        with self._lock:
            data = self._cache.get(name)
            if data is not None:
                return data
            pending = self._pending.get(name)
            if pending is not None:
                return pending, False
            pending = Future()
            pending.set_running_or_notify_cancel()  # running futures cannot be cancelled by a waiter
            self._pending[name] = pending
            return pending, True

    def _fulfil(self, name: str, pending: Future[bytes]) -> bytes:
        """Load `name` from disk or render it, cache it, and settle `pending` for concurrent readers."""
        try:
            data = self._load_or_render(name)
        except BaseException as exc:
            with self._lock:
                del self._pending[name]
            pending.set_exception(exc)
            raise
        with self._lock:
            del self._pending[name]
            self._cache.keep(name, data)
        pending.set_result(data)
        return data

    def _load_or_render(self, name: str) -> bytes:
        """Return the disk copy of `name` if there is one, else render it (and write the disk copy)."""
        path = self._dir / name if self._dir is not None else None
        if path is not None and path.is_file():
            return path.read_bytes()
        data = self._render(name)
        if path is not None:
            temp = path.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}.tmp")
            temp.write_bytes(data)
            os.replace(temp, path)  # atomic: a crash never leaves a half-written file under the real name
        return data

    def _render(self, name: str) -> bytes:
        """Render a registered spec, a sample or a preview card."""
        spec = self._specs.get(name)
        if spec is not None:
            return rendering.render(spec)
        sample = SAMPLES.get(name)
        if isinstance(sample, MediaSpec):
            return rendering.render(sample)
        if sample is not None:
            return _sample(name)
        preview = PREVIEW.fullmatch(name)
        assert preview is not None  # known() was checked by the caller
        return _preview(preview.group(1))


# Like rendered specs (rendering.RENDERED), the fixed samples and the catalog's preview cards are
# rendered once for every sandbox of the process.
@functools.cache
def _sample(name: str) -> bytes:
    render = SAMPLES[name]
    assert not isinstance(render, MediaSpec)
    return render()


@functools.lru_cache(maxsize=512)  # cards of about 15 kB: a catalog's worth
def _preview(model_id: str) -> bytes:
    return render_preview(model_id)


def _content_type(name: str) -> str:
    """Return the MIME type for a file name's extension."""
    return CONTENT_TYPES.get(name.rsplit(".", 1)[-1].lower(), "application/octet-stream")
