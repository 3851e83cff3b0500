"""The sandbox's upload endpoint over real HTTP: content-addressed files that work as inputs."""

import hashlib
from collections.abc import Iterator

import httpx
import pytest

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, uploads
from mediagen_nb.sandbox.media import render_audio

VOICE = render_audio(6.0, seed=11, text="A voice sample recorded on my own machine.")


@pytest.fixture
def client(served: Sandbox) -> Iterator[httpx.Client]:
    assert served.base_url is not None
    headers = {"Authorization": f"Bearer {served.demo_key}"}
    with httpx.Client(base_url=served.base_url, headers=headers, timeout=30) as http:
        yield http


def _put(client: httpx.Client, name: str, data: bytes) -> httpx.Response:
    return client.put(path("sandbox_upload", name=name), content=data)


def test_upload_is_content_addressed_and_served(client: httpx.Client) -> None:
    """The stored name is the SHA-256 prefix plus the lower-cased extension; GET serves the bytes."""
    response = _put(client, "My-Voice.WAV", VOICE)
    assert response.status_code == 201, response.text
    data = response.json()["data"]
    sha = hashlib.sha256(VOICE).hexdigest()
    assert data == {
        "url": str(client.base_url).rstrip("/") + path("sandbox_upload", name=f"{sha[:32]}.wav"),
        "name": f"{sha[:32]}.wav",
        "bytes": len(VOICE),
        "sha256": sha,
    }
    served = client.get(data["url"])
    assert served.status_code == 200 and served.content == VOICE
    assert served.headers["content-type"] == "audio/wav"
    listed = client.get(path("sandbox_uploads")).json()["data"]
    assert [u["name"] for u in listed["uploads"]] == [data["name"]] and listed["totalBytes"] == len(VOICE)


def test_the_same_bytes_twice_are_one_file(client: httpx.Client) -> None:
    """A second upload of the same bytes (under any name) answers 200 with the same URL."""
    first = _put(client, "voice.wav", VOICE)
    again = _put(client, "take-2.wav", VOICE)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["data"]["url"] == first.json()["data"]["url"]
    assert len(client.get(path("sandbox_uploads")).json()["data"]["uploads"]) == 1


def test_an_uploaded_sample_is_measured_and_billed_like_any_input(client: httpx.Client) -> None:
    """zonos2 downloads the uploaded .wav and bills the sample's measured length (0.5 credit a second)."""
    url = _put(client, "voice.wav", VOICE).json()["data"]["url"]
    estimate = client.post(
        path("estimate"), json={"modelId": "zonos2", "input": {"text": "Hi", "audio": url}}
    )
    assert estimate.status_code == 200 and estimate.json()["data"]["credits"] == 3
    started = client.post(
        path("run"), json={"modelId": "zonos2", "input": {"text": "Hello there", "audio": url}}
    )
    assert started.status_code == 201, started.text
    generation = started.json()["data"]
    assert generation["creditsSpent"] == 3 and generation["mediaDurationSec"] == pytest.approx(6.0, abs=0.05)
    ledger = client.get(path("sandbox_ledger"), params={"resourceId": generation["id"]}).json()["data"]
    assert [(e["kind"], e["credits"]) for e in ledger["entries"]] == [("charge", 3)]


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("a%2Fb.wav", "without /"),
        ("dir/voice.wav", "without /"),
        ("..wav", "must not contain .."),
        ("voice..wav", "must not contain .."),
        ("voice", "an extension"),
        (".wav", "an extension"),
        ("voice.", "an extension"),
        ("my voice.wav", "only letters, digits"),
        ("voix-é.wav", "only letters, digits"),
        ("voice.w%40v", "only letters, digits"),
        ("v" * 252 + ".wav", "at most 255 characters"),
    ],
)
def test_bad_names_are_refused(client: httpx.Client, name: str, fragment: str) -> None:
    response = client.put(f"/_sandbox/uploads/{name}", content=b"RIFF")
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["statusCode"] == 400 and body["error"] == "Bad Request" and fragment in body["message"]
    assert client.get(path("sandbox_uploads")).json()["data"]["uploads"] == []


def test_size_caps(client: httpx.Client, served: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file over the per-file cap, or one that would fill the store past its cap, is refused, not kept."""
    monkeypatch.setattr(uploads, "MAX_FILE_BYTES", 1000)
    too_big = _put(client, "big.bin", b"x" * 1001)
    assert too_big.status_code == 400 and "too large" in too_big.json()["message"]
    served.world.uploads.max_total_bytes = 1500
    assert _put(client, "one.bin", b"a" * 800).status_code == 201
    full = _put(client, "two.bin", b"b" * 800)
    assert full.status_code == 400 and full.json()["message"].startswith("uploads are full")
    assert [u["bytes"] for u in client.get(path("sandbox_uploads")).json()["data"]["uploads"]] == [800]


def test_unknown_upload_is_404(client: httpx.Client) -> None:
    response = client.get(path("sandbox_upload", name="0" * 32 + ".wav"))
    assert response.status_code == 404 and response.json()["message"] == "File not found"
