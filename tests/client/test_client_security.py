"""The API key never shows: not in reprs, errors, tracebacks or DEBUG logs, and it is never pickled."""

import asyncio
import json
import logging
import pickle
import sys
import threading
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import _hostile as hostile
import httpx
import pytest
from _kit import Kit
from _shared import unused_port

from mediagen_nb.client import (
    AsyncClient,
    AuthenticationError,
    Client,
    ConfigurationError,
    ConnectionFailed,
    GenerationFailed,
    KeyCapReachedError,
    Limits,
    MediagenError,
    RateLimitError,
    RetryPolicy,
    Secret,
    ServerError,
    ValidationError,
    assemble,
    errors,
)
from mediagen_nb.client.config import BearerAuth, Settings

IMAGE = {"prompt": "a paper boat on a pond", "quality": "low"}
LOGGERS = ("httpx", "httpcore", "mediagen_nb")
pytestmark = pytest.mark.anyio


def exposures(error: BaseException) -> list[str]:
    """Every text a user, a log or an error tracker could show of ``error``."""
    texts = [str(error), repr(error), repr(error.args), "".join(traceback.format_exception(error))]
    texts += [repr(getattr(error, name, None)) for name in ("message", "body", "last", "generation")]
    return texts


def assert_hidden(secret: str, texts: list[str]) -> None:
    core = secret.removeprefix("pk_live_")
    for text in texts:
        assert secret not in text and core not in text, f"the key shows in: {text[:200]}"


async def distinctive_key(kit: Kit, **options: Any) -> str:
    """A new key of the demo account, created through the sandbox's control API."""
    created = await kit.create_key(name="security-check", **options)
    secret = str(created["key"])
    assert secret.startswith("pk_live_") and len(secret) > 20
    return secret


async def test_reprs_of_clients_settings_and_secret_hide_the_key(kit: Kit) -> None:
    secret = await distinctive_key(kit)
    client = kit.new(secret)
    assert client.settings.keys[0].reveal() == secret
    texts = [repr(client), str(client), repr(client.settings), str(client.settings)]
    texts += [repr(client.settings.keys), repr(client.settings.keys[0]), str(client.settings.keys[0])]
    texts += [f"{client.settings.keys[0]}", format(client.settings.keys[0]), repr(client._engine.settings)]
    assert_hidden(secret, texts)
    other: Client | AsyncClient
    if kit.flavor == "sync":
        other = AsyncClient(secret, base_url=kit.base_url, time_scale=600)
        await other.aclose()
    else:
        other = Client(secret, base_url=kit.base_url, time_scale=600)
        other.close()
    assert_hidden(secret, [repr(other), str(other), repr(other.settings)])
    assert client.settings.keys[0].fingerprint in repr(client.settings)


async def test_errors_raised_by_the_client_never_contain_the_key(kit: Kit) -> None:
    """Authentication, validation (client and service side), key cap and connection errors."""
    revoked = await distinctive_key(kit, state="revoked")
    errors: list[MediagenError] = []
    with pytest.raises(AuthenticationError) as auth:
        await kit.call("run", "gpt-image-2", IMAGE, client=kit.new(revoked))
    errors.append(auth.value)

    secret = await distinctive_key(kit)
    client = kit.new(secret)
    with pytest.raises(ValidationError) as local:
        await kit.call("run", "gpt-image-2", {"prompt": "x", "quality": "ultra"}, client=client)
    assert local.value.sent is False
    with pytest.raises(ValidationError) as remote:
        await kit.call("run", "gpt-image-2", {"quality": "low"}, client=client, validate=False)
    assert remote.value.sent is True
    errors += [local.value, remote.value]

    capped = await distinctive_key(kit, monthlyCap=1)
    with pytest.raises(KeyCapReachedError) as cap:
        await kit.call("run", "gpt-image-2", IMAGE, client=kit.new(capped))
    errors.append(cap.value)

    offline: Client | AsyncClient
    base_url, fast = f"http://127.0.0.1:{unused_port()}", 6000.0
    if kit.flavor == "sync":
        offline = Client(secret, base_url=base_url, time_scale=fast)
    else:
        offline = AsyncClient(secret, base_url=base_url, time_scale=fast)
    try:
        with pytest.raises(ConnectionFailed) as broken:
            await kit.call("generation", str(uuid.uuid4()), client=offline)
    finally:
        await offline.aclose() if isinstance(offline, AsyncClient) else offline.close()
    errors.append(broken.value)

    for error in errors:
        assert_hidden(revoked, exposures(error))
        assert_hidden(secret, exposures(error))
        assert_hidden(capped, exposures(error))


async def test_debug_logs_never_contain_the_key(kit: Kit, caplog: pytest.LogCaptureFixture) -> None:
    secret = await distinctive_key(kit)
    revoked = await distinctive_key(kit, state="revoked")
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    client = kit.new(secret)
    await kit.call("generate", "gpt-image-2", IMAGE, client=client)
    await kit.call("estimate", "gpt-image-2", IMAGE, client=client)
    with pytest.raises(AuthenticationError):
        await kit.call("generation", str(uuid.uuid4()), client=kit.new(revoked))
    records = [r for r in caplog.records if r.name.split(".")[0] in LOGGERS]
    assert any(r.name.startswith("httpx") for r in records), "DEBUG logging must have been captured"
    texts = [r.getMessage() for r in records] + [repr(r.args) for r in records]
    texts += [caplog.text]
    assert_hidden(secret, texts)
    assert_hidden(revoked, texts)


def test_a_secret_is_never_pickled() -> None:
    secret = Secret("pk_live_" + uuid.uuid4().hex)
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    settings = Settings("http://127.0.0.1:9", (secret,), "acct", Limits(), sandbox=False)
    with pytest.raises(TypeError):
        pickle.dumps(settings)


@pytest.mark.parametrize("stray", ["\u201d", "\n", "\u00a0", "\x00", "\u00e9"])
def test_a_key_with_a_stray_character_is_refused_without_showing_it(stray: str) -> None:
    """A key pasted with a smart quote or a control character fails at construction, key unseen.

    (httpx would otherwise raise a UnicodeEncodeError whose ``args`` hold the whole header.)
    """
    head, tail = "pk_live_" + uuid.uuid4().hex[:8], uuid.uuid4().hex
    with pytest.raises(ConfigurationError) as raised:
        Client(head + stray + tail, base_url="http://127.0.0.1:9")
    assert_hidden(tail, exposures(raised.value))
    assert_hidden(head + stray + tail, exposures(raised.value))


# -- no frame of ours ever holds the key (what ``%xmode Verbose`` would print) ------------------------

PACKAGE = str(Path(__import__("mediagen_nb").__file__).parent)
SANDBOX = str(Path(PACKAGE) / "sandbox")  # the service's side reads the header, as a server must


def _texts(value: Any, depth: int = 0) -> Iterator[str]:
    """The texts a local could show in a traceback: strings, and those inside headers, dicts, lists."""
    if isinstance(value, (str, bytes)):
        yield value.decode(errors="replace") if isinstance(value, bytes) else value
    elif isinstance(value, httpx.Headers):
        yield from (v.decode(errors="replace") for _, v in value.raw)
    elif depth < 3 and isinstance(value, dict):
        for key, item in value.items():
            yield from _texts(key, depth + 1)
            yield from _texts(item, depth + 1)
    elif depth < 3 and isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _texts(item, depth + 1)


@contextmanager
def frames_watched(secret: str) -> Iterator[list[str]]:
    """Every local of every mediagen_nb frame as it returns, in every thread; yields what held ``secret``
    (or a ``Bearer`` string), as ``function: name``."""
    found: list[str] = []
    seen = [0]

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        where = frame.f_code.co_filename
        if event != "return" or not where.startswith(PACKAGE) or where.startswith(SANDBOX):
            return
        seen[0] += 1
        for name, value in frame.f_locals.items():
            if any(secret in text or "Bearer " in text for text in _texts(value)):
                found.append(f"{frame.f_code.co_name}: {name}")

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert seen[0] > 100, "the profiler must have watched the client's frames"


async def test_no_frame_of_ours_holds_the_key_or_a_bearer_string(kit: Kit) -> None:
    """The key goes on a request through BearerAuth only: no header dict or ``Bearer ...`` in a local."""
    secret = await distinctive_key(kit)
    revoked = await distinctive_key(kit, state="revoked")
    client = kit.new(secret)
    with frames_watched(secret) as found:
        made = await kit.call("generate", "gpt-image-2", IMAGE, client=client)
        await kit.call("estimate", "gpt-image-2", IMAGE, client=client)
        with pytest.raises(AuthenticationError):
            await kit.call("generation", made.id, client=kit.new(revoked))
    assert found == []
    sent = kit.recorder.of("run")[0]
    assert sent.headers["Authorization"] == f"Bearer {secret}"  # and yet it was sent
    assert [e["credits"] for e in kit.ledger(made.id) if e["kind"] == "charge"] == [made.credits_spent]


def test_bearer_auth_shows_no_key_and_is_never_pickled() -> None:
    secret = Secret("pk_live_" + uuid.uuid4().hex)
    auth = BearerAuth(secret)
    assert_hidden(secret.reveal(), [repr(auth), str(auth)])
    with pytest.raises(TypeError):
        pickle.dumps(auth)
    request = httpx.Request("GET", "http://127.0.0.1:9/v1/generations/x")
    assert next(auth.auth_flow(request)).headers["Authorization"] == f"Bearer {secret.reveal()}"


# -- header values httpx could choke on are refused first --------------------------------------------

BAD_KEYS = ["caf\u00e9-1", "line\r\nX-Injected: 1", "tab\there", "\u201cquoted\u201d"]


@pytest.mark.parametrize("given", BAD_KEYS)
async def test_an_idempotency_key_httpx_cannot_send_is_refused_before_anything(kit: Kit, given: str) -> None:
    """Non-ASCII or CR/LF: a typed one-line error naming the option, not httpx's UnicodeEncodeError
    (whose traceback's locals held the request's headers); nothing is sent, nothing charged."""
    secret = await distinctive_key(kit)
    client = kit.new(secret)
    attempts = {
        "run": (("gpt-image-2", IMAGE), {}),
        "generate": (("gpt-image-2", IMAGE), {}),
        "analyze": (("https://www.tiktok.com/@someone/video/7300000000000000000",), {}),
        "replicate": ((str(uuid.uuid4()),), {}),
        "make_video": (("Why cats sleep all day",), {}),
    }
    kit.recorder.clear()
    for name, (args, options) in attempts.items():
        with pytest.raises(ValidationError) as refused:
            await kit.call(name, *args, client=client, idempotency_key=given, **options)
        error = refused.value
        assert error.field == "idempotency_key" and error.sent is False, name
        assert error.message.startswith("idempotency_key has ") and "\n" not in error.message
        assert error._render_traceback_() == [f"ValidationError: {error}"]
        assert_hidden(secret, exposures(error))
    assert kit.recorder.non_catalog() == []  # nothing that needs a key was sent
    assert [e for e in kit.ledger() if e["kind"] == "charge"] == []


# -- a server that echoes the Authorization header back ------------------------------------------------

ECHOED_GENERATION = "3f0c2a7e-5b1d-4c8e-9a6f-1d2e3f4a5b6c"


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers every request with the Authorization header it got, in the error message (or, for a
    generation read, in the failed generation's ``error``)."""
    try:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        target = head.split(" ", 2)[1]
        header = next(
            (
                line.split(":", 1)[1].strip()
                for line in head.split("\r\n")
                if line.lower().startswith("authorization:")
            ),
            "",
        )
        status, body = 401, {"statusCode": 401, "message": f"Invalid key in 'Authorization: {header}'"}
        if "/429/" in target:
            status, body = 429, f"API key rate limit exceeded for {header}"
        elif "/500/" in target:
            status, body = 500, {"statusCode": 500, "message": f"boom while reading {header}"}
        elif "/generations/" in target:
            status, body = (
                200,
                {
                    "success": True,
                    "data": {
                        "id": ECHOED_GENERATION,
                        "modelId": "gpt-image-2",
                        "status": "failed",
                        "output": None,
                        "error": f"upstream refused {header}",
                        "creditsSpent": 0,
                        "createdAt": "2026-01-01T00:00:00Z",
                    },
                },
            )
        payload = json.dumps(body).encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + payload
        )
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("key pk_live_abc-123 here", "key pk_live_*** here"),
        ('{"auth": "Bearer s3cr3t"}', '{"auth": "Bearer pk_live_***"}'),
        ("bearer s3cr3t;", "bearer pk_live_***;"),
        ("Authorization: Bearer pk_live_...", "Authorization: Bearer pk_live_..."),  # the spec's placeholder
        ('{"models": ["' + "gpt-image-2 " * 20_000 + '"]}', None),  # a large answer without a key: unchanged
    ],
)
def test_mask_hides_each_form_of_a_key_and_leaves_other_text_alone(text: str, shown: str | None) -> None:
    """The regex runs only where a key's form can be (``pk_live_`` or ``earer ``): same result, less work."""
    assert errors.mask(text) == (text if shown is None else shown)


@pytest.fixture
def echoing() -> Iterator[str]:
    """The echoing server's base URL (on its own loop and thread, stopped after the test)."""
    with hostile.running(_echo) as base_url:
        yield base_url


def test_a_key_a_server_echoes_is_masked_in_every_message(echoing: str) -> None:
    """401, 429 (a string body), 500 and a failed generation's error, each repeating our header."""
    secret = "pk_live_" + uuid.uuid4().hex
    seen: list[MediagenError] = []
    fast = RetryPolicy(max_attempts=1)
    with Client(secret, base_url=echoing, time_scale=600, retry=fast) as client:
        with pytest.raises(AuthenticationError) as auth:
            client.run("gpt-image-2", IMAGE, validate=False)
        seen.append(auth.value)
        with pytest.raises(GenerationFailed) as failed:
            client.wait(ECHOED_GENERATION).raise_for_status()
        seen.append(failed.value)
    for prefix, kind in (("/429", RateLimitError), ("/500", ServerError)):
        with Client(secret, base_url=echoing + prefix, time_scale=600, retry=fast) as client:
            with pytest.raises(kind) as raised:
                client.generation(ECHOED_GENERATION)
            seen.append(raised.value)
    assert "Invalid key in 'Authorization: Bearer pk_live_***'" in seen[0].message
    assert "upstream refused Bearer pk_live_***" in seen[1].message
    assert seen[1].generation.error == "upstream refused Bearer pk_live_***"  # shown in its card too
    for error in seen:
        assert "pk_live_***" in str(error)
        assert_hidden(secret, exposures(error))


def test_a_key_a_start_answer_echoes_never_reaches_the_ledger_file(own_ledger: Path) -> None:
    """The ledger keeps each start's answer (a re-run reads it back): any key echoed in it is masked."""
    secret = "pk_live_" + uuid.uuid4().hex

    def echo(request: hostile.Request) -> hostile.Answer:
        answer = json.loads(hostile.generation(hostile.GENERATION_ID, status="processing").body)
        answer["data"]["debug"] = f"seen header: {request.headers['authorization']}"
        return hostile.Answer(201, json.dumps(answer).encode())

    with hostile.serve() as server, Client(secret, base_url=server.base_url) as client:
        server.catalog()
        server.on("POST", "/v3/playground/v1/run", echo)
        started = client.run("gpt-image-2", prompt="a fox", reuse=True)
    assert started.extra["debug"] == "seen header: Bearer pk_live_***"
    assemble.as_ledger(None).close()
    written = b"".join(p.read_bytes() for p in own_ledger.parent.iterdir() if p.is_file())
    assert secret.encode() not in written and b"pk_live_***" in written
