"""The one place a client is put together: its collaborators built from the settings and the process.

Every other module of the client receives what it uses; only this one reads the process's state
(:data:`~mediagen_nb.client.context.PROCESS`) and the environment (:mod:`.settings`). It resolves a
connection (arguments, then ``MEDIAGEN_*``, then the user's kept sandbox, started through the
:class:`~mediagen_nb.client.config.Launcher` the top layer registers), makes the one clock a client
waits on, in the service's seconds, and hands the engine its limits store, ledger, budget and notice
sink. It also keeps the process's connection (:func:`current`, :func:`use`).
"""

import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mediagen_nb.client import context, settings
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client import limits_store as stores
from mediagen_nb.client.config import (
    OWNER_HEADER,
    Embedded,
    Launcher,
    Running,
    Secret,
    Settings,
    normalize_url,
)
from mediagen_nb.client.context import PROCESS
from mediagen_nb.client.engine import Engine
from mediagen_nb.client.errors import ConfigurationError
from mediagen_nb.client.pacing import Limits
from mediagen_nb.client.retry import RetryPolicy
from mediagen_nb.client.spending import Budget
from mediagen_nb.client.timing import ServiceClock
from mediagen_nb.protocol.paths import SERVICE_BASE_URL
from mediagen_nb.runtime.clock import REAL, Clock

if TYPE_CHECKING:
    from mediagen_nb.client.clients import AsyncClient, BaseClient, Client

__all__ = ["Running"]

# -- the embedded sandbox ----------------------------------------------------------------------

_launchers: list[Launcher] = []


def register_launcher(launcher: Launcher) -> None:
    """The top layer's way to start the user's kept sandbox (``mediagen_nb.launcher`` registers it)."""
    _launchers[:] = [launcher]


def launcher() -> Launcher:
    if not _launchers:
        raise ConfigurationError(
            "no embedded sandbox launcher is registered (import mediagen_nb.launcher): set "
            f"{settings.ENV_KEY} and {settings.ENV_BASE_URL} to use the service"
        )
    return _launchers[0]


_embedded_lock = threading.Lock()


def embedded_sandbox() -> Embedded:
    """The user's kept sandbox, found running or started on first use, and said once per process."""
    with _embedded_lock:
        if PROCESS.embedded is None:
            scale = settings.time_scale() or settings.EMBEDDED_TIME_SCALE
            start = launcher()
            running = start.ensure(scale)
            PROCESS.embedded = Embedded(running, start)
            how = "started" if running.started else "using"
            clock = f"time x{running.time_scale:g}"
            if running.time_scale != scale:
                clock += f", not the x{scale:g} asked: it was running (mediagen sandbox stop, to change it)"
            context.notice(
                f"mediagen_nb: {how} the embedded sandbox at {running.base_url} ({clock}, demo credits, "
                f"nothing real is charged; kept in {running.data_dir}, mediagen sandbox stop ends it)"
            )
        return PROCESS.embedded


def _embedded_at(base_url: str) -> Embedded | None:
    """The embedded sandbox this process uses, if ``base_url`` is its address."""
    running = PROCESS.embedded
    if running is None or normalize_url(base_url) != normalize_url(running.base_url):
        return None
    return running


def resolve(
    api_key: str | Sequence[str] | None,
    base_url: str | None,
    *,
    account: str | None = None,
    limits: Limits | None = None,
    sandbox: bool = False,
    wire: str | None = None,
    time_scale: float | None = None,
) -> Settings:
    """Settings from arguments, else ``MEDIAGEN_API_KEY`` / ``MEDIAGEN_BASE_URL``, else the sandbox.

    ``sandbox=True`` uses the embedded sandbox whatever the environment says. ``wire`` is a names file
    (else ``MEDIAGEN_WIRE``; the embedded sandbox speaks ours). A key given for the address of the
    embedded sandbox this process uses (one of its own keys, ``POST /_sandbox/keys``) is used there, with
    the owner's token it answers to. ``time_scale`` (the service's seconds a real second: a time-scaled
    sandbox's) is else the embedded sandbox's, else ``MEDIAGEN_TIME_SCALE``, else the service's 1.
    """
    from mediagen_nb.client.spelling import from_file  # it reads the resources: loaded on use

    if not sandbox:
        api_key = api_key if api_key is not None else settings.api_key()
        base_url = base_url or settings.base_url()
    raw_keys = api_key
    sandbox = sandbox or (raw_keys is None and base_url is None)
    embedded = None
    if sandbox:
        embedded = embedded_sandbox()
        raw_keys, base_url = embedded.demo_key, embedded.base_url
    elif base_url is not None and (embedded := _embedded_at(base_url)) is not None:
        sandbox = True
    if raw_keys is None:
        raise ConfigurationError(
            f"no API key: pass api_key= or set {settings.ENV_KEY} (the sandbox prints its demo key)"
        )
    base_url = base_url or SERVICE_BASE_URL
    if base_url is None:
        raise ConfigurationError(
            f"no base URL: set {settings.ENV_BASE_URL} to the service's address (the spec's {{base_url}}), "
            "or unset the key to use the embedded sandbox"
        )
    # A key never holds a comma: "pk_live_a,pk_live_b" (as MEDIAGEN_API_KEY, where each process of a Ray or
    # Daft run reads its keys) is a pool of keys of one account, as a list is.
    given = [k for k in raw_keys.split(",") if k.strip()] if isinstance(raw_keys, str) else raw_keys
    keys = tuple(Secret(k) for k in given)
    if not keys:
        raise ConfigurationError("api_key: give at least one key")
    if time_scale is None and embedded is not None:
        time_scale = embedded.time_scale
    elif time_scale is None:
        time_scale = settings.time_scale() or settings.SERVICE_TIME_SCALE
    # Keys named as one account share its start limit in every process; else the keys given are one.
    account = account or settings.account() or "keys:" + ",".join(sorted(k.fingerprint for k in keys))
    spelling = from_file(None if embedded is not None else wire or settings.wire_path())
    found = _launchers[0] if _launchers else None
    return Settings(
        base_url.rstrip("/"),
        keys,
        account,
        limits or Limits(),
        sandbox,
        embedded,
        spelling,
        time_scale=time_scale,
        launcher=found,
    )


def for_sandbox(sandbox: Any, options: dict[str, Any], base_url: str) -> None:
    """A client of ``sandbox`` paces itself to its clock: its time scale, or on a manual clock a stepping
    clock (each wait advances the sandbox) in the sandbox's seconds. To a sandbox that answers its owner
    alone, its requests carry the owner's token (a test holds the sandbox itself)."""
    manual = sandbox.config.clock == "manual"
    options.setdefault("time_scale", 1.0 if manual else sandbox.config.time_scale)
    if manual:
        options.setdefault("clock", sandbox.stepping_clock())
    token = sandbox.owner_headers.get(OWNER_HEADER)
    if token is not None and "settings" not in options:
        account, limits, wire, scale = (
            options.pop(name, None) for name in ("account", "limits", "wire", "time_scale")
        )
        resolved = resolve(
            sandbox.demo_key, base_url, account=account, limits=limits, wire=wire, time_scale=scale
        )
        options["settings"] = replace(resolved, owner=Secret(token))


# -- what the engine is handed -------------------------------------------------------------------


class Notices:
    """The engine's notice sink: lines said to the user (once each, where asked), through
    :func:`~mediagen_nb.client.context.notice`."""

    def say(self, text: str) -> None:
        context.notice(text)

    def once(self, topic: str, text: str) -> None:
        """Say ``text`` unless this process said a line of ``topic`` already."""
        with _told_lock:
            if topic in PROCESS.told:
                return
            PROCESS.told.add(topic)
        context.notice(text)

    def warn(self, text: str) -> None:
        print(f"mediagen_nb: {text}", file=sys.stderr)


_told_lock = threading.Lock()
NOTICES = Notices()
_session_lock = threading.Lock()


def session_budget() -> Budget:
    """The process's budget (``MEDIAGEN_BUDGET`` read on first use)."""
    with _session_lock:
        if PROCESS.budget is None:
            PROCESS.budget = Budget(settings.budget())
        return PROCESS.budget


_opened_lock = threading.Lock()


def shared_ledger(path: str | Path | None = None) -> ledgers.Ledger:
    """The process's ledger at ``path`` (default: ``MEDIAGEN_LEDGER``, else the user's), opened once."""
    wanted = Path(path).expanduser() if path is not None else settings.ledger_path()
    with _opened_lock:
        if wanted not in PROCESS.ledgers:
            PROCESS.ledgers[wanted] = ledgers.Ledger(wanted)
        return PROCESS.ledgers[wanted]


def as_ledger(ledger: "ledgers.Ledger | str | Path | None") -> ledgers.Ledger:
    """A Ledger from a Ledger, a path, or None (the process's default)."""
    return ledger if isinstance(ledger, ledgers.Ledger) else shared_ledger(ledger)


_stores_lock = threading.RLock()  # opening a Redis store opens its fallback under it


def limits_store(url: str | None = None) -> stores.Store:
    """The limits store at ``url`` (default: ``MEDIAGEN_LIMITS_URL``, else the machine's file), one per
    process."""
    wanted = url if url is not None else settings.limits_url()
    with _stores_lock:
        if wanted not in PROCESS.stores:
            PROCESS.stores[wanted] = stores.open_store(
                wanted, settings.limits_path(), lambda: limits_store(""), settings.ENV_LIMITS_URL
            )
        return PROCESS.stores[wanted]


def agent_token(url: str) -> Secret | None:
    """The access token for the agent server at ``url``: this process's sign-in, else the environment's."""
    token = PROCESS.agent_tokens.get(url)
    if token is None and settings.agent_token():
        token = Secret(settings.agent_token() or "")
    return token


def agent_server() -> str:
    """The current connection's agent (MCP) server: ``MEDIAGEN_MCP_URL``, else a sandbox's own."""
    from mediagen_nb.client.agent import mcp_url

    return mcp_url(current().settings, settings.mcp_url())


def signed_in(url: str, token: Secret) -> None:
    """This process signed in to the agent server at ``url`` (kept in memory only)."""
    PROCESS.agent_tokens[url] = token


def engine(
    settings_: Settings,
    retry: RetryPolicy,
    timeout: float,
    ledger: "ledgers.Ledger | str | None",
    machine: Clock,
) -> Engine:
    """An engine for ``settings_`` with every collaborator it uses.

    Its clock runs in the service's seconds: ``machine`` (the wall clock, or a manual sandbox's stepping
    clock) at the settings' time scale, converted here once. On the wall clock the limiters' windows are
    shared with every process (the store ``MEDIAGEN_LIMITS_URL`` names); on another clock a client paces
    alone, on that clock.
    """
    from mediagen_nb.client.core import Collaborators, Core

    clock = ServiceClock(machine, settings_.time_scale)
    windows = (
        limits_store(settings_.limits.url) if machine is REAL else stores.SQLiteStore(":memory:", machine.now)
    )
    parts = Collaborators(
        clock=clock,
        windows=windows,
        budget=session_budget(),
        ledger=lambda override: as_ledger(override if override is not None else ledger),
        notices=NOTICES,
        agent_token=agent_token,
        mcp_url=settings.mcp_url,
        marketing_wait=settings.marketing_wait,
    )
    return Engine(Core(settings_, retry, timeout, parts))


# -- the process's connection ------------------------------------------------------------------

SANDBOX, SERVICE = "sandbox", "service"
_lock = threading.Lock()


def current() -> "Client":
    """The current client (made from the environment on first use)."""
    from mediagen_nb.client.clients import Client

    with _lock:
        if PROCESS.client is None:
            PROCESS.client = Client()
        return PROCESS.client


def use(target: "BaseClient | str | None" = None, **options: Any) -> "Client | None":
    """Make ``target`` the connection of every layer, and return it.

    ``target`` is a client, ``"sandbox"`` (the embedded sandbox), ``"service"`` (the environment's
    key and address, or ``api_key=`` / ``base_url=``), or None to go back to the environment's
    choice on next use (then None is returned). ``options`` are passed to :class:`Client`.
    """
    from mediagen_nb.client.clients import AsyncClient, Client

    if target is None:
        chosen = None
    elif isinstance(target, Client):
        chosen = target
    elif isinstance(target, AsyncClient):
        chosen = Client(settings=target.settings)
    elif target == SANDBOX:
        chosen = Client(sandbox=True, **options)
    elif target == SERVICE:
        chosen = Client(**options)
        if chosen.settings.sandbox:
            raise ConfigurationError(
                "use('service'): no key; set MEDIAGEN_API_KEY and MEDIAGEN_BASE_URL, pass api_key= and "
                "base_url=, or type the key with %mediagen key"
            )
    else:
        raise ConfigurationError(f"use: give a Client, 'sandbox' or 'service', not {target!r}")
    with _lock:
        PROCESS.client = chosen
        PROCESS.async_client = target if isinstance(target, AsyncClient) else None
    return chosen


def async_current() -> "AsyncClient":
    """An AsyncClient on the current connection (same service, keys, limiters, ledger and budget)."""
    from mediagen_nb.client.clients import AsyncClient

    client = current()
    with _lock:
        if PROCESS.async_client is None or PROCESS.async_client.settings is not client.settings:
            PROCESS.async_client = AsyncClient.like(client)
        return PROCESS.async_client
