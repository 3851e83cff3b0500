"""Downloading media inputs the way the service does, to measure length-billed files.

The sandbox reads its own files (``/_sandbox/media/...``, ``/_sandbox/samples/...`` and
``/_sandbox/uploads/...`` on any host) straight from its stores, so in-process tests can feed it its
own outputs and uploads. Other URLs must be https, or http on a loopback address (sandbox mode);
private network addresses are not reachable.
"""

import asyncio
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from mediagen_nb.media_formats import HEAD, looks_like_svg
from mediagen_nb.protocol import limits, messages, schema
from mediagen_nb.runtime import tls
from mediagen_nb.sandbox.media import measure_seconds, vector
from mediagen_nb.sandbox.responses import bad_request

MAX_BYTES = 200 * 2**20

# The sandbox's own files by URL path: their bytes, None when the path is not one of its files, or
# Unreachable when it is one that does not exist.
OwnFiles = Callable[[str], Awaitable[bytes | None]]


class Unreachable(Exception):
    """The file could not be downloaded."""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_private(host: str) -> bool:
    try:
        return not ipaddress.ip_address(host).is_global
    except ValueError:
        return host.endswith((".local", ".internal"))


async def download(url: str, own_files: OwnFiles) -> bytes:
    """The file's bytes, or :class:`Unreachable`."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:  # e.g. an unclosed IPv6 bracket
        raise Unreachable(url) from None
    own = await own_files(unquote(parts.path))
    if own is not None:
        return own
    if not host or not (parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(host))):
        raise Unreachable(url)
    if _is_private(host) and not _is_loopback(host):
        raise Unreachable(url)
    try:
        async with (
            httpx.AsyncClient(timeout=15, follow_redirects=True, verify=tls.context()) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                raise Unreachable(url)
            chunks, size = [], 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_BYTES:
                    raise Unreachable(url)
                chunks.append(chunk)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise Unreachable(url) from exc
    return b"".join(chunks)


async def image(url: str, own_files: OwnFiles) -> bytes:
    """An image input as a model sees it: downloaded, and an SVG converted to PNG (the spec's rule,
    drawn safely: ``media/vector.py``). :class:`Unreachable`, or ``vector.NotDrawable``."""
    data = await download(url, own_files)
    if looks_like_svg(data[:HEAD]) or vector.is_svgz(data):
        return await asyncio.to_thread(vector.to_png, data)
    return data


async def media_seconds(field: str, url: Any, own_files: OwnFiles) -> float:
    """Check 7 of a start: the length-billed file is .mp3/.wav/.mp4, reachable and of readable length."""
    if not isinstance(url, str):
        raise bad_request(messages.wrong_type(field, "a URL"))
    ext = schema.url_extension(url)
    if ext not in limits.LENGTH_BILLED_EXTENSIONS:
        raise bad_request(messages.UNSUPPORTED_MEDIA_FORMAT)
    try:
        data = await download(url, own_files)
    except Unreachable:
        raise bad_request(messages.media_not_reachable(field)) from None
    seconds = await asyncio.to_thread(measure_seconds, data, ext)
    if seconds is None:
        raise bad_request(
            messages.UNREADABLE_VIDEO_DURATION if ext == ".mp4" else messages.unreadable_audio_duration()
        )
    return seconds
