"""The client's one implementation: every operation of the three APIs, as generators of steps.

``Engine`` joins the operations of each API (:mod:`~mediagen_nb.client.generations`,
:mod:`~mediagen_nb.client.replication`, :mod:`~mediagen_nb.client.videos`) on the shared core
(:mod:`~mediagen_nb.client.core`: sending, limits, retries, the ledger and the budget; and
:mod:`~mediagen_nb.client.catalog`: the catalog and the checks of an input).
:mod:`mediagen_nb.client.clients` binds each operation to ``Client`` and ``AsyncClient``.
"""

import json
from collections.abc import Mapping
from typing import Any

from mediagen_nb.client import errors
from mediagen_nb.client.generations import Generations
from mediagen_nb.client.replication import Replication
from mediagen_nb.client.steps import Op
from mediagen_nb.client.videos import Videos


class Engine(Generations, Replication, Videos):
    """Every operation of the service, free of I/O; a client drives them."""

    def confirm_webhook(self, payload: bytes | str | Mapping[str, Any]) -> Op[Any]:
        """Read the generation, run or job a webhook names, with this client's key.

        The signature cannot be checked (the secret is hidden), so trust the resource read, not the
        payload. Returns a Generation, ReplicationRun or ShortVideoJob.
        """
        if isinstance(payload, (bytes, str)):
            try:
                payload = json.loads(payload)
            except (ValueError, RecursionError):
                raise errors.ValidationError("webhook body is not JSON", field="body", sent=False) from None
        if not isinstance(payload, Mapping):
            raise errors.ValidationError("webhook body must be a JSON object", field="body", sent=False)
        if payload.get("event") == "replication.completed" and payload.get("id"):
            return (yield from self.replication_run(str(payload["id"])))
        if payload.get("jobId"):
            return (yield from self.job(str(payload["jobId"])))
        if payload.get("id") and payload.get("modelId"):
            return (yield from self.generation(str(payload["id"])))
        raise errors.ValidationError("webhook body names no generation, run or job", field="body", sent=False)
