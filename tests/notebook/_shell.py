"""A notebook for tests: a real IPython ``InteractiveShell`` with ``%load_ext mediagen_nb``.

``nb`` is a fresh shell whose session client talks to a sandbox served on 127.0.0.1 (time x600,
seed 1); every request that client sends is recorded, so a test can tell that a refused option or
a client-side validation sent nothing, and the sandbox's own ledger says what was charged.
"""

from dataclasses import dataclass, field
from typing import Any

import httpx
from IPython.core.error import UsageError
from IPython.core.interactiveshell import ExecutionResult, InteractiveShell

from mediagen_nb.client import Client, Generation
from mediagen_nb.notebook.session import SESSION
from mediagen_nb.protocol.paths import PATHS
from mediagen_nb.sandbox import Sandbox

TIME_SCALE = 600.0


@dataclass
class Notebook:
    """A shell with the extension loaded, its sandbox, the session client and what that client sent."""

    shell: InteractiveShell
    sandbox: Sandbox
    control: httpx.Client  # the sandbox's /_sandbox/ endpoints
    requests: list[httpx.Request] = field(default_factory=list)
    transports: list[httpx.Client] = field(default_factory=list)  # closed after the test

    def http(self) -> httpx.Client:
        """An httpx client that records every request into ``requests``."""
        client = httpx.Client(event_hooks={"request": [self.requests.append]})
        self.transports.append(client)
        return client

    @property
    def ns(self) -> dict[str, Any]:
        return self.shell.user_ns

    def run(self, source: str) -> ExecutionResult:
        """Run one cell as a notebook would."""
        return self.shell.run_cell(source)

    def ok(self, source: str) -> Any:
        """Run a cell that must succeed; its value."""
        result = self.run(source)
        assert result.success, result.error_in_exec or result.error_before_exec
        return result.result

    def usage_error(self, source: str) -> str:
        """Run a cell that must fail with one error line (a MagicError: an error output, no traceback)."""
        result = self.run(source)
        error = result.error_in_exec
        assert isinstance(error, UsageError) and type(error).__name__ == "MagicError", repr(error)
        assert len(error._render_traceback_()) == 1  # type: ignore[attr-defined]
        return str(error)

    def error_kind(self, source: str) -> tuple[str, str]:
        """Run a cell that must fail; the kind and message of its one error line."""
        result = self.run(source)
        error = result.error_in_exec
        assert error is not None and type(error).__name__ == "MagicError", repr(error)
        return error.kind, str(error)  # type: ignore[attr-defined]

    def sent(self, endpoint: str, method: str | None = None) -> list[httpx.Request]:
        """Requests the session client sent to ``endpoint`` (a name in ``PATHS`` without parameters)."""
        return [
            r
            for r in self.requests
            if r.url.path == PATHS[endpoint] and (method is None or r.method == method)
        ]

    def post(self, control: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.control.post(PATHS[control], json=body)
        response.raise_for_status()
        return response.json()["data"]

    def balance(self) -> int:
        return int(self.control.get(PATHS["sandbox_account"]).json()["data"]["balance"])

    def new_key(self, **body: Any) -> str:
        return str(self.post("sandbox_keys", body)["key"])

    def use_key(self, key: str) -> None:
        """Make the magics use ``key`` on this sandbox (recorded like the fixture's client)."""
        SESSION.use(
            Client(
                key,
                base_url=self.sandbox.base_url,
                time_scale=TIME_SCALE,
                http_client=self.http(),
            )
        )

    def charges(self) -> list[dict[str, Any]]:
        """The sandbox's own ledger: every charge (net of nothing; refunds are separate entries)."""
        return [e for e in self.sandbox.world.accounts.ledger if e["kind"] == "charge"]

    def use_on(self, sandbox: Sandbox) -> None:
        """Point the magics at another sandbox (recorded like the fixture's client)."""
        SESSION.use(
            Client(
                sandbox.demo_key,
                base_url=sandbox.base_url,
                time_scale=sandbox.config.time_scale,
                http_client=self.http(),
            )
        )

    def generation(self, result: Generation) -> Any:
        """The sandbox's own record of a generation (what it really received)."""
        return self.sandbox.world.generations.items[result.id]


def assert_short(message: str, starts: str) -> None:
    """An error as the magics show it: one short line, ``<status> <the service's message>`` for an
    answer of the service, the message alone for what was refused before sending."""
    assert message.startswith(starts), message
    assert "\n" not in message and len(message) < 300, message
    assert "Traceback" not in message
