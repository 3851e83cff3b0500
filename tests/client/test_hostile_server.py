"""The client against a server that misbehaves on purpose, on 127.0.0.1: every call ends in time.

A raw asyncio server (no framework, so it can misbehave at the byte level) answers by path: silence,
a slow loris that drips its headers, a body far over the size cap, well-formed JSON with fields of the
wrong types, and a job that never ends. Each call must end within its deadline with one typed error,
and the huge body must not be held in memory. A closed port fails within seconds.

The scripted server of ``tests/_hostile.py`` sends what the spec never does: HTML, JSON nested 200,000
deep, a list, ``data`` that is a string or null, garbage gzip, a redirect to itself, an id that is a
path. Each is one ServiceResponseError naming what is wrong, sent once, never retried; a start
answered so is kept in the ledger as uncertain and resumed for free (checked on the sandbox's ledger).
"""

import asyncio
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _hostile import Answer, Request, data, forward, generation, running, serve
from _wait import PauseLog

from mediagen_nb.client import (
    Analysis,
    AsyncClient,
    Client,
    ConfigurationError,
    ConnectionFailed,
    Generation,
    Ledger,
    Model,
    ReplicationRun,
    RetryPolicy,
    ServiceResponseError,
    ShortVideoJob,
    StartUncertain,
    ValidationError,
    WaitTimeout,
)
from mediagen_nb.client.transport import MAX_BODY
from mediagen_nb.sandbox import Sandbox

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
            await asyncio.Event().wait()  # a server that never answers: nothing ever sets it
        elif "/loris/" in target:
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Drip: " + b"x" * 10_000:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.05)  # real: a slow-loris server trickling bytes
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
    with running(handle) as base_url:
        yield base_url


def client(base_url: str, timeout: float = 1.0, **options: Any) -> Client:
    """A client with a 1 s request timeout and a fast clock (backoffs of a real second or less)."""
    return Client(
        "pk_live_hostile",
        base_url=base_url,
        timeout=timeout,
        time_scale=600,
        retry=RetryPolicy(),
        **options,
    )


def failure(call: Any) -> BaseException:
    """Run ``call``; it must raise; the exception. That it does not hang is the test's timeout's to say
    (a guard against a call held forever, not a speed claim)."""
    with pytest.raises(Exception) as raised:
        call()
    return raised.value


@pytest.mark.timeout(60)
def test_a_silent_server_fails_each_call_within_its_deadline(hostile: str) -> None:
    with client(hostile + "/silent") as c:
        error = failure(lambda: c.generation(GENERATION_ID))
    assert isinstance(error, ConnectionFailed) and "no answer" in error.message
    assert error._render_traceback_() == [f"ConnectionFailed: {error}"]


@pytest.mark.timeout(60)
def test_a_slow_loris_cannot_hold_a_call(hostile: str) -> None:
    with client(hostile + "/loris") as c:
        error = failure(lambda: c.generation(GENERATION_ID))
    assert isinstance(error, ConnectionFailed)


@pytest.mark.timeout(60)
def test_a_huge_body_is_cut_off_and_never_held(hostile: str) -> None:
    tracemalloc.start()
    try:
        with client(hostile + "/huge", timeout=30) as c:
            error = failure(lambda: c.generation(GENERATION_ID))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(error, ServiceResponseError) and "over 32 MB" in error.message
    assert peak < 3 * MAX_BODY, f"{peak / 2**20:.0f} MB held for a 500 MB body"


def test_fields_of_the_wrong_type_are_one_typed_error_naming_the_field(hostile: str) -> None:
    with client(hostile + "/types") as c:
        error = failure(lambda: c.generation(GENERATION_ID))
    assert isinstance(error, ServiceResponseError) and error.field == "creditsSpent"
    assert "Generation.creditsSpent = 'lots', not an integer" in error.message


def test_a_job_stuck_in_processing_ends_at_the_wait_timeout(hostile: str) -> None:
    paced = PauseLog()
    with client(hostile, clock=paced) as c:
        error = failure(lambda: c.wait_job("job_1", poll=60, timeout=600))  # 1 real second at x600
    assert isinstance(error, WaitTimeout) and error.last.status == "scripting"
    assert paced.pauses and set(paced.pauses) == {0.1} and len(paced.pauses) <= 10  # a poll a minute, 10 min


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
        error = failure(lambda: c.confirm_webhook(payload))
    assert isinstance(error, ValidationError) and error.sent is False and error.field == "id"


def test_a_closed_port_fails_within_seconds_naming_the_setting() -> None:
    with client("http://127.0.0.1:9") as c:
        error = failure(lambda: c.generation(GENERATION_ID))
    assert isinstance(error, ConnectionFailed) and "MEDIAGEN_BASE_URL" in error.message


# -- any answer: each of these is one ServiceResponseError naming what is wrong, sent once ----------------

TRAVERSALS = [
    "../../../../somewhere/PWNED",
    "/an/absolute/path/PWNED4",
    f"{GENERATION_ID}/../../../somewhere/PWNED2",
    "",
    7,
]
GENERATION_PATH = f"/v3/playground/v1/generations/{GENERATION_ID}"
DEEP = b'{"success": true, "data": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"


@pytest.mark.parametrize(
    ("answer", "says", "field"),
    [
        (
            Answer(200, b"<html><body>Sign in to the Wi-Fi</body></html>", {"Content-Type": "text/html"}),
            "is not JSON (text/html)",
            None,
        ),
        (Answer(200, DEEP), "nests too deeply", None),
        (Answer(200, b'[{"id": "x"}]'), "is a list, not an object", None),
        (Answer(200, b'{"success": true, "data": "done"}'), "has data = 'done'", "data"),
        (Answer(200, b'{"success": true, "data": null}'), "has data = null", "data"),
        (Answer(200, b'{"success": true}'), "has no data", "data"),
        (Answer(200, b"\xff\xfe not utf-8 {", {"Content-Type": "application/json"}), "is not JSON", None),
        (
            Answer(
                200, b"garbage, not gzip", {"Content-Type": "application/json", "Content-Encoding": "gzip"}
            ),
            "cannot be decoded",
            None,
        ),
        (Answer(302, b"", {"Location": GENERATION_PATH}), "redirects in a loop", None),
        (Answer(302, b"", {"Location": "ftp://example.com/x"}), "redirects to ftp://, not http(s)", None),
        (data({}), "without id", "id"),
    ],
)
def test_an_answer_that_is_not_the_specs_is_one_typed_error_at_once(
    answer: Answer, says: str, field: str | None
) -> None:
    with serve() as server:
        server.on("GET", GENERATION_PATH, answer)
        with client(server.base_url) as c, pytest.raises(ServiceResponseError) as raised:
            c.generation(GENERATION_ID)
        reads = [t for m, t in server.seen if m == "GET"]
    assert says in raised.value.message and raised.value.field == field
    assert raised.value._render_traceback_() == [f"ServiceResponseError: {raised.value}"]
    expected = 21 if "loop" in says else 1  # httpx follows 20 redirects, then gives up: nothing is retried
    assert len(reads) == expected


def test_an_address_that_is_not_http_is_a_configuration_error_at_once() -> None:
    with client("ftp://127.0.0.1:9") as c, pytest.raises(ConfigurationError, match="ftp:// is not http"):
        c.generation(GENERATION_ID)


@pytest.mark.parametrize("ident", TRAVERSALS)
def test_a_read_answering_an_id_that_is_no_uuid_is_refused_naming_it(ident: object) -> None:
    with serve() as server:
        server.on("GET", GENERATION_PATH, generation(ident, server.base_url + "/x.png"))  # type: ignore[arg-type]
        with client(server.base_url) as c, pytest.raises(ServiceResponseError) as raised:
            c.generation(GENERATION_ID)
    assert raised.value.field == "id" and "Generation" in raised.value.message


def test_a_read_answering_another_generation_is_refused() -> None:
    other = "0b0c2a7e-5b1d-4c8e-9a6f-1d2e3f4a5b6c"
    with serve() as server:
        server.on("GET", GENERATION_PATH, generation(other, server.base_url + "/x.png"))
        with client(server.base_url) as c, pytest.raises(ServiceResponseError, match="when asked for"):
            c.generation(GENERATION_ID)


@pytest.mark.parametrize(
    "answer",
    [
        generation("../../../../somewhere/PWNED", status="processing"),
        data({}),
        Answer(200, b'{"success": true}'),
    ],
    ids=["traversal-id", "no-id", "no-data"],
)
def test_a_start_answered_without_a_usable_id_is_uncertain_and_resumable(
    answer: Answer, tmp_path: Path
) -> None:
    """Money: the start may have been charged, so it is kept in the ledger as sent and unanswered, to be
    resumed with its key (never a LedgerError telling the user to move the ledger aside)."""
    with serve() as server:
        server.catalog()
        server.on("POST", "/v3/playground/v1/run", answer)
        with Client(
            "pk_live_hostile",
            base_url=server.base_url,
            ledger=str(tmp_path / "ledger.sqlite"),
            time_scale=600,
        ) as c:
            with pytest.raises(StartUncertain) as raised:
                c.run("gpt-image-2", prompt="a fox", reuse=True)
            where = c.settings.where
        assert server.starts() == 1
    cause = raised.value.__cause__
    assert isinstance(cause, ServiceResponseError) and cause.field in ("id", "data")
    assert "may have started it" in raised.value.message and "resumes it at no cost" in raised.value.message
    entry = Ledger(tmp_path / "ledger.sqlite").lookup(raised.value.key, where)
    assert entry is not None and entry.sent_unanswered and entry.resource_id is None


def test_a_start_whose_answer_lost_its_id_is_charged_once_and_resumed_free(
    served: Sandbox, tmp_path: Path
) -> None:
    """A man in the middle turns the start's id into a path: the client keeps the start as uncertain, and
    running it again resumes it with its key; the sandbox's own ledger shows one charge."""
    answers: list[int] = []

    def mangle(request: Request, answer: Answer) -> Answer:
        answers.append(answer.status)
        if len(answers) > 1:
            return answer
        body = json.loads(answer.body)
        body["data"]["id"] = "../../../../somewhere/PWNED"
        return Answer(answer.status, json.dumps(body).encode())

    with serve() as proxy:
        for method in ("GET", "POST"):
            proxy.on(method, "/", forward(str(served.base_url)))
        proxy.on("POST", "/v3/playground/v1/run", forward(str(served.base_url), mangle))
        with Client(
            served.demo_key,
            base_url=proxy.base_url,
            ledger=str(tmp_path / "ledger.sqlite"),
            time_scale=served.config.time_scale,
        ) as c:
            with pytest.raises(StartUncertain):
                c.run("gpt-image-2", prompt="a fox in the snow", quality="low", reuse=True)
            again = c.run("gpt-image-2", prompt="a fox in the snow", quality="low", reuse=True)
    entries = httpx.get(f"{served.base_url}/_sandbox/ledger", timeout=10).json()["data"]["entries"]
    charges = [e for e in entries if e["kind"] == "charge"]
    assert answers == [201, 200]  # the second start was the service's replay of the first
    assert [e["resourceId"] for e in charges] == [again.id] and again.credits_spent == charges[0]["credits"]


def test_the_async_client_is_bounded_the_same_way() -> None:
    async def read(base_url: str) -> None:
        async with AsyncClient("pk_live_hostile", base_url=base_url, time_scale=600, timeout=1.0) as c:
            await c.generation(GENERATION_ID)

    for answer in (Answer(200, DEEP), Answer(200, b"x", {"Content-Encoding": "gzip"})):
        with serve() as server:
            server.on("GET", GENERATION_PATH, answer)
            with pytest.raises(ServiceResponseError):
                asyncio.run(read(server.base_url))


ODD_BUT_VALID = [
    (Generation, {"id": GENERATION_ID, "modelId": "m", "status": "weird", "output": {}, "creditsSpent": 0}),
    (
        Generation,
        {"id": GENERATION_ID, "modelId": "", "status": "", "output": {"urls": []}, "creditsSpent": 1},
    ),
    (
        Model,
        {"id": "m", "outputType": "x", "credits": 0, "input_schema": {"properties": {"a": 1}, "required": 5}},
    ),
    (Model, {"id": "m", "outputType": "", "credits": 1, "input_schema": {"properties": [1]}, "pricing": {}}),
    (Analysis, {"analysisId": GENERATION_ID, "blueprint": {"clips": [{"start": None}]}}),
    (ReplicationRun, {"runId": "r_1", "totalClips": None}),
    (ShortVideoJob, {"jobId": "j_1", "progress": 7, "edit_report": {}}),
]


@pytest.mark.parametrize(("kind", "body"), ODD_BUT_VALID, ids=lambda v: getattr(v, "__name__", ""))
def test_no_resource_repr_ever_raises(kind: Any, body: dict[str, Any]) -> None:
    resource = kind.from_api(body)
    assert repr(resource).startswith(kind.__name__) and "<div" in resource._repr_html_()


@pytest.mark.parametrize(
    ("kind", "body", "field"),
    [
        (Generation, {}, "id"),
        (Generation, {"id": GENERATION_ID}, "modelId"),
        (Analysis, {"analysisId": "../x"}, "analysisId"),
        (ReplicationRun, {"runId": "a/b"}, "id"),
        (ShortVideoJob, {"jobId": None}, "jobId"),
        (Model, {"name": "no id"}, "id"),
        (Model, {"id": "m", "outputType": "x", "credits": 1, "pricing": {"varies_by": [1]}}, "varies_by[]"),
        (Analysis, {"analysisId": GENERATION_ID, "blueprint": {"clips": [1]}}, "clips[]"),
    ],
)
def test_a_resource_without_its_id_or_of_another_shape_is_refused(
    kind: Any, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(ServiceResponseError) as raised:
        kind.from_api(body)
    assert raised.value.field == field
