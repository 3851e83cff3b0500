"""The sandbox's agent (MCP) server driven by the official MCP SDK's client over HTTP: its nine tools with
their schemas, every tool run with its money checked on the sandbox's own ledger, and who may call."""

import importlib
import json
from typing import Any

import httpx
import pytest
from _agent import advance, agent, balance, call, consent, ledger, net, pkce, refusal, sign_in
from _shared import fresh_python

from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

pytestmark = pytest.mark.anyio
TOOLS = {
    "generate",
    "replicate_video",
    "make_video",
    "analyze_video",
    "reedit_video",
    "get_mascot",
    "create_avatar",
    "avatar_say",
    "check_usage",
}
HOUR = 3600.0
HOOK = "http://127.0.0.1:9/hook"  # a loopback receiver (allowed by the fixture); nothing listens there


async def test_the_nine_tools_are_listed_with_their_schemas(served: Sandbox) -> None:
    assert served.base_url is not None
    async with agent(served.base_url, served.demo_key) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(listed) == TOOLS
    for tool in listed.values():
        assert tool.description, tool.name
        assert tool.inputSchema["type"] == "object" and isinstance(tool.inputSchema["properties"], dict)
    assert {"modelId", "input", "webhook"} <= set(listed["generate"].inputSchema["properties"])
    for name in ("replicate_video", "make_video"):  # the spec: the same webhook argument
        assert (
            listed[name].inputSchema["properties"]["webhook"]
            == listed["generate"].inputSchema["properties"]["webhook"]
        )
    assert listed["avatar_say"].inputSchema["required"] == ["image", "text"]
    assert listed["get_mascot"].inputSchema["required"] == ["jobId"]
    usage = listed["check_usage"].outputSchema
    assert usage is not None
    assert set(usage["required"]) == {
        "remainingCredits",
        "monthCredits",
        "monthRuns",
        "monthApiRuns",
        "topUpUrl",
    }


async def test_every_tool_runs_and_its_money_is_on_the_ledger(served: Sandbox) -> None:
    base = served.base_url
    assert base is not None
    async with agent(base, served.demo_key) as session:
        face = await call(
            session, "create_avatar", {"description": "a cheerful host", "quality": "low", "wait": 55}
        )
        assert (
            face["status"] == "succeeded" and face["modelId"] == "gpt-image-2" and face["creditsSpent"] == 3
        )
        image = face["output"]["urls"][0]

        said = await call(
            session, "avatar_say", {"image": image, "text": "Hello from the agent.", "wait": 55}
        )
        speech, video = said["speech"], said["video"]
        assert (speech["modelId"], video["modelId"]) == ("qwen3-tts-flash", "infinitetalk-fast")
        assert video["status"] == "succeeded" and video["output"]["type"] == "video"
        assert video["mediaDurationSec"] > 0 and video["creditsSpent"] > 0

        run = {
            "modelId": "gpt-image-2",
            "input": {"prompt": "a lighthouse", "quality": "low"},
            "webhook": HOOK,
        }
        started = await call(session, "generate", run)
        assert started["status"] == "processing"
        done = await call(session, "generate", {"generationId": started["id"], "wait": 55})
        assert done["status"] == "succeeded"

        analysis = await call(
            session, "analyze_video", {"url": "https://www.tiktok.com/@demo/video/7301", "wait": 55}
        )
        assert analysis["status"] == "ready" and analysis["clipCount"] >= 2
        replica = await call(
            session,
            "replicate_video",
            {"analysisId": analysis["analysisId"], "clips": [0], "quality": "low", "webhook": HOOK},
        )
        advance(base, HOUR)
        replica = await call(session, "replicate_video", {"runId": replica["id"]})
        assert replica["status"] == "done" and replica["totalClips"] == 1

        job = await call(
            session, "make_video", {"topic": "why the sea is salty", "seconds": 20, "webhook": HOOK}
        )
        advance(base, HOUR)
        job = await call(session, "get_mascot", {"jobId": job["jobId"]})
        assert job["status"] == "done" and job["videoUrl"]
        recut = await call(session, "reedit_video", {"jobId": job["jobId"], "flow": "karaoke"})
        advance(base, HOUR)
        recut = await call(session, "get_mascot", {"jobId": recut["jobId"]})
        assert recut["status"] == "done" and recut["flow"] == "karaoke"

        usage = await call(session, "check_usage", {})

    entries = ledger(base)
    assert {e["via"] for e in entries} == {"agent"} and {e["keyId"] for e in entries} == {"key_demo"}
    for generation in (face, speech, video, done):
        assert net(entries, generation["id"]) == generation["creditsSpent"]
    assert net(entries, analysis["analysisId"]) == 5
    assert net(entries, replica["id"]) > 0
    for video_job in (job, recut):
        assert net(entries, video_job["jobId"]) == video_job["creditsUsed"]
    spent = sum(e["credits"] if e["kind"] == "charge" else -e["credits"] for e in entries)
    assert usage["remainingCredits"] == balance(base) == 3000 - spent
    assert usage["monthCredits"] == spent
    assert usage["monthRuns"] == usage["monthApiRuns"] == 8  # 4 generations, analysis, replica, 2 jobs:
    assert len({e["resourceId"] for e in entries}) == 8  # every paid start, once
    hooks = [
        json.loads(w["body"]) for w in httpx.get(base + path("sandbox_webhooks")).json()["data"]["webhooks"]
    ]
    assert {done["id"], replica["id"], job["jobId"]} <= {h.get("id") or h.get("jobId") for h in hooks}


async def test_a_refused_tool_charges_nothing_and_says_the_service_message(served: Sandbox) -> None:
    base = served.base_url
    assert base is not None
    httpx.post(base + path("sandbox_account"), json={"balance": 2})
    async with agent(base, served.demo_key) as session:
        low = await refusal(session, "generate", {"modelId": "gpt-image-2", "input": {"prompt": "a fox"}})
        assert low["statusCode"] == 400 and low["message"].startswith("Not enough credits")
        unknown = await refusal(session, "generate", {"modelId": "no-such-model", "input": {}})
        assert unknown["message"].startswith("Unknown model 'no-such-model'")
        neither = await refusal(session, "analyze_video", {})
        assert "give url" in neither["message"]
    assert ledger(base) == [] and balance(base) == 2


async def test_a_start_at_capacity_is_charged_and_refunded_like_rest(served: Sandbox) -> None:
    base = served.base_url
    assert base is not None
    httpx.post(base + path("sandbox_faults"), json={"script": ["503"], "routes": ["mcp"]})
    async with agent(base, served.demo_key) as session:
        refused = await refusal(
            session, "generate", {"modelId": "gpt-image-2", "input": {"prompt": "a", "quality": "low"}}
        )
    assert refused["statusCode"] == 503 and refused["message"] == messages.AT_CAPACITY
    kinds = [(e["kind"], e["credits"]) for e in ledger(base)]
    assert kinds == [("charge", 3), ("refund", 3)] and balance(base) == 3000


@pytest.mark.parametrize(
    ("authorization", "message"),
    [
        (None, messages.MISSING_CREDENTIALS),
        ("Bearer pk_live_not_a_key", messages.INVALID_KEY),
        ("Bearer mgat_not_a_token", messages.INVALID_TOKEN),
        ("Basic cGtfbGl2ZQ==", messages.MISSING_CREDENTIALS),
    ],
)
async def test_a_wrong_credential_is_refused(
    served: Sandbox, authorization: str | None, message: str
) -> None:
    base = served.base_url
    assert base is not None
    headers = {"Authorization": authorization} if authorization else {}
    answer = httpx.post(
        base + path("mcp"), json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
    )
    assert answer.status_code == 401 and answer.json()["message"] == message
    metadata = answer.headers["www-authenticate"].split('resource_metadata="')[1].rstrip('"')
    assert httpx.get(metadata).json()["resource"] == base + path("mcp")


async def test_the_sdk_client_meets_the_refusal(served: Sandbox) -> None:
    assert served.base_url is not None
    with pytest.raises(BaseException) as raised:  # the SDK's task group wraps the HTTP error
        async with agent(served.base_url, "pk_live_not_a_key"):
            pass
    errors = getattr(raised.value, "exceptions", [raised.value])
    assert any(isinstance(e, httpx.HTTPStatusError) and e.response.status_code == 401 for e in errors)


async def test_an_agent_client_signs_in_with_oauth_and_its_runs_are_its_token_s(served: Sandbox) -> None:
    base = served.base_url
    assert base is not None
    metadata = httpx.get(base + path("oauth_metadata")).json()
    assert metadata["authorization_endpoint"] == base + path("oauth_authorize")
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    token = sign_in(base)
    async with agent(base, token) as session:
        made = await call(
            session, "generate", {"modelId": "gpt-image-2", "input": {"prompt": "a", "quality": "low"}}
        )
        await call(session, "generate", {"generationId": made["id"], "wait": 55})
        usage = await call(session, "check_usage", {})
    (entry,) = ledger(base)
    assert (entry["keyId"], entry["via"]) == (None, "agent") and entry["tokenId"].startswith("tok_")
    assert (usage["monthRuns"], usage["monthApiRuns"], usage["monthCredits"]) == (1, 0, 3)


async def test_the_sign_in_refuses_a_wrong_verifier_and_a_used_code(served: Sandbox) -> None:
    base = served.base_url
    assert base is not None
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": "c",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    redirected = consent(base, {**params, "redirect_uri": "http://127.0.0.1:1/cb", "state": "s1"})
    assert redirected.status_code == 303
    location = httpx.URL(redirected.headers["location"])
    assert location.params["state"] == "s1"
    code = location.params["code"]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": "c",
        "redirect_uri": "http://127.0.0.1:1/cb",
    }
    wrong = httpx.post(base + path("oauth_token"), data={**form, "code_verifier": "not-it"})
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    used = httpx.post(base + path("oauth_token"), data={**form, "code_verifier": verifier})
    assert used.status_code == 400  # the wrong attempt spent the code: a code works once
    no_pkce = httpx.get(base + path("oauth_authorize"), params={"response_type": "code", "client_id": "c"})
    assert no_pkce.status_code == 400 and "PKCE" in no_pkce.text
    elsewhere = httpx.get(
        base + path("oauth_authorize"), params={**params, "redirect_uri": "http://evil.example/cb"}
    )
    assert elsewhere.status_code == 400


def test_a_sandbox_that_takes_tokens_only_refuses_keys_and_says_to_sign_in() -> None:
    with Sandbox(SandboxConfig(time_scale=600, seed=1, agent_keys=False)) as sandbox:
        assert sandbox.base_url is not None
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        keyed = httpx.post(
            sandbox.base_url + path("mcp"), json=body, headers={"Authorization": f"Bearer {sandbox.demo_key}"}
        )
        assert keyed.status_code == 401 and keyed.json()["message"] == messages.AGENT_NEEDS_SIGN_IN
        token = sign_in(sandbox.base_url)
        signed = httpx.post(
            sandbox.base_url + path("mcp"),
            json=body,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        )
        assert signed.status_code == 200, signed.text


def test_an_in_process_sandbox_says_the_agent_server_needs_serving(sandbox: Sandbox) -> None:
    async def post() -> httpx.Response:
        async with httpx.AsyncClient(transport=sandbox.transport(), base_url="http://sandbox.test") as client:
            return await client.post(
                path("mcp"), json={}, headers={"Authorization": f"Bearer {sandbox.demo_key}"}
            )

    import asyncio

    answer = asyncio.run(post())
    assert answer.status_code == 503 and answer.json()["message"] == messages.AGENT_NOT_RUNNING


def _statuses(base: str, credential: str, count: int) -> list[int]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Authorization": f"Bearer {credential}", "Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=base, headers=headers) as client:
        return [client.post(path("mcp"), json=body).status_code for _ in range(count)]


@pytest.mark.manual_clock  # the minute passes only as the test advances it
def test_an_access_token_has_60_requests_a_minute(served: Sandbox) -> None:
    base = served.base_url
    assert base is not None
    token = sign_in(base)
    assert _statuses(base, token, 60) == [200] * 60
    over = httpx.post(base + path("mcp"), json={}, headers={"Authorization": f"Bearer {token}"})
    assert over.status_code == 429 and over.json() == messages.TOKEN_RATE_LIMIT
    assert _statuses(base, sign_in(base, "another client"), 1) == [200]  # per token
    advance(base, 60)
    assert _statuses(base, token, 1) == [200]


def test_without_the_sdk_the_sandbox_says_how_to_enable_mcp(monkeypatch: pytest.MonkeyPatch) -> None:
    from mediagen_nb.sandbox import agent as agent_server

    monkeypatch.setattr(agent_server, "available", lambda: False)
    sandbox = Sandbox(SandboxConfig(time_scale=600, seed=1))

    async def answers() -> tuple[httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(transport=sandbox.transport(), base_url="http://sandbox.test") as client:
            auth = {"Authorization": f"Bearer {sandbox.demo_key}"}
            return await client.post(path("mcp"), json={}, headers=auth), await client.get(path("models"))

    import asyncio

    mcp, models = asyncio.run(answers())
    assert mcp.status_code == 501 and mcp.json()["message"] == messages.AGENT_NEEDS_EXTRA
    assert "mediagen-nb[agent]" in mcp.json()["message"]
    assert models.status_code == 200  # everything else is served


def test_a_client_of_an_older_protocol_version_is_served(served: Sandbox) -> None:
    """Agent hosts on older 1.x SDKs negotiate an older protocol (2025-03-26: no structured results); the
    server answers in it, and a tool's result is in its text content too."""
    base = served.base_url
    assert base is not None
    headers = {"Authorization": f"Bearer {served.demo_key}", "Accept": "application/json, text/event-stream"}
    hello = {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "old", "version": "1"},
    }
    with httpx.Client(base_url=base, headers=headers) as client:
        began = client.post(
            path("mcp"), json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        )
        assert began.status_code == 200 and began.json()["result"]["protocolVersion"] == "2025-03-26"
        called = client.post(
            path("mcp"),
            json={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "check_usage", "arguments": {}},
            },
            headers={"mcp-protocol-version": "2025-03-26"},
        )
    (content,) = called.json()["result"]["content"]
    assert json.loads(content["text"])["remainingCredits"] == balance(base) == 3000


async def test_the_agent_server_serves_again_after_a_restart() -> None:
    """A stopped sandbox that starts again serves /mcp again (a new session manager: the SDK's runs once)."""
    sandbox = Sandbox(SandboxConfig(time_scale=600, seed=1))
    with sandbox:
        pass
    with sandbox:
        assert sandbox.base_url is not None
        async with agent(sandbox.base_url, sandbox.demo_key) as session:
            usage = await call(session, "check_usage", {})
    assert usage["remainingCredits"] == 3000


def test_making_a_sandbox_does_not_load_the_sdk() -> None:
    """The SDK takes seconds to import: a sandbox made (and an in-process one used) never waits for it."""
    child = "import sys\nfrom mediagen_nb.sandbox import Sandbox\nSandbox()\nprint('mcp' in sys.modules)"
    assert fresh_python(child).strip() == "False"


OWN_PROCESS_CHILD = """
import sys, time
from mediagen_nb.runtime import mcp_sdk
mcp_sdk.own_process()
started = time.process_time()
from mediagen_nb.sandbox.agent import server
from mediagen_nb.sandbox.guard import Hosts
server.AgentEndpoint(Hosts())
from mediagen_nb.client import agent
agent._sdk()
import jsonschema
print(getattr(sys.modules.get("rfc3987_syntax"), "__file__", None), round(time.process_time() - started, 1))
jsonschema.validate({"n": 1}, {"type": "object", "properties": {"n": {"type": "integer"}}})
"""


def test_a_process_of_our_own_loads_the_sdk_without_the_iri_grammar() -> None:
    """The kept sandbox, ``mediagen sandbox`` and ``mediagen balance`` load the SDK (server and client)
    without jsonschema's "iri" grammar: 2.5 s of CPU to build, for format checks neither makes."""
    grammar, seconds = fresh_python(OWN_PROCESS_CHILD).split()
    assert grammar == "None", f"the grammar loaded from {grammar} ({seconds} s of CPU)"


def test_an_sdk_that_cannot_load_is_named_at_mcp(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def broken(name: str, package: str | None = None) -> Any:
        if name == "mediagen_nb.sandbox.agent.server":
            raise ImportError("cannot import name 'eval_type_backport'")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", broken)
    with Sandbox(SandboxConfig(time_scale=600, seed=1)) as sandbox:
        assert sandbox.base_url is not None
        answer = httpx.post(
            sandbox.base_url + path("mcp"), json={}, headers={"Authorization": f"Bearer {sandbox.demo_key}"}
        )
        models = httpx.get(sandbox.base_url + path("models"))
    assert answer.status_code == 500 and answer.json()["message"].startswith(messages.AGENT_FAILED)
    assert "eval_type_backport" in answer.json()["message"] and models.status_code == 200
