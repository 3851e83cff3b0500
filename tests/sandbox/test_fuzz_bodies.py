"""Hypothesis fuzzes the bodies of the endpoints the OpenAPI document does not cover: no 5xx, and every
refusal in the spec's error shape (a JSON object, or a plain string for 429)."""

import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import DEMO_KEY, Sandbox, SandboxConfig

_real_getaddrinfo = socket.getaddrinfo
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
URLS = st.sampled_from(
    [
        "https://www.youtube.com/shorts/abc",
        "https://[::1/x.mp4",
        "http://127.0.0.1:1/a.mp4",
        "https://x.test/v.mov",
        "",
    ]
)
FIELDS: dict[str, list[str]] = {
    "analyze": ["url"],
    "replicate": [
        "modelId",
        "quality",
        "accuracy",
        "clips",
        "characterImage",
        "captions",
        "audio",
        "marketingAspect",
        "webhook",
    ],
    "job_start": [getattr(wire, name) for name in dir(wire) if name.startswith("JOB_") and name.isupper()][
        :10
    ],
    "reedit": [wire.JOB_FLOW, wire.JOB_CAPTIONS, wire.JOB_MUSIC],
    "estimate": ["modelId", "input"],
    "sandbox_keys": ["name", "monthlyCap", "state", "expires", "account"],
    "sandbox_account": ["account", "balance", "plan", "suspended"],
    "sandbox_faults": ["rates", "script", "modelScript", "routes", "slowSeconds", "seed"],
    "sandbox_clock": ["advance"],
}


def _loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host in ("127.0.0.1", "::1", "localhost"):
        return _real_getaddrinfo(host, *args, **kwargs)
    raise socket.gaierror(socket.EAI_NONAME, "no network in the fuzz test")


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    """A served sandbox with a fast clock, resolving loopback names only, and a client with the demo key."""
    with (
        pytest.MonkeyPatch.context() as patch,
        Sandbox(SandboxConfig(time_scale=100_000, seed=3, allow_private_webhooks=True)) as sandbox,
    ):
        patch.setattr(socket, "getaddrinfo", _loopback_only)
        assert sandbox.base_url is not None
        with httpx.Client(
            base_url=sandbox.base_url, headers={"Authorization": f"Bearer {DEMO_KEY}"}, timeout=30
        ) as http:
            yield http


def _body(field_names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={name: VALUES | URLS for name in field_names})


def _target(client: httpx.Client, name: str) -> str:
    if name == "replicate":
        started = client.post(path("analyze"), json={"url": "https://www.youtube.com/shorts/fuzz"}).json()
        return path(name, id=started["data"]["analysisId"]) if "data" in started else path(name, id="x")
    if name == "reedit":
        started = client.post(path("job_start"), json={"seconds": 20}).json()
        return path(name, id=started["data"]["jobId"]) if "data" in started else path(name, id="x")
    return path(name)


@pytest.mark.parametrize("name", list(FIELDS))
def test_json_bodies_never_break_the_sandbox(client: httpx.Client, name: str) -> None:
    url = _target(client, name)

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(body=_body(FIELDS[name]) | VALUES)
    def post(body: Any) -> None:
        response = client.post(url, json=body)
        assert response.status_code < 500, response.text[:300]
        if response.status_code >= 400:
            refusal = response.json()
            assert isinstance(refusal, str) or set(refusal) == {"statusCode", "message", "error"}, refusal

    post()
    client.post(path("sandbox_faults"), json={})
    client.post(path("sandbox_account"), json={"balance": 3000, "suspended": False})
    assert client.get(path("sandbox_info")).status_code == 200
