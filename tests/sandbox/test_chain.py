"""The spec's three-step chain over real HTTP: face image, cloned voice, lip-sync video."""

import io
import math
import time
from collections.abc import Iterator
from typing import Any

import av
import httpx
import pytest
from PIL import Image

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox
from mediagen_nb.sandbox.media import measure_seconds

SCRIPT = "Hi, I am your new presenter. Today we look at three small habits that make mornings easier."
POLL_DEADLINE = 60.0  # real seconds a step may take, long-polls included

pytestmark = pytest.mark.manual_clock  # each long poll moves the clock until its generation ends


@pytest.fixture
def client(served: Sandbox) -> Iterator[httpx.Client]:
    """A sync client on the uvicorn-served sandbox, with the demo key."""
    assert served.base_url is not None
    with httpx.Client(
        base_url=served.base_url, headers={"Authorization": f"Bearer {served.demo_key}"}, timeout=90
    ) as c:
        yield c


def _run(client: httpx.Client, model_id: str, values: dict[str, Any]) -> dict[str, Any]:
    """Start a generation, then long-poll with wait=55 until it ends (bounded); return the final data."""
    started = client.post(path("run"), json={"modelId": model_id, "input": values})
    assert started.status_code == 201, started.text
    data = started.json()["data"]
    assert data["status"] == "processing" and data["output"] is None and data["error"] is None
    deadline = time.monotonic() + POLL_DEADLINE
    for _ in range(100):
        read = client.get(path("generation", id=data["id"]), params={"wait": 55})
        assert read.status_code == 200, read.text
        current = read.json()["data"]
        if current["status"] != "processing":
            assert current["status"] == "succeeded", current
            assert "stillRunning" not in current
            assert current["creditsSpent"] == data["creditsSpent"]
            return current
        assert current.get("stillRunning") is True
        assert time.monotonic() < deadline, f"{model_id} did not finish"
    raise AssertionError(f"{model_id} did not finish")


def _estimate(client: httpx.Client, model_id: str, values: dict[str, Any]) -> int:
    response = client.post(path("estimate"), json={"modelId": model_id, "input": values})
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data[wire.ESTIMATE_MODEL] == model_id
    return data[wire.ESTIMATE_CREDITS]


def _download(url: str) -> bytes:
    response = httpx.get(url, timeout=90)
    assert response.status_code == 200, url
    return response.content


@pytest.mark.parametrize(
    ("lipsync", "rate"),
    [("infinitetalk", 4.0), ("infinitetalk-fast", 1.5)],  # credits per started second at the defaults
)
def test_face_voice_lipsync_chain(served: Sandbox, client: httpx.Client, lipsync: str, rate: float) -> None:
    """gpt-image-2 → zonos2 → lip-sync: the video is as long as the speech, billed per second of it."""
    assert served.base_url is not None
    balance_before = client.get(path("sandbox_account")).json()["data"]["balance"]

    portrait = {"prompt": "Studio portrait of a friendly presenter", "quality": "low", "aspect_ratio": "2:3"}
    face = _run(client, "gpt-image-2", portrait)
    assert face["output"]["type"] == "image"
    face_url = face["output"]["urls"][0]
    face_png = _download(face_url)
    assert face_url.startswith(served.base_url) and face_png.startswith(b"\x89PNG")
    with Image.open(io.BytesIO(face_png)) as image:
        face_aspect = image.width / image.height
    assert face_aspect == pytest.approx(2 / 3, rel=0.02)

    sample = served.base_url + path("sandbox_samples", name="voice.wav")
    voice_input = {"text": SCRIPT, "audio": sample}
    voice_estimate = _estimate(client, "zonos2", voice_input)
    voice = _run(client, "zonos2", voice_input)
    assert voice["creditsSpent"] == voice_estimate
    assert voice["mediaDurationSec"] == pytest.approx(8.0, abs=0.05)  # billed by the 8 s sample, not the text
    assert voice["output"]["type"] == "audio"
    audio_url = voice["output"]["urls"][0]
    audio_ext = "." + audio_url.rsplit(".", 1)[-1]
    assert audio_ext in (".wav", ".mp3")
    speech_seconds = measure_seconds(_download(audio_url), audio_ext)
    assert speech_seconds is not None and speech_seconds > 1

    talk_input = {"image": face_url, "audio": audio_url}
    talk_estimate = _estimate(client, lipsync, talk_input)
    talk = _run(client, lipsync, talk_input)
    assert talk["creditsSpent"] == talk_estimate
    assert talk["mediaDurationSec"] == pytest.approx(speech_seconds, abs=0.05)
    assert talk["creditsSpent"] == max(1, math.ceil(rate * math.ceil(round(talk["mediaDurationSec"], 6))))
    assert talk["output"]["type"] == "video"
    video_url = talk["output"]["urls"][0]
    assert video_url.endswith(".mp4")
    video = _download(video_url)
    video_seconds = measure_seconds(video, ".mp4")
    assert video_seconds is not None
    assert abs(video_seconds - speech_seconds) <= 0.5
    with av.open(io.BytesIO(video)) as container:
        stream = container.streams.video[0]
        video_aspect = stream.codec_context.width / stream.codec_context.height
        assert len(container.streams.audio) == 1  # the speech is in the video
    assert video_aspect == pytest.approx(face_aspect, rel=0.03)  # lip-sync keeps the image's aspect ratio

    ledger = client.get(path("sandbox_ledger")).json()["data"]["entries"]
    assert [e["kind"] for e in ledger] == ["charge"] * 3
    assert [(e["resourceId"], e["credits"]) for e in ledger] == [
        (face["id"], face["creditsSpent"]),
        (voice["id"], voice["creditsSpent"]),
        (talk["id"], talk["creditsSpent"]),
    ]
    assert [e["modelId"] for e in ledger] == ["gpt-image-2", "zonos2", lipsync]
    spent = face["creditsSpent"] + voice["creditsSpent"] + talk["creditsSpent"]
    assert client.get(path("sandbox_account")).json()["data"]["balance"] == balance_before - spent


def test_infinitetalk_720p_costs_twice_480p(client: httpx.Client, served: Sandbox) -> None:
    """The resolution multiplier of infinitetalk, on the same audio file."""
    assert served.base_url is not None
    values = {
        "image": served.base_url + path("sandbox_samples", name="face.png"),
        "audio": served.base_url + path("sandbox_samples", name="voice.wav"),
    }
    at_720 = _estimate(client, "infinitetalk", {**values, "resolution": "720p"})
    at_480 = _estimate(client, "infinitetalk", {**values, "resolution": "480p"})
    assert at_720 == 2 * at_480
    assert _estimate(client, "infinitetalk", values) == at_720  # 720p is the default
