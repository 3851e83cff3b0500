"""The doctor's exchanges with the service: raw requests, each answer kept as sent and, with ``--record
DIR``, saved (keys scrubbed, never media bytes) so it can become a replay test.

A check reads the wire itself (status, message, shape), then hands the answer to the client's own
parsers: what the doctor reports is what the client would make of the service.
"""

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from mediagen_nb.client.config import BearerAuth, Secret
from mediagen_nb.client.errors import MASKED, mask
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime import tls

TIMEOUT = 30.0
MAX_BODY = 32 * 2**20  # as the client's cap
KEPT_HEADERS = ("content-type", "idempotency-key")
TEXT_TYPES = ("application/json", "text/")


@dataclass(frozen=True)
class Exchange:
    """One request and its answer, as the doctor keeps them."""

    check: str
    method: str
    target: str  # path and query
    status: int  # 0: no answer (the error says why)
    body: Any  # the answer's JSON, its text, or None
    error: str | None = None  # a connection that failed
    sent: Mapping[str, Any] = field(default_factory=dict)  # the request as recorded

    @property
    def data(self) -> Any:
        """The ``data`` of a success envelope (None when there is none)."""
        return self.body.get("data") if isinstance(self.body, Mapping) else None

    @property
    def message(self) -> str | None:
        """An error answer's message: the body when it is a string, else its ``message``."""
        if isinstance(self.body, str):
            return self.body
        found = self.body.get("message") if isinstance(self.body, Mapping) else None
        return found if isinstance(found, str) else None

    def said(self) -> str:
        """The answer in a few words, for a report: ``404 'Not found'``."""
        if self.error is not None:
            return f"no answer ({self.error})"
        shown = self.message if self.message is not None else json.dumps(self.body)[:80]
        return f"{self.status} {mask(str(shown))[:90]!r}"


def scrubbed(value: Any) -> Any:
    """A recorded value with every API key masked (in keys and texts)."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Mapping):
        return {mask(str(k)): scrubbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrubbed(item) for item in value]
    return value


class Probe:
    """Sends the doctor's requests to one service and keeps each exchange (see the module)."""

    def __init__(
        self,
        base_url: str,
        key: Secret | None,
        *,
        record: Path | None = None,
        transport: httpx.BaseTransport | None = None,
        owner: Callable[[], Secret | None] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.key = key
        self.owner = owner  # the owner's token, for a sandbox that answers its owner alone
        self.record = record
        self.exchanges: list[Exchange] = []
        self._http = httpx.Client(timeout=TIMEOUT, transport=transport, verify=tls.context())
        if record is not None:
            record.mkdir(parents=True, exist_ok=True)

    def close(self) -> None:
        self._http.close()

    def send(
        self,
        check: str,
        method: str,
        endpoint: str,
        *,
        params: Mapping[str, str] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        key: Secret | bool = True,
    ) -> Exchange:
        """One request (``key``: True the configured key, a Secret another, False none)."""
        target = path(endpoint, **(params or {}))
        secret = self.key if key is True else key if isinstance(key, Secret) else None
        auth = BearerAuth(secret, self.owner) if secret is not None or self.owner is not None else None
        sent = {
            "method": method,
            "path": target,
            "query": dict(query or {}),
            "body": body,
            "key": bool(secret),
        }
        try:
            response = self._http.request(
                method, self.base_url + target, params=query, json=body, auth=auth or httpx.USE_CLIENT_DEFAULT
            )
        except httpx.HTTPError as exc:
            found = Exchange(check, method, target, 0, None, f"{type(exc).__name__}: {exc}"[:200], sent)
        else:
            found = Exchange(check, method, target, response.status_code, answer_body(response), sent=sent)
        self.exchanges.append(found)
        self.save(found, secret is not None)
        return found

    def save(self, exchange: Exchange, keyed: bool) -> None:
        """Write one exchange as JSON (its file named by its order and check, never by the answer)."""
        if self.record is None:
            return
        name = re.sub(r"[^a-z0-9]+", "-", exchange.check.lower()).strip("-")[:60] or "exchange"
        document = {
            "check": exchange.check,
            "request": {**exchange.sent, "headers": {"Authorization": f"Bearer {MASKED}"} if keyed else {}},
            "response": {"status": exchange.status, "body": exchange.body, "error": exchange.error},
        }
        where = self.record / f"{len(self.exchanges):03d}-{name}.json"
        where.write_text(
            json.dumps(scrubbed(document), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )


def answer_body(response: httpx.Response) -> Any:
    """An answer's JSON, or its text; for anything else (media, a binary) only its size and type."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    raw = response.content[:MAX_BODY]
    if kind and not kind.startswith(TEXT_TYPES):
        return {"bytes": len(response.content), "content-type": kind}
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return mask(text)
