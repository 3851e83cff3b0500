"""Webhooks over HTTP: the URL rules at start time and one signed POST per finished generation.

Host names are resolved by a stand-in resolver so no test sends a DNS query off the machine, and
every real delivery goes to a receiver on 127.0.0.1.
"""

import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from _wait import until, wait_until

from mediagen_nb.protocol import limits, messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig
from mediagen_nb.sandbox import outbox as webhook_outbox

SECRET = b"test-webhook-secret"
START = {"modelId": "gpt-image-2", "input": {"prompt": "a red kite over the sea", "quality": "low"}}
FAKE_DNS = {
    "hooks.example.com": "93.184.216.34",
    "rebind.example.com": "10.1.2.3",
    "x.local": "192.168.1.20",
    "x.internal": "10.0.0.7",
    "localhost": "127.0.0.1",
}


def _fake_getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
    """Resolve only the names above; anything else fails like an unknown name."""
    if host not in FAKE_DNS:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (FAKE_DNS[host], port))]


@pytest.fixture(autouse=True)
def offline_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The webhook checker resolves through the stand-in resolver (no DNS traffic)."""
    monkeypatch.setattr(
        webhook_outbox,
        "socket",
        SimpleNamespace(getaddrinfo=_fake_getaddrinfo, SOCK_STREAM=socket.SOCK_STREAM),
    )


@pytest.fixture(autouse=True)
def no_public_posts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fail loudly if the sandbox ever tries to POST a webhook anywhere but loopback."""
    attempted: list[str] = []
    real_post = webhook_outbox.Outbox._post

    async def guarded(self: webhook_outbox.Outbox, entry: dict[str, Any], body: bytes) -> None:
        attempted.append(entry["url"])
        assert entry["url"].startswith("http://127.0.0.1:"), f"refusing to send traffic to {entry['url']}"
        await real_post(self, entry, body)

    monkeypatch.setattr(webhook_outbox.Outbox, "_post", guarded)
    return attempted


def _client(sandbox: Sandbox) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=sandbox.transport(),
        base_url="http://sandbox.test",
        headers={"Authorization": f"Bearer {sandbox.demo_key}"},
        timeout=30,
    )


@pytest.fixture
async def strict() -> AsyncIterator[httpx.AsyncClient]:
    """A client on a sandbox without allow_private_webhooks (the service's own rules)."""
    async with _client(Sandbox(SandboxConfig(time_scale=600, seed=1))) as client:
        yield client


async def _start(client: httpx.AsyncClient, webhook: Any, body: dict[str, Any] = START) -> httpx.Response:
    return await client.post(path("run"), json={**body, "webhook": webhook})


async def _ledger(client: httpx.AsyncClient, resource_id: str | None = None) -> list[dict[str, Any]]:
    params = {"resourceId": resource_id} if resource_id else {}
    return (await client.get(path("sandbox_ledger"), params=params)).json()["data"]["entries"]


async def _refused(client: httpx.AsyncClient, webhook: Any) -> str:
    """Start with ``webhook``, expect a 400 without a charge, and return its message."""
    response = await _start(client, webhook)
    assert response.status_code == 400, (webhook, response.text)
    body = response.json()
    assert body["statusCode"] == 400 and body["error"] == "Bad Request"
    assert await _ledger(client) == []
    return body["message"]


async def _wait_done(client: httpx.AsyncClient, gen_id: str) -> dict[str, Any]:
    """Long-poll until the generation ends (bounded)."""
    deadline = time.monotonic() + 20
    for _ in range(200):
        data = (await client.get(path("generation", id=gen_id), params={"wait": 55})).json()["data"]
        if data["status"] != "processing":
            return data
        assert time.monotonic() < deadline, "generation did not finish"
    raise AssertionError("generation did not finish")


# ------------------------------------------------------------------------------------------- URL rules


@pytest.mark.anyio
@pytest.mark.parametrize(
    "url", ["http://hooks.example.com/hook", "http://93.184.216.34/hook", "http://8.8.8.8:8080/x"]
)
async def test_http_public_host_must_use_https(strict: httpx.AsyncClient, url: str) -> None:
    assert await _refused(strict, url) == messages.WEBHOOK_HTTPS


@pytest.mark.anyio
async def test_http_is_refused_for_its_scheme_without_a_lookup(
    strict: httpx.AsyncClient, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An http URL whose host does not resolve is still ``webhook must use https`` (scheme first)."""
    lookups: list[str] = []

    def counting(host: str, port: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        lookups.append(host)
        return _fake_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(
        webhook_outbox, "socket", SimpleNamespace(getaddrinfo=counting, SOCK_STREAM=socket.SOCK_STREAM)
    )
    assert await _refused(strict, "http://nowhere.example/hook") == messages.WEBHOOK_HTTPS
    assert lookups == []  # the strict sandbox needs no DNS to refuse a non-https webhook
    assert await _refused(api, "http://nowhere.example/hook") == messages.WEBHOOK_HTTPS
    assert await _refused(strict, "https://nowhere.example/hook") == messages.WEBHOOK_UNRESOLVED


@pytest.mark.anyio
@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/hook",
        "https://localhost:8443/hook",
        "https://x.local/hook",
        "https://x.internal/hook",
        "https://unresolvable.local/hook",
        "https://10.0.0.1/hook",
        "https://192.168.1.1/hook",
        "https://172.16.0.5/hook",
        "https://169.254.169.254/latest",
        "https://[::1]/hook",
        "https://127.0.0.1/hook",
        "https://rebind.example.com/hook",
    ],
)
async def test_private_hosts_are_not_allowed(strict: httpx.AsyncClient, url: str) -> None:
    assert await _refused(strict, url) == messages.WEBHOOK_HOST


@pytest.mark.anyio
@pytest.mark.parametrize(
    "url", ["not a url", "https://", "hooks.example.com/hook", "ftp://hooks.example.com/x", 42, ""]
)
async def test_not_a_url_is_a_webhook_error(strict: httpx.AsyncClient, url: Any) -> None:
    message = await _refused(strict, url)
    assert message.startswith("webhook ")


@pytest.mark.anyio
async def test_webhook_checked_before_input(strict: httpx.AsyncClient) -> None:
    """Check 3 names the webhook before a missing input object (same check, webhook first)."""
    response = await strict.post(path("run"), json={"modelId": "gpt-image-2", "webhook": "http://8.8.8.8/"})
    assert response.status_code == 400 and response.json()["message"] == messages.WEBHOOK_HTTPS


@pytest.mark.anyio
async def test_loopback_needs_allow_private() -> None:
    """With allow_private_webhooks loopback is accepted; private networks are still refused. On the
    manual clock the runs never end here, so nothing is sent to those addresses (on a fast real clock,
    beside a CPU hog, runs ended within the test and their deliveries met the loopback guard)."""
    sandbox = Sandbox(SandboxConfig(clock="manual", seed=1, allow_private_webhooks=True))
    async with _client(sandbox) as api:
        for url in ("https://127.0.0.1/hook", "http://127.0.0.1:9/hook", "http://localhost:9/hook"):
            response = await _start(api, url)
            assert response.status_code == 201, (url, response.text)
        for url in ("https://10.0.0.1/hook", "https://192.168.1.1/hook", "http://hooks.example.com/hook"):
            assert (await _start(api, url)).status_code == 400, url


@pytest.mark.anyio
async def test_public_ip_is_recorded_not_posted(
    strict: httpx.AsyncClient, no_public_posts: list[str]
) -> None:
    """A public https webhook is accepted and put in the outbox undelivered; nothing is POSTed."""
    response = await _start(strict, "https://8.8.8.8/hook")
    assert response.status_code == 201, response.text
    gen = await _wait_done(strict, response.json()["data"]["id"])
    assert gen["status"] == "succeeded"
    outbox = (await strict.get(path("sandbox_webhooks"))).json()["data"]["webhooks"]
    assert len(outbox) == 1
    entry = outbox[0]
    assert entry["url"] == "https://8.8.8.8/hook"
    assert entry["delivered"] is False
    assert json.loads(entry["body"])["id"] == gen["id"]
    assert entry["note"].startswith("recorded only")  # no delivery was begun: none can come later
    assert no_public_posts == []


# -------------------------------------------------------------------------------------------- delivery


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1 that records every request it gets."""

    status: int = 200
    requests: list[dict[str, Any]] = field(default_factory=list)
    on_receive: Any = None
    got: threading.Event = field(default_factory=threading.Event)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A threaded http.server receiver, shut down after the test."""
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            extra = state.on_receive() if state.on_receive else None
            state.requests.append(
                {
                    "method": "POST",
                    "path": self.path,
                    "headers": dict(self.headers),
                    "body": raw,
                    "extra": extra,
                }
            )
            self.send_response(state.status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            state.got.set()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


ENDED = limits.RUNTIME_HARD_SECONDS + 1  # simulated seconds after which every run has ended


@pytest.fixture
def signed() -> Sandbox:
    """An in-process sandbox with a known webhook secret and loopback delivery, on the manual clock (a long
    poll moves it until its generation ends; the delivery itself is real HTTP, awaited in real time)."""
    box = Sandbox(SandboxConfig(clock="manual", seed=1, allow_private_webhooks=True, webhook_secret=SECRET))
    box.stepping_clock()  # the test is its stepper: its holds move it
    return box


async def _await_posts(receiver: Receiver, sandbox: Sandbox, count: int = 1) -> list[dict[str, Any]]:
    """Move the clock past every run (they end, and send their webhooks), then wait (bounded, in real time:
    a delivery is real HTTP) until ``count`` POSTs arrived and the sandbox has ended every delivery it
    began: then every attempt it made has been received (any other would be in its outbox)."""
    sandbox.advance(ENDED)

    async def delivered() -> bool:
        sent = sandbox.world.outbox.sent
        ended = len(sent) >= count and all(e["delivered"] is not None for e in sent)
        return ended and len(receiver.requests) >= count

    await until(delivered, 15, f"{count} webhook(s) delivered")
    return receiver.requests


def _check_signature(request: dict[str, Any]) -> None:
    headers = {k.lower(): v for k, v in request["headers"].items()}
    timestamp = headers["x-service-timestamp"]
    assert timestamp.isdigit()
    assert abs(int(timestamp) - time.time()) < 120
    expected = hmac.new(SECRET, f"{timestamp}.".encode() + request["body"], hashlib.sha256).hexdigest()
    assert headers["x-service-signature"] == "sha256=" + expected
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"] == "Service-Webhook/1"


@pytest.mark.anyio
async def test_success_webhook_delivered_once_and_signed(signed: Sandbox, receiver: Receiver) -> None:
    """One POST with the spec's headers, a valid signature and the generation's payload."""
    async with _client(signed) as client:
        response = await _start(client, receiver.url)
        assert response.status_code == 201
        gen_id = response.json()["data"]["id"]
        requests = await _await_posts(receiver, signed)
        assert len(requests) == 1
        request = requests[0]
        assert request["path"] == "/hook"
        _check_signature(request)
        payload = json.loads(request["body"])
        assert set(payload) == {"id", "modelId", "status", "output", "error"}
        assert payload["id"] == gen_id and payload["modelId"] == "gpt-image-2"
        assert payload["status"] == "succeeded" and payload["error"] is None
        assert payload["output"]["type"] == "image" and payload["output"]["urls"]
        gen = (await client.get(path("generation", id=gen_id))).json()["data"]
        assert gen["output"] == payload["output"]
        image = await client.get(payload["output"]["urls"][0])
        assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
        outbox = (await client.get(path("sandbox_webhooks"))).json()["data"]["webhooks"]
        assert len(outbox) == 1 and outbox[0]["delivered"] is True
        assert outbox[0]["body"].encode() == request["body"]


@pytest.mark.anyio
async def test_wrong_secret_does_not_verify(signed: Sandbox, receiver: Receiver) -> None:
    """The signature depends on the secret and on the exact body."""
    async with _client(signed) as client:
        assert (await _start(client, receiver.url)).status_code == 201
        request = (await _await_posts(receiver, signed))[0]
    headers = {k.lower(): v for k, v in request["headers"].items()}
    message = f"{headers['x-service-timestamp']}.".encode() + request["body"]
    assert (
        headers["x-service-signature"] != "sha256=" + hmac.new(b"other", message, hashlib.sha256).hexdigest()
    )
    tampered = message.replace(b"succeeded", b"failed")
    assert (
        headers["x-service-signature"] != "sha256=" + hmac.new(SECRET, tampered, hashlib.sha256).hexdigest()
    )


@pytest.mark.anyio
async def test_failed_generation_webhook_after_refund(signed: Sandbox, receiver: Receiver) -> None:
    """A failed run's webhook has status failed, null output, an error, and the refund is already booked."""
    receiver.on_receive = lambda: [dict(e) for e in signed.world.accounts.ledger]
    async with _client(signed) as client:
        faults = await client.post(path("sandbox_faults"), json={"modelScript": ["fail"]})
        assert faults.status_code == 200
        response = await _start(client, receiver.url)
        assert response.status_code == 201
        gen_id = response.json()["data"]["id"]
        credits = response.json()["data"]["creditsSpent"]
        requests = await _await_posts(receiver, signed)
        assert len(requests) == 1
        _check_signature(requests[0])
        payload = json.loads(requests[0]["body"])
        assert payload["id"] == gen_id
        assert payload["status"] == "failed"
        assert payload["output"] is None
        assert isinstance(payload["error"], str) and payload["error"]
        at_receipt = [(e["kind"], e["credits"]) for e in requests[0]["extra"] if e["resourceId"] == gen_id]
        assert at_receipt == [("charge", credits), ("refund", credits)]
        assert [e["kind"] for e in await _ledger(client, gen_id)] == ["charge", "refund"]
        assert (await client.get(path("sandbox_account"))).json()["data"]["balance"] == 3000


@pytest.mark.anyio
async def test_one_attempt_even_when_receiver_fails(signed: Sandbox, receiver: Receiver) -> None:
    """A receiver answering 500 gets exactly one POST; the outbox records the attempt."""
    receiver.status = 500
    async with _client(signed) as client:
        assert (await _start(client, receiver.url)).status_code == 201
        requests = await _await_posts(receiver, signed)
        assert len(requests) == 1
        outbox = (await client.get(path("sandbox_webhooks"))).json()["data"]["webhooks"]
        assert len(outbox) == 1
        assert outbox[0]["delivered"] is True and outbox[0].get("receiverStatus") == 500


@pytest.mark.anyio
async def test_unreachable_receiver_is_not_retried(signed: Sandbox) -> None:
    """A closed loopback port: one failed attempt, recorded as undelivered."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with _client(signed) as client:
        assert (await _start(client, f"http://127.0.0.1:{port}/hook")).status_code == 201
        signed.advance(ENDED)

        async def attempted() -> list[dict[str, Any]]:
            found = (await client.get(path("sandbox_webhooks"))).json()["data"]["webhooks"]
            return found if found and found[0]["delivered"] is not None else []

        outbox = await until(attempted, 15, "the delivery attempt")
        assert len(outbox) == 1 and outbox[0]["delivered"] is False


@pytest.mark.anyio
async def test_no_webhook_without_url(signed: Sandbox, receiver: Receiver) -> None:
    """A run without a webhook sends nothing and records nothing."""
    async with _client(signed) as client:
        response = await client.post(path("run"), json=START)
        await _wait_done(client, response.json()["data"]["id"])
        assert (await client.get(path("sandbox_webhooks"))).json()["data"]["webhooks"] == []
    assert receiver.requests == []


def _listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_stopping_a_served_sandbox_lets_a_webhook_in_flight_finish(receiver: Receiver) -> None:
    """A webhook already sent gets its one attempt even when the server stops meanwhile (drained on stop)."""
    arrived, answer = threading.Event(), threading.Event()

    def hold() -> None:
        """The receiver has the webhook and answers only once the test says so."""
        arrived.set()
        answer.wait(30)

    receiver.on_receive = hold
    sandbox = Sandbox(SandboxConfig(time_scale=600, seed=1, allow_private_webhooks=True)).start()
    try:
        assert sandbox.base_url is not None
        port = int(sandbox.base_url.rsplit(":", 1)[1])
        started = httpx.post(
            sandbox.base_url + path("run"),
            json={**START, "webhook": receiver.url},
            headers={"Authorization": f"Bearer {sandbox.demo_key}"},
            timeout=10,
        )
        assert started.status_code == 201, started.text
        assert arrived.wait(10), "the webhook reaches its receiver"
        [entry] = sandbox.world.outbox.sent
        assert entry["delivered"] is None, "still in flight when the sandbox stops"

        def answer_once_stopping() -> None:
            """The receiver answers only after stop() began: the sandbox no longer listens."""
            wait_until(lambda: not _listening(port), 30, "the sandbox to stop listening")
            answer.set()

        threading.Thread(target=answer_once_stopping, daemon=True).start()
    finally:
        sandbox.stop()
        answer.set()  # a test failed early: let the receiver go
    assert entry["delivered"] is True and entry["receiverStatus"] == 200
    assert len(receiver.requests) == 1
