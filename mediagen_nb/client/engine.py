"""The client's one implementation: every operation of the three APIs, as generators of steps.

``Engine`` composes the parts over one core, as replicate-python composes namespaces over a client:
the core (:mod:`~mediagen_nb.client.core`: sending, limits, retries, reads into the ledger), the
paid start (:mod:`~mediagen_nb.client.starts`), the catalog and the checks of an input
(:mod:`~mediagen_nb.client.catalog`), and each API's operations
(:mod:`~mediagen_nb.client.generations`, :mod:`~mediagen_nb.client.replication`,
:mod:`~mediagen_nb.client.videos`). :mod:`mediagen_nb.client.clients` binds each operation, flat, to
``Client`` and ``AsyncClient``.
"""

import json
from collections.abc import Mapping
from typing import Any

from mediagen_nb.client import errors
from mediagen_nb.client.catalog import Catalog
from mediagen_nb.client.config import Settings
from mediagen_nb.client.controls import Controls
from mediagen_nb.client.core import Core
from mediagen_nb.client.generations import Generations
from mediagen_nb.client.replication import Replication
from mediagen_nb.client.starts import Starts
from mediagen_nb.client.steps import Op
from mediagen_nb.client.videos import Videos


class Webhooks:
    """A webhook's resource, read with this client's key."""

    def __init__(self, generations: Generations, replication: Replication, videos: Videos) -> None:
        self.generations, self.replication, self.videos = generations, replication, videos

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
            return (yield from self.replication.replication_run(str(payload["id"])))
        if payload.get("jobId"):
            return (yield from self.videos.job(str(payload["jobId"])))
        if payload.get("id") and payload.get("modelId"):
            return (yield from self.generations.generation(str(payload["id"])))
        raise errors.ValidationError("webhook body names no generation, run or job", field="body", sent=False)


class Engine:
    """Every operation of the service, free of I/O, in parts over one core; a client drives them."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.catalog = Catalog(self.core)
        starts = Starts(self.core)
        self.generations = Generations(self.core, self.catalog, starts)
        self.replication = Replication(self.core, self.catalog, starts)
        self.videos = Videos(self.core, self.catalog, starts)
        self.webhooks = Webhooks(self.generations, self.replication, self.videos)
        self.controls = Controls(self.core)
        parts = (self.catalog, self.generations, self.replication, self.videos, self.webhooks, self.controls)
        self._parts: dict[type, Any] = {type(part): part for part in parts}

    @property
    def settings(self) -> Settings:
        return self.core.settings

    def part(self, kind: type) -> Any:
        """The part of this engine that is a ``kind`` (the class an operation is defined in)."""
        return self._parts[kind]
