"""Where a client connects and with which key: arguments, then MEDIAGEN_*, then the embedded sandbox."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _shared import environment, unused_port

from mediagen_nb.client import Client, ConfigurationError, Estimate, Limits
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]
IMAGE = {"prompt": "a paper boat on a pond", "quality": "low"}
ENV = ("MEDIAGEN_API_KEY", "MEDIAGEN_BASE_URL", "MEDIAGEN_TIME_SCALE")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No MEDIAGEN_* variable set (the test sets what it needs)."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def manual_sandbox() -> Iterator[Sandbox]:
    """A served sandbox on a manual clock: a key's 60 requests a minute bind on simulated minutes, which
    its clients' pauses move (``Sandbox.stepping_clock``), so a test waits no real minute."""
    with Sandbox(clock="manual", seed=1) as sandbox:
        yield sandbox


def test_explicit_arguments_beat_the_environment(clean_env: pytest.MonkeyPatch, served: Sandbox) -> None:
    dead = f"http://127.0.0.1:{unused_port()}"
    clean_env.setenv("MEDIAGEN_API_KEY", "pk_live_from_the_environment")
    clean_env.setenv("MEDIAGEN_BASE_URL", dead)
    clean_env.setenv("MEDIAGEN_TIME_SCALE", "5")
    limits = Limits(burst=1)
    with Client(served.demo_key, base_url=served.base_url, limits=limits, time_scale=600) as client:
        settings = client.settings
        assert settings.base_url == served.base_url and not settings.sandbox
        assert [k.reveal() for k in settings.keys] == [served.demo_key]
        assert settings.limits is limits and client.clock.scale == 600
        assert isinstance(client.estimate("gpt-image-2", IMAGE), Estimate), "it really talks to the argument"
    with Client(served.demo_key) as half:
        assert half.base_url == dead and half.settings.keys[0].reveal() == served.demo_key
        assert half.clock.scale == 5
    with Client(base_url=served.base_url + "/") as other:
        assert other.base_url == served.base_url, "one trailing slash is dropped"
        assert other.settings.keys[0].reveal() == "pk_live_from_the_environment"


def test_the_environment_alone_configures_a_client(clean_env: pytest.MonkeyPatch, served: Sandbox) -> None:
    assert served.base_url is not None
    clean_env.setenv("MEDIAGEN_API_KEY", served.demo_key)
    clean_env.setenv("MEDIAGEN_BASE_URL", served.base_url)
    clean_env.setenv("MEDIAGEN_TIME_SCALE", "600")
    with Client() as client:
        assert client.base_url == served.base_url and not client.settings.sandbox
        assert client.clock.scale == 600
        generation = client.generate("gpt-image-2", IMAGE)
        assert generation.status == "succeeded"


def test_a_key_without_a_base_url_names_mediagen_base_url(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError) as raised:
        Client("pk_live_only_a_key")
    assert "MEDIAGEN_BASE_URL" in str(raised.value)
    clean_env.setenv("MEDIAGEN_API_KEY", "pk_live_only_a_key")
    with pytest.raises(ConfigurationError) as from_env:
        Client()
    assert "MEDIAGEN_BASE_URL" in str(from_env.value)


def test_a_base_url_without_a_key_names_mediagen_api_key(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEDIAGEN_BASE_URL", "http://127.0.0.1:9")
    with pytest.raises(ConfigurationError) as raised:
        Client()
    assert "MEDIAGEN_API_KEY" in str(raised.value)
    for empty in ("", "   ", []):
        with pytest.raises(ConfigurationError):
            Client(empty)


@pytest.mark.parametrize("raw", ["fast", "0", "-2", "nan", "inf", "1e400"])
def test_a_bad_time_scale_is_a_configuration_error(clean_env: pytest.MonkeyPatch, raw: str) -> None:
    clean_env.setenv("MEDIAGEN_TIME_SCALE", raw)
    with pytest.raises(ConfigurationError) as raised:
        Client("pk_live_x", base_url="http://127.0.0.1:9")
    assert "MEDIAGEN_TIME_SCALE" in str(raised.value) and raw in str(raised.value)
    clean_env.setenv("MEDIAGEN_API_KEY", "pk_live_x")
    clean_env.setenv("MEDIAGEN_BASE_URL", "http://127.0.0.1:9")
    with pytest.raises(ConfigurationError):
        Client()


def test_without_key_or_url_the_embedded_sandbox_is_used_and_announced_once() -> None:
    """A fresh interpreter with no MEDIAGEN_*: two clients, one notice line (plain output), a real result."""
    env = environment()
    code = (
        "import mediagen_nb as m; c=m.Client(); c2=m.Client(); "
        "print(c.generate('gpt-image-2', prompt='x', quality='low').status); "
        "print(c.settings.sandbox, c2.base_url == c.base_url)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    notices = [line for line in lines if "embedded sandbox" in line]
    assert len(notices) == 1, done.stdout
    [notice] = notices
    assert notice.startswith("mediagen_nb:") and "nothing real is charged" in notice
    assert "http://127.0.0.1:" in notice
    assert done.stdout.count("mediagen_nb:") == 1, "announced once, in one line"
    assert "mediagen_nb" not in done.stderr  # plain output, not a warning on stderr
    assert [line for line in lines if line != notice] == ["succeeded", "True True"]


def test_a_pool_of_two_keys_shares_the_reads(manual_sandbox: Sandbox) -> None:
    """Two keys of one account: Settings.keys has both, and more reads than one key allows use both."""
    sandbox = manual_sandbox
    base_url = sandbox.base_url
    assert base_url is not None
    made = [
        httpx.post(base_url + path("sandbox_keys"), json={"name": f"pool-{i}"}, timeout=10) for i in (1, 2)
    ]
    records = [response.json()["data"] for response in made]
    secrets = [str(r["key"]) for r in records]
    clock = sandbox.stepping_clock()
    begun = clock.now()
    with Client(secrets, base_url=base_url, time_scale=1, clock=clock) as client:
        settings = client.settings
        assert len(settings.keys) == 2 and [k.reveal() for k in settings.keys] == secrets
        assert settings.keys[0].fingerprint != settings.keys[1].fingerprint
        started = client.run("gpt-image-2", IMAGE)
        reads = 70  # more than one key's 60 a minute
        for _ in range(reads):
            assert client.generation(started.id).id == started.id
    counts = [sandbox.world.requests.count(str(r["id"])) for r in records]
    assert sum(counts) == reads + 1, counts
    assert all(0 < count <= 60 for count in counts), f"both keys used, neither over its limit: {counts}"
    # two keys have room for 120 at once: 71 requests wait for no window (one key alone would wait a
    # simulated minute for its 61st)
    assert clock.now() - begun < 30, clock.now() - begun


def test_mediagen_api_key_with_commas_is_a_pool_of_keys(clean_env: pytest.MonkeyPatch) -> None:
    """Where a process's only settings are its environment (a Ray actor, a Daft worker), the keys of one
    account pool as a list does: ``MEDIAGEN_API_KEY=pk_a,pk_b``."""
    clean_env.setenv("MEDIAGEN_API_KEY", "pk_live_first, pk_live_second,")
    clean_env.setenv("MEDIAGEN_BASE_URL", "https://service.invalid")
    with Client() as client:
        assert [k.reveal() for k in client.settings.keys] == ["pk_live_first", "pk_live_second"]
    clean_env.setenv("MEDIAGEN_API_KEY", " , ")
    with pytest.raises(ConfigurationError, match="at least one key"):
        Client()
