"""The client against a server that misbehaves on purpose, on 127.0.0.1: every call ends in time.

A raw asyncio server (no framework, so it can misbehave at the byte level) answers by path: silence,
a slow loris that drips its headers, a body far over the size cap, well-formed JSON with fields of the
wrong types, and a job that never ends. Each call must end within its deadline with one typed error,
and the huge body must not be held in memory. A closed port fails within seconds.
"""

import asyncio
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from mediagen_nb.client import (
    Client,
    ConnectionFailed,
    Limits,
    RetryPolicy,
    ServiceResponseError,
    ValidationError,
    WaitTimeout,
)
from mediagen_nb.client.transport import MAX_BODY

GENERATION_ID = "3f0c2a7e-5b1d-4c8e-9a6f-1d2e3f4a5b6c"
JOB = b'{"success": true, "data": {"jobId": "job_1", "status": "scripting", "stage": "scripting"}}'
WRONG_TYPES = (
    b'{"success": true, "data": {"id": "' + GENERATION_ID.encode() + b'", "modelId": "gpt-image-2", '
    b'"status": "succeeded", "creditsSpent": "lots", "output": null, "error": null}}'
)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One misbehaviour per path."""
    try:
        request = await reader.readuntil(b"\r\n\r\n")
        target = request.split(b" ", 2)[1].decode()
        if "/silent/" in target:
            await asyncio.sleep(3600)
        elif "/loris/" in target:
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Drip: " + b"x" * 10_000:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.05)
        elif "/huge/" in target:
            size = 500 * 2**20
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size
            )
            chunk = b" " * 2**20
            for _ in range(500):
                writer.write(chunk)
                await writer.drain()
        else:
            body = JOB if "/mascot/" in target else WRONG_TYPES
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
                + body
            )
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


@pytest.fixture
def hostile() -> Iterator[str]:
    """The server's base URL; it runs on its own loop in a thread and is stopped after the test."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(asyncio.start_server(handle, "127.0.0.1", 0), loop).result(10)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:

        async def stop() -> None:
            server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def client(base_url: str, timeout: float = 1.0) -> Client:
    """A client with a 1 s request timeout and a fast clock (backoffs of a real second or less)."""
    return Client(
        "pk_live_hostile",
        base_url=base_url,
        timeout=timeout,
        limits=Limits(time_scale=600),
        retry=RetryPolicy(),
    )


def within(seconds: float, call: Any) -> BaseException:
    """Run ``call``; it must raise, within ``seconds``; the exception."""
    began = time.monotonic()
    with pytest.raises(Exception) as raised:
        call()
    took = time.monotonic() - began
    assert took < seconds, f"took {took:.1f} s"
    return raised.value


@pytest.mark.timeout(60)
def test_a_silent_server_fails_each_call_within_its_deadline(hostile: str) -> None:
    with client(hostile + "/silent") as c:
        error = within(8, lambda: c.generation(GENERATION_ID))
    assert isinstance(error, ConnectionFailed) and "no answer" in error.message
    assert error._render_traceback_() == [f"ConnectionFailed: {error}"]


@pytest.mark.timeout(60)
def test_a_slow_loris_cannot_hold_a_call(hostile: str) -> None:
    with client(hostile + "/loris") as c:
        error = within(8, lambda: c.generation(GENERATION_ID))
    assert isinstance(error, ConnectionFailed)


@pytest.mark.timeout(60)
def test_a_huge_body_is_cut_off_and_never_held(hostile: str) -> None:
    tracemalloc.start()
    try:
        with client(hostile + "/huge", timeout=30) as c:
            error = within(30, lambda: c.generation(GENERATION_ID))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(error, ServiceResponseError) and "over 32 MB" in error.message
    assert peak < 3 * MAX_BODY, f"{peak / 2**20:.0f} MB held for a 500 MB body"


def test_fields_of_the_wrong_type_are_one_typed_error_naming_the_field(hostile: str) -> None:
    with client(hostile + "/types") as c:
        error = within(5, lambda: c.generation(GENERATION_ID))
    assert isinstance(error, ServiceResponseError) and error.field == "creditsSpent"
    assert "Generation.creditsSpent = 'lots', not an integer" in error.message


def test_a_job_stuck_in_processing_ends_at_the_wait_timeout(hostile: str) -> None:
    with client(hostile) as c:
        error = within(10, lambda: c.wait_job("job_1", poll=60, timeout=600))  # 1 real second at x600
    assert isinstance(error, WaitTimeout) and error.last.status == "scripting"


@pytest.mark.parametrize(
    "payload",
    [
        {"id": "../../../../_sandbox/ledger", "modelId": "gpt-image-2"},
        {"event": "replication.completed", "id": "../runs/x"},
        {"jobId": "..%2F..%2Fx"},
        {"jobId": "a/b"},
    ],
)
def test_ids_from_a_webhook_never_reach_another_path(hostile: str, payload: dict[str, Any]) -> None:
    with client(hostile) as c:
        error = within(2, lambda: c.confirm_webhook(payload))
    assert isinstance(error, ValidationError) and error.sent is False and error.field == "id"


def test_a_closed_port_fails_within_seconds_naming_the_setting() -> None:
    with client("http://127.0.0.1:9") as c:
        error = within(6, lambda: c.generation(GENERATION_ID))
    assert isinstance(error, ConnectionFailed) and "MEDIAGEN_BASE_URL" in error.message
