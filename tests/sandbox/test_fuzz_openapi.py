"""schemathesis fuzzes the sandbox's own ``openapi.json`` (``/v1/run``, ``/v1/generations/{id}``): no 5xx.

Valid and invalid requests (``GenerationMode.all``) go to the in-process app with the demo key; the
resolver is stubbed so nothing leaves the machine (fuzzed media URLs and webhooks name random hosts).
Bounded in examples and with no deadline, so it finishes well within a minute on a loaded machine.
"""

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import DEMO_KEY, Sandbox, SandboxConfig

SANDBOX = Sandbox(SandboxConfig(time_scale=100_000, seed=1))  # a minute's rate window passes in 0.6 ms
# "all": positive cases (valid per the document) and negative ones (wrong types, bad JSON, no key).
CONFIG = schemathesis.config.SchemathesisConfig.from_dict({"generation": {"mode": "all"}})
schema = schemathesis.openapi.from_asgi(path("openapi"), SANDBOX.in_process(), config=CONFIG)
_real_getaddrinfo = socket.getaddrinfo


def _loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host in ("127.0.0.1", "::1", "localhost"):
        return _real_getaddrinfo(host, *args, **kwargs)
    raise socket.gaierror(socket.EAI_NONAME, "no network in the fuzz test")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse to resolve any host but loopback, so no fuzzed URL reaches the network."""
    monkeypatch.setattr(socket, "getaddrinfo", _loopback_only)
    yield


@schema.parametrize()
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_no_server_errors(case: schemathesis.Case) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {DEMO_KEY}"}, checks=[not_a_server_error])
