"""All state of one sandbox: configuration, clock, accounts, limits, faults, media and the pipelines."""

import asyncio
import os
import random
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mediagen_nb.protocol import limits
from mediagen_nb.protocol.paths import PATHS, path
from mediagen_nb.protocol.wire import DEFAULT, Names
from mediagen_nb.runtime.clock import ManualClock, ScaledClock, SimulatedClock, Timer
from mediagen_nb.sandbox.accounts import DEMO_KEY, Accounts
from mediagen_nb.sandbox.agent.access import Access
from mediagen_nb.sandbox.faults import Faults
from mediagen_nb.sandbox.fetch import Unreachable
from mediagen_nb.sandbox.guard import Owner
from mediagen_nb.sandbox.media import MediaSpec, MediaStore
from mediagen_nb.sandbox.outbox import KIND as WEBHOOKS
from mediagen_nb.sandbox.outbox import Outbox
from mediagen_nb.sandbox.uploads import Uploads
from mediagen_nb.sandbox.windows import RollingWindow

_MEDIA_PREFIXES = tuple(PATHS[name].split("{", 1)[0] for name in ("sandbox_media", "sandbox_samples"))
_UPLOADS_PREFIX = PATHS["sandbox_upload"].split("{", 1)[0]
SAVE_SECONDS = 1.0  # real seconds between saves of what timers change


@dataclass(frozen=True)
class SandboxConfig:
    """How a sandbox behaves; every option of ``python -m mediagen_nb.sandbox``."""

    time_scale: float = 1.0  # 60 = a simulated minute passes in one real second
    # "manual": time stands still until advanced (``Sandbox.advance``, ``POST /_sandbox/clock``), for
    # tests on virtual time; time_scale is then unused.
    clock: Literal["scaled", "manual"] = "scaled"
    # Ids, run times, media and random faults are reproducible from an explicit seed; None draws a new
    # one at every start and reset (shown by /_sandbox/info), so a restarted sandbox never repeats ids.
    seed: int | None = None
    allow_private_webhooks: bool = False  # accept and deliver loopback (http or https) webhooks
    deliver_public_webhooks: bool = False  # really POST to public hosts (off: recorded only)
    # Everything the sandbox knows is kept here across restarts (``state.py``), with its uploads and
    # rendered media; None keeps it in memory.
    data_dir: Path | None = None
    # The agent server takes the account's API keys besides OAuth access tokens; False: tokens only.
    agent_keys: bool = True
    webhook_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    # How its answers and bodies spell the names the spec does not show (``mediagen sandbox --wire``).
    wire: Names = DEFAULT
    # A snapshot of a service's catalog to serve (``mediagen sandbox sync``); None serves the bundled one.
    catalog: Path | None = None
    # The owner's secret (``protocol/ownership.py``): with one, the sandbox answers only requests that
    # carry its owner's token, its demo key is the owner's own, and upload and media names are keyed by
    # it (the user's kept sandbox; tests). None: it answers anyone who can reach it.
    secret: bytes | None = field(default=None, repr=False)
    # Names it answers to in Host besides its loopback address at its port (a proxy's; guard.py).
    hosts: tuple[str, ...] = ()


class World:
    """The sandbox's state; ``reset()`` returns it to a fresh demo account.

    With a data folder the state is kept there (``state.py``): a world made on a folder with a saved
    state goes on from it, and :meth:`save` writes what changed.
    """

    def __init__(self, config: SandboxConfig) -> None:
        from mediagen_nb.sandbox.catalog import BUNDLED
        from mediagen_nb.sandbox.catalog.snapshot import read
        from mediagen_nb.sandbox.generation.backend import GenerationBackend
        from mediagen_nb.sandbox.replication.backend import ReplicationBackend
        from mediagen_nb.sandbox.state import State
        from mediagen_nb.sandbox.topic_video.backend import TopicVideoBackend

        self.config = config
        self.wire = config.wire
        self.catalog = read(config.catalog) if config.catalog is not None else BUNDLED
        self.clock: SimulatedClock = (
            ManualClock() if config.clock == "manual" else ScaledClock(config.time_scale)
        )
        self.owner: Owner | None = None
        if config.secret is not None:
            folder = str(config.data_dir.resolve()) if config.data_dir is not None else ""
            self.owner = Owner(config.secret, folder)
        self.demo_key = self.owner.demo_key if self.owner is not None else DEMO_KEY
        names = self.owner.names_key if self.owner is not None else None
        self.media = MediaStore(config.data_dir, name_key=names)
        self.uploads = Uploads(config.data_dir, name_key=names)
        self.outbox = Outbox(
            config.webhook_secret,
            allow_private=config.allow_private_webhooks,
            deliver_public=config.deliver_public_webhooks,
        )
        self._timers: set[Timer] = set()
        self._services = (GenerationBackend, ReplicationBackend, TopicVideoBackend)
        self.state = State(config.data_dir) if config.data_dir is not None else None
        self._asleep = False  # restored from a saved state, its timers not set again yet
        if self.state is not None and self.state.saved():
            self.state.load(self)
            self.accounts.use_demo_key(self.demo_key)  # a state kept with the public key: now the owner's
            self._asleep = True
        else:
            self.reset()

    def build(self, seed: int) -> None:
        """Empty accounts, limits, faults and services, with ids drawn from ``seed``."""
        self.accounts = Accounts(self.clock, self.demo_key)
        self.access = Access(self.clock)
        self.requests = RollingWindow(self.clock, limits.REQUESTS_PER_KEY, limits.WINDOW_SECONDS)
        self.starts = RollingWindow(self.clock, limits.STARTS_PER_ACCOUNT, limits.WINDOW_SECONDS)
        self.seed = seed
        self.faults = Faults(seed)
        self._ids = random.Random(seed)
        self.ids_unsaved = True
        generations, replication, topic = self._services
        self.generations = generations(self)
        self.replication = replication(self)
        self.topic = topic(self)

    def reset(self) -> None:
        """A fresh demo account and no resources (a new seed unless one was given), under a new instance
        id: what was started before is unknown here now. Uploads and rendered media stay."""
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        self.build(self.config.seed if self.config.seed is not None else secrets.randbits(63))
        self.instance = uuid.uuid4().hex  # never from the seed: a replayed session is another instance
        if self.state is not None:
            self.state.wipe(keep=(WEBHOOKS,))  # the outbox outlives a reset
            self.save()

    def new_id(self) -> str:
        """A UUID from the seeded sequence, so a replayed session gets the same ids."""
        self.ids_unsaved = True
        return str(uuid.UUID(int=self._ids.getrandbits(128), version=4))

    def ids_state(self) -> Any:
        """The id generator's position, as saved state."""
        return self._ids.getstate()

    def restore_ids(self, saved: Any) -> None:
        self._ids.setstate(saved)

    def awake(self) -> None:
        """Set again the timers of work that was running when the saved state was written (called with
        the event loop running: on the first request, or when a served sandbox starts)."""
        if self._asleep:
            self._asleep = False
            self.generations.resume()
            self.replication.resume()
            self.topic.resume()

    def save(self, *, clock: bool = False) -> None:
        """Write what changed to the data folder (nothing without one); ``clock``: the clock too."""
        if self.state is not None:
            self.state.save(self, clock=clock)

    async def keep_saving(self) -> None:
        """Save every second what timers change (requests save before they answer); until cancelled."""
        while True:
            await asyncio.sleep(SAVE_SECONDS)
            self.save()

    def close(self) -> None:
        """Save, and let another sandbox use the data folder."""
        if self.state is not None:
            self.save(clock=True)
            self.state.close()
            self.state = None

    def rng(self, *parts: object) -> random.Random:
        """A generator seeded by the sandbox seed and ``parts`` (a resource id, a purpose)."""
        return random.Random(":".join(map(str, (self.seed, *parts))))

    def schedule(self, sim_seconds: float, callback: Callable[[], Any]) -> None:
        """Call ``callback`` after ``sim_seconds`` of simulated time (a clock timer, so jumps and a manual
        clock's advances fire it in time order); cancelled by ``reset()``."""
        holder: list[Timer] = []

        def fire() -> None:
            self._timers.discard(holder[0])
            callback()

        holder.append(self.clock.call_later(sim_seconds, fire))
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
            "instance": self.instance,  # the state's identity: kept across restarts, new on reset
            "pid": os.getpid(),
            "dataDir": str(self.config.data_dir) if self.config.data_dir is not None else None,
            "timeScale": self.clock.scale,
            "clock": self.config.clock,
            "seed": self.seed,
            "seedGiven": self.config.seed is not None,
            "now": self.clock.iso(),
            "allowPrivateWebhooks": self.config.allow_private_webhooks,
            "catalog": self.catalog.describe(),
            "counts": {
                "accounts": len(self.accounts.accounts),
                "keys": len(self.accounts.keys),
                "generations": len(self.generations.items),
                "analyses": len(self.replication.analyses),
                "replicationRuns": len(self.replication.runs),
                "jobs": len(self.topic.jobs),
                "ledgerEntries": len(self.accounts.entries()),
                "webhooks": len(self.outbox.sent),
                "uploads": len(self.uploads.stored()),
                "requests": self.requests.accepted + self.requests.refused,  # with a key, 429s included
                "requestsOverLimit": self.requests.refused,  # 429s of the per-key request limit
                "startsOverLimit": self.starts.refused,  # 429s of the per-account start limit
            },
            "faults": self.faults.describe(),
        }
