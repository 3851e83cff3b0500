"""Local files as inputs: a path becomes a URL the service can download, before the start is sent.

The service reads media inputs from URLs and has no storage of its own, so the user's file goes
where the user says, set once: ``MEDIAGEN_UPLOAD_URL`` or :func:`uploads` — an fsspec URL
(``s3://bucket/prefix``, ``gs://``, ``az://``, any S3-compatible endpoint through its options), read
back through a presigned, time-limited https URL; or any callable ``path -> url``. On a sandbox
(the embedded one, or one served on this machine) files go to its ``/_sandbox/uploads/`` with no
configuration. Names are the content's SHA-256 with the file's extension (``.wav``, ``.mp4``: the
service bills some media by length and reads the type from it), so the same file is uploaded once
and the same input keeps the same Idempotency-Key.
"""

import hashlib
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

from mediagen_nb.client import errors

ENV_UPLOAD_URL = "MEDIAGEN_UPLOAD_URL"
LARGE = 8 * 2**20  # bytes from which an upload shows a progress bar
PRESIGN_SECONDS = 7 * 24 * 3600  # how long a presigned URL stays readable: longer than any job runs
CHUNK = 2**20

Target = str | Callable[[Path], str]

_chosen: tuple[Target, dict[str, Any]] | None = None
_lock = threading.Lock()
_digests: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) -> sha256
_urls: dict[tuple[str, str, str], tuple[str, float]] = {}  # (where, its options, name) -> (URL, good until)
_sources: dict[str, str] = {}  # URL handed out -> the content-addressed name of the file it serves
sent_files = 0  # uploads really sent by this process (the same file twice counts once)


def uploads(target: Target | None, **options: Any) -> None:
    """Choose where local files go: an fsspec URL (``options`` are its storage options, e.g.
    ``endpoint_url=`` for R2 or MinIO), a callable ``path -> url``, or None for the default
    (``MEDIAGEN_UPLOAD_URL``, else a sandbox's own uploads)."""
    global _chosen
    if target is not None and not callable(target) and not (isinstance(target, str) and "://" in target):
        raise errors.ConfigurationError(
            f"uploads: give an fsspec URL such as 's3://bucket/prefix' or a function path -> url, "
            f"not {target!r}"
        )
    with _lock:
        _chosen = None if target is None else (target, options)


def local_file(value: Any) -> Path | None:
    """The local file ``value`` names (a Path, or a string that is not a URL), else None."""
    if isinstance(value, os.PathLike):
        return Path(value).expanduser()
    if isinstance(value, str) and value.strip() and "://" not in value and not value.startswith("data:"):
        return Path(value.strip()).expanduser()
    return None


def checked_file(field: str, path: Path) -> Path:
    """``path`` as an existing, readable file, or a ValidationError naming the field and the fix."""
    if not path.is_file():
        raise errors.ValidationError(
            f"{field}: there is no file {str(path)!r} (from {Path.cwd()}); give an existing file or a "
            "public https URL",
            field=field,
            sent=False,
        )
    if not path.suffix:
        raise errors.ValidationError(
            f"{field}: {path.name!r} has no extension; name the file after its type (.png, .wav, .mp4 ...)",
            field=field,
            sent=False,
        )
    return path


def keep(name: str, data: bytes) -> Path:
    """Bytes picked in a form, kept as a local file (named by content, keeping the extension)."""
    import platformdirs

    folder = Path(platformdirs.user_cache_dir("mediagen_nb")) / "picked"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{hashlib.sha256(data).hexdigest()[:32]}{Path(name).suffix.lower()}"
    if not target.exists():
        target.write_bytes(data)
    return target


def digest(path: Path) -> str:
    """The file's SHA-256, read once per (path, size, modification time)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _lock:
        known = _digests.get(key)
    if known is None:
        sha = hashlib.sha256()
        with path.open("rb") as file:
            for block in iter(lambda: file.read(CHUNK), b""):
                sha.update(block)
        known = sha.hexdigest()
        with _lock:
            _digests[key] = known
    return known


def name_of(path: Path) -> str:
    """The content-addressed name of ``path``: its digest and its extension."""
    return f"{digest(path)[:32]}{path.suffix.lower()}"


def upload(field: str, path: Path, sandbox_url: str | None, auth: httpx.Auth | None = None) -> str:
    """The URL of ``path`` for the service, uploading it first if it is not there yet (blocking I/O).

    ``sandbox_url`` is the base URL of a sandbox to upload to when no destination is chosen (with
    ``auth``, the connection's key: the sandbox takes uploads from its accounts only); None when the
    connection is the service, which has no storage.
    """
    path = checked_file(field, path)
    with _lock:
        chosen = _chosen
    if chosen is None and os.environ.get(ENV_UPLOAD_URL):
        chosen = (os.environ[ENV_UPLOAD_URL], {})
    name = name_of(path)
    if chosen is not None and callable(chosen[0]):
        return _handed_out(str(chosen[0](path)), name)
    destination = str(chosen[0]) if chosen is not None else sandbox_url
    if destination is None:
        raise errors.ValidationError(
            f"{field}: {path.name} is a local file, and the service only reads URLs: set "
            f"{ENV_UPLOAD_URL}=s3://bucket/prefix (or call mediagen_nb.uploads(...)) to put it where the "
            "service can read it, or give a public https URL",
            field=field,
            sent=False,
        )
    options = chosen[1] if chosen is not None else {}
    place = (destination, json.dumps(options, sort_keys=True, default=str), name)  # each file goes up once
    with _lock:
        url, until = _urls.get(place, ("", 0.0))
    if time.time() < until:
        return url
    if chosen is None:
        url, until = _to_sandbox(destination, name, path, auth), math.inf
    else:  # signed again halfway through its life: a URL handed out is always good for days
        url, until = _to_storage(destination, options, name, path), time.time() + PRESIGN_SECONDS / 2
    with _lock:
        _urls[place] = (url, until)
    return _handed_out(url, name)


def _handed_out(url: str, name: str) -> str:
    with _lock:
        _sources[url] = name
    return url


def stable(value: Any) -> Any:
    """``value`` with each URL made here for a local file replaced by the file's content name.

    What a start asks is derived from this (its Idempotency-Key): a presigned URL changes every
    time it is signed, and a sandbox's URL with its port, but the file they serve does not.
    """
    if isinstance(value, str):
        with _lock:
            name = _sources.get(value)
        return value if name is None else f"upload:{name}"
    if isinstance(value, Mapping):
        return {key: stable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [stable(item) for item in value]
    return value


def _count_sent() -> None:
    global sent_files
    with _lock:
        sent_files += 1


def _chunks(path: Path) -> Iterator[bytes]:
    """The file's bytes, with a progress bar when it is large."""
    size = path.stat().st_size
    bar = None
    if size >= LARGE:
        from tqdm.auto import tqdm

        bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"uploading {path.name}", leave=False)
    with path.open("rb") as file:
        for block in iter(lambda: file.read(CHUNK), b""):
            if bar is not None:
                bar.update(len(block))
            yield block
    if bar is not None:
        bar.close()


def _to_sandbox(base_url: str, name: str, path: Path, auth: httpx.Auth | None) -> str:
    from mediagen_nb.protocol.paths import path as endpoint

    target = base_url.rstrip("/") + endpoint("sandbox_upload", name=name)
    head = httpx.head(target, timeout=30)  # reading an upload needs no key
    if head.status_code != 200:
        response = httpx.put(target, content=_chunks(path), timeout=httpx.Timeout(30, write=600), auth=auth)
        if not response.is_success:
            raise errors.ValidationError(
                f"the sandbox refused the upload of {path.name}: {response.text[:200]}", sent=False
            )
        _count_sent()
        return str(response.json()["data"]["url"])
    return target


def _to_storage(url: str, options: dict[str, Any], name: str, path: Path) -> str:
    """Put ``path`` under the fsspec ``url`` (once) and return a presigned URL to read it."""
    try:
        import fsspec
    except ImportError:
        raise errors.ConfigurationError(
            f"{ENV_UPLOAD_URL}={url} needs fsspec and the filesystem's package: pip install "
            "'mediagen-nb[uploads]' (s3fs for s3://, gcsfs for gs://, adlfs for az://)"
        ) from None
    fs, root = fsspec.core.url_to_fs(url, **options)
    remote = f"{root.rstrip('/')}/{name}"
    if not fs.exists(remote):
        from fsspec.callbacks import DEFAULT_CALLBACK, TqdmCallback

        shown = {"desc": f"uploading {path.name}", "unit": "B", "unit_scale": True, "leave": False}
        large = path.stat().st_size >= LARGE
        fs.put_file(
            str(path), remote, callback=TqdmCallback(tqdm_kwargs=shown) if large else DEFAULT_CALLBACK
        )
        _count_sent()
    try:
        signed: str = fs.sign(remote, expiration=PRESIGN_SECONDS)
    except NotImplementedError:
        raise errors.ConfigurationError(
            f"{url}: this filesystem cannot make a time-limited URL; use s3://, gs:// or az://, or pass "
            "mediagen_nb.uploads(a function path -> url)"
        ) from None
    return signed
