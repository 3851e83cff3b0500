"""Nothing the sandbox serves is a live document, and no web page of another site drives its controls.

Every answer says ``nosniff`` and carries a Content-Security-Policy that forbids script; media go
without CORS (``<img>``/``<audio>``/``<video>`` need none); controls refuse browser requests from
other sites (``Sec-Fetch-Site``, ``Origin``) while code without those headers works; through a proxy
(jupyter-server-proxy's ``X-Forwarded-Context``) only media are served.
"""

from typing import Any

import httpx
import pytest

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox
from mediagen_nb.sandbox.hardening import CONTENT_SECURITY_POLICY, ONLY_MEDIA_THROUGH_A_PROXY
from mediagen_nb.sandbox.media import render_audio
from mediagen_nb.sandbox.pipeline import FROM_ANOTHER_SITE

pytestmark = pytest.mark.anyio
BASE = "http://sandbox.test"
# Every control that reads or changes state: (method, endpoint name, JSON body).
CONTROLS: list[tuple[str, str, Any]] = [
    ("GET", "sandbox_info", None),
    ("POST", "sandbox_keys", {"name": "minted by a page"}),
    ("GET", "sandbox_account", None),
    ("POST", "sandbox_account", {"balance": 1}),
    ("GET", "sandbox_ledger", None),
    ("GET", "sandbox_faults", None),
    ("POST", "sandbox_faults", {"rates": {"500": 1}}),
    ("POST", "sandbox_reset", None),
    ("GET", "sandbox_webhooks", None),
    ("POST", "sandbox_clock", {"advance": 86400}),
    ("GET", "sandbox_uploads", None),
]
FROM_PAGES = [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "http://evil.example"},
    {"Origin": "null"},  # a sandboxed frame, a data: or file: page
    {"Origin": "http://127.0.0.1:8888", "Sec-Fetch-Site": "same-site"},  # JupyterLab on this machine
]


async def _upload(api: httpx.AsyncClient) -> str:
    stored = await api.put(path("sandbox_upload", name="voice.wav"), content=render_audio(1.0, seed=1))
    assert stored.status_code == 201, stored.text
    return str(stored.json()["data"]["name"])


def _hardened(response: httpx.Response) -> None:
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert not [name for name in response.headers if name.lower().startswith("access-control-")]


async def test_every_media_route_serves_media_types_nosniff_no_script_and_no_cors(
    api: httpx.AsyncClient,
) -> None:
    uploaded = await _upload(api)
    media = [
        (path("sandbox_media", name="preview-gpt-image-2.png"), "image/png"),
        (path("sandbox_samples", name="face.png"), "image/png"),
        (path("sandbox_samples", name="voice.mp3"), "audio/mpeg"),
        (path("sandbox_samples", name="clip.mp4"), "video/mp4"),
        (path("sandbox_upload", name=uploaded), "audio/wav"),
    ]
    for url, media_type in media:
        for method in ("GET", "HEAD"):
            response = await api.request(method, url, headers={"Origin": "http://127.0.0.1:8888"})
            assert response.status_code == 200, url
            assert response.headers["content-type"] == media_type
            _hardened(response)
    for missing in ("sandbox_media", "sandbox_samples", "sandbox_upload"):
        response = await api.get(path(missing, name="0" * 32 + ".html"))
        assert response.status_code == 404 and response.headers["content-type"] == "application/json"
        _hardened(response)


async def test_every_other_answer_is_hardened_too(api: httpx.AsyncClient) -> None:
    """Pages of the web app's stand-in, JSON answers and errors: opened in a browser, none runs script."""
    page = await api.get(path("sandbox_app", page="billing<script>alert(1)</script>"))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script>" not in page.text
    answers = [
        page,
        await api.get("/"),
        await api.get(path("models")),
        await api.get(path("sandbox_info")),
        await api.post(path("run"), json={"modelId": "nope", "input": {}}),
        await api.get("/no/such/path"),
    ]
    for response in answers:
        _hardened(response)


async def test_the_service_routes_answer_no_cors_preflight(api: httpx.AsyncClient) -> None:
    """The spec: browsers on other sites cannot call the API directly (no CORS at all)."""
    preflight = await api.options(
        path("run"),
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 405
    _hardened(preflight)


@pytest.mark.parametrize("from_page", FROM_PAGES, ids=lambda h: " ".join(f"{k}={v}" for k, v in h.items()))
async def test_controls_refuse_pages_of_other_sites(
    api: httpx.AsyncClient, sandbox: Sandbox, from_page: dict[str, str]
) -> None:
    """A page of another site (a notebook's output, a web page) cannot read or change the sandbox."""
    now, keys = sandbox.world.clock.now(), len(sandbox.world.accounts.keys)
    for method, endpoint, body in [*CONTROLS, ("PUT", "sandbox_upload", None)]:
        url = path(endpoint, name="voice.wav") if endpoint == "sandbox_upload" else path(endpoint)
        content = render_audio(1.0, seed=1) if method == "PUT" else None
        response = await api.request(method, url, json=body, content=content, headers=from_page)
        assert response.status_code == 403, (method, url, response.text)
        assert response.json() == {"statusCode": 403, "message": FROM_ANOTHER_SITE, "error": "Forbidden"}
    assert sandbox.world.accounts.account("demo").balance == 3000
    assert sandbox.world.clock.now() - now < 86400  # the clock ran at x600, and jumped no day
    assert len(sandbox.world.accounts.keys) == keys
    assert sandbox.world.faults.rates == {} and sandbox.world.uploads.stored() == []


async def test_code_and_the_sandboxs_own_pages_keep_working(api: httpx.AsyncClient, sandbox: Sandbox) -> None:
    """httpx and curl send neither header; a page of the sandbox's own address is same-origin."""
    own = {"Origin": BASE, "Sec-Fetch-Site": "same-origin"}
    typed = {"Sec-Fetch-Site": "none"}  # an address typed into the browser
    now = sandbox.world.clock.now()
    for headers in ({}, own, typed):
        for method, endpoint, body in CONTROLS:
            response = await api.request(method, path(endpoint), json=body, headers=headers)
            assert response.status_code in (200, 201), (method, endpoint, response.text)
    assert sandbox.world.clock.now() - now >= 3 * 86400  # each of the three jumped a day


async def test_media_load_in_pages_of_any_site(api: httpx.AsyncClient) -> None:
    """<img src> from JupyterLab's page is a cross-site request: media reads must answer it."""
    uploaded = await _upload(api)
    for url in (path("sandbox_samples", name="face.png"), path("sandbox_upload", name=uploaded)):
        response = await api.get(url, headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "image"})
        assert response.status_code == 200


async def test_through_a_proxy_only_media_are_served(api: httpx.AsyncClient) -> None:
    """jupyter-server-proxy puts the sandbox on the Jupyter server's origin: there, reads of media and
    of the web-app stand-in pages only (a replica's share link goes through the preview path too)."""
    proxied = {"X-Forwarded-Context": "/proxy/8765", "X-ProxyContextPath": "/proxy/8765"}
    face = await api.get(path("sandbox_samples", name="face.png"), headers=proxied)
    assert face.status_code == 200 and face.headers["content-type"] == "image/png"
    _hardened(face)
    share = await api.get(path("sandbox_app", page="r/some-run"), headers=proxied)  # a run's share link
    assert share.status_code == 200 and "<script" not in share.text
    _hardened(share)  # static text, and no script could run in it anyway
    for method, url in [
        ("GET", path("sandbox_account")),
        ("POST", path("sandbox_reset")),
        ("POST", path("sandbox_app", page="billing")),
        ("GET", path("models")),
        ("POST", path("run")),
        ("PUT", path("sandbox_upload", name="x.png")),
        ("GET", "/"),
    ]:
        response = await api.request(method, url, headers=proxied)
        assert response.status_code == 403, (method, url)
        assert response.json()["message"] == ONLY_MEDIA_THROUGH_A_PROXY
        _hardened(response)
