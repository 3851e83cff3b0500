"""The sandbox: a faithful local emulator of the whole service, with real HTTP, credits and media.

Shaped like moto: per API a package (``generation/``, ``replication/``, ``topic_video/``) with a backend
(``backend.py``: state and rules, plain arguments) and handlers (``handlers.py``: the only code reading
requests), all mounted by the one route table, ``routes.py``. Where to change:

* a price, a run time or a model's inputs: ``catalog/models.toml`` (data; ``pricing.py`` computes prices);
* an error message: ``mediagen_nb/protocol/messages.py`` (status words: ``protocol/states.py``);
* a start check, idempotency, charging, refunds or time limits: ``lifecycle.py`` for what every paid
  start shares, the API's ``backend.py`` for its own rules;
* a ``/_sandbox/`` control: ``control.py`` (uploads: ``uploads.py``), a fault: ``faults.py``.

It imports nothing from the client; the rules it shares with the client live in ``mediagen_nb.protocol``.
The names below load on first use, so a client that only finds the user's kept sandbox (``kept.py``)
does not load the server.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mediagen_nb.sandbox.accounts import DEMO_KEY
    from mediagen_nb.sandbox.app import create_app
    from mediagen_nb.sandbox.server import Sandbox
    from mediagen_nb.sandbox.world import SandboxConfig

__all__ = ["DEMO_KEY", "Sandbox", "SandboxConfig", "create_app"]
_HOMES = {
    "DEMO_KEY": "mediagen_nb.sandbox.accounts",
    "create_app": "mediagen_nb.sandbox.app",
    "Sandbox": "mediagen_nb.sandbox.server",
    "SandboxConfig": "mediagen_nb.sandbox.world",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'mediagen_nb.sandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
