"""The sandbox's upload endpoint over real HTTP: content-addressed media that work as inputs, taken
from the account's key only, recognised by their content (never their name), SVG drawn as PNG."""

import asyncio
import hashlib
import io
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import av
import httpx
import numpy as np
import pytest
from PIL import Image

from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, uploads
from mediagen_nb.sandbox.media import render_audio, render_video

VOICE = render_audio(6.0, seed=11, text="A voice sample recorded on my own machine.")
# What an attacker would upload: each would run script if it were served as a page.
ATTACK = "fetch('/_sandbox/account', {method: 'POST', body: JSON.stringify({balance: 1})})"
HTML = f"<!doctype html><html><body><script>{ATTACK}</script></body></html>".encode()
HOSTILE = {
    "page.html": (HTML, "an HTML page"),
    "script.js": (ATTACK.encode(), "text (a script, a document or a page)"),
    "page.xhtml": (
        b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><script>'
        + ATTACK.encode()
        + b"</script></body></html>",
        "an XHTML page",
    ),
    "feed.xml": (b'<?xml version="1.0"?><note><to>you</to></note>', "an XML document"),
    "data.json": (b'{"balance": 1}', "a JSON document"),
    "image.png": (b"\x89PNG\r\n\x1a\n" + HTML, "something that starts like a PNG image but is not one"),
    "voice.wav": (
        b"RIFF\x00\x10\x00\x00WAVEfmt " + HTML,
        "something that starts like a WAV file but is not one",
    ),
    "song.mp3": (
        b"ID3\x03\x00\x00\x00\x00\x00\x10" + HTML,
        "something that starts like an MP3 file but is not one",
    ),
    "empty.png": (b"", "an empty file"),
}


def _image(fmt: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (24, 16), (0, 128, 255)).save(out, format=fmt)
    return out.getvalue()


def _video(fmt: str, codec: str) -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format=fmt) as container:
        stream = container.add_stream(codec, rate=5)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for _ in range(3):
            frame = av.VideoFrame.from_ndarray(np.zeros((32, 32, 3), dtype=np.uint8), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return out.getvalue()


# Every medium the inputs take, as (bytes, the extension it is stored with, its media type).
MEDIA = {
    "png": (_image("PNG"), "png", "image/png"),
    "jpeg": (_image("JPEG"), "jpg", "image/jpeg"),
    "webp": (_image("WEBP"), "webp", "image/webp"),
    "gif": (_image("GIF"), "gif", "image/gif"),
    "wav": (VOICE, "wav", "audio/wav"),
    "mp3": (render_audio(2.0, seed=3, fmt="mp3"), "mp3", "audio/mpeg"),
    "mp4": (render_video("a clip", seconds=1.0, seed=1, width=64, height=64), "mp4", "video/mp4"),
    "mov": (_video("mov", "libx264"), "mov", "video/quicktime"),
    "webm": (_video("webm", "libvpx"), "webm", "video/webm"),
}


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
    one, two = _image("PNG"), _image("GIF")
    monkeypatch.setattr(uploads, "MAX_FILE_BYTES", len(one) + len(two))
    too_big = _put(client, "big.wav", VOICE)
    assert too_big.status_code == 413 and "too large" in too_big.json()["message"]
    served.world.uploads.max_total_bytes = len(one) + len(two) - 1
    assert _put(client, "one.png", one).status_code == 201
    full = _put(client, "two.gif", two)
    assert full.status_code == 400 and full.json()["message"].startswith("uploads are full")
    assert [u["bytes"] for u in client.get(path("sandbox_uploads")).json()["data"]["uploads"]] == [len(one)]
    assert _leftovers(served) == []


def test_unknown_upload_is_404(client: httpx.Client) -> None:
    response = client.get(path("sandbox_upload", name="0" * 32 + ".wav"))
    assert response.status_code == 404 and response.json()["message"] == "File not found"


async def _never_read() -> AsyncIterator[bytes]:
    raise AssertionError("the body was read")
    yield b""


def _leftovers(sandbox: Sandbox) -> list[str]:
    """Files in the upload folder that are not stored uploads (temporary files left behind)."""
    stored = {u.name for u in sandbox.world.uploads.stored()}
    return sorted(p.name for p in sandbox.world.uploads.folder.iterdir() if p.name not in stored)


@pytest.mark.parametrize(
    ("header", "message"),
    [(None, messages.MISSING_CREDENTIALS), ("Bearer pk_live_not_a_key", messages.INVALID_KEY)],
)
def test_putting_and_listing_need_the_accounts_key(served: Sandbox, header: str | None, message: str) -> None:
    """Anyone could store files (and the sandbox would serve them) without a key; now only its accounts."""
    headers = {"Authorization": header} if header else {}
    with httpx.Client(base_url=str(served.base_url), headers=headers, timeout=30) as anyone:
        put = _put(anyone, "voice.wav", VOICE)
        listed = anyone.get(path("sandbox_uploads"))
    for refused in (put, listed):
        assert refused.status_code == 401, refused.text
        assert refused.json() == {"statusCode": 401, "message": message, "error": "Unauthorized"}
    assert served.world.uploads.stored() == [] and _leftovers(served) == []


def test_a_stored_upload_is_read_without_a_key(client: httpx.Client, served: Sandbox) -> None:
    """The service downloads inputs, and previews load them in <img>/<audio>: reading needs no key."""
    url = _put(client, "voice.wav", VOICE).json()["data"]["url"]
    read = httpx.get(url, timeout=30)
    assert read.status_code == 200 and read.content == VOICE


@pytest.mark.parametrize("kind", sorted(MEDIA))
def test_each_medium_is_recognised_by_its_content_not_its_name(client: httpx.Client, kind: str) -> None:
    """Named ``upload.html``, every accepted medium is stored with the extension of what it is."""
    data, extension, media_type = MEDIA[kind]
    stored = _put(client, "upload.html", data)
    assert stored.status_code == 201, stored.text
    body = stored.json()["data"]
    assert body["name"] == f"{hashlib.sha256(data).hexdigest()[:32]}.{extension}"
    served = client.get(body["url"])
    assert served.status_code == 200 and served.content == data
    assert served.headers["content-type"].split(";")[0] == media_type


def test_a_video_is_taken_on_its_container_and_served_inert(client: httpx.Client) -> None:
    """An MP4 whose length cannot be read is the start's to refuse, with the service's message; whatever
    its bytes hold (markup behind an ``ftyp`` box), it is served as video, nosniff, with no script."""
    polyglot = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomavc1" + HTML
    stored = _put(client, "clip.html", polyglot)
    assert stored.status_code == 201, stored.text
    served = client.get(stored.json()["data"]["url"])
    assert served.headers["content-type"] == "video/mp4"
    assert served.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in served.headers["content-security-policy"]
    run = client.post(
        path("run"),
        json={"modelId": "video-bg-remover", "input": {"video": stored.json()["data"]["url"]}},
    )
    assert run.status_code == 400 and run.json()["message"].startswith("Could not read the video duration")
    assert client.get(path("sandbox_ledger")).json()["data"]["entries"] == []


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_anything_but_media_is_refused_before_it_is_stored(
    client: httpx.Client, served: Sandbox, name: str
) -> None:
    data, looks_like = HOSTILE[name]
    refused = _put(client, name, data)
    assert refused.status_code == 400, refused.text
    message = refused.json()["message"]
    assert message.startswith(f"upload refused: the file looks like {looks_like};"), message
    assert "images (PNG, JPEG, WebP, GIF; SVG is stored as PNG), audio (WAV, MP3)" in message
    assert client.get(path("sandbox_uploads")).json()["data"]["uploads"] == []
    assert _leftovers(served) == []
    would_be = hashlib.sha256(data).hexdigest()[:32] + "." + name.rsplit(".", 1)[-1]
    assert client.get(path("sandbox_upload", name=would_be)).status_code == 404


def test_an_svg_with_script_and_outside_references_becomes_a_harmless_png(
    client: httpx.Client, served: Sandbox, tmp_path: Path
) -> None:
    """The SVG is drawn as PNG (what is stored and served); its script never runs, and the files it
    points to on this machine are not read into the picture."""
    secret = tmp_path / "secret.png"
    Image.new("RGB", (40, 20), (255, 0, 0)).save(secret)
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'width="40" height="20"><script>{ATTACK}</script>'
        '<rect width="40" height="20" fill="#0000ff"/>'
        f'<image href="{secret}" width="40" height="20"/>'
        f'<image xlink:href="file://{secret}" width="40" height="20"/>'
        '<image href="secret.png" width="40" height="20"/></svg>'
    ).encode()
    stored = _put(client, "drawing.svg", svg)
    assert stored.status_code == 201, stored.text
    body = stored.json()["data"]
    served_png = client.get(body["url"])
    assert body["name"].endswith(".png") and served_png.headers["content-type"] == "image/png"
    assert hashlib.sha256(served_png.content).hexdigest() == body["sha256"]
    with Image.open(io.BytesIO(served_png.content)) as picture:
        assert picture.format == "PNG" and picture.size == (40, 20)
        colours = {colour for _, colour in picture.convert("RGB").getcolors(40 * 20) or []}
    assert colours == {(0, 0, 255)}  # the blue rectangle, and nothing of the red secret
    assert _put(client, "again.svg", svg).json()["data"]["url"] == body["url"]  # the same drawing


@pytest.mark.parametrize(
    ("svg", "looks_like"),
    [
        (
            b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
            b'<svg xmlns="http://www.w3.org/2000/svg">&b;</svg>',
            "an SVG that declares XML entities or external references",
        ),
        (
            b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b'<svg xmlns="http://www.w3.org/2000/svg"><text>&x;</text></svg>',
            "an SVG that declares XML entities or external references",
        ),
        (b"<svg width='10' height='10'></svg>", "an XML document whose root is not an SVG image"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'><rect></svg>", "an SVG that is not well-formed XML"),
    ],
)
def test_an_svg_that_cannot_be_drawn_safely_is_refused(
    client: httpx.Client, served: Sandbox, svg: bytes, looks_like: str
) -> None:
    refused = _put(client, "drawing.svg", svg)
    assert refused.status_code == 400 and f"the file looks like {looks_like}" in refused.json()["message"]
    assert served.world.uploads.stored() == [] and _leftovers(served) == []


def test_a_huge_svg_is_drawn_at_most_2048_pixels_a_side(client: httpx.Client) -> None:
    """A drawing that states 100,000 x 50,000 pixels would take 20 GB to draw; it is drawn smaller."""
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="50000"><rect width="9"/></svg>'
    stored = _put(client, "huge.svg", svg)
    assert stored.status_code == 201, stored.text
    with Image.open(io.BytesIO(client.get(stored.json()["data"]["url"]).content)) as picture:
        assert picture.size == (2048, 1024)


@pytest.mark.anyio
async def test_files_still_arriving_count_toward_the_total_cap(sandbox: Sandbox) -> None:
    """Two uploads received at once cannot pass the store's cap between them (their temporary files
    counted from the first byte), and one whose declared length is past the cap is refused unread."""
    first, second = VOICE, render_audio(4.0, seed=5)  # each fits alone; half the first and the second do not
    sandbox.world.uploads.max_total_bytes = len(first)
    halfway, go_on = asyncio.Event(), asyncio.Event()

    async def slowly() -> AsyncIterator[bytes]:
        for start in range(0, len(first), 4096):
            if start >= len(first) // 2 and not halfway.is_set():
                halfway.set()
                await go_on.wait()
            yield first[start : start + 4096]

    headers = {"Authorization": f"Bearer {sandbox.demo_key}"}
    async with httpx.AsyncClient(
        transport=sandbox.transport(), base_url="http://sandbox.test", headers=headers, timeout=30
    ) as api:
        arriving = asyncio.create_task(api.put(path("sandbox_upload", name="voice.wav"), content=slowly()))
        await halfway.wait()
        other = await api.put(path("sandbox_upload", name="other.wav"), content=second)
        assert other.status_code == 400 and other.json()["message"].startswith("uploads are full")
        listed = (await api.get(path("sandbox_uploads"))).json()["data"]
        assert listed["totalBytes"] == 0 and listed["receivingBytes"] >= len(first) // 2
        go_on.set()
        assert (await arriving).status_code == 201
        sandbox.world.uploads.max_total_bytes = len(first) + len(second) - 1
        declared = await api.put(  # it says it is a byte too long: refused before a byte is read
            path("sandbox_upload", name="other.wav"),
            content=_never_read(),
            headers={"Content-Length": str(len(second))},
        )
        assert declared.status_code == 400 and declared.json()["message"].startswith("uploads are full")
    assert [u.bytes for u in sandbox.world.uploads.stored()] == [len(first)]
    assert _leftovers(sandbox) == []
