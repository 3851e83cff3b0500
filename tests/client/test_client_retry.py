"""The client's retry strategy against a time-scaled sandbox over real HTTP (spec: Errors, Retry strategy).

Faults are scripted on the sandbox (``POST /_sandbox/faults``); every request the client sends is
recorded with httpx event hooks on the transport, never by mocking the client.
"""

import itertools
import random
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from _wait import PauseLog

from mediagen_nb.client import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    CapacityError,
    Client,
    ConnectionFailed,
    Generation,
    KeyCapReachedError,
    Limits,
    MediagenError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    StartUncertain,
    ValidationError,
)
from mediagen_nb.client.errors import from_response
from mediagen_nb.client.retry import NO_RETRY
from mediagen_nb.client.timing import ServiceClock
from mediagen_nb.protocol import limits as spec_limits
from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime.clock import REAL
from mediagen_nb.sandbox import Sandbox, SandboxConfig

SCALE = 600.0  # the spec's 60 s wait after a 429 takes 0.1 s real; a 5 s backoff 0.008 s
PAUSE = Limits().pause(ServiceClock(REAL, SCALE).real(Limits().window))  # a 429's, in real seconds
IMAGE = {"prompt": "a red fox in snow", "quality": "low"}  # gpt-image-2, 3 credits
RUN_PATH = path("run")


@dataclass
class Sent:
    """One request as it left the client."""

    at: float
    method: str
    path: str
    idempotency_key: str | None
    authorization: str | None


@dataclass
class Traffic:
    """Every request and response status seen on a client's transport."""

    sent: list[Sent] = field(default_factory=list)
    statuses: list[tuple[str, int]] = field(default_factory=list)

    def on_request(self, request: httpx.Request) -> None:
        self.sent.append(
            Sent(
                time.monotonic(),
                request.method,
                request.url.path,
                request.headers.get("idempotency-key"),
                request.headers.get("authorization"),
            )
        )

    def on_response(self, response: httpx.Response) -> None:
        self.statuses.append((response.request.url.path, response.status_code))

    async def aon_request(self, request: httpx.Request) -> None:
        self.on_request(request)

    async def aon_response(self, response: httpx.Response) -> None:
        self.on_response(response)

    def to(self, endpoint_path: str) -> list[Sent]:
        """Requests sent to one path."""
        return [s for s in self.sent if s.path == endpoint_path]

    def service_calls(self) -> list[Sent]:
        """Requests other than the catalog's (which need no key)."""
        return [s for s in self.sent if s.authorization is not None]

    def http_client(self) -> httpx.Client:
        return httpx.Client(event_hooks={"request": [self.on_request], "response": [self.on_response]})

    def async_http_client(self, sandbox: Sandbox) -> httpx.AsyncClient:
        hooks = {"request": [self.aon_request], "response": [self.aon_response]}
        if sandbox.base_url is None:
            return httpx.AsyncClient(transport=sandbox.transport(), event_hooks=hooks)
        return httpx.AsyncClient(event_hooks=hooks)


class Control:
    """The sandbox's ``/_sandbox`` controls over HTTP (served) or in-process (ASGI)."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def request(self, method: str, name: str, body: Any = None) -> Any:
        """A control call to a served sandbox (sync tests)."""
        assert self.sandbox.base_url is not None, "sync control calls need a served sandbox"
        response = httpx.request(method, self.sandbox.base_url + path(name), json=body, timeout=10)
        assert response.status_code in (200, 201), response.text
        return response.json()["data"]

    async def arequest(self, method: str, name: str, body: Any = None) -> Any:
        """A control call to a served or an in-process sandbox (async tests)."""
        if self.sandbox.base_url is not None:
            return self.request(method, name, body)
        async with httpx.AsyncClient(
            transport=self.sandbox.transport(), base_url="http://sandbox.local"
        ) as api:
            response = await api.request(method, path(name), json=body)
        assert response.status_code in (200, 201), response.text
        return response.json()["data"]

    def faults(self, **plan: Any) -> dict[str, Any]:
        return self.request("POST", "sandbox_faults", plan)

    def ledger(self) -> list[dict[str, Any]]:
        return self.request("GET", "sandbox_ledger")["entries"]

    def key(self, **body: Any) -> str:
        return self.request("POST", "sandbox_keys", body)["key"]


@pytest.fixture
def fast_served() -> Iterator[Sandbox]:
    """A sandbox served by uvicorn on 127.0.0.1 at time x600."""
    with Sandbox(SandboxConfig(time_scale=SCALE, seed=3)) as sandbox:
        yield sandbox


@pytest.fixture
def traffic() -> Traffic:
    return Traffic()


@pytest.fixture
def client(fast_served: Sandbox, traffic: Traffic) -> Iterator[Client]:
    """A sync client of the served sandbox whose every request is recorded."""
    http = traffic.http_client()
    with Client.for_sandbox(fast_served, http_client=http) as c:
        yield c
    http.close()


def key_client(sandbox: Sandbox, key: str, http: httpx.Client, **options: Any) -> Client:
    """A sync client of a served sandbox with another key than the demo key."""
    return Client(key, base_url=sandbox.base_url, time_scale=SCALE, http_client=http, **options)


def _assert_one_net_charge(
    ledger: list[dict[str, Any]], generation: Generation, refunded_starts: int
) -> None:
    """Exactly one charge for ``generation``; each other start charged and refunded, with no generation."""
    mine = [e for e in ledger if e["resourceId"] == generation.id]
    assert [e["kind"] for e in mine] == ["charge"]
    assert mine[0]["credits"] == generation.credits_spent > 0
    others = [e for e in ledger if e["resourceId"] != generation.id]
    by_id: dict[str, list[str]] = {}
    for entry in others:
        by_id.setdefault(entry["resourceId"], []).append(entry["kind"])
    assert list(by_id.values()) == [["charge", "refund"]] * refunded_starts
    net = sum(e["credits"] if e["kind"] == "charge" else -e["credits"] for e in ledger)
    assert net == generation.credits_spent


# ------------------------------------------------------------------------------------- starts


def test_start_survives_429_500_503_and_drop_with_one_key_and_one_charge(
    client: Client, fast_served: Sandbox, traffic: Traffic
) -> None:
    """429, 500, 503 (charged and refunded), then a dropped connection: one generation, one charge."""
    control = Control(fast_served)
    control.faults(script=["429", "500", "503", "drop"], routes=["run"])

    generation = client.run("gpt-image-2", IMAGE)

    runs = traffic.to(RUN_PATH)
    assert len(runs) == 5
    keys = {s.idempotency_key for s in runs}
    assert len(keys) == 1 and None not in keys and next(iter(keys))
    # The dropped attempt's headers arrived (200) before the body broke; the retry replays it (200, not 201).
    assert [status for p, status in traffic.statuses if p == RUN_PATH] == [429, 500, 503, 200, 200]
    # Waits follow the spec: about 60 s after a 429 (the key paused a window), then 10, 20, 40 s backoffs.
    gaps = [b.at - a.at for a, b in itertools.pairwise(runs)]
    expected = [60.0, 10.0, 20.0, 40.0]
    window = PAUSE
    for gap, service_seconds in zip(gaps, expected, strict=True):
        assert gap >= 0.75 * service_seconds / SCALE
        assert gap < max(1.25 * service_seconds / SCALE, window) + 0.5
    assert gaps[0] >= window  # the key that met the 429 rested a whole window

    assert generation.model_id == "gpt-image-2" and generation.credits_spent == 3
    world = fast_served.world
    assert list(world.generations.items) == [generation.id]
    assert world.faults.injected == {"429": 1, "500": 1, "503": 1, "drop": 1}
    _assert_one_net_charge(control.ledger(), generation, refunded_starts=1)
    refunded = next(e for e in control.ledger() if e["kind"] == "refund")
    assert refunded["resourceId"] not in world.generations.items


class GoneAfterOneStart(httpx.HTTPTransport):
    """Real HTTP until one start has been sent; then the service refuses connections (it went away)."""

    def __init__(self) -> None:
        super().__init__()
        self.starts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == RUN_PATH:
            self.starts += 1
            if self.starts > 1:
                raise httpx.ConnectError("connection refused", request=request)
        return super().handle_request(request)


def test_a_start_whose_service_goes_away_after_a_try_reached_it_stays_possibly_charged(
    fast_served: Sandbox,
) -> None:
    """The first try is processed (charged) and its answer lost; every later try cannot connect. That
    start was possibly charged: StartUncertain, its intent kept (before: "cannot connect", the intent
    dropped as if nothing had been sent). Sending it again resumes it at no charge."""
    control = Control(fast_served)
    control.faults(script=["drop"], routes=["run"])
    key = "gone-after-one-try"
    with (
        httpx.Client(transport=GoneAfterOneStart()) as http,
        Client.for_sandbox(fast_served, http_client=http) as c,
        pytest.raises(StartUncertain, match="may have reached the service"),
    ):
        c.run("gpt-image-2", IMAGE, idempotency_key=key)
    [charged] = [e for e in control.ledger() if e["kind"] == "charge"]
    with Client.for_sandbox(fast_served) as c:
        again = c.run("gpt-image-2", IMAGE, idempotency_key=key)
    assert again.id == charged["resourceId"] and again.reused
    assert [e["kind"] for e in control.ledger()] == ["charge"]


@pytest.mark.anyio
@pytest.mark.parametrize("served", [False, True], ids=["in-process", "served"])
async def test_async_start_keeps_one_idempotency_key_and_one_charge(served: bool) -> None:
    """The async client retries a start through the same faults with one key and one charge."""
    sandbox = Sandbox(SandboxConfig(time_scale=SCALE, seed=4))
    if served:
        sandbox.start()
    try:
        control = Control(sandbox)
        await control.arequest(
            "POST", "sandbox_faults", {"script": ["429", "500", "503", "drop"], "routes": ["run"]}
        )
        traffic = Traffic()
        async with traffic.async_http_client(sandbox) as http:
            client = AsyncClient.for_sandbox(sandbox, http_client=http)
            generation = await client.run("gpt-image-2", IMAGE)
            again = await client.generation(generation.id)
        runs = traffic.to(RUN_PATH)
        assert len(runs) == 5
        assert len({s.idempotency_key for s in runs}) == 1 and runs[0].idempotency_key
        assert again.id == generation.id
        assert list(sandbox.world.generations.items) == [generation.id]
        ledger = (await control.arequest("GET", "sandbox_ledger"))["entries"]
        _assert_one_net_charge(ledger, generation, refunded_starts=1)
    finally:
        sandbox.stop()


def test_caller_idempotency_key_is_sent_verbatim(
    client: Client, fast_served: Sandbox, traffic: Traffic
) -> None:
    """A caller's key goes out unchanged; the same key returns the same generation, charged once: from
    the ledger with no request, and from the service (a second ledger, another machine's) by the key."""
    first = client.run("gpt-image-2", IMAGE, idempotency_key="order-42")
    again = client.run("gpt-image-2", IMAGE, idempotency_key="order-42")
    assert again.id == first.id and again.reused and len(traffic.to(RUN_PATH)) == 1
    second = client.run("gpt-image-2", IMAGE, idempotency_key="order-42", ledger=other_ledger())
    assert [s.idempotency_key for s in traffic.to(RUN_PATH)] == ["order-42", "order-42"]
    assert second.id == first.id
    charges = [e for e in Control(fast_served).ledger() if e["kind"] == "charge"]
    assert [e["resourceId"] for e in charges] == [first.id]


def test_caller_idempotency_key_is_cut_at_255(client: Client, fast_served: Sandbox, traffic: Traffic) -> None:
    """Only the first 255 characters count: the client sends those, and two keys sharing them are one."""
    stem = "k" * spec_limits.IDEMPOTENCY_KEY_CHARS
    first = client.run("gpt-image-2", IMAGE, idempotency_key=stem + "-first-tail")
    second = client.run("gpt-image-2", IMAGE, idempotency_key=stem + "-another-tail", ledger=other_ledger())
    assert [s.idempotency_key for s in traffic.to(RUN_PATH)] == [stem, stem]
    assert second.id == first.id
    assert len(fast_served.world.generations.items) == 1
    assert len([e for e in Control(fast_served).ledger() if e["kind"] == "charge"]) == 1


def other_ledger() -> str:
    """A second client-side ledger file (another machine's), which knows none of this test's starts."""
    return str(Path(tempfile.mkdtemp(prefix="mediagen-other-")) / "ledger.sqlite")


def test_each_start_gets_its_own_generated_key(client: Client, traffic: Traffic) -> None:
    """Without a caller's key, two starts are two generations with two different keys."""
    a = client.run("gpt-image-2", IMAGE)
    b = client.run("gpt-image-2", IMAGE)
    keys = [s.idempotency_key for s in traffic.to(RUN_PATH)]
    assert a.id != b.id and len(set(keys)) == 2 and all(keys)


# -------------------------------------------------------------------------- never retried


def test_400_is_not_retried(client: Client, traffic: Traffic) -> None:
    """A 400 (unknown model sent unvalidated; a malformed id) is raised after exactly one request."""
    with pytest.raises(BadRequestError) as raised:
        client.run("no-such-model", {"prompt": "x"}, validate=False)
    assert raised.value.status == 400 and raised.value.message.startswith("Unknown model 'no-such-model'")
    assert len(traffic.to(RUN_PATH)) == 1
    with pytest.raises(BadRequestError) as bad_id:  # refused by the client: no request at all
        client.generation("not-a-uuid")
    assert bad_id.value.message.startswith(messages.INVALID_GENERATION_ID)
    assert len(traffic.service_calls()) == 1


def test_401_is_not_retried(fast_served: Sandbox, traffic: Traffic) -> None:
    """A wrong key: AuthenticationError after one request, and the key never appears in the error."""
    wrong = "pk_live_" + uuid.uuid4().hex
    with (
        traffic.http_client() as http,
        key_client(fast_served, wrong, http) as c,
        pytest.raises(AuthenticationError) as raised,
    ):
        c.generation(str(uuid.uuid4()))
    assert raised.value.status == 401 and raised.value.message == messages.INVALID_KEY
    assert wrong not in str(raised.value)
    assert len(traffic.sent) == 1


def test_403_is_not_retried(fast_served: Sandbox, traffic: Traffic) -> None:
    """A suspended account: PermissionDeniedError after one request, nothing charged."""
    control = Control(fast_served)
    key = control.key(account="frozen")
    control.request("POST", "sandbox_account", {"account": "frozen", "suspended": True})
    with (
        traffic.http_client() as http,
        key_client(fast_served, key, http) as c,
        pytest.raises(PermissionDeniedError) as raised,
    ):
        c.run("gpt-image-2", IMAGE)
    assert raised.value.status == 403 and raised.value.message == messages.SUSPENDED
    assert len(traffic.to(RUN_PATH)) == 1
    assert control.ledger() == []


def test_404_is_not_retried(client: Client, traffic: Traffic) -> None:
    """An unknown generation id: NotFoundError after one request."""
    with pytest.raises(NotFoundError) as raised:
        client.generation(str(uuid.uuid4()))
    assert raised.value.status == 404 and raised.value.message == messages.GENERATION_NOT_FOUND
    assert len(traffic.service_calls()) == 1


def test_key_cap_reached_is_not_retried(fast_served: Sandbox, traffic: Traffic) -> None:
    """The key's monthly cap (a 429) is KeyCapReachedError, raised at once: waiting cannot help."""
    control = Control(fast_served)
    key = control.key(name="capped", monthlyCap=2)
    paced = PauseLog()
    with traffic.http_client() as http, key_client(fast_served, key, http, clock=paced) as c:
        with pytest.raises(KeyCapReachedError) as raised:
            c.run("gpt-image-2", IMAGE)
        assert not isinstance(raised.value, RateLimitError)
        assert raised.value.status == 429 and raised.value.cap == 2 and not raised.value.retryable
        no_window = 0.5 * PAUSE  # pacing's spacing at most, no backoff
        assert len(traffic.to(RUN_PATH)) == 1 and sum(paced.pauses) < no_window  # not retried
        # Not mistaken for a rate limit: the key is not paused, the next call goes at once.
        with pytest.raises(NotFoundError):
            c.generation(str(uuid.uuid4()))
        assert sum(paced.pauses) < no_window
    assert control.ledger() == []


# ------------------------------------------------------------------------------- attempts


def test_max_attempts_default_is_six(client: Client, fast_served: Sandbox, traffic: Traffic) -> None:
    """Seven scripted 500s: the default policy gives up after six requests, saying the start may have
    been accepted (a 500 is ambiguous) and that running it again resumes it at no cost."""
    control = Control(fast_served)
    control.faults(script=["500"] * 7, routes=["run"])
    with pytest.raises(StartUncertain) as raised:
        client.run("gpt-image-2", IMAGE)
    assert "Internal server error" in raised.value.message and "resumes it at no cost" in raised.value.message
    runs = traffic.to(RUN_PATH)
    assert len(runs) == RetryPolicy().max_attempts == 6
    assert len({s.idempotency_key for s in runs}) == 1
    assert list(fast_served.world.faults.script) == ["500"]  # the seventh was never needed
    assert control.ledger() == [] and not fast_served.world.generations.items


@pytest.mark.parametrize(("policy", "requests"), [(RetryPolicy(max_attempts=2), 2), (NO_RETRY, 1)])
def test_max_attempts_is_respected(
    fast_served: Sandbox, traffic: Traffic, policy: RetryPolicy, requests: int
) -> None:
    """A custom policy's ``max_attempts`` counts every try, the first included."""
    Control(fast_served).faults(script=["503"] * 5, routes=["run"])
    with (
        traffic.http_client() as http,
        Client.for_sandbox(fast_served, http_client=http, retry=policy) as c,
        pytest.raises(CapacityError),
    ):
        c.run("gpt-image-2", IMAGE)
    assert len(traffic.to(RUN_PATH)) == requests


def test_reads_are_retried_on_500_and_503(client: Client, fast_served: Sandbox, traffic: Traffic) -> None:
    """GET generation is retried on 500 and 503 too, and answers the generation."""
    started = client.run("gpt-image-2", IMAGE)
    Control(fast_served).faults(script=["500", "503"], routes=["generation"])
    read = client.generation(started.id)
    assert read.id == started.id
    reads = traffic.to(path("generation", id=started.id))
    assert len(reads) == 3
    assert [s for p, s in traffic.statuses if p == reads[0].path] == [500, 503, 200]


def test_reads_are_retried_after_a_drop(client: Client, fast_served: Sandbox, traffic: Traffic) -> None:
    """A read whose connection breaks mid-body is read again (ConnectionFailed is retryable)."""
    started = client.run("gpt-image-2", IMAGE)
    Control(fast_served).faults(script=["drop"], routes=["generation"])
    assert client.generation(started.id).id == started.id
    assert len(traffic.to(path("generation", id=started.id))) == 2


# --------------------------------------------------------------------------- the policy itself


def _error(status: int, message: str) -> MediagenError:
    body = f'"{message}"' if status == 429 else f'{{"statusCode": {status}, "message": "{message}"}}'
    return from_response(status, body.encode())


def test_policy_waits_about_a_window_after_429() -> None:
    """After a 429 the wait is about 60 s whatever the attempt, within the jitter."""
    policy = RetryPolicy()
    error = _error(429, messages.KEY_RATE_LIMIT)
    assert isinstance(error, RateLimitError) and error.retryable and error.scope == "key"
    rng = random.Random(7)
    for attempt in range(policy.max_attempts - 1):
        waits = [policy.delay(error, attempt, rng) for _ in range(200)]
        assert all(w is not None and 45.0 <= w <= 75.0 for w in waits)
    assert RetryPolicy(jitter=0).delay(error, 3) == 60.0
    account = _error(429, messages.TOO_MANY_GENERATIONS + " (60 a minute)")
    assert isinstance(account, RateLimitError) and account.scope == "account"


@pytest.mark.parametrize(
    "error",
    [
        _error(500, messages.SERVER_ERROR),
        _error(503, messages.AT_CAPACITY),
        _error(502, "Bad gateway"),
        ConnectionFailed("connection reset"),
    ],
    ids=["500", "503", "502", "connection"],
)
def test_policy_backs_off_exponentially_and_caps(error: MediagenError) -> None:
    """500, 503 and broken connections: 5, 10, 20, 40, 80 s, then the cap (120 s)."""
    assert error.retryable
    policy = RetryPolicy(max_attempts=10, jitter=0)
    assert [policy.delay(error, a) for a in range(8)] == [5.0, 10.0, 20.0, 40.0, 80.0, 120.0, 120.0, 120.0]
    assert policy.delay(error, 9) is None


def test_policy_jitter_stays_in_bounds_and_spreads() -> None:
    """Each wait is within +-25 % of its base, and the spread really is used."""
    policy = RetryPolicy()
    error = _error(500, messages.SERVER_ERROR)
    rng = random.Random(11)
    waits = [policy.delay(error, 1, rng) for _ in range(500)]
    assert all(w is not None and 7.5 <= w <= 12.5 for w in waits)
    numbers = [w for w in waits if w is not None]
    assert min(numbers) < 8.5 and max(numbers) > 11.5
    narrow = RetryPolicy(jitter=0.1)
    assert all(9.0 <= (narrow.delay(error, 1, rng) or 0) <= 11.0 for _ in range(200))


@pytest.mark.parametrize(
    "error",
    [
        _error(400, "Unknown model 'x'. Available models: a, b"),
        _error(400, "Missing required field: prompt"),
        _error(401, messages.INVALID_KEY),
        _error(403, messages.SUSPENDED),
        _error(404, messages.GENERATION_NOT_FOUND),
        _error(429, messages.key_cap_reached(100)),
    ],
    ids=["400", "400-validation", "401", "403", "404", "key-cap"],
)
def test_policy_never_retries_client_errors(error: MediagenError) -> None:
    """400, 401, 403, 404 and a reached key cap: delay is None on every attempt."""
    assert not error.retryable
    assert all(RetryPolicy().delay(error, attempt) is None for attempt in range(6))


def test_error_classes_follow_the_spec_table() -> None:
    """The statuses and message starts map to the client's error classes."""
    assert isinstance(_error(400, "Missing required field: prompt"), ValidationError)
    cap = _error(429, messages.key_cap_reached(100))
    assert isinstance(cap, KeyCapReachedError) and cap.cap == 100
    assert type(_error(500, messages.SERVER_ERROR)) is ServerError
    assert type(_error(503, messages.AT_CAPACITY)) is CapacityError


def test_policy_gives_up_at_max_attempts() -> None:
    """``delay`` for the last allowed attempt is None: ``max_attempts`` tries in all."""
    error = _error(503, messages.AT_CAPACITY)
    policy = RetryPolicy(max_attempts=3)
    assert policy.delay(error, 0) is not None and policy.delay(error, 1) is not None
    assert policy.delay(error, 2) is None
    assert NO_RETRY.delay(error, 0) is None
