"""The client's limiters under concurrent use, against a sandbox at time x60 (a 60 s window = 1 s real).

Every send time is recorded with httpx event hooks; the sandbox is the referee (it answers 429 to
the 61st request of a key, or the 61st start of an account, in any rolling 60-second window).
"""

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from _wait import PauseLog

from mediagen_nb.client import AsyncClient, Client, Limits, RetryPolicy
from mediagen_nb.client.timing import ServiceClock
from mediagen_nb.protocol import limits as spec_limits
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime.clock import REAL
from mediagen_nb.sandbox import Sandbox, SandboxConfig

SCALE = 60.0
WINDOW = ServiceClock(REAL, SCALE).real(Limits().window)  # the service's window in real seconds: 1 s
PAUSE = Limits().pause(WINDOW)  # a 429's: the window and its margin
LIMIT = spec_limits.REQUESTS_PER_KEY  # 60
IMAGE = {"prompt": "a lighthouse at dusk", "quality": "low"}  # gpt-image-2, 3 credits
RUN_PATH = path("run")
DEADLINE = 20.0  # real seconds any burst may take before the test gives up
# Concurrent clients share process-wide limiters whose windows are wall time (limits_store.py), and
# each test checks the send times against them: real time, on a machine as loaded as the suite makes it
# (the limiter's margin follows the load: pacing.Latency).
pytestmark = pytest.mark.realtime


@dataclass
class Traffic:
    """Send times (request hook) of the requests answered (response hook) of one or more clients,
    thread-safe. A request stopped before it was written (too late for its slot) has no answer and is
    not counted: it never reached the service."""

    sent: list[tuple[float, str, str]] = field(default_factory=list)  # (time, path, authorization)
    statuses: Counter[int] = field(default_factory=Counter)
    _asked: dict[int, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_request(self, request: httpx.Request) -> None:
        with self._lock:
            self._asked[id(request)] = time.monotonic()

    def on_response(self, response: httpx.Response) -> None:
        request = response.request
        with self._lock:
            asked = self._asked.pop(id(request))
            self.sent.append((asked, request.url.path, request.headers.get("authorization", "")))
            self.statuses[response.status_code] += 1

    async def aon_request(self, request: httpx.Request) -> None:
        self.on_request(request)

    async def aon_response(self, response: httpx.Response) -> None:
        self.on_response(response)

    def http_client(self) -> httpx.Client:
        return httpx.Client(event_hooks={"request": [self.on_request], "response": [self.on_response]})

    def async_http_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(event_hooks={"request": [self.aon_request], "response": [self.aon_response]})

    def times(self, where: Callable[[str, str], bool] = lambda p, a: True) -> list[float]:
        return sorted(t for t, p, a in self.sent if where(p, a))


def busiest_window(times: list[float], window: float = WINDOW) -> int:
    """The most sends in any window ``(t - window, t]`` ending at a send."""
    ordered, first, best = sorted(times), 0, 0
    for last, at in enumerate(ordered):
        while ordered[first] <= at - window:
            first += 1
        best = max(best, last - first + 1)
    return best


@pytest.fixture
def sandbox60() -> Iterator[Sandbox]:
    """A sandbox at time x60 served on 127.0.0.1."""
    with Sandbox(SandboxConfig(time_scale=SCALE, seed=5)) as sb:
        yield sb


def control(sandbox: Sandbox, method: str, name: str, body: Any = None) -> Any:
    """A ``/_sandbox`` control call."""
    assert sandbox.base_url is not None
    response = httpx.request(method, sandbox.base_url + path(name), json=body, timeout=10)
    assert response.status_code in (200, 201), response.text
    return response.json()["data"]


def new_key(sandbox: Sandbox, name: str) -> str:
    """A fresh key of the demo account (fresh limiters: nothing of the set-up counts against it)."""
    return control(sandbox, "POST", "sandbox_keys", {"name": name})["key"]


def client(sandbox: Sandbox, keys: str | list[str], http: httpx.Client, **options: Any) -> Client:
    options.setdefault("time_scale", SCALE)
    return Client(keys, base_url=sandbox.base_url, http_client=http, **options)


@pytest.fixture
def finished(sandbox60: Sandbox) -> str:
    """The id of a finished generation of the demo account (made with the demo key)."""
    with Client.for_sandbox(sandbox60) as c:
        generation = c.generate("gpt-image-2", IMAGE, timeout=600)
    assert generation.status == "succeeded"
    return generation.id


def read_in_threads(clients: list[Client], generation_id: str, total: int, threads: int) -> float:
    """``total`` reads of one generation from ``threads`` threads over ``clients``; real seconds taken."""
    lock, done = threading.Lock(), [0]
    stop = time.monotonic() + DEADLINE

    def worker(c: Client) -> None:
        while time.monotonic() < stop:
            with lock:
                if done[0] >= total:
                    return
                done[0] += 1
            assert c.generation(generation_id).id == generation_id

    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(worker, clients[i % len(clients)]) for i in range(threads)]:
            future.result()
    assert done[0] == total
    return time.monotonic() - started


def assert_rolling(traffic: Traffic, total: int) -> None:
    """Never more than 60 sends in any 1 s window, no 429, and at least two windows for 150 sends."""
    times = traffic.times()
    assert len(times) == total, (traffic.statuses, Counter(p for _, p, _ in traffic.sent))
    assert busiest_window(times) <= LIMIT
    # it did use the budget: paced, not crawling (a CPU-loaded machine sends some of a window's share late)
    assert busiest_window(times) >= LIMIT // 2
    assert traffic.statuses == Counter({200: total})
    spread = times[-1] - times[0]
    assert spread >= 2 * WINDOW  # 150 = 60 + 60 + 30: the third batch waits two windows


# ----------------------------------------------------------------------------- request limit


def test_threads_sharing_one_client_stay_under_the_key_limit(sandbox60: Sandbox, finished: str) -> None:
    """150 reads from 6 threads on one Client: at most 60 in any window, zero 429s."""
    traffic = Traffic()
    with traffic.http_client() as http, client(sandbox60, new_key(sandbox60, "threads"), http) as c:
        read_in_threads([c], finished, 150, 6)
    assert_rolling(traffic, 150)


def test_three_clients_with_one_key_share_the_limit(sandbox60: Sandbox, finished: str) -> None:
    """Three Client objects with the same key share one limiter (process-wide)."""
    key = new_key(sandbox60, "three clients")
    traffic = Traffic()
    https = [traffic.http_client() for _ in range(3)]
    clients = [client(sandbox60, key, http) for http in https]
    try:
        read_in_threads(clients, finished, 150, 6)
    finally:
        for http in https:
            http.close()
    assert_rolling(traffic, 150)


@pytest.mark.anyio
async def test_asyncio_tasks_stay_under_the_key_limit(sandbox60: Sandbox, finished: str) -> None:
    """150 reads from 150 asyncio tasks on one AsyncClient: at most 60 in any window, zero 429s."""
    traffic = Traffic()
    key = new_key(sandbox60, "tasks")
    async with traffic.async_http_client() as http:
        c = AsyncClient(key, base_url=sandbox60.base_url, http_client=http, time_scale=SCALE)
        reads = await asyncio.wait_for(
            asyncio.gather(*(c.generation(finished) for _ in range(150))), timeout=DEADLINE
        )
    assert {g.id for g in reads} == {finished}
    assert_rolling(traffic, 150)


def test_sync_and_async_clients_share_one_budget(sandbox60: Sandbox, finished: str) -> None:
    """A sync and an async client with one key, at once: still at most 60 in any window."""
    key = new_key(sandbox60, "mixed")
    traffic = Traffic()

    async def async_side() -> None:
        async with traffic.async_http_client() as http:
            c = AsyncClient(key, base_url=sandbox60.base_url, http_client=http, time_scale=SCALE)
            await asyncio.wait_for(asyncio.gather(*(c.generation(finished) for _ in range(50))), DEADLINE)

    with traffic.http_client() as http, client(sandbox60, key, http) as c:
        side = threading.Thread(target=asyncio.run, args=(async_side(),))
        side.start()
        read_in_threads([c], finished, 50, 3)
        side.join(DEADLINE)
        assert not side.is_alive()
    times = traffic.times()
    assert len(times) == 100 and busiest_window(times) <= LIMIT
    assert traffic.statuses == Counter({200: 100})
    assert times[-1] - times[0] >= WINDOW


def test_catalog_calls_do_not_use_the_key_budget(sandbox60: Sandbox, finished: str) -> None:
    """200 catalog calls, then 60 authenticated reads: none of the reads waits for a window."""
    traffic = Traffic()
    key = new_key(sandbox60, "catalog")
    paced = PauseLog()
    with traffic.http_client() as http, client(sandbox60, key, http, clock=paced) as c:
        for i in range(200):
            if i % 2:
                c.model("gpt-image-2", refresh=True)
            else:
                c.llms_txt()
        catalog = len(traffic.sent)
        assert catalog == 200 and not any(a for _, _, a in traffic.sent) and paced.pauses == []
        for _ in range(LIMIT):
            c.generation(finished)
    assert sum(paced.pauses) < PAUSE  # paced evenly, never a window's wait
    assert traffic.statuses == Counter({200: 200 + LIMIT})
    # That the service does not count catalog reads either is shown in tests/sandbox/test_catalog_api.py.


# ------------------------------------------------------------------------------ key pools


def test_two_keys_start_100_under_the_account_limit(sandbox60: Sandbox) -> None:
    """A pool of two keys of one account: 100 starts, never more than 60 in a window, zero 429s."""
    control(sandbox60, "POST", "sandbox_account", {"balance": 100_000})
    second = control(sandbox60, "POST", "sandbox_keys", {"name": "second", "account": "demo"})["key"]
    traffic = Traffic()
    with traffic.http_client() as http, client(sandbox60, [sandbox60.demo_key, second], http) as c:
        c.models()
        lock, done, ids = threading.Lock(), [0], set()
        stop = time.monotonic() + DEADLINE

        def worker() -> None:
            while time.monotonic() < stop:
                with lock:
                    if done[0] >= 100:
                        return
                    done[0] += 1
                generation = c.run("gpt-image-2", IMAGE)
                with lock:
                    ids.add(generation.id)

        with ThreadPoolExecutor(4) as pool:
            for future in [pool.submit(worker) for _ in range(4)]:
                future.result()
    starts = traffic.times(lambda p, a: p == RUN_PATH)
    assert len(starts) == 100 and len(ids) == 100
    assert busiest_window(starts) <= spec_limits.STARTS_PER_ACCOUNT
    assert starts[-1] - starts[0] >= WINDOW  # the 61st start waited for the account's window
    assert 429 not in traffic.statuses and traffic.statuses[201] == 100
    assert len(sandbox60.world.generations.items) == 100
    charges = [e for e in sandbox60.world.accounts.ledger if e["kind"] == "charge"]
    assert len(charges) == 100


def test_reads_spread_over_a_pool_of_two_keys(sandbox60: Sandbox, finished: str) -> None:
    """150 reads: more than one key's 60 in a window with two keys, at least two windows with one.

    The windows are the client's (the service's 1 s plus its latency margin). How long the pool took is
    not asserted (a wall-clock bound fails on a loaded machine: 3.0 s beside a CPU hog); that the two
    keys together sent more than one key's limit in one window is what shows the pool's use.
    """
    pooled, single = Traffic(), Traffic()
    keys = [new_key(sandbox60, "pool a"), new_key(sandbox60, "pool b")]
    with pooled.http_client() as http, client(sandbox60, keys, http) as c:
        read_in_threads([c], finished, 150, 6)
    with single.http_client() as http, client(sandbox60, new_key(sandbox60, "alone"), http) as c:
        single_seconds = read_in_threads([c], finished, 150, 6)

    assert pooled.statuses == Counter({200: 150}) and single.statuses == Counter({200: 150})
    by_key = Counter(a for _, _, a in pooled.sent)
    assert set(by_key) == {f"Bearer {k}" for k in keys}
    for auth in by_key:
        assert busiest_window(pooled.times(lambda p, a, auth=auth: a == auth)) <= LIMIT
    assert busiest_window(pooled.times()) > LIMIT  # more than 60 in one window, across the two keys
    assert single_seconds >= 2 * WINDOW  # two windows at least; the margin may shrink to 20 ms, measured
    assert busiest_window(single.times()) <= LIMIT


# ------------------------------------------------------------------------ an unexpected 429


def test_unexpected_429_pauses_that_key_for_a_window(sandbox60: Sandbox, finished: str) -> None:
    """A 429 nobody expected: the key sends nothing more for a window, even with no retry wait."""
    control(sandbox60, "POST", "sandbox_faults", {"script": ["429"], "routes": ["generation"]})
    traffic = Traffic()
    no_wait = RetryPolicy(rate_limit_wait=0.0)
    key = new_key(sandbox60, "paused")
    with traffic.http_client() as http, client(sandbox60, key, http, retry=no_wait) as c:
        assert c.generation(finished).id == finished
        assert c.generation(finished).id == finished
    times = traffic.times()
    assert len(times) == 3 and traffic.statuses == Counter({429: 1, 200: 2})
    assert times[1] - times[0] >= PAUSE - 0.01
    assert times[2] - times[1] < PAUSE / 2  # the pause is over; no more waiting


def test_unexpected_429_moves_a_pool_to_its_other_key(sandbox60: Sandbox, finished: str) -> None:
    """In a pool, the key that met a 429 rests; the retry and the next reads go on the other key."""
    control(sandbox60, "POST", "sandbox_faults", {"script": ["429"], "routes": ["generation"]})
    traffic = Traffic()
    keys = [new_key(sandbox60, "first"), new_key(sandbox60, "second")]
    no_wait = RetryPolicy(rate_limit_wait=0.0)
    paced = PauseLog()
    with traffic.http_client() as http, client(sandbox60, keys, http, retry=no_wait, clock=paced) as c:
        for _ in range(10):
            assert c.generation(finished).id == finished
    auths = [a for _, _, a in sorted(traffic.sent)]
    assert auths[0] == f"Bearer {keys[0]}"
    assert auths[1:] == [f"Bearer {keys[1]}"] * 10
    assert sum(paced.pauses) < PAUSE  # the other key at once, no window
    assert traffic.statuses == Counter({429: 1, 200: 10})


# ------------------------------------------------------------------------------ Limits itself


@pytest.mark.parametrize(
    "options",
    [
        {"window": 0},
        {"window": -1},
        {"requests_per_key": 0},
        {"starts_per_account": 0},
        {"starts_per_account": -5},
        {"margin": -0.5},
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
def test_limits_refuse_bad_values(options: dict[str, Any]) -> None:
    """Zero, negative or non-finite values are refused with ValueError."""
    with pytest.raises(ValueError, match="Limits"):
        Limits(**options)


@pytest.mark.parametrize("scale", [0, -60, float("nan"), float("inf")])
def test_a_bad_time_scale_is_refused(scale: float) -> None:
    """A zero, negative or non-finite time scale is refused where the client's one clock is built."""
    with pytest.raises(ValueError, match="time scale"):
        ServiceClock(REAL, scale)
    with pytest.raises(ValueError, match="time scale"):
        Client("pk_live_x", base_url="http://127.0.0.1:9", time_scale=scale)


def test_a_429_pauses_a_window_as_the_clock_reads_it() -> None:
    """A 429's pause is the service's window in the real seconds the client's clock says it takes, plus a
    margin for latency: 5 % of it, at most 1 s, and never under 0.1 s (latency is real time and does not
    shrink with a time-scaled sandbox)."""

    def pause(scale: float, **options: Any) -> float:
        limits = Limits(**options)
        return limits.pause(ServiceClock(REAL, scale).real(limits.window))

    assert pause(1) == pytest.approx(61.0)
    assert pause(0.5) == pytest.approx(121.0)
    assert pause(SCALE) == pytest.approx(1.1)
    assert pause(600) == pytest.approx(0.2)
    assert pause(SCALE, margin=0.2) == pytest.approx(1.2)
    assert pause(SCALE, margin=0) == pytest.approx(1.0)
    assert ServiceClock(REAL, SCALE).real(30) == pytest.approx(0.5)
    assert Limits(requests_per_key=10, starts_per_account=5).requests_per_key == 10
