"""``mg.balance()`` against agent servers that answer what the spec and MCP do not allow: each failure is
one line of ours, raised at once (the SDK alone would wait for ever on an answer that is not MCP, so a
regression hangs until pytest's timeout), and no key shows in it; a check_usage field of the wrong type
is named."""

import json

import httpx
import pytest
from _hostile import Answer, Request, Route, serve

import mediagen_nb as mg
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox

KEY = "pk_live_hostiletestkey42"
PASSED = ("authorization", "accept", "content-type", "mcp-protocol-version", "mcp-session-id")


def _to(sandbox: Sandbox, field: str, value: object) -> Route:
    """A man in the middle: the request goes on to the sandbox, and check_usage's ``field`` comes back as
    ``value``."""
    assert sandbox.base_url is not None

    def route(request: Request) -> Answer:
        headers = {k: v for k, v in request.headers.items() if k in PASSED}
        headers["authorization"] = f"Bearer {sandbox.demo_key}"
        answer = httpx.post(sandbox.base_url + path("mcp"), headers=headers, content=request.body, timeout=30)
        body = answer.content
        message = json.loads(body) if body else {}
        if "structuredContent" in message.get("result", {}):  # check_usage's answer
            message["result"]["structuredContent"][field] = value
            body = json.dumps(message).encode()
        return Answer(answer.status_code, body, {"Content-Type": answer.headers.get("content-type", "")})

    return route


@pytest.mark.parametrize(
    ("answer", "error", "words"),
    [
        (
            Answer(200, b"<html>a login page</html>", {"Content-Type": "text/html"}),
            mg.ServiceResponseError,
            "text/html",
        ),
        (Answer(200, b'{"jsonrpc": "2.0", "id": 0, "result": 5}'), mg.ServiceResponseError, "does not allow"),
        (
            Answer(500, b'{"statusCode": 500, "message": "boom", "error": "x"}'),
            mg.ServerError,
            "answered 500",
        ),
        (
            Answer(401, json.dumps({"message": f"bad key {KEY}"}).encode()),
            mg.AuthenticationError,
            "sign_in()",
        ),
    ],
    ids=["html", "not-jsonrpc", "500", "401-echoing-the-key"],
)
def test_a_hostile_agent_server_is_one_line_at_once(answer: Answer, error: type, words: str) -> None:
    with serve() as hostile:
        hostile.on("POST", "/mcp", answer)
        client = mg.Client(KEY, base_url=hostile.base_url)
        with pytest.raises(error) as raised:
            mg.balance(client)
    assert words in str(raised.value) and KEY not in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("field", "value"), [("remainingCredits", "lots"), ("monthRuns", None), ("topUpUrl", 5)]
)
def test_a_check_usage_field_of_the_wrong_type_is_named(served: Sandbox, field: str, value: object) -> None:
    with serve() as hostile:
        hostile.on("POST", "/mcp", _to(served, field, value))
        client = mg.Client(KEY, base_url=hostile.base_url)
        with pytest.raises(mg.ServiceResponseError) as raised:
            mg.balance(client)
    said = str(raised.value)  # the SDK checks the tool's output schema first; our parser backs it up
    assert "check_usage" in said and repr(value).strip("'") in said and "\n" not in said
