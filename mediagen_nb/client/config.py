"""Where the client talks to and with which key: the resolved :class:`Settings` of a connection.

:mod:`~mediagen_nb.client.assemble` resolves them (arguments, then the environment, then the user's
kept sandbox, started through a :class:`Launcher` the top layer registers: the client imports no
sandbox). The key is held in a :class:`Secret` whose ``repr`` never shows it, and reaches a request
only through :class:`BearerAuth`.
"""

import functools
import hashlib
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import httpx

from mediagen_nb.client.errors import ConfigurationError, ConnectionFailed
from mediagen_nb.client.pacing import Limits
from mediagen_nb.protocol.ownership import HEADER as OWNER_HEADER

if TYPE_CHECKING:
    from mediagen_nb.client.spelling import Spelling

CHECK_SECONDS = 2.0  # real seconds between checks that the embedded sandbox runs, and which state it holds


class Secret:
    """An API key that never shows itself in a repr, a log line, a traceback or an exception."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value.strip():
            raise ConfigurationError("api_key must be a non-empty string such as pk_live_...")
        if not (value.strip().isascii() and value.strip().isprintable()):
            # Checked here, without showing the key: httpx's header error would carry it in its args.
            raise ConfigurationError("api_key has a stray non-ASCII or control character; paste it again")
        self._value = value.strip()

    def reveal(self) -> str:
        return self._value

    @property
    def digest(self) -> str:
        """The key's SHA-256: names it where it must be told apart (a limiter's scope), never shows it."""
        return hashlib.sha256(self._value.encode()).hexdigest()

    @property
    def fingerprint(self) -> str:
        """A short hash that tells keys apart without showing them."""
        return self.digest[:8]

    def __repr__(self) -> str:
        return f"Secret(fingerprint={self.fingerprint!r})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("an API key is not pickled")


class BearerAuth(httpx.Auth):
    """``Authorization: Bearer <key>`` on each request, the key revealed only inside :meth:`auth_flow`;
    to a sandbox that answers its owner alone, also its owner's token (``owner``: the one it holds now).

    No dict of headers or ``Bearer ...`` string of ours ever holds the key, so a traceback's locals
    (``%xmode Verbose``) and a saved notebook cannot show it.
    """

    def __init__(self, key: Secret | None, owner: "Callable[[], Secret | None] | None" = None) -> None:
        self.key = key
        self.owner = owner

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self.key is not None:
            request.headers["Authorization"] = "Bearer " + self.key.reveal()
        token = self.owner() if self.owner is not None else None
        if token is not None:
            request.headers[OWNER_HEADER] = token.reveal()
        yield request

    def __repr__(self) -> str:
        return f"BearerAuth({self.key!r})"

    def __reduce__(self) -> Any:
        raise TypeError("an API key is not pickled")


EMBEDDED_SERVICE = "embedded-sandbox"  # every embedded sandbox is one service for usage: demo credits
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"})
DEFAULT_PORTS = {"http": 80, "https": 443}


def on_this_machine(url: str) -> bool:
    """Whether ``url`` is served over plain http from this machine (a sandbox), never the service."""
    parts = urlsplit(url)
    return parts.scheme == "http" and parts.hostname in LOOPBACK_NAMES


@functools.lru_cache(maxsize=256)  # asked twice for each read that reaches the ledger
def normalize_url(base_url: str) -> str:
    """One spelling of a service address: lowercase, no default port, no trailing slash, loopback as
    ``localhost`` (so ``127.0.0.1`` and ``localhost`` are the same service to the ledger)."""
    parts = urlsplit(base_url.strip())
    host = (parts.hostname or "").lower()
    host = "localhost" if host in LOOPBACK_NAMES else host
    port = parts.port if parts.port not in (None, DEFAULT_PORTS.get(parts.scheme.lower())) else None
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme.lower()}://{netloc}{parts.path.rstrip('/')}"


@dataclass(frozen=True)
class Where:
    """Which service a start goes to: ``service`` groups usage, ``instance`` is where its ids are valid."""

    service: str  # EMBEDDED_SERVICE, or the normalized base URL
    instance: str  # the normalized base URL; for the embedded sandbox, ``sandbox:`` + its state's id
    account: str  # the client's account label (``account=``, else the keys' fingerprints)


class Running(Protocol):
    """A kept sandbox found running or started: what a :class:`Launcher` tells of it."""

    @property
    def base_url(self) -> str: ...
    @property
    def time_scale(self) -> float: ...
    @property
    def instance(self) -> str:
        """The identity of its state: the same across restarts, new after a reset."""
        ...

    @property
    def data_dir(self) -> Path: ...
    @property
    def token(self) -> str:
        """The owner's token of this process of it."""
        ...

    @property
    def demo_key(self) -> str: ...
    @property
    def agent_token(self) -> str: ...
    @property
    def started(self) -> bool:
        """Started by this call (else found running)."""
        ...


class Launcher(Protocol):
    """How the user's kept sandbox is found and started: provided by the top layer
    (``mediagen_nb.launcher``), so the client imports no sandbox. A failure to start it is a
    ConnectionFailed (``sent=False``) naming its log."""

    def find(self, data_dir: Path | None = None) -> Running | None:
        """The kept sandbox of ``data_dir`` (None: the user's), proven to be the user's; else None."""
        ...

    def ensure(self, time_scale: float, data_dir: Path | None = None) -> Running:
        """The kept sandbox, found running or started at ``time_scale``."""
        ...


class Embedded:
    """The user's kept sandbox as this process uses it: its address, demo key, clock and identity, and
    the owner's token its requests carry (it answers its owner alone).

    Its identity is the instance id of its state (kept across restarts, new after a reset), not its
    address, so the ledger trusts what it started and nothing a reset or a lost state forgot. Every
    check proves it again (``kept.prove``): a server that cannot is never sent anything.
    """

    def __init__(self, running: Running, launcher: Launcher) -> None:
        self.launcher = launcher
        self.base_url = running.base_url
        self.demo_key = running.demo_key
        self.time_scale = running.time_scale
        self.instance = running.instance
        self.data_dir = running.data_dir
        self.token = Secret(running.token)  # of the sandbox process last proven (new at each restart)
        self.agent_token = Secret(running.agent_token)
        self._checked = time.monotonic()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Embedded sandbox {self.base_url} time x{self.time_scale:g} instance {self.instance}>"

    def check(self, *, now: bool = False) -> None:
        """Learn which state the sandbox holds (at most every CHECK_SECONDS unless ``now``); start it again
        from its state if it died. Blocking: call it off the event loop (a Record step)."""
        with self._lock:
            if not now and time.monotonic() - self._checked < CHECK_SECONDS:
                return
            launcher = self.launcher
            running = launcher.find(self.data_dir) or launcher.ensure(self.time_scale, self.data_dir)
            self._checked = time.monotonic()
            self.instance = running.instance
            self.token = Secret(running.token)
            if running.base_url != self.base_url:
                self.base_url = running.base_url
                raise ConnectionFailed(
                    f"the embedded sandbox now runs at {running.base_url} (started again on another port): "
                    "run mediagen_nb.use('sandbox') (%mediagen use sandbox) or restart the kernel",
                    sent=False,
                )


@dataclass(frozen=True)
class Settings:
    """Resolved connection settings of one client."""

    base_url: str
    keys: tuple[Secret, ...]
    account: str  # scope of the shared generation-start limiter
    limits: Limits
    sandbox: bool  # the embedded sandbox (the user's kept one)
    embedded: Embedded | None = None  # that sandbox, when ``sandbox``
    spelling: "Spelling" = field(default_factory=lambda: _ours())  # names the spec does not show
    owner: Secret | None = None  # the owner's token of a served sandbox that answers its owner alone
    time_scale: float = 1.0  # the service's seconds a real second: what the assembler builds the clock at
    launcher: Launcher | None = field(default=None, repr=False, compare=False)  # finds the kept sandbox

    def owner_token(self) -> Secret | None:
        """The owner's token every request carries to a sandbox that answers its owner alone (the
        embedded one's, of its process proven last), else None."""
        return self.embedded.token if self.embedded is not None else self.owner

    def auth(self, key: Secret | None) -> "BearerAuth | None":
        """How a request carries ``key`` (None: none) and, to such a sandbox, the owner's token."""
        owner = self.owner_token if self.embedded is not None or self.owner is not None else None
        return BearerAuth(key, owner) if key is not None or owner is not None else None

    @property
    def where(self) -> Where:
        instance = normalize_url(self.base_url)
        if self.embedded is not None:
            return Where(EMBEDDED_SERVICE, f"sandbox:{self.embedded.instance}", self.account)
        return Where(EMBEDDED_SERVICE if self.sandbox else instance, instance, self.account)

    def places(self) -> list[tuple[str, str | None]]:
        """Every (service, instance or None for any) under which the ledger may hold starts of this
        connection's service: its own, and for the user's kept sandbox both its state (as the embedded
        sandbox) and its address spelt as a base URL (``localhost`` or ``127.0.0.1``: one spelling)."""
        where = self.where
        if self.embedded is not None:
            return [(where.service, where.instance), (normalize_url(self.embedded.base_url), None)]
        places: list[tuple[str, str | None]] = [(where.service, None)]
        if on_this_machine(self.base_url) and self.launcher is not None:
            running = self.launcher.find()
            if running is not None and normalize_url(running.base_url) == where.instance:
                places.append((EMBEDDED_SERVICE, f"sandbox:{running.instance}"))
        return places

    def check(self, *, now: bool = False) -> None:
        """For the embedded sandbox: that it runs, and which state it holds (see :meth:`Embedded.check`)."""
        if self.embedded is not None:
            self.embedded.check(now=now)

    @property
    def service_name(self) -> str:
        """Where this connection goes, for banners: ``the embedded sandbox`` or the host."""
        return "the embedded sandbox" if self.sandbox else (urlsplit(self.base_url).netloc or self.base_url)


def _ours() -> "Spelling":
    """Our spelling of the names the spec does not show (imported here: the spelling reads the resources)."""
    from mediagen_nb.client.spelling import from_file

    return from_file(None)
