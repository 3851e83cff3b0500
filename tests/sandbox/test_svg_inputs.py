"""The spec: "SVG image links are converted to PNG before the model sees them". A lip-sync run's face
given as an SVG link is drawn as PNG (its video keeps the drawing's proportions), and drawing it reads
no file of this machine and fetches nothing the SVG points to."""

import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import av
import httpx
import pytest

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox


class _Host:
    """A loopback web server: serves one SVG at /face.svg and records every path asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.svg = b""
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.asked.append(self.path)
                found = self.path == "/face.svg"
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "image/svg+xml")
                self.send_header("Content-Length", str(len(host.svg) if found else 0))
                self.end_headers()
                if found:
                    self.wfile.write(host.svg)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


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
