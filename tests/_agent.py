"""Driving a sandbox's agent (MCP) server with the official MCP SDK's own client (its 1.x line), over HTTP."""

import base64
import hashlib
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from mediagen_nb.protocol.paths import path


@asynccontextmanager
async def agent(base_url: str, credential: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP session on ``base_url``'s ``/mcp``, with ``credential`` as its bearer."""
    headers = {"Authorization": f"Bearer {credential}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(base_url + path("mcp"), http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured result; an error result fails the test with its text."""
    result = await session.call_tool(tool, arguments)
    assert not result.isError, f"{tool}: {result.content[0].text if result.content else result}"
    assert result.structuredContent is not None
    return result.structuredContent


async def refusal(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's error result: the REST error body it carries (``statusCode``, ``message``, ``error``)."""
    result = await session.call_tool(tool, arguments)
    assert result.isError, f"{tool} was not refused: {result.structuredContent}"
    assert result.structuredContent is not None
    assert result.content[0].text == result.structuredContent["message"]  # type: ignore[union-attr]
    return result.structuredContent


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def consent(base_url: str, params: dict[str, str]) -> httpx.Response:
    """The sign-in page for ``params``, and the user's click on its Allow button (its form posted back)."""
    page = httpx.get(base_url + path("oauth_authorize"), params=params)
    assert page.status_code == 200, page.text
    found = re.search(r'name=consent value="([^"]+)"', page.text)
    assert found is not None, page.text
    return httpx.post(base_url + path("oauth_authorize"), data={"consent": found.group(1)})


def sign_in(base_url: str, client_id: str = "tests") -> str:
    """An access token through the sandbox's sign-in: allowed on its page, the pasted-back code, then
    the token endpoint."""
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    page = consent(base_url, params)
    assert page.status_code == 200, page.text
    code = re.search(r"<pre id=code>([^<]+)</pre>", page.text)
    assert code is not None, page.text
    answer = httpx.post(
        base_url + path("oauth_token"),
        data={
            "grant_type": "authorization_code",
            "code": code.group(1),
            "code_verifier": verifier,
            "client_id": client_id,
        },
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["token_type"] == "Bearer"
    token: str = answer.json()["access_token"]
    return token


def ledger(base_url: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = httpx.get(base_url + path("sandbox_ledger")).json()["data"]["entries"]
    return entries


def net(entries: list[dict[str, Any]], resource_id: str) -> int:
    """Credits charged for one resource, net of refunds, as the sandbox's ledger says."""
    return sum(
        (e["credits"] if e["kind"] == "charge" else -e["credits"])
        for e in entries
        if e["resourceId"] == resource_id
    )


def balance(base_url: str) -> int:
    value: int = httpx.get(base_url + path("sandbox_account")).json()["data"]["balance"]
    return value


def advance(base_url: str, seconds: float) -> None:
    assert httpx.post(base_url + path("sandbox_clock"), json={"advance": seconds}).status_code == 200
