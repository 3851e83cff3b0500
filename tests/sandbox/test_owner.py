"""A sandbox answers requests that name it, and one with an owner answers its owner alone (issue 33).

Each test is an attack that worked on 1644530: a request naming another host (as a page that reached the
sandbox by DNS rebinding sends) drove every route group; a sandbox's controls, keys, uploads and
estimates answered anyone who could reach its port, with the public demo key; upload and media URLs
were derived from what the file or the prompt holds; a page of another site got an OAuth code without
a click. Served sandboxes are reached over real HTTP on 127.0.0.1; the owner's rules are checked
in-process (they hold there too), the processes and the other local user in ``test_owner_processes.py``.
"""

import asyncio
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _agent import pkce

from mediagen_nb.protocol import ownership
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import DEMO_KEY, Sandbox, SandboxConfig, kept
from mediagen_nb.sandbox.media.spec import MediaSpec
from mediagen_nb.sandbox.media.store import _media_name, _sample

SECRET = bytes(range(32))
IMAGE = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse at dawn", "quality": "low"}}
MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def route_groups(key: str, upload: str) -> list[tuple[str, str, dict[str, Any]]]:
    """One request of each route group: controls, the API, uploads, the media listing, media, /mcp,
    the sign-in."""
    auth = {"Authorization": f"Bearer {key}"}
    return [
        ("POST", path("sandbox_account"), {"json": {"balance": 7}}),
        ("POST", path("sandbox_keys"), {"json": {}}),
        ("GET", path("sandbox_ledger"), {}),
        ("GET", path("sandbox_info"), {}),
        ("POST", path("estimate"), {"json": IMAGE, "headers": auth}),
        ("GET", path("models"), {}),
        ("PUT", path("sandbox_upload", name="face.png"), {"content": _sample("face.png"), "headers": auth}),
        ("GET", path("sandbox_uploads"), {"headers": auth}),
        ("GET", path("sandbox_upload", name=upload), {}),
        ("GET", path("sandbox_samples", name="face.png"), {}),
        ("POST", path("mcp"), {"json": MCP_INIT, "headers": {**auth, **MCP_HEADERS}}),
        ("GET", path("oauth_authorize"), {"params": {"response_type": "code", "client_id": "c"}}),
    ]


@pytest.fixture
def named() -> Iterator[Sandbox]:
    """A served sandbox (no owner: the Host check is all that stands in a page's way) with one upload."""
    with Sandbox(SandboxConfig(time_scale=600, seed=1)) as sandbox:
        yield sandbox


def _upload(base: str, key: str, headers: dict[str, str] | None = None) -> str:
    put = httpx.put(
        base + path("sandbox_upload", name="face.png"),
        content=_sample("face.png"),
        headers={"Authorization": f"Bearer {key}", **(headers or {})},
    )
    assert put.is_success, put.text
    name: str = put.json()["data"]["name"]
    return name


def test_a_foreign_host_is_refused_on_every_route_group(named: Sandbox) -> None:
    base = named.base_url
    assert base is not None
    port = base.rsplit(":", 1)[1]
    upload = _upload(base, named.demo_key)
    keys_before = len(named.world.accounts.keys)
    for method, where, options in route_groups(named.demo_key, upload):
        for host in (f"rebind.test:{port}", "rebind.test", f"127.0.0.1.nip.io:{port}", f"localhost.:{port}"):
            headers = {**options.get("headers", {}), "Host": host, "Origin": f"http://{host}"}
            answer = httpx.request(method, base + where, **{**options, "headers": headers})
            assert answer.status_code == 403, (method, where, host, answer.text)
            assert "DNS rebinding" in answer.json()["message"]
        own = {**options.get("headers", {}), "Host": f"localhost:{port}"}
        assert httpx.request(method, base + where, **{**options, "headers": own}).status_code != 403, where
    assert named.world.accounts.account("demo").balance == 7, "the control ran only when named right"
    assert len(named.world.accounts.keys) == keys_before + 1
    for host in (f"[::1]:{port}", f"127.0.0.1:{port}"):  # the sandbox's own names are all taken
        assert httpx.get(base + path("sandbox_info"), headers={"Host": host}).status_code == 200


def test_the_agent_server_s_own_rebinding_protection_checks_origin_too(named: Sandbox) -> None:
    """Past the sandbox's Host check, the MCP SDK's protection (TransportSecuritySettings) runs on /mcp:
    a right Host with another site's Origin is refused by it."""
    base = named.base_url
    assert base is not None
    headers = {"Authorization": f"Bearer {named.demo_key}", **MCP_HEADERS}
    assert httpx.post(base + path("mcp"), json=MCP_INIT, headers=headers).status_code == 200
    crossed = httpx.post(base + path("mcp"), json=MCP_INIT, headers={**headers, "Origin": "http://evil.test"})
    assert crossed.status_code == 403 and "Origin" in crossed.text


def test_a_name_the_user_allows_is_answered_and_media_through_a_local_proxy_too() -> None:
    config = SandboxConfig(time_scale=600, seed=1, hosts=("lab.example.org",))
    with Sandbox(config) as sandbox:
        base = sandbox.base_url
        assert base is not None
        info = path("sandbox_info")
        assert httpx.get(base + info, headers={"Host": "lab.example.org:8443"}).status_code == 200
        assert httpx.get(base + info, headers={"Host": "other.example.org"}).status_code == 403
        # jupyter-server-proxy passes on the Jupyter server's Host (a loopback name at its own port):
        proxied = {"Host": "127.0.0.1:8888", "X-Forwarded-Context": "/proxy/1"}
        face = path("sandbox_samples", name="face.png")
        assert httpx.get(base + face, headers=proxied).status_code == 200
        assert httpx.get(base + face, headers={"Host": "127.0.0.1:8888"}).status_code == 403  # not proxied
        assert httpx.get(base + info, headers=proxied).status_code == 403  # through a proxy: media only


@pytest.fixture
def owned() -> Sandbox:
    """An in-process sandbox with an owner (what the kept sandbox is)."""
    return Sandbox(SandboxConfig(time_scale=600, seed=1, secret=SECRET))


def _send(sandbox: Sandbox, method: str, where: str, **options: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=sandbox.transport(), base_url="http://sandbox.test") as http:
            return await http.request(method, where, **options)

    return asyncio.run(go())


def test_a_sandbox_with_an_owner_answers_only_its_owner_s_token(owned: Sandbox) -> None:
    token = owned.owner_headers
    assert set(token) == {ownership.HEADER} and owned.demo_key != DEMO_KEY
    upload = _send(
        owned,
        "PUT",
        path("sandbox_upload", name="face.png"),
        content=_sample("face.png"),
        headers={"Authorization": f"Bearer {owned.demo_key}", **token},
    ).json()["data"]["name"]
    before = owned.world.info()["counts"]
    for method, where, options in route_groups(owned.demo_key, upload):
        open_read = method == "GET" and where.startswith(("/_sandbox/uploads/", "/_sandbox/samples/"))
        assert owned.world.owner is not None
        agent = owned.world.owner.agent
        for headers in ({}, {ownership.HEADER: "0" * 64}, {ownership.HEADER: agent}):
            if headers.get(ownership.HEADER) == agent and where == path("mcp"):
                continue  # the agent token is good at /mcp: below
            answer = _send(
                owned, method, where, **{**options, "headers": {**options.get("headers", {}), **headers}}
            )
            if open_read:
                assert answer.status_code == 200, where  # a medium by its unguessable URL: a preview loads it
            else:
                assert answer.status_code == 403 and "answers only the user" in answer.text, (where, headers)
    assert owned.world.info()["counts"] == before and owned.world.accounts.account("demo").balance == 3000
    mine = {"Authorization": f"Bearer {owned.demo_key}", **token}
    assert _send(owned, "POST", path("estimate"), json=IMAGE, headers=mine).status_code == 200
    public = {"Authorization": f"Bearer {DEMO_KEY}", **token}
    assert _send(owned, "POST", path("estimate"), json=IMAGE, headers=public).status_code == 401, "public key"


def test_the_owner_s_hello_proves_the_secret_bound_to_its_port_and_folder(owned: Sandbox) -> None:
    challenge = ownership.new_challenge()
    answer = _send(owned, "GET", path("sandbox_hello"), params={"challenge": challenge}).json()["data"]
    world = owned.world
    assert world.owner is not None and answer["boot"] == world.owner.boot
    # in-process the port is the URL's (none given: 0) and the folder none; served, the port it listens on
    assert answer["proof"] == ownership.proof(SECRET, challenge, 0, "", answer["boot"])
    assert answer["proof"] != ownership.proof(SECRET, challenge, 8765, "", answer["boot"])
    assert answer["proof"] != ownership.proof(bytes(32), challenge, 0, "", answer["boot"])
    bad = _send(owned, "GET", path("sandbox_hello"), params={"challenge": "\n" + challenge[1:]})
    assert bad.status_code == 400
    plain = Sandbox(SandboxConfig(time_scale=600, seed=1))
    assert _send(plain, "GET", path("sandbox_hello"), params={"challenge": challenge}).status_code == 404


def test_only_a_server_holding_the_secret_and_serving_the_folder_proves_itself(tmp_path: Path) -> None:
    """What the client checks before it sends anything (``kept.prove``): a challenge only the secret
    answers, bound to the folder the server serves (and the port it listens on)."""
    folder = (tmp_path / "kept").resolve()
    secret = ownership.secret(folder)
    cases = [
        (SandboxConfig(time_scale=600, secret=bytes(32), data_dir=tmp_path / "a"), False),  # another secret
        (SandboxConfig(time_scale=600, secret=secret, data_dir=tmp_path / "b"), False),  # another folder
        (SandboxConfig(time_scale=600, data_dir=tmp_path / "c"), False),  # no owner at all
        (SandboxConfig(time_scale=600, secret=secret, data_dir=folder), True),
    ]
    for config, proves in cases:
        with Sandbox(config) as served:
            assert served.base_url is not None
            if not proves:
                with pytest.raises(kept.NotYours, match="not your sandbox; nothing was sent to it"):
                    kept.prove(served.base_url, secret, folder)
                continue
            found = kept.prove(served.base_url, secret, folder)
            assert found.token == served.owner_headers[ownership.HEADER] and found.demo_key == served.demo_key
            assert found.token not in repr(found) and found.demo_key not in repr(found)


def test_upload_and_output_urls_cannot_be_derived_from_the_file_or_the_prompt(owned: Sandbox) -> None:
    mine = {"Authorization": f"Bearer {owned.demo_key}", **owned.owner_headers}
    face = _sample("face.png")
    stored = _send(owned, "PUT", path("sandbox_upload", name="face.png"), content=face, headers=mine)
    name = stored.json()["data"]["name"]
    assert not name.startswith(hashlib.sha256(face).hexdigest()[:32]), "not the content's digest"
    assert (
        _send(
            owned, "GET", path("sandbox_upload", name=f"{hashlib.sha256(face).hexdigest()[:32]}.png")
        ).status_code
        == 404
    )
    asked = _send(
        owned,
        "GET",
        path("sandbox_uploads"),
        params={"sha256": hashlib.sha256(face).hexdigest()},
        headers=mine,
    )
    assert [u["name"] for u in asked.json()["data"]["uploads"]] == [name], "its owner finds it by its digest"
    portrait = MediaSpec("image", "creator presenter (man)", 0, 0, 768, 1024)  # a topic video's: all known
    assert owned.world.media.add(portrait) != _media_name(portrait), "media names are keyed too"
    plain = Sandbox(SandboxConfig(time_scale=600, seed=1))  # a sandbox without an owner: as before
    assert plain.world.media.add(portrait) == _media_name(portrait)


def test_the_sign_in_asks_for_a_click_and_no_other_site_gets_a_code() -> None:
    sandbox = Sandbox(SandboxConfig(time_scale=600, seed=1))
    _, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": "c",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "redirect_uri": "https://evil.example/cb",
    }
    cross = {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}
    page = _send(
        sandbox, "GET", path("oauth_authorize"), params=params, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert page.status_code == 200 and "location" not in page.headers and "code=" not in page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert (
        "script" not in page.headers["content-security-policy"] and page.headers["x-frame-options"] == "DENY"
    )
    consent = re.search(r'name=consent value="([^"]+)"', page.text)
    assert consent is not None
    form = {"consent": consent.group(1)}
    for headers in (cross, {"Sec-Fetch-Site": "same-site"}, {"Origin": "https://evil.example"}):
        refused = _send(sandbox, "POST", path("oauth_authorize"), data=form, headers=headers)
        assert refused.status_code == 403 and "location" not in refused.headers, headers
    assert _send(sandbox, "POST", path("oauth_authorize"), data={"consent": "guessed"}).status_code == 400
    same = {"Sec-Fetch-Site": "same-origin", "Origin": "http://sandbox.test"}
    allowed = _send(sandbox, "POST", path("oauth_authorize"), data=form, headers=same)
    assert allowed.status_code == 303 and allowed.headers["location"].startswith(
        "https://evil.example/cb?code="
    )
    again = _send(sandbox, "POST", path("oauth_authorize"), data=form, headers=same)
    assert again.status_code == 400, "a consent works once"
    for bad in ({"code_challenge_method": "plain"}, {"code_challenge": "short"}, {"code_challenge": ""}):
        refused = _send(sandbox, "GET", path("oauth_authorize"), params={**params, **bad})
        assert refused.status_code == 400 and "PKCE" in refused.text, bad
    code = httpx.URL(allowed.headers["location"]).params["code"]
    token = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": "c",
        "redirect_uri": params["redirect_uri"],
    }
    short = _send(sandbox, "POST", path("oauth_token"), data={**token, "code_verifier": "abc"})
    assert short.status_code == 400 and short.json()["error"] == "invalid_grant"
