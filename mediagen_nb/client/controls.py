"""A sandbox's own controls (``/_sandbox/``: its ledger, account, keys, faults, clock), from a client.

Notebooks and tests set a situation up and check what was charged through them. They go through the
client's one request path, so a request to the user's kept sandbox carries the owner's token with the
key (it answers its owner alone), and a refusal is one of our errors. On the service they are refused
before anything is sent: it has no ``/_sandbox/``.
"""

from collections.abc import Mapping
from typing import Any

from mediagen_nb.client import errors
from mediagen_nb.client.core import Core
from mediagen_nb.client.steps import Call, Op
from mediagen_nb.protocol.paths import PATHS

METHODS = frozenset({"GET", "POST", "PUT"})


class Controls:
    """The ``/_sandbox/`` controls of a client's sandbox."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def sandbox_control(
        self,
        method: str,
        control: str,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
    ) -> Op[Any]:
        """Call the sandbox control ``control`` (``ledger``, ``account``, ``keys``, ``faults``, ``clock``,
        ``app-runs``, ``webhooks``, ``info``, ``reset``) with ``method`` and return its ``data``.

        ``body`` is the JSON body, ``query`` the query string (``{"resourceId": id}`` for the ledger).
        On the user's kept sandbox the request carries its owner's token, which no other caller has.
        """
        name = "sandbox_" + str(control).replace("-", "_")
        if self.core.sandbox_url() is None:
            raise errors.ConfigurationError(
                f"sandbox_control: {self.core.settings.base_url} is the service, which has no /_sandbox/ "
                "controls; they are a sandbox's"
            )
        if name not in PATHS or "{" in PATHS[name] or method.upper() not in METHODS:
            controls = sorted(
                k.removeprefix("sandbox_").replace("_", "-")
                for k, v in PATHS.items()
                if k.startswith("sandbox_") and "{" not in v
            )
            raise errors.ValidationError(
                f"sandbox_control: no control {method} {control!r}; the controls: {', '.join(controls)}",
                sent=False,
            )
        return (yield from self.core.send(Call(method.upper(), name, query=query, body=body)))
