"""The process's one connection: the client every magic, form, sweep and CLI command uses.

It follows the environment (``MEDIAGEN_API_KEY`` / ``MEDIAGEN_BASE_URL``, else the embedded
sandbox) until :func:`use` says otherwise. ``mediagen_nb.use(...)``, ``%mediagen use`` and
``%mediagen key`` switch every layer at once, so a sweep never runs on a service the notebook
has left.
"""

import threading
from typing import Any

from mediagen_nb.client.clients import AsyncClient, BaseClient, Client
from mediagen_nb.client.context import PROCESS
from mediagen_nb.client.errors import ConfigurationError

SANDBOX, SERVICE = "sandbox", "service"

_lock = threading.Lock()


def current() -> Client:
    """The current client (made from the environment on first use)."""
    with _lock:
        if PROCESS.client is None:
            PROCESS.client = Client()
        return PROCESS.client


def use(target: "BaseClient | str | None" = None, **options: Any) -> Client | None:
    """Make ``target`` the connection of every layer, and return it.

    ``target`` is a client, ``"sandbox"`` (the embedded sandbox), ``"service"`` (the environment's
    key and address, or ``api_key=`` / ``base_url=``), or None to go back to the environment's
    choice on next use (then None is returned). ``options`` are passed to :class:`Client`.
    """
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


def async_current() -> AsyncClient:
    """An AsyncClient on the current connection (same service, keys, limiters, ledger and budget)."""
    client = current()
    with _lock:
        if PROCESS.async_client is None or PROCESS.async_client.settings is not client.settings:
            PROCESS.async_client = AsyncClient.like(client)
        return PROCESS.async_client
