"""Local files as inputs: a path becomes a URL the service can download, before the start is sent.

The service reads media inputs from URLs and has no storage of its own, so the user's file goes
where the user says, set once: ``MEDIAGEN_UPLOAD_URL`` or :func:`uploads` — an fsspec URL
(``s3://bucket/prefix``, ``gs://``, ``az://``, any S3-compatible endpoint through its options), read
back through a presigned, time-limited https URL; or any callable ``path -> url``. On a sandbox
(the embedded one, or one served on this machine) files go to its ``/_sandbox/uploads/`` with no
configuration. Names are the content's SHA-256 with the extension of its media format (``.wav``,
``.mp4``: the service bills some media by length and reads the type from it), so the same file is
uploaded once and the same input keeps the same Idempotency-Key; a sandbox is asked by that digest
whether it has the file (it names its uploads its own way: on the user's kept sandbox, so that no one
else can tell their URLs).

Only media go up: a file whose bytes are not an image, audio or video of the kind its field takes is
refused naming the field (:mod:`mediagen_nb.client.media`). Storage credentials are held in a
:class:`StorageOptions` that never shows them, and a storage failure is one :class:`UploadFailed` line.
"""

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from mediagen_nb.client import errors, media, settings
from mediagen_nb.client.config import on_this_machine
from mediagen_nb.client.settings import ENV_UPLOAD_URL

LARGE = 8 * 2**20  # bytes from which an upload shows a progress bar
PRESIGN_SECONDS = 7 * 24 * 3600  # how long a presigned URL stays readable: longer than any job runs
CHUNK = 2**20

PUBLIC_OPTIONS = frozenset({"endpoint_url", "region_name", "anon", "use_ssl", "default_block_size"})

Target = str | Callable[[Path], str]


class StorageOptions:
    """fsspec storage options (a key, a secret, an endpoint) that never show themselves.

    The repr names the options, not their values; they are revealed only inside the call to fsspec,
    masked in any message, and never pickled.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def reveal(self) -> dict[str, Any]:
        return dict(self._values)

    @property
    def fingerprint(self) -> str:
        """A hash that tells option sets apart (where a file was put) without showing them."""
        text = json.dumps(self._values, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def mask(self, text: str) -> str:
        """``text`` with every value of a non-public option (and any API key) masked."""
        for secret in sorted(_texts(self._values, every=False), key=len, reverse=True):
            text = text.replace(secret, "***")
        return errors.mask(text)

    def __repr__(self) -> str:
        return f"StorageOptions({', '.join(sorted(self._values))}; fingerprint={self.fingerprint!r})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("storage credentials are not pickled")


def _texts(value: Any, *, every: bool) -> Iterator[str]:
    """Every text among nested options; at the top (``every`` False) none of a public option's (an
    endpoint, a region: named in messages)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if every or key not in PUBLIC_OPTIONS:
                yield from _texts(item, every=True)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _texts(item, every=True)
    elif isinstance(value, (str, bytes)) and len(value) >= 4:
        yield value.decode(errors="replace") if isinstance(value, bytes) else value


@dataclass
class Uploaded:
    """What this process has put where the service can read it, so a file goes up once, and where files
    go (:func:`uploads`): kept here, the one module that reads and writes it."""

    target: "tuple[Target, StorageOptions] | None" = None  # uploads(...): (fsspec URL or function, options)
    digests: dict[tuple[str, int, int], str] = field(default_factory=dict)  # (path, size, mtime) -> sha256
    urls: dict[tuple[str, str, str], tuple[str, float]] = field(default_factory=dict)  # place -> (URL, until)
    sources: dict[str, str] = field(default_factory=dict)  # URL handed out -> the file's content name
    sent: int = 0  # uploads really sent (the same file twice counts once)


UPLOADED = Uploaded()
_lock = threading.Lock()  # guards UPLOADED


def uploads(target: Target | None, **options: Any) -> None:
    """Choose where local files go: an fsspec URL (``options`` are its storage options, e.g.
    ``endpoint_url=`` for R2 or MinIO), a callable ``path -> url``, or None for the default
    (``MEDIAGEN_UPLOAD_URL``, else a sandbox's own uploads). The options are held masked from here on."""
    held = StorageOptions(options)
    del options  # no frame keeps them in the clear, even in a traceback of the error below
    if target is not None and not callable(target) and not (isinstance(target, str) and "://" in target):
        raise errors.ConfigurationError(
            f"uploads: give an fsspec URL such as 's3://bucket/prefix' or a function path -> url, "
            f"not {held.mask(str(target))[:80]!r}"
        )
    with _lock:
        UPLOADED.target = None if target is None else (target, held)


def local_file(value: Any) -> Path | None:
    """The local file ``value`` names (a Path, or a string that is not a URL), else None."""
    if isinstance(value, os.PathLike):
        return Path(value).expanduser()
    if isinstance(value, str) and value.strip() and "://" not in value and not value.startswith("data:"):
        return Path(value.strip()).expanduser()
    return None


def checked_file(field: str, path: Path, kind: str | None = None) -> media.Format:
    """The media format of ``path``, an existing file whose content is media of ``kind`` (``image``,
    ``audio``, ``video``; None: any); else a ValidationError naming the field and the fix."""

    def refused(why: str) -> errors.ValidationError:
        return errors.ValidationError(f"{field}: {why}", field=field, sent=False)

    if not path.is_file():
        raise refused(
            f"there is no file {str(path)!r} (from {Path.cwd()}); give an existing file or a public https URL"
        )
    try:
        found = media.format_of(path)
    except OSError as exc:
        raise refused(f"{str(path)!r} cannot be read ({exc.strerror or exc})") from None
    wanted = f"{'an' if kind in ('image', 'audio') else 'a'} {kind}" if kind else "an image, audio or video"
    if found is None or not found.fits(kind):
        what = "not media" if found is None else f"{' or '.join(sorted(found.kinds))}"
        raise refused(
            f"{str(path)!r} is {what}, and only {wanted} file is sent here (judged by its content, "
            "not its name)"
        )
    return found


def keep(name: str, data: bytes) -> Path:
    """Bytes picked in a form, kept as a local file named by its content: the digest, and the extension of
    its media format (the picked name's when it fits), so no name from the browser reaches the disk."""
    import platformdirs

    folder = Path(platformdirs.user_cache_dir("mediagen_nb")) / "picked"
    folder.mkdir(parents=True, exist_ok=True)
    found = media.sniff(data[: media.HEAD])  # the browser's file name is the picker's word, not ours
    suffix = media.extension(Path(name), found) if found is not None else ""
    target = folder / f"{hashlib.sha256(data).hexdigest()[:32]}{suffix}"
    if not target.exists():
        target.write_bytes(data)
    return target


def digest(path: Path) -> str:
    """The file's SHA-256, read once per (path, size, modification time)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _lock:
        known = UPLOADED.digests.get(key)
    if known is None:
        sha = hashlib.sha256()
        with path.open("rb") as file:
            for block in iter(lambda: file.read(CHUNK), b""):
                sha.update(block)
        known = sha.hexdigest()
        with _lock:
            UPLOADED.digests[key] = known
    return known


def name_of(path: Path, found: media.Format | None = None) -> str:
    """The content-addressed name of ``path`` (a media file): its digest and its format's extension."""
    found = found or media.format_of(path)
    ext = media.extension(path, found) if found is not None else path.suffix.lower()
    return f"{digest(path)[:32]}{ext}"


def stand_in(path: Path, found: media.Format | None = None) -> str:
    """A URL no one can read, named like the file's upload: what an estimate sends instead of uploading.

    Under ``.invalid`` (RFC 6761, never resolves); the service prices such a file as its 30 seconds.
    """
    return f"https://local-file.invalid/{name_of(path, found)}"


def upload(
    field: str, path: Path, sandbox_url: str | None, kind: str | None = None, auth: httpx.Auth | None = None
) -> str:
    """The URL of ``path`` for the service, uploading it first if it is not there yet (blocking I/O).

    ``sandbox_url`` is the base URL of a sandbox to upload to when no destination is chosen (with
    ``auth``, the connection's key: the sandbox takes uploads from its accounts only); None when the
    connection is the service, which has no storage. ``kind`` is the medium its field takes.
    """
    found = checked_file(field, path, kind)
    with _lock:
        chosen: tuple[Target, StorageOptions] | None = UPLOADED.target
    configured = settings.upload_url()
    if chosen is None and configured:
        chosen = (configured, StorageOptions({}))
    name = name_of(path, found)
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
    if chosen is None:  # asked each time (a HEAD): a sandbox restarted on the same port has lost it
        return _handed_out(_to_sandbox(destination, name, path, auth), name)
    options = chosen[1]
    place = (destination, options.fingerprint, name)  # each file goes up once
    with _lock:
        url, until = UPLOADED.urls.get(place, ("", 0.0))
    if time.time() < until:
        return url
    # Signed again halfway through its life: a URL handed out is always good for days.
    url, until = _to_storage(destination, options, name, path), time.time() + PRESIGN_SECONDS / 2
    with _lock:
        UPLOADED.urls[place] = (url, until)
    return _handed_out(url, name)


def _handed_out(url: str, name: str) -> str:
    with _lock:
        UPLOADED.sources[url] = name
    return url


def stable(value: Any) -> Any:
    """``value`` with each URL made here for a local file replaced by the file's content name.

    What a start asks is derived from this (its Idempotency-Key): a presigned URL changes every
    time it is signed, and a sandbox's URL with its port, but the file they serve does not.
    """
    if isinstance(value, str):
        with _lock:
            name = UPLOADED.sources.get(value)
        return value if name is None else f"upload:{name}"
    if isinstance(value, Mapping):
        return {key: stable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [stable(item) for item in value]
    return value


def _count_sent() -> None:
    with _lock:
        UPLOADED.sent += 1


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


def _stored(base_url: str, sha256: str, auth: httpx.Auth | None) -> str | None:
    """The URL of the sandbox's upload of the content ``sha256``, if it has one (asked by the content's
    digest: a sandbox with an owner names its uploads so that no one else can tell their URLs)."""
    from mediagen_nb.protocol.paths import path as endpoint

    listed = httpx.get(
        base_url.rstrip("/") + endpoint("sandbox_uploads"), params={"sha256": sha256}, timeout=30, auth=auth
    )
    try:
        found = listed.json()["data"]["uploads"] if listed.status_code == 200 else []
    except (ValueError, KeyError, TypeError):
        return None
    for upload in found if isinstance(found, list) else []:
        url = upload.get("url") if isinstance(upload, dict) else None
        if upload.get("sha256") == sha256 and isinstance(url, str) and _own_upload(url):
            return url
    return None  # none, or a sandbox of a version that lists every upload: the PUT tells


def _own_upload(url: str) -> bool:
    """Whether ``url`` is an upload on a sandbox of this machine."""
    from mediagen_nb.protocol.paths import path as endpoint

    return on_this_machine(url) and urlsplit(url).path.startswith(endpoint("sandbox_uploads") + "/")


def _to_sandbox(base_url: str, name: str, path: Path, auth: httpx.Auth | None) -> str:
    from mediagen_nb.protocol.paths import path as endpoint

    target = base_url.rstrip("/") + endpoint("sandbox_upload", name=name)
    try:
        known = _stored(base_url, digest(path), auth)
        if known is not None:
            return known
        response = httpx.put(target, content=_chunks(path), timeout=httpx.Timeout(30, write=600), auth=auth)
    except httpx.HTTPError as exc:
        raise errors.UploadFailed(
            f"cannot upload {path.name} to the sandbox at {base_url}: {type(exc).__name__}: {exc}"[:300]
        ) from None
    if not response.is_success:
        refusal = errors.from_response(response.status_code, response.content)
        raise errors.ValidationError(
            f"the sandbox refused the upload of {path.name}: {refusal.message}", sent=False
        )
    _count_sent()
    try:
        url = response.json()["data"]["url"]
    except (ValueError, KeyError, TypeError):
        url = None
    if not (isinstance(url, str) and _own_upload(url)):
        raise errors.ServiceResponseError(
            f"the sandbox's answer to the upload of {path.name} holds no upload URL of its own (data.url)",
            field="data.url",
        )
    return url


def shown(url: str) -> str:
    """``url`` as a message names it: without any user or password written into it."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def _to_storage(url: str, options: StorageOptions, name: str, path: Path) -> str:
    """Put ``path`` under the fsspec ``url`` (once) and return a presigned URL to read it.

    Any failure of the storage library is one UploadFailed line naming the URL and the step, raised
    outside the ``except`` so no chained traceback (whose locals hold the credentials) comes with it.
    """
    try:
        import fsspec
        from fsspec.callbacks import DEFAULT_CALLBACK, TqdmCallback
    except ImportError:
        raise errors.ConfigurationError(
            f"{ENV_UPLOAD_URL}={shown(url)} needs fsspec and the filesystem's package: pip install "
            "'mediagen-nb[uploads]' (s3fs for s3://, gcsfs for gs://, adlfs for az://)"
        ) from None
    step = "open"
    try:
        fs, root = fsspec.core.url_to_fs(url, **options.reveal())
        remote = f"{root.rstrip('/')}/{name}"
        step = "look for"
        if not fs.exists(remote):
            step = "put"
            bar = {"desc": f"uploading {path.name}", "unit": "B", "unit_scale": True, "leave": False}
            large = path.stat().st_size >= LARGE
            callback = TqdmCallback(tqdm_kwargs=bar) if large else DEFAULT_CALLBACK
            fs.put_file(str(path), remote, callback=callback)
            _count_sent()
        step = "sign a URL for"
        signed: str = fs.sign(remote, expiration=PRESIGN_SECONDS)
        return signed
    except Exception as exc:  # fsspec, s3fs, botocore, gcsfs, adlfs: each raises its own kinds
        unsigned = step == "sign a URL for" and isinstance(exc, NotImplementedError)
        failure = _failure(exc, options)
    if unsigned:
        raise errors.ConfigurationError(
            f"{shown(url)}: this filesystem cannot make a time-limited URL; use s3://, gs:// or az://, or "
            "pass mediagen_nb.uploads(a function path -> url)"
        )
    raise errors.UploadFailed(
        f"uploads: cannot {step} {path.name} in {shown(url)} ({failure}); check the bucket, the storage "
        "options given to mediagen_nb.uploads(...) and the credentials"
    )


def _failure(exc: Exception, options: StorageOptions) -> str:
    """What a storage library said, in one short line with every credential masked."""
    lines = str(exc).strip().splitlines()
    said = options.mask(lines[0]) if lines else ""
    return f"{type(exc).__name__}: {said}"[:240] if said else type(exc).__name__
