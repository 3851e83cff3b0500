"""Receiving webhooks safely, for server-side users.

The signing secret is hidden, so a signature cannot be checked and is not pretended to be:
a notification is only a hint. The inbox ignores ids it was not told to expect, confirms every
notification by reading the resource with the client's own key, and answers a repeat of an id
it has already seen finished with the same result (handlers are safe to run twice).
"""

import inspect
import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from mediagen_nb.client.clients import AsyncClient, BaseClient


def notified_id(payload: Mapping[str, Any]) -> str | None:
    """The generation, run or job id a webhook body names."""
    ident = payload.get("jobId") or payload.get("id")
    return str(ident) if ident else None


class WebhookInbox:
    """Confirms webhooks for the generations, runs and jobs you started (``expect``) and nothing else."""

    def __init__(self, client: BaseClient, expected: Iterable[Any] = ()) -> None:
        self.client = client
        self._expected: set[str] = set()
        self._finished: dict[str, Any] = {}
        self._lock = threading.Lock()
        for item in expected:
            self.expect(item)

    def expect(self, item: Any) -> None:
        """Accept notifications about ``item`` (a Generation, ReplicationRun, ShortVideoJob or id)."""
        with self._lock:
            self._expected.add(str(getattr(item, "id", item)))

    def receive(self, body: bytes | str | Mapping[str, Any]) -> Any:
        """The confirmed resource, or None for an unknown id or a body that names nothing.

        With an AsyncClient the result is awaitable.
        """
        try:
            payload = json.loads(body) if isinstance(body, (bytes, str)) else body
        except (ValueError, RecursionError):  # anyone can POST to a webhook URL: not JSON names nothing
            payload = None
        if not isinstance(payload, Mapping):
            return self._maybe_async(None)
        ident = notified_id(payload)
        with self._lock:
            known, finished = ident in self._expected, self._finished.get(ident or "")
        if not known or finished is not None:
            return self._maybe_async(finished)
        outcome = self.client.confirm_webhook(payload)
        if inspect.isawaitable(outcome):

            async def confirmed() -> Any:
                return self._record(ident or "", await outcome)

            return confirmed()
        return self._record(ident or "", outcome)

    def _record(self, ident: str, resource: Any) -> Any:
        if getattr(resource, "done", False):
            with self._lock:
                return self._finished.setdefault(ident, resource)
        return resource

    def _maybe_async(self, value: Any) -> Any:
        if isinstance(self.client, AsyncClient):

            async def ready() -> Any:
                return value

            return ready()
        return value
