"""The API key never shows: not in reprs, errors, tracebacks or DEBUG logs, and it is never pickled."""

import logging
import pickle
import traceback
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _kit import Kit, open_kit, unused_port

from mediagen_nb.client import (
    AsyncClient,
    AuthenticationError,
    Client,
    ConfigurationError,
    ConnectionFailed,
    KeyCapReachedError,
    Limits,
    MediagenError,
    Secret,
    ValidationError,
)
from mediagen_nb.client.config import Settings
from mediagen_nb.sandbox import Sandbox

IMAGE = {"prompt": "a paper boat on a pond", "quality": "low"}
LOGGERS = ("httpx", "httpcore", "mediagen_nb")
pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sync", "async"])
async def kit(request: pytest.FixtureRequest) -> AsyncIterator[Kit]:
    sandbox: Sandbox = request.getfixturevalue("served" if request.param == "sync" else "sandbox")
    async with open_kit(request.param, sandbox) as made:
        yield made


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
        other = AsyncClient(secret, base_url=kit.base_url, limits=Limits(time_scale=600))
        await other.aclose()
    else:
        other = Client(secret, base_url=kit.base_url, limits=Limits(time_scale=600))
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
    base_url, fast = f"http://127.0.0.1:{unused_port()}", Limits(time_scale=6000)
    if kit.flavor == "sync":
        offline = Client(secret, base_url=base_url, limits=fast)
    else:
        offline = AsyncClient(secret, base_url=base_url, limits=fast)
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
