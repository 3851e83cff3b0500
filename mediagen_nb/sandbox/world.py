"""All state of one sandbox: configuration, clock, accounts, limits, faults, media and the pipelines."""

import asyncio
import random
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mediagen_nb.protocol import limits
from mediagen_nb.protocol.paths import PATHS, path
from mediagen_nb.sandbox.accounts import Accounts
from mediagen_nb.sandbox.clock import Clock
from mediagen_nb.sandbox.faults import Faults
from mediagen_nb.sandbox.fetch import Unreachable
from mediagen_nb.sandbox.media import MediaSpec, MediaStore
from mediagen_nb.sandbox.outbox import Outbox
from mediagen_nb.sandbox.uploads import Uploads
from mediagen_nb.sandbox.windows import RollingWindow

_MEDIA_PREFIXES = tuple(PATHS[name].split("{", 1)[0] for name in ("sandbox_media", "sandbox_samples"))
_UPLOADS_PREFIX = PATHS["sandbox_upload"].split("{", 1)[0]


@dataclass(frozen=True)
class SandboxConfig:
    """How a sandbox behaves; every option of ``python -m mediagen_nb.sandbox``."""

    time_scale: float = 1.0  # 60 = a simulated minute passes in one real second
    # Ids, run times, media and random faults are reproducible from an explicit seed; None draws a new
    # one at every start and reset (shown by /_sandbox/info), so a restarted sandbox never repeats ids.
    seed: int | None = None
    allow_private_webhooks: bool = False  # accept and deliver loopback (http or https) webhooks
    deliver_public_webhooks: bool = False  # really POST to public hosts (off: recorded only)
    data_dir: Path | None = None  # rendered media are cached here across restarts
    webhook_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)


class World:
    """The sandbox's state; ``reset()`` returns it to a fresh demo account."""

    def __init__(self, config: SandboxConfig) -> None:
        from mediagen_nb.sandbox.generation.models import Generations
        from mediagen_nb.sandbox.replication.models import Replication
        from mediagen_nb.sandbox.topic_video.models import TopicVideo

        self.config = config
        self.clock = Clock(config.time_scale)
        self.media = MediaStore(config.data_dir)
        self.uploads = Uploads(config.data_dir)
        self.outbox = Outbox(
            config.webhook_secret,
            allow_private=config.allow_private_webhooks,
            deliver_public=config.deliver_public_webhooks,
        )
        self._timers: set[asyncio.TimerHandle] = set()
        self._services = (Generations, Replication, TopicVideo)
        self.reset()

    def reset(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        self.accounts = Accounts(self.clock)
        self.requests = RollingWindow(self.clock, limits.REQUESTS_PER_KEY, limits.WINDOW_SECONDS)
        self.starts = RollingWindow(self.clock, limits.STARTS_PER_ACCOUNT, limits.WINDOW_SECONDS)
        self.seed = self.config.seed if self.config.seed is not None else secrets.randbits(63)
        self.faults = Faults(self.seed)
        self._ids = random.Random(self.seed)
        generations, replication, topic = self._services
        self.generations = generations(self)
        self.replication = replication(self)
        self.topic = topic(self)

    def new_id(self) -> str:
        """A UUID from the seeded sequence, so a replayed session gets the same ids."""
        return str(uuid.UUID(int=self._ids.getrandbits(128), version=4))

    def rng(self, *parts: object) -> random.Random:
        """A generator seeded by the sandbox seed and ``parts`` (a resource id, a purpose)."""
        return random.Random(":".join(map(str, (self.seed, *parts))))

    def schedule(self, sim_seconds: float, callback: Callable[[], Any]) -> None:
        """Call ``callback`` after ``sim_seconds`` of simulated time; cancelled by ``reset()``."""
        loop = asyncio.get_running_loop()
        holder: list[asyncio.TimerHandle] = []

        def fire() -> None:
            self._timers.discard(holder[0])
            callback()

        holder.append(loop.call_later(self.clock.real(sim_seconds), fire))
        self._timers.add(holder[0])

    def media_url(self, base_url: str, spec: MediaSpec) -> str:
        """Register a file and return its URL on this sandbox."""
        return base_url + path("sandbox_media", name=self.media.add(spec))

    async def own_file(self, url_path: str) -> bytes | None:
        """The bytes of one of the sandbox's own files by its URL path; None for any other path."""
        name = url_path.rsplit("/", 1)[-1]
        if url_path.startswith(_UPLOADS_PREFIX):
            data = await self.uploads.read(name)
        elif url_path.startswith(_MEDIA_PREFIXES):
            found = await self.media.read(name)
            data = found[0] if found is not None else None
        else:
            return None
        if data is None:
            raise Unreachable(url_path)
        return data

    def info(self) -> dict[str, Any]:
        return {
            "timeScale": self.clock.scale,
            "seed": self.seed,
            "seedGiven": self.config.seed is not None,
            "now": self.clock.iso(),
            "allowPrivateWebhooks": self.config.allow_private_webhooks,
            "counts": {
                "accounts": len(self.accounts.accounts),
                "keys": len(self.accounts.keys),
                "generations": len(self.generations.items),
                "analyses": len(self.replication.analyses),
                "replicationRuns": len(self.replication.runs),
                "jobs": len(self.topic.jobs),
                "ledgerEntries": len(self.accounts.ledger),
                "webhooks": len(self.outbox.sent),
                "uploads": len(self.uploads.stored()),
                "requests": self.requests.accepted + self.requests.refused,  # with a key, 429s included
                "requestsOverLimit": self.requests.refused,  # 429s of the per-key request limit
                "startsOverLimit": self.starts.refused,  # 429s of the per-account start limit
            },
            "faults": self.faults.describe(),
        }
