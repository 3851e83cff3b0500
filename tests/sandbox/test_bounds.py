"""The sandbox is bounded: JSON bodies are capped before they are read whole (nothing charged, nothing
kept), uploads are refused from their declared length, and a client that goes away is no error."""

import gc
import logging
import socket
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from _wait import wait_until

from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, uploads
from mediagen_nb.sandbox.pipeline import MAX_JSON_BYTES

CHUNK = 64 * 1024
START = {"modelId": "gpt-image-2", "input": {"prompt": "a paper boat", "quality": "low"}}
TOO_LARGE = {
    "statusCode": 413,
    "message": messages.body_too_large(MAX_JSON_BYTES),
    "error": "Payload Too Large",
}


def _raw(sandbox: Sandbox, head: str, body: bytes = b"") -> bytes:
    """Send a request head (and the start of a body) over a socket; the answer, read to its end."""
    assert sandbox.base_url is not None
    host, port = sandbox.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _ledger(api: httpx.Client) -> list[Any]:
    entries: list[Any] = api.get(path("sandbox_ledger")).json()["data"]["entries"]
    return entries


def _host(served: Sandbox) -> str:
    """The Host a request to the served sandbox names (it answers nothing else)."""
    assert served.base_url is not None
    return served.base_url.removeprefix("http://")


@pytest.fixture
def http(served: Sandbox) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {served.demo_key}"}
    with httpx.Client(base_url=str(served.base_url), headers=headers, timeout=30) as client:
        yield client


def test_a_1_gb_json_body_is_refused_from_its_length_and_charges_nothing(
    served: Sandbox, http: httpx.Client
) -> None:
    """It used to be read whole (3 GB of memory), parsed and charged: 201. Now not a byte is read."""
    answer = _raw(
        served,
        f"POST {path('run')} HTTP/1.1\nHost: {_host(served)}\nAuthorization: Bearer {served.demo_key}\n"
        f"Content-Type: application/json\nContent-Length: {2**30}\nConnection: close\n",
    )
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert answer.split(b"\r\n\r\n", 1)[1] == httpx.Response(200, json=TOO_LARGE).content
    assert _ledger(http) == [] and served.world.generations.items == {}
    assert http.post(path("run"), json=START).status_code == 201  # the sandbox carries on


def test_every_json_route_and_control_has_the_cap(http: httpx.Client) -> None:
    big = b'{"pad": "' + b"x" * MAX_JSON_BYTES + b'"}'
    for endpoint in ("run", "estimate", "analyze", "job_start", "sandbox_account", "sandbox_faults"):
        refused = http.post(path(endpoint), content=big, headers={"Content-Type": "application/json"})
        assert (refused.status_code, refused.json()) == (413, TOO_LARGE), endpoint
    assert _ledger(http) == [] and http.get(path("sandbox_account")).json()["data"]["balance"] == 3000


@pytest.mark.anyio
async def test_a_streamed_body_is_refused_once_past_the_cap_and_not_kept(sandbox: Sandbox) -> None:
    """No Content-Length (chunked): the sandbox stops reading at the cap, and memory stays flat."""
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        yield b'{"modelId": "gpt-image-2", "input": {"prompt": "'
        for _ in range(64 * 2**20 // CHUNK):  # 64 MB, if anyone read it all
            pulled += 1
            yield b"x" * CHUNK

    headers = {"Authorization": f"Bearer {sandbox.demo_key}"}
    async with httpx.AsyncClient(
        transport=sandbox.transport(), base_url="http://sandbox.test", headers=headers, timeout=30
    ) as api:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            refused = await api.post(path("run"), content=endless())
            gc.collect()
            after, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert (refused.status_code, refused.json()) == (413, TOO_LARGE)
        assert pulled <= MAX_JSON_BYTES // CHUNK + 1  # it stopped reading at the cap
        assert peak - before < 3 * MAX_JSON_BYTES  # never more than the cap (and its copy) held
        assert after - before < 2**20  # and nothing of it kept
        assert sandbox.world.accounts.ledger == []


def test_an_upload_past_the_file_cap_is_refused_from_its_length(served: Sandbox) -> None:
    answer = _raw(
        served,
        f"PUT {path('sandbox_upload', name='huge.mp4')} HTTP/1.1\nHost: {_host(served)}\n"
        f"Authorization: Bearer {served.demo_key}\nContent-Length: {uploads.MAX_FILE_BYTES + 1}\n"
        "Connection: close\n",
    )
    assert answer.startswith(b"HTTP/1.1 413 ") and b"upload is too large" in answer
    assert served.world.uploads.stored() == []


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _wait_for_requests_to_end(sandbox: Sandbox) -> None:
    """Until the server has no request in hand (it notices a closed socket on its own time)."""
    assert sandbox._server is not None
    server = sandbox._server
    wait_until(lambda: not server.server_state.tasks, 30, "the server's requests to end")


def test_a_client_that_goes_away_mid_request_is_no_error(served: Sandbox, http: httpx.Client) -> None:
    """A PUT, a JSON start and a file download cut off halfway: nothing logged, nothing kept."""
    log = logging.getLogger("uvicorn.error")
    records = _Records()
    log.addHandler(records)
    try:
        key = f"Authorization: Bearer {served.demo_key}\nHost: {_host(served)}\n"
        cut_off = [
            (f"PUT {path('sandbox_upload', name='voice.wav')} HTTP/1.1\n{key}Content-Length: 100000\n", 5000),
            (f"POST {path('run')} HTTP/1.1\n{key}Content-Type: application/json\nContent-Length: 900\n", 20),
            (f"GET {path('sandbox_samples', name='long.mp4')} HTTP/1.1\nHost: {_host(served)}\n", 0),
        ]
        assert served.base_url is not None
        host, port = served.base_url.removeprefix("http://").split(":")
        for head, sent in cut_off:
            with socket.create_connection((host, int(port)), timeout=30) as sock:
                sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + b"{" * sent)
                if not sent:
                    sock.recv(1024)  # the answer has begun
            _wait_for_requests_to_end(served)
        assert http.get(path("sandbox_info")).status_code == 200
    finally:
        log.removeHandler(records)
    assert [r.getMessage() for r in records.records if r.levelno >= logging.WARNING] == []
    listed = http.get(path("sandbox_uploads")).json()["data"]
    assert (listed["uploads"], listed["totalBytes"], listed["receivingBytes"]) == ([], 0, 0)
    assert [p.name for p in served.world.uploads.folder.iterdir()] == []  # no temporary file left
    assert _ledger(http) == []
