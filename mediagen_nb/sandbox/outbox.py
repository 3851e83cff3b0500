"""The webhook outbox: the spec's URL rules at start time and one signed POST per finished job, no retries.

Every webhook is recorded here (``GET /_sandbox/webhooks``). The sandbox POSTs to loopback
receivers when started with ``allow_private_webhooks`` and to public hosts only with
``deliver_public_webhooks``, so tests and offline machines never send traffic off the machine.
"""

import asyncio
import hashlib
import hmac
import ipaddress
import json
import socket
import time
from collections import deque
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx

from mediagen_nb.protocol import messages
from mediagen_nb.runtime import tls
from mediagen_nb.sandbox.responses import bad_request
from mediagen_nb.sandbox.saved import Row, Rows

USER_AGENT = "Service-Webhook/1"
BLOCKED_SUFFIXES = (".local", ".internal", ".localhost")
KEPT = 2000  # webhooks kept for GET /_sandbox/webhooks (and in the saved state), the newest
KIND = "webhook"  # a webhook's rows in the saved state, by its number


def _addresses(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The host's addresses: itself when it is one, else what the resolver answers."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        infos = socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
        return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


async def check_url(url: Any, *, allow_private: bool) -> None:
    """Refuse a webhook the service would refuse (400, nothing charged)."""
    if not isinstance(url, str) or not url.strip():
        raise bad_request(messages.WEBHOOK_INVALID)
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
    except ValueError:  # e.g. an unclosed IPv6 bracket: https://[::1/hook
        raise bad_request(messages.WEBHOOK_INVALID) from None
    if parts.scheme not in ("http", "https") or not host:
        raise bad_request(messages.WEBHOOK_INVALID if not host else messages.WEBHOOK_HTTPS)
    named_private = host == "localhost" or host.endswith(BLOCKED_SUFFIXES)
    if parts.scheme != "https" and not allow_private:
        raise bad_request(messages.WEBHOOK_HTTPS)  # only loopback receivers (sandbox mode) may use http
    try:
        addresses = await asyncio.wait_for(asyncio.to_thread(_addresses, host), timeout=3)
    except (OSError, asyncio.TimeoutError, ValueError):  # ValueError: bad IDNA, NUL bytes
        if parts.scheme != "https":
            raise bad_request(messages.WEBHOOK_HTTPS) from None
        if named_private:
            raise bad_request(messages.WEBHOOK_HOST) from None
        raise bad_request(messages.WEBHOOK_UNRESOLVED) from None
    loopback = bool(addresses) and all(a.is_loopback for a in addresses)
    if allow_private and loopback:
        return
    if parts.scheme != "https":
        raise bad_request(messages.WEBHOOK_HTTPS)
    if named_private or not all(a.is_global for a in addresses):
        raise bad_request(messages.WEBHOOK_HOST)


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """``sha256=`` plus the hex HMAC-SHA256 of ``{timestamp}.{raw body}``."""
    return "sha256=" + hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


class Outbox:
    """Signs, records and (where allowed) delivers webhook POSTs."""

    def __init__(self, secret: bytes, *, allow_private: bool, deliver_public: bool) -> None:
        self.secret = secret
        self.allow_private = allow_private
        self.deliver_public = deliver_public
        self.sent: deque[dict[str, Any]] = deque(maxlen=KEPT)
        self.total = 0  # webhooks sent over the life of the state: the next one's number
        self.unsaved: dict[int, dict[str, Any]] = {}  # by number: sent, or delivered, since the last save
        self._saved_from = 0  # the oldest number the saved state may still hold
        self._tasks: set[asyncio.Task[None]] = set()

    def dump(self) -> Iterator[Row]:
        """The webhooks sent or delivered since the last dump, and the forgetting of those no longer kept."""
        kept_from = max(0, self.total - KEPT)
        marked = dict(self.unsaved)
        self.unsaved.clear()
        yield from ((KIND, str(number), entry) for number, entry in marked.items() if number >= kept_from)
        yield from ((KIND, str(number), None) for number in range(self._saved_from, kept_from))
        self._saved_from = max(self._saved_from, kept_from)

    def load(self, rows: Rows) -> None:
        """Take back the saved webhooks (:meth:`dump`): the newest :data:`KEPT`, the count goes on."""
        entries = sorted((int(number), entry) for number, entry in rows.get(KIND, {}).items())
        self.sent.extend(entry for _, entry in entries[-KEPT:])
        self.total = entries[-1][0] + 1 if entries else 0
        self._saved_from = entries[0][0] if entries else 0

    async def check(self, url: Any) -> None:
        await check_url(url, allow_private=self.allow_private)

    def send(self, url: str, payload: dict[str, Any]) -> None:
        """Record and schedule one POST of ``payload`` to ``url``; the receiver's answer is not read."""
        body = json.dumps(payload, separators=(",", ":")).encode()
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Service-Timestamp": str(timestamp),
            "X-Service-Signature": sign(self.secret, timestamp, body),
        }
        host = (urlsplit(url).hostname or "").lower()
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        entry: dict[str, Any] = {"url": url, "headers": headers, "body": body.decode(), "delivered": None}
        self.sent.append(entry)
        number, self.total = self.total, self.total + 1
        self.unsaved[number] = entry
        if loopback or self.deliver_public:
            task = asyncio.get_running_loop().create_task(self._post(entry, body))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(lambda _: self.unsaved.update({number: entry}))  # its delivery result
        else:
            entry["delivered"] = False
            entry["note"] = "recorded only: public delivery is off (deliver_public_webhooks)"

    async def _post(self, entry: dict[str, Any], body: bytes) -> None:
        try:
            async with httpx.AsyncClient(timeout=10, verify=tls.context()) as client:
                response = await client.post(entry["url"], content=body, headers=entry["headers"])
            entry["delivered"], entry["receiverStatus"] = True, response.status_code
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            entry["delivered"], entry["note"] = False, f"one attempt, not retried: {type(exc).__name__}"

    async def drain(self, timeout: float) -> None:
        """Give deliveries in flight ``timeout`` real seconds to finish (when a served sandbox stops)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
