"""No malformed input breaks the sandbox (issue 10): every bad body, URL and control value is a 4xx in
the spec's error shape, never a 500, and leaves the state as it was (nothing charged, a sane clock)."""

import json
from typing import Any

import httpx
import pytest

from mediagen_nb.protocol import states
from mediagen_nb.protocol.paths import PATHS, path
from mediagen_nb.sandbox import Sandbox

pytestmark = pytest.mark.anyio

RUN = {"modelId": "gpt-image-2", "input": {"prompt": "a kite", "quality": "low"}}
DEEP_LIST = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 200 + b"1" + b"}" * 200
HUGE_INT = b'{"modelId": ' + b"9" * 5000 + b"}"

# Raw bodies no JSON endpoint accepts.
RAW_BODIES: list[bytes] = [
    b"{not json",
    b"\xff\xfe\xfa",  # not UTF-8
    b"[]",
    b'"a string"',
    b"5",
    b"null",
    b'{"modelId": NaN}',
    b'{"modelId": Infinity}',
    b'{"modelId": -Infinity}',
    b'{"modelId": 1e400}',
    b'{"modelId": "\\udce9"}',  # a lone surrogate
    b'{"input": {"prompt": "caf\\udce9"}, "modelId": "gpt-image-2"}',
    b'{"\\ud800": 1}',
    DEEP_LIST,
    DEEP_OBJECT,
    HUGE_INT,
]
JSON_ENDPOINTS = [
    ("POST", path("run")),
    ("POST", path("estimate")),
    ("POST", path("analyze")),
    ("POST", path("job_start")),
    ("POST", path("sandbox_keys")),
    ("POST", path("sandbox_account")),
    ("POST", path("sandbox_faults")),
    ("POST", path("sandbox_clock")),
]


def assert_refused(response: httpx.Response, status: int = 400) -> dict[str, Any]:
    """A refusal in the spec's shape: ``{statusCode, message, error}`` with a one-line message."""
    assert response.status_code == status, response.text[:300]
    body = response.json()
    assert set(body) == {"statusCode", "message", "error"}, body
    assert body["statusCode"] == status and "\n" not in body["message"] and "Traceback" not in body["message"]
    return body


async def assert_untouched(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """Nothing charged, the demo balance intact, the clock sane, and the controls still answer."""
    assert (await api.get(path("sandbox_ledger"))).json()["data"]["entries"] == []
    account = (await api.get(path("sandbox_account"))).json()["data"]
    assert account["balance"] == 3000 and account["suspended"] is False
    info = await api.get(path("sandbox_info"))
    assert info.status_code == 200 and info.json()["data"]["now"].startswith("2")
    assert (await api.post(path("estimate"), json=RUN)).status_code == 200
    assert not sandbox.world.generations.items and not sandbox.world.topic.jobs


@pytest.mark.parametrize(("method", "url"), JSON_ENDPOINTS)
async def test_bodies_that_are_not_json_objects(
    api: httpx.AsyncClient, sandbox: Sandbox, method: str, url: str
) -> None:
    for raw in RAW_BODIES:
        response = await api.request(method, url, content=raw, headers={"Content-Type": "application/json"})
        assert_refused(response)
    await assert_untouched(api, sandbox)


BAD_FIELDS: list[tuple[str, str, Any]] = [
    # Generation API
    ("POST", path("run"), {"modelId": 5, "input": {}}),
    ("POST", path("run"), {"modelId": ["gpt-image-2"], "input": {}}),
    ("POST", path("run"), {"modelId": {"id": 1}, "input": {}}),
    ("POST", path("run"), {"modelId": "gpt-image-2", "input": []}),
    ("POST", path("run"), {"modelId": "gpt-image-2", "input": "a kite"}),
    ("POST", path("run"), {"modelId": "gpt-image-2", "input": {"prompt": ["x"]}}),
    ("POST", path("run"), {"modelId": "gpt-image-2", "input": {"prompt": "x", "quality": {"a": 1}}}),
    ("POST", path("run"), {"modelId": "gpt-image-2", "input": {"prompt": {"x": [1, 2]}}}),
    ("POST", path("run"), {"modelId": "flare-1-dev", "input": {"prompt": "x", "seed": 10**300}}),
    ("POST", path("run"), {"modelId": "flare-1-dev", "input": {"prompt": "x", "seed": 1e300}}),
    ("POST", path("run"), {**RUN, "webhook": 5}),
    ("POST", path("run"), {**RUN, "webhook": "https://[::1/h"}),
    ("POST", path("run"), {**RUN, "webhook": "https://exa\x00mple.com/h"}),
    ("POST", path("run"), {"modelId": "zonos2", "input": {"text": "x", "audio": "https://[::1/v.wav"}}),
    ("POST", path("run"), {"modelId": "zonos2", "input": {"text": "x", "audio": ["a.wav"]}}),
    ("POST", path("run"), {"modelId": "infinitetalk", "input": {"image": 5, "audio": 5}}),
    ("POST", path("estimate"), {"modelId": 5, "input": {}}),
    ("POST", path("estimate"), {"modelId": "gpt-image-2", "input": [1]}),
    # Replication API
    ("POST", path("analyze"), {"url": 5}),
    ("POST", path("analyze"), {"url": ["https://youtu.be/x"]}),
    ("POST", path("analyze"), {"url": "https://[::1/x.mp4"}),
    ("POST", path("analyze"), {"url": "http://[::1/x.mp4"}),
    ("POST", path("analyze"), {"url": "https://example.com/" + "a" * 5000}),
    # Topic-to-video API
    ("POST", path("job_start"), {"seconds": 1e308}),
    ("POST", path("job_start"), {"seconds": "45"}),
    ("POST", path("job_start"), {"seconds": 10**40}),
    ("POST", path("job_start"), {"topic": 5}),
    ("POST", path("job_start"), {"gender": ["man"]}),
    ("POST", path("job_start"), {"gender": {"a": 1}}),
    ("POST", path("job_start"), {"flow": {"a": 1}}),
    ("POST", path("job_start"), {"flow": ["classic"]}),
    ("POST", path("job_start"), {"captions": "yes"}),
    ("POST", path("job_start"), {"music": 1}),
    ("POST", path("job_start"), {"idempotencyKey": 5}),
    ("POST", path("job_start"), {"idempotencyKey": ""}),
    ("POST", path("job_start"), {"webhook": "https://[::1/h"}),
    # Controls
    ("POST", path("sandbox_clock"), {"advance": 1e308}),
    ("POST", path("sandbox_clock"), {"advance": 3e11}),
    ("POST", path("sandbox_clock"), {"advance": 10**400}),
    ("POST", path("sandbox_clock"), {"advance": -1}),
    ("POST", path("sandbox_clock"), {"advance": "60"}),
    ("POST", path("sandbox_clock"), {"advance": True}),
    ("POST", path("sandbox_clock"), {"advance": [60]}),
    ("POST", path("sandbox_account"), {"balance": -1}),
    ("POST", path("sandbox_account"), {"balance": 10**13}),
    ("POST", path("sandbox_account"), {"balance": 10**400}),
    ("POST", path("sandbox_account"), {"balance": 1.5}),
    ("POST", path("sandbox_account"), {"balance": "100"}),
    ("POST", path("sandbox_account"), {"plan": 5}),
    ("POST", path("sandbox_account"), {"suspended": "yes"}),
    ("POST", path("sandbox_account"), {"account": []}),
    ("POST", path("sandbox_account"), {"account": ""}),
    ("POST", path("sandbox_keys"), {"expires": {"days": 30}}),
    ("POST", path("sandbox_keys"), {"expires": ["30d"]}),
    ("POST", path("sandbox_keys"), {"state": {"a": 1}}),
    ("POST", path("sandbox_keys"), {"state": ["active"]}),
    ("POST", path("sandbox_keys"), {"monthlyCap": 10**20}),
    ("POST", path("sandbox_keys"), {"monthlyCap": -5}),
    ("POST", path("sandbox_keys"), {"name": 5}),
    ("POST", path("sandbox_keys"), {"account": {"id": "x"}}),
    ("POST", path("sandbox_faults"), {"rates": "500"}),
    ("POST", path("sandbox_faults"), {"rates": {"500": 2}}),
    ("POST", path("sandbox_faults"), {"rates": {"500": -0.1}}),
    ("POST", path("sandbox_faults"), {"rates": {"bogus": 0.1}}),
    ("POST", path("sandbox_faults"), {"rates": {"500": "0.5"}}),
    ("POST", path("sandbox_faults"), {"script": "500"}),
    ("POST", path("sandbox_faults"), {"script": [{"kind": "500"}]}),
    ("POST", path("sandbox_faults"), {"script": [["500"]]}),
    ("POST", path("sandbox_faults"), {"modelScript": ["500"]}),
    ("POST", path("sandbox_faults"), {"routes": "run"}),
    ("POST", path("sandbox_faults"), {"routes": [5]}),
    ("POST", path("sandbox_faults"), {"routes": ["nope"]}),
    ("POST", path("sandbox_faults"), {"slowSeconds": 1e9}),
    ("POST", path("sandbox_faults"), {"slowSeconds": "2"}),
    ("POST", path("sandbox_faults"), {"seed": "1"}),
    ("POST", path("sandbox_faults"), {"seed": 1.5}),
]


@pytest.mark.parametrize(
    ("method", "url", "body"), BAD_FIELDS, ids=[f"{m} {u} {json.dumps(b)[:60]}" for m, u, b in BAD_FIELDS]
)
async def test_fields_of_the_wrong_type_or_range(
    api: httpx.AsyncClient, sandbox: Sandbox, method: str, url: str, body: Any
) -> None:
    assert_refused(await api.request(method, url, json=body))
    await assert_untouched(api, sandbox)
    faults = (await api.get(path("sandbox_faults"))).json()["data"]
    assert faults["rates"] == {} and faults["script"] == []


def raw(endpoint: str, **params: str) -> str:
    """A path with its parameters as given, unescaped: hostile ids reach the sandbox as they are."""
    return PATHS[endpoint].format(**params)


@pytest.mark.parametrize(
    ("url", "status"),
    [
        (raw("generation", id="not-a-uuid"), 400),
        (raw("generation", id=".."), 404),  # httpx resolves the dot segment: another path
        (raw("generation", id="%2E%2E"), 400),
        ("/v3/playground/v1/generations/a%2Fb", 404),
        (raw("generation", id="00000000-0000-0000-0000-000000000000") + "?wait=abc", 400),
        (raw("generation", id="00000000-0000-0000-0000-000000000000") + "?wait=1e9", 400),
        (raw("generation", id="00000000-0000-0000-0000-000000000000") + "?wait=5.5", 400),
        (raw("generation", id="00000000-0000-0000-0000-000000000000") + "?wait=-5", 400),
        (raw("generation", id="00000000-0000-0000-0000-000000000000") + "?wait=" + "9" * 5000, 400),
        (raw("generation", id="00000000-0000-0000-0000-000000000000"), 404),
        (raw("analysis", id="../../_sandbox/ledger"), 404),
        (raw("analysis", id="%00"), 404),
        (raw("replication_run", id="x" * 3000), 404),
        (raw("job", id="%E2%80%AE"), 404),
        (raw("model", id="%00"), 404),
        (raw("sandbox_media", name="preview-" + "a" * 300 + ".png"), 404),
        (raw("sandbox_media", name="..%2F..%2Fetc%2Fpasswd"), 404),
    ],
)
async def test_bad_ids_and_query_values(
    api: httpx.AsyncClient, sandbox: Sandbox, url: str, status: int
) -> None:
    assert_refused(await api.get(url), status)
    await assert_untouched(api, sandbox)


async def test_bodies_of_replicate_and_reedit(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """Malformed run and re-edit bodies against real resources: refused before any charge."""
    analysis = (await api.post(path("analyze"), json={"url": "https://www.youtube.com/shorts/abc"})).json()[
        "data"
    ]
    job = (await api.post(path("job_start"), json={})).json()["data"]
    # The job charges each step as it starts; let it end first so that only refusals could move the ledger.
    await api.post(path("sandbox_clock"), json={"advance": 3600})
    assert (await api.get(path("job", id=job["jobId"]))).json()["data"]["status"] == states.DONE
    before = (await api.get(path("sandbox_ledger"))).json()["data"]["entries"]
    replicate = path("replicate", id=analysis["analysisId"])
    for body in (
        {"clips": "a"},
        {"clips": [True]},
        {"clips": [10**30]},
        {"clips": [1.5]},
        {"clips": []},
        {"audio": "chunks"},
        {"audio": {"mode": ["chunks"]}},
        {"audio": {"mode": "upload", "url": "https://[::1/a.mp3"}},
        {"characterImage": "https://[::1/face.png"},
        {"characterImage": 5},
        {"quality": {"a": 1}},
        {"accuracy": ["fast"]},
        {"marketingAspect": 16},
        {"modelId": {"id": "p-video"}},
        {"captions": "true"},
        {"webhook": "https://[::1/h"},
    ):
        assert_refused(await api.post(replicate, json=body))
    for raw in RAW_BODIES:
        assert_refused(await api.post(replicate, content=raw))
    reedit = path("reedit", id=job["jobId"])
    for body in ({"flow": {"a": 1}}, {"flow": 5}, {"captions": "no"}, {"music": [True]}):
        assert_refused(await api.post(reedit, json=body))
    for raw in RAW_BODIES:
        assert_refused(await api.post(reedit, content=raw))
    assert (await api.get(path("sandbox_ledger"))).json()["data"]["entries"] == before
    assert len(sandbox.world.replication.runs) == 0 and len(sandbox.world.topic.jobs) == 1


async def test_the_clock_stays_sane_after_huge_advances(api: httpx.AsyncClient) -> None:
    """The 3e11-second jump that broke info and reset is refused; the largest accepted one keeps dates."""
    assert_refused(await api.post(path("sandbox_clock"), json={"advance": 3e11}))
    accepted = await api.post(path("sandbox_clock"), json={"advance": 99 * 365 * 86400})
    assert accepted.status_code == 200
    assert_refused(await api.post(path("sandbox_clock"), json={"advance": 2 * 365 * 86400}))
    assert (await api.get(path("sandbox_info"))).status_code == 200
    assert (await api.post(path("sandbox_reset"))).status_code == 200
    assert (await api.post(path("run"), json=RUN)).status_code == 201
