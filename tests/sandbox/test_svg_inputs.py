"""The spec: "SVG image links are converted to PNG before the model sees them". A lip-sync run's face
given as an SVG link is drawn as PNG (its video keeps the drawing's proportions), and drawing it reads
no file of this machine and fetches nothing the SVG points to. Every image input of every model (lists
too) and the replication ``characterImage`` are read that way: one that cannot be drawn fails the run
(refunded) or is refused before any charge, naming the input."""

import io
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import av
import httpx
import pytest

from mediagen_nb import Client
from mediagen_nb.doctor.checks import minimal_input
from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.protocol.schema import media_kind
from mediagen_nb.sandbox import Sandbox, catalog

# An SVG that declares an entity (the start of a "billion laughs"): never parsed, so never drawn.
BAD_SVG = (
    b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa">]>'
    b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>&a;</text></svg>'
)


class _Host:
    """A loopback web server: serves one SVG at /face.svg and records every path asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.svg = b""
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.asked.append(self.path)
                body = {"/face.svg": host.svg, "/bad.svg": BAD_SVG}.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "image/svg+xml")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                if body is not None:
                    self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def secure(self, folder: Path) -> Path:
        """Serve over https with a certificate made for 127.0.0.1; the certificate's file, to trust."""
        cert, key = folder / "cert.pem", folder / "key.pem"
        made = "-x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1"
        subprocess.run(
            ["openssl", "req", *made.split(), "-keyout", str(key), "-out", str(cert)],
            check=True,
            capture_output=True,
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = self.url.replace("http://", "https://")
        return cert


@pytest.fixture
def host() -> Iterator[_Host]:
    made = _Host()
    thread = threading.Thread(target=made.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        made.server.shutdown()
        made.server.server_close()


def test_an_svg_face_is_drawn_as_png_before_the_lip_sync_reads_it(served: Sandbox, host: _Host) -> None:
    host.svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200">'
        "<script>fetch('/beacon-script')</script>"
        '<rect width="400" height="200" fill="#ffcc99"/>'
        f'<image href="{host.url}/beacon-image.png" width="10" height="10"/>'
        '<image href="/etc/hostname" width="10" height="10"/></svg>'
    ).encode()
    assert served.base_url is not None
    headers = {"Authorization": f"Bearer {served.demo_key}"}
    with httpx.Client(base_url=served.base_url, headers=headers, timeout=60) as api:
        voice = served.base_url + path("sandbox_samples", name="short-voice.wav")
        body = {"modelId": "infinitetalk-fast", "input": {"image": f"{host.url}/face.svg", "audio": voice}}
        started = api.post(path("run"), json=body)
        assert started.status_code == 201, started.text
        api.post(path("sandbox_clock"), json={"advance": 3600}).raise_for_status()
        done = api.get(path("generation", id=started.json()["data"]["id"])).json()["data"]
        assert done["status"] == "succeeded", done
        video = api.get(done["output"]["urls"][0])
    with av.open(io.BytesIO(video.content)) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height) == (320, 160)  # the SVG's 2:1, not the default 16:9
    assert host.asked == ["/face.svg"]  # neither the script's nor the image's URL was fetched


def _image_inputs() -> dict[str, catalog.ModelSpec]:
    """Every image input name of the bundled catalog, with a model that takes it and is not billed by
    media length (so no audio or video has to be reachable for it to start)."""
    found: dict[str, catalog.ModelSpec] = {}
    for model in catalog.MODELS:
        for name, prop in model.input_schema.get("properties", {}).items():
            if media_kind(prop) == "image" and model.media_field is None:
                found.setdefault(name, model)
    return found


def test_every_image_input_is_read_as_its_model_sees_it(served: Sandbox, host: _Host) -> None:
    """Each image input name of the catalog (single links and lists) given an SVG that cannot be
    drawn: the run starts, then fails naming that input, and its credits come back."""
    inputs = _image_inputs()
    every = {
        name
        for model in catalog.MODELS
        for name, prop in model.input_schema.get("properties", {}).items()
        if media_kind(prop) == "image"
    }
    assert set(inputs) == every and {"image", "input_images", "end_image", "mask"} <= every
    assert served.base_url is not None
    face = served.base_url + path("sandbox_samples", name="face.png")
    headers = {"Authorization": f"Bearer {served.demo_key}"}
    started: dict[str, str] = {}
    with (
        Client.for_sandbox(served) as client,
        httpx.Client(base_url=served.base_url, headers=headers, timeout=60) as api,
    ):
        for name, spec in inputs.items():
            model = client.model(spec.id)
            values = minimal_input(model)
            listed = model.properties[name].get("type") == "array"
            values[name] = [face, f"{host.url}/bad.svg"] if listed else f"{host.url}/bad.svg"
            answer = api.post(path("run"), json={"modelId": spec.id, "input": values})
            assert answer.status_code == 201, (name, answer.text)
            started[f"{name}[1]" if listed else name] = answer.json()["data"]["id"]
        api.post(path("sandbox_clock"), json={"advance": 3600}).raise_for_status()
        for name, gen_id in started.items():
            done = api.get(path("generation", id=gen_id)).json()["data"]
            assert done["status"] == "failed", (name, done)
            assert (
                done["error"].startswith(messages.MODEL_FAILED)
                and f"read {name}, an SVG that" in done["error"]
            )
            entries = api.get(path("sandbox_ledger"), params={"resourceId": gen_id}).json()["data"]["entries"]
            assert [e["kind"] for e in entries] == ["charge", "refund"]
            assert entries[0]["credits"] == entries[1]["credits"] == done["creditsSpent"]
    assert host.asked.count("/bad.svg") == len(inputs)


def test_an_svg_in_an_image_list_is_drawn_and_the_run_succeeds(served: Sandbox, host: _Host) -> None:
    host.svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="100"><rect width="300" height="100"/>'
        f'<image href="{host.url}/beacon.png" width="10" height="10"/></svg>'
    ).encode()
    assert served.base_url is not None
    face = served.base_url + path("sandbox_samples", name="face.png")
    headers = {"Authorization": f"Bearer {served.demo_key}"}
    with httpx.Client(base_url=served.base_url, headers=headers, timeout=60) as api:
        body = {
            "modelId": "seedbloom-4-edit",
            "input": {"prompt": "a sign", "input_images": [face, f"{host.url}/face.svg"]},
        }
        started = api.post(path("run"), json=body)
        assert started.status_code == 201, started.text
        api.post(path("sandbox_clock"), json={"advance": 3600}).raise_for_status()
        done = api.get(path("generation", id=started.json()["data"]["id"])).json()["data"]
    assert done["status"] == "succeeded" and done["error"] is None, done
    assert host.asked == ["/face.svg"]  # read once, and not the image it points to


@pytest.mark.skipif(shutil.which("openssl") is None, reason="makes its https host's certificate with openssl")
def test_a_character_image_svg_is_drawn_or_refused_before_any_charge(
    served: Sandbox, host: _Host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``characterImage`` is an image link too (an https one): a drawable SVG is read and the render
    starts; one that cannot be drawn is a 400 naming it, nothing charged for the render."""
    monkeypatch.setenv("SSL_CERT_FILE", str(host.secure(tmp_path)))  # the sandbox trusts the host
    host.svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><circle r="20"/></svg>'
    assert served.base_url is not None
    headers = {"Authorization": f"Bearer {served.demo_key}"}
    with httpx.Client(base_url=served.base_url, headers=headers, timeout=60) as api:
        analysis = api.post(path("analyze"), json={"url": "https://www.tiktok.com/@a/video/123"})
        assert analysis.status_code == 201, analysis.text
        analysis_id = analysis.json()["data"]["analysisId"]
        api.post(path("sandbox_clock"), json={"advance": 3600}).raise_for_status()
        replicate = path("replicate", id=analysis_id)
        refused = api.post(replicate, json={"clips": [0], "characterImage": f"{host.url}/bad.svg"})
        assert refused.status_code == 400, refused.text
        assert refused.json()["message"] == messages.image_unreadable(
            "characterImage", "an SVG that declares XML entities or external references"
        )
        assert [e["resource"] for e in api.get(path("sandbox_ledger")).json()["data"]["entries"]] == [
            "analysis"
        ]
        accepted = api.post(replicate, json={"clips": [0], "characterImage": f"{host.url}/face.svg"})
        assert accepted.status_code == 201, accepted.text
    assert host.asked == ["/bad.svg", "/face.svg"]
