"""Sending one request with a deadline and a size cap, whatever the server does.

httpx's timeouts bound each read, not the whole exchange, so a server that sends a byte a second
(a slow loris) or never stops sending could hold a call for ever. Here every exchange ends by its
deadline (the time the service may hold it, plus a margin) and no response body may exceed
:data:`MAX_BODY`: past either, the call fails with one typed error and its memory is freed.
"""

import asyncio
import math
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from mediagen_nb.client.errors import ConfigurationError, DownloadFailed, MediagenError, ServiceResponseError
from mediagen_nb.runtime import tls

MAX_BODY = 32 * 2**20  # bytes; the service's answers are JSON of kilobytes, the catalog well under 1 MB
_DROPPED_HEADERS = ("content-encoding", "content-length", "transfer-encoding")


class DeadlineExceeded(httpx.TimeoutException):
    """The whole exchange took longer than its deadline (a silent or dripping server)."""


class SentLate(httpx.TransportError):
    """A request was about to be written ``late`` seconds after the moment it had to go by: it was not
    sent (its slot's stamp no longer says when it would reach the service)."""

    def __init__(self, late: float) -> None:
        super().__init__(f"{late:.3f} s too late for its slot: not sent")
        self.late = late


class SendBy:
    """A request's ``trace`` extension (httpcore calls it at each step of the exchange) that stops it
    if it is about to be written after ``moment`` on ``now``'s clock: the last moment before it leaves,
    however long a worker thread or a busy event loop took. :func:`send` and :func:`asend` also check
    it before httpx's event hooks run (a request already late is not shown to them); transports that
    are not httpcore's (an in-process sandbox) do not call it."""

    EVENTS = ("http11.send_request_headers.started", "http2.send_request_headers.started")

    def __init__(self, now: Callable[[], float], moment: float) -> None:
        self.now = now
        self.moment = moment

    def check(self) -> None:
        if (late := self.now() - self.moment) > 0:
            raise SentLate(late)

    def writing(self) -> None:
        """The request is about to be written: in time, or SentLate. Only its first write is its slot's:
        httpx carries the hook to each redirect it follows, which is sent after it, whatever the time."""
        self.check()
        self.moment = math.inf

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event in self.EVENTS:
            self.writing()


class ASendBy(SendBy):
    """:class:`SendBy` for httpx's async client (httpcore awaits the hook)."""

    async def __call__(self, event: str, info: dict[str, Any]) -> None:  # type: ignore[override]
        if event in self.EVENTS:
            self.writing()


def _in_time(request: httpx.Request) -> None:
    """SentLate if ``request`` (with a :class:`SendBy`) is already too late to be sent."""
    hook = request.extensions.get("trace")
    if isinstance(hook, SendBy):
        hook.check()


def _whole(response: httpx.Response, body: bytes) -> httpx.Response:
    """A read response holding ``body`` (already decoded), as if httpx had read it."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _DROPPED_HEADERS]
    return httpx.Response(response.status_code, headers=headers, content=body, request=response.request)


def _too_large(request: httpx.Request) -> ServiceResponseError:
    return ServiceResponseError(
        f"the answer to {request.method} {request.url.path} is over {MAX_BODY // 2**20} MB, more than "
        "the service ever sends: is MEDIAGEN_BASE_URL the service's address?"
    )


def _malformed(request: httpx.Request, exc: httpx.HTTPError) -> MediagenError:
    """An answer that cannot be read (a body its Content-Encoding does not decode, redirects in a loop
    or to another scheme), or an address that is not http(s) at all."""
    if isinstance(exc, httpx.UnsupportedProtocol) and exc.request is request:
        return ConfigurationError(
            f"{request.url.scheme}:// is not http(s): check MEDIAGEN_BASE_URL (or base_url=)"
        )
    if isinstance(exc, httpx.UnsupportedProtocol):
        what = f"redirects to {exc.request.url.scheme}://, not http(s)"
    elif isinstance(exc, httpx.TooManyRedirects):
        what = "redirects in a loop"
    else:
        what = f"cannot be decoded ({exc})"
    return ServiceResponseError(
        f"the answer to {request.method} {request.url.path} {what}: is MEDIAGEN_BASE_URL the service's "
        "address?"
    )


def _read_sync(http: httpx.Client, request: httpx.Request, auth: httpx.Auth | None) -> httpx.Response:
    _in_time(request)
    try:
        response = http.send(request, stream=True, auth=auth)
        try:
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_BODY:
                    raise _too_large(request)
                chunks.append(chunk)
        finally:
            response.close()
    except (httpx.DecodingError, httpx.TooManyRedirects, httpx.UnsupportedProtocol) as exc:
        raise _malformed(request, exc) from None
    return _whole(response, b"".join(chunks))


def send(
    http: httpx.Client, request: httpx.Request, deadline: float, auth: httpx.Auth | None = None
) -> httpx.Response:
    """Send (with ``auth``, the key's flow) on a worker thread and wait at most ``deadline`` seconds
    (a Ctrl-C interrupts the wait).

    Past the deadline the worker is left to end on its own read timeout; its result is dropped.
    """
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["response"] = _read_sync(http, request, auth)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            done.set()

    _WORKERS.run(work)
    if not done.wait(deadline):
        raise DeadlineExceeded(f"no whole answer within {deadline:.0f} s", request=request)
    if "error" in outcome:
        raise outcome["error"]
    response: httpx.Response = outcome["response"]
    return response


class _Workers:
    """Daemon threads that send sync requests, kept for the next one: starting a thread per request
    cost more CPU than building the request. A worker held past its deadline by a silent server is
    not waited for: the next request takes another (or a new) one, and it comes back when it ends."""

    IDLE = 8  # workers kept waiting; more come and go with the load

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def forget(self) -> None:
        """In a forked child: the idle workers' threads did not come along."""
        self._lock = threading.Lock()
        self._idle = []

    def run(self, fn: Callable[[], None]) -> None:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker(self)
        worker.give(fn)

    def back(self, worker: "_Worker") -> bool:
        """A worker is free again: kept (True) or let go (False)."""
        with self._lock:
            if len(self._idle) >= self.IDLE:
                return False
            self._idle.append(worker)
            return True


class _Worker:
    def __init__(self, pool: _Workers) -> None:
        self._pool = pool
        self._work: list[Callable[[], None]] = []
        self._ready = threading.Condition()
        threading.Thread(target=self._serve, name="mediagen-request", daemon=True).start()

    def give(self, fn: Callable[[], None]) -> None:
        with self._ready:
            self._work.append(fn)
            self._ready.notify()

    def _serve(self) -> None:
        while True:
            with self._ready:
                while not self._work:
                    self._ready.wait()
                fn = self._work.pop()
            fn()  # never raises: ``send``'s work keeps what it raised
            if not self._pool.back(self):
                return


_WORKERS = _Workers()
os.register_at_fork(after_in_child=lambda: _WORKERS.forget())  # a forked child has none of the threads


async def _read_async(
    http: httpx.AsyncClient, request: httpx.Request, auth: httpx.Auth | None
) -> httpx.Response:
    _in_time(request)
    try:
        response = await http.send(request, stream=True, auth=auth)
        try:
            chunks, size = [], 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_BODY:
                    raise _too_large(request)
                chunks.append(chunk)
        finally:
            await response.aclose()
    except (httpx.DecodingError, httpx.TooManyRedirects, httpx.UnsupportedProtocol) as exc:
        raise _malformed(request, exc) from None
    return _whole(response, b"".join(chunks))


async def asend(
    http: httpx.AsyncClient, request: httpx.Request, deadline: float, auth: httpx.Auth | None = None
) -> httpx.Response:
    """Send (with ``auth``) and read within ``deadline`` seconds (the exchange is cancelled past it)."""
    try:
        return await asyncio.wait_for(_read_async(http, request, auth), deadline)
    except asyncio.TimeoutError:
        raise DeadlineExceeded(f"no whole answer within {deadline:.0f} s", request=request) from None


MAX_MEDIA = 2**31  # bytes of one output file (a long 1080p video is well under)


def _media_url(url: str) -> str:
    if not url.startswith(("https://", "http://")):
        raise DownloadFailed(f"not an http(s) media URL: {url[:80]!r}")
    return url


def _grown(url: str, size: int, limit: int = MAX_MEDIA) -> None:
    if size > limit:
        raise DownloadFailed(f"{url[:80]} is over {limit:,} bytes: not read further")


def _failed(url: str, exc: Exception) -> DownloadFailed:
    if isinstance(exc, httpx.HTTPStatusError):
        answer = exc.response
        return DownloadFailed(
            f"cannot save {url[:80]}: it answered {answer.status_code} {answer.reason_phrase}"
        )
    return DownloadFailed(f"cannot save {url[:80]}: {type(exc).__name__}: {exc}"[:300])


def fetch(url: str, timeout: float = 300.0, limit: int = MAX_MEDIA) -> bytes:
    """The bytes at a media URL (an output), following redirects; DownloadFailed past ``limit``."""
    try:
        with httpx.stream(
            "GET", _media_url(url), follow_redirects=True, timeout=timeout, verify=tls.context()
        ) as response:
            response.raise_for_status()
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                _grown(url, size, limit)
                chunks.append(chunk)
    except httpx.HTTPError as exc:
        raise _failed(url, exc) from None
    return b"".join(chunks)


def _part(target: Path) -> Path:
    """Where ``target`` is written first: renamed when whole, so no half file ever has its name."""
    return target.with_name(target.name + ".part")


Target = Path | Callable[[str | None], Path]  # a file, or the file for the answer's Content-Type


def save(url: str, target: Target, *, http: httpx.Client | None = None, timeout: float = 300.0) -> Path:
    """Stream the output at ``url`` into ``target`` (never whole in memory); DownloadFailed if not.

    ``target`` may be a function of the answer's Content-Type (the file is named once the headers
    are in). The half file is created anew (never through a link left in the folder). ``http``
    shares one connection pool among many saves (one client may serve several threads).
    """
    partial: Path | None = None
    try:
        with (http or httpx).stream(
            "GET", _media_url(url), follow_redirects=True, timeout=timeout
        ) as response:
            response.raise_for_status()
            if callable(target):
                target = target(response.headers.get("content-type"))
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = _part(target)
            partial.unlink(missing_ok=True)
            with partial.open("xb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
                    _grown(url, out.tell())
        partial.replace(target)
    except (httpx.HTTPError, OSError) as exc:
        raise _failed(url, exc) from None
    finally:
        if partial is not None:
            partial.unlink(missing_ok=True)
    return target
