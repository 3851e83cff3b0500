"""Real-browser test of issue 33: a page that reaches the sandbox by DNS rebinding changes nothing.

A rebinding page is served from a name of its own that first resolves to the attacker's server, then to
127.0.0.1, so its script calls the sandbox "same-origin": ``Host`` and ``Origin`` both carry the
attacker's name and no cross-site check can see it. Here Debian's chromium resolves ``rebind.test`` to
127.0.0.1 (``--host-resolver-rules``), where a loopback forwarder serves the page and passes every other
request on to the sandbox unchanged, as the rebound name would. On 1644530 the page's script set the
balance, minted a key, read the ledger, listed and read the user's upload and talked to ``/mcp``. The
sandbox here has no owner's secret (a served one), so the Host check alone stands in the way; the
control, the same page against a sandbox told to answer any name (``hosts=("*",)``), shows the same
script would have done it all.
"""

import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'")
from _harness import CHROMIUM_FLAGS

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig
from mediagen_nb.sandbox.media.store import _sample

REBIND = "rebind.test"

ATTACK = """<!doctype html><title>a page</title><script>
const key = {"Authorization": "Bearer %(key)s"};
const json = {"Content-Type": "application/json"};
const mcp = {...key, ...json, "Accept": "application/json, text/event-stream"};
const tries = [
  ["balance", "%(account)s", {method: "POST", headers: json, body: JSON.stringify({balance: 7})}],
  ["key", "%(keys)s", {method: "POST", headers: json, body: "{}"}],
  ["ledger", "%(ledger)s", {}],
  ["uploads", "%(uploads)s", {headers: key}],
  ["upload", "%(upload)s", {}],
  ["estimate", "%(estimate)s", {method: "POST", headers: {...key, ...json}, body: JSON.stringify(%(image)s)}],
  ["agent", "/mcp", {method: "POST", headers: mcp, body: JSON.stringify(%(init)s)}],
];
(async () => {
  const results = {};
  for (const [name, where, init] of tries) {
    try { results[name] = (await fetch(where, init)).status; } catch (e) { results[name] = String(e); }
  }
  window.__results = results;
})();
</script>"""


class Forwarder:
    """``rebind.test`` once rebound: serves the page at ``/page.html`` and passes everything else on to
    the sandbox at ``sandbox_port`` as it came (its Host and Origin name the page's origin)."""

    def __init__(self, sandbox_port: int, page: bytes) -> None:
        self.sandbox_port, self.page = sandbox_port, page
        forwarder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _pass_on(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else None
                if self.path == "/page.html":
                    status, headers, answer = 200, [("Content-Type", "text/html")], forwarder.page
                else:
                    sent = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                    upstream = http.client.HTTPConnection("127.0.0.1", forwarder.sandbox_port, timeout=30)
                    upstream.request(self.command, self.path, body=body, headers=sent)
                    reply = upstream.getresponse()
                    status, answer = reply.status, reply.read()
                    headers = [
                        (k, v)
                        for k, v in reply.getheaders()
                        if k.lower() not in ("content-length", "connection")
                    ]
                    upstream.close()
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = do_PUT = _pass_on

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def rebinding_browser(chromium: str) -> Iterator[Any]:
    """Headless chromium in which ``rebind.test`` resolves to 127.0.0.1 (the name, once rebound)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=[*CHROMIUM_FLAGS, f"--host-resolver-rules=MAP {REBIND} 127.0.0.1"],
            timeout=60_000,
        )
        try:
            yield browser
        finally:
            browser.close()


def _page(sandbox: Sandbox) -> bytes:
    """The attacker's page against ``sandbox``, which holds one upload of the user's."""
    base = sandbox.base_url
    assert base is not None
    key = {"Authorization": f"Bearer {sandbox.demo_key}"}
    upload = httpx.put(
        base + path("sandbox_upload", name="face.png"), content=_sample("face.png"), headers=key
    )
    hello = {"name": "p", "version": "1"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": hello},
    }
    page = ATTACK % {
        "key": sandbox.demo_key,
        "account": path("sandbox_account"),
        "keys": path("sandbox_keys"),
        "ledger": path("sandbox_ledger"),
        "uploads": path("sandbox_uploads"),
        "upload": path("sandbox_upload", name=upload.json()["data"]["name"]),
        "estimate": path("estimate"),
        "image": json.dumps({"modelId": "gpt-image-2", "input": {"prompt": "a", "quality": "low"}}),
        "init": json.dumps(init),
    }
    return page.encode()


def _attack(browser: Any, sandbox: Sandbox) -> dict[str, Any]:
    """What the page's script got from each request, opened at ``rebind.test`` rebound to the sandbox."""
    assert sandbox.base_url is not None
    forwarder = Forwarder(int(sandbox.base_url.rsplit(":", 1)[1]), _page(sandbox))
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(f"http://{REBIND}:{forwarder.port}/page.html")
        results: dict[str, Any] = tab.wait_for_function("() => window.__results", timeout=30_000).json_value()
        return results
    finally:
        context.close()
        forwarder.close()


def test_a_page_that_rebinds_its_name_to_the_sandbox_changes_nothing(rebinding_browser: Any) -> None:
    with Sandbox(SandboxConfig(time_scale=600, seed=1)) as sandbox:
        keys = len(sandbox.world.accounts.keys)
        results = _attack(rebinding_browser, sandbox)
        assert len(results) == 7 and results == dict.fromkeys(results, 403), results
        assert sandbox.world.accounts.account("demo").balance == 3000
        assert len(sandbox.world.accounts.keys) == keys and sandbox.world.accounts.ledger == []

    # The control: a sandbox told to answer any name is driven by the same page, as 1644530 was.
    with Sandbox(SandboxConfig(time_scale=600, seed=1, hosts=("*",))) as open_to_all:
        control = _attack(rebinding_browser, open_to_all)
        assert control["balance"] == 200 and control["key"] == 201 and control["ledger"] == 200, control
        assert control["uploads"] == 200 and control["upload"] == 200 and control["agent"] == 200, control
        assert open_to_all.world.accounts.account("demo").balance == 7
