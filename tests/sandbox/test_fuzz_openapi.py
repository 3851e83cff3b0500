"""schemathesis fuzzes the sandbox's own ``openapi.json`` (``/v1/run``, ``/v1/generations/{id}``): no 5xx.

Its engine runs the phases its command line runs: the document's examples, the coverage phase (every
boundary and every negative value the document implies: about 1,750 cases on ``/v1/run``) and 60 fuzzed
cases an operation, valid and invalid (``mode: all``: wrong types, bad JSON, no key), against the in-process
app with the demo key; the resolver is stubbed so nothing leaves the machine (fuzzed media URLs and webhooks
name random hosts). The engine runs inside the test: schemathesis's pytest integration built the coverage
cases at collection, 8 CPU-s in every xdist worker, three of which never run the test (and its lazy
``from_fixture`` does not run on pytest 9).
"""

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from schemathesis.engine import Status, events, from_schema

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import DEMO_KEY, Sandbox, SandboxConfig

_real_getaddrinfo = socket.getaddrinfo
CONFIG = {
    "generation": {"mode": "all", "max-examples": 60, "database": "none"},
    "headers": {"Authorization": f"Bearer {DEMO_KEY}"},
    "checks": {"enabled": False, "not_a_server_error": {"enabled": True}},
    "phases": {"stateful": {"enabled": False}},  # the document has no links between its operations
}


def _loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host in ("127.0.0.1", "::1", "localhost"):
        return _real_getaddrinfo(host, *args, **kwargs)
    raise socket.gaierror(socket.EAI_NONAME, "no network in the fuzz test")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse to resolve any host but loopback, so no fuzzed URL reaches the network."""
    monkeypatch.setattr(socket, "getaddrinfo", _loopback_only)
    yield


def fuzz(app: Any, **changes: Any) -> tuple[dict[tuple[str, str], int], list[str]]:
    """Cases run per (phase, operation), and each failed check as 'operation: check: what'."""
    config = schemathesis.config.SchemathesisConfig.from_dict(CONFIG | changes)
    schema = schemathesis.openapi.from_asgi(path("openapi"), app, config=config)
    cases: dict[tuple[str, str], int] = {}
    failures: list[str] = []
    for event in from_schema(schema).execute():
        if isinstance(event, events.FatalError | events.NonFatalError):
            failures.append(f"{type(event).__name__}: {event.info if hasattr(event, 'info') else event}")
        if not isinstance(event, events.ScenarioFinished) or event.status is Status.SKIP:
            continue
        cases[(event.phase.name, str(event.label))] = len(event.recorder.cases)
        if event.status in (Status.FAILURE, Status.ERROR):
            checks = [c for run in event.recorder.checks.values() for c in run if c.status is Status.FAILURE]
            said = [f"{event.label}: {c.name}: {c.failure_info}" for c in checks]
            failures += said or [f"{event.label}: an error"]
    return cases, failures


def test_no_server_errors() -> None:
    sandbox = Sandbox(SandboxConfig(time_scale=100_000, seed=1))  # a minute's rate window passes in 0.6 ms
    cases, failures = fuzz(sandbox.in_process())
    assert failures == []
    assert cases[("COVERAGE", "POST /v1/run")] > 1000 and cases[("FUZZING", "POST /v1/run")] == 60, cases
    assert cases[("FUZZING", "GET /v1/generations/{id}")] == 60, cases


def test_a_server_error_fails_the_fuzzing() -> None:
    """The check is live: the same engine against an app that answers one request in seven with a 500."""
    app = Sandbox(SandboxConfig(time_scale=100_000, seed=1)).in_process()
    seen = [0]

    async def broken(scope: Any, receive: Any, send: Any) -> None:
        seen[0] += scope["type"] == "http"
        if scope["type"] == "http" and seen[0] % 7 == 0 and scope["path"] != "/openapi.json":
            await send({"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    _, failures = fuzz(broken, phases={"stateful": {"enabled": False}, "coverage": {"enabled": False}})
    assert any("not_a_server_error" in f for f in failures), failures
