"""Downloading media inputs the way the service does, to measure length-billed files.

The sandbox reads its own files (``/_sandbox/media/...`` and ``/_sandbox/samples/...`` on any host)
straight from its media store, so in-process tests can feed it its own outputs. Other URLs must be
https, or http on a loopback address (sandbox mode); private network addresses are not reachable.
"""

import ipaddress
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import httpx

from mediagen_nb.protocol.paths import PATHS

if TYPE_CHECKING:
    from mediagen_nb.sandbox.media import MediaStore

MAX_BYTES = 200 * 2**20
_OWN_PREFIXES = tuple(PATHS[name].split("{", 1)[0] for name in ("sandbox_media", "sandbox_samples"))


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


async def download(url: str, store: "MediaStore") -> bytes:
    """The file's bytes, or :class:`Unreachable`."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    path = unquote(parts.path)
    if path.startswith(_OWN_PREFIXES):
        found = await store.read(path.rsplit("/", 1)[-1])
        if found is None:
            raise Unreachable(url)
        return found[0]
    if not host or not (parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(host))):
        raise Unreachable(url)
    if _is_private(host) and not _is_loopback(host):
        raise Unreachable(url)
    try:
        async with (
            httpx.AsyncClient(timeout=15, follow_redirects=True) as client,
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
    except httpx.HTTPError as exc:
        raise Unreachable(url) from exc
    return b"".join(chunks)
