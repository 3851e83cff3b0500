"""SVGs built to take the sandbox down (issue 33): none is a 5xx. Each one the sandbox cannot draw is a
400 naming what it is on upload, and as an image link of a run a failed generation whose credits come
back; one it can draw within its bounds is drawn at most 2048 pixels a side.

An SVG 100,000 ``<g>`` deep answered 500 on upload and on ``POST /v1/run`` (Python's tree writer
recursed once per level). The bounds (``sandbox/media/vector.py``): depth, element count (read while
parsing, and again with every reference drawn out), path data and embedded pictures are refused from
the tree; what only drawing shows (filters, text) is stopped by the drawing child's time limit and its
memory limit, which these tests lower so that each bomb costs a second, not twenty. In-process
sandboxes; image links are served from a loopback server.
"""

import base64
import struct
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox
from mediagen_nb.sandbox.media import vector

pytestmark = pytest.mark.anyio
NS = 'xmlns="http://www.w3.org/2000/svg"'
QUICK_DRAW_SECONDS = 0.5  # a filter or text bomb takes more than 20 s: any limit stops it


def _svg(body: str, width: int = 100, height: int = 100) -> bytes:
    return f'<svg {NS} width="{width}" height="{height}">{body}</svg>'.encode()


def _png_claiming(side: int) -> bytes:
    """A small PNG whose header claims ``side`` x ``side`` pixels (a decompression bomb's header)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def _uses(levels: int) -> str:
    """Ten uses of the level below at each level: 10**levels rectangles drawn out of a few lines."""
    defs = '<rect id="u0" width="1" height="1"/>'
    defs += "".join(f'<g id="u{i}">' + f'<use href="#u{i - 1}"/>' * 10 + "</g>" for i in range(1, levels + 1))
    return f'<defs>{defs}</defs><use href="#u{levels}"/>'


def _embedding(picture: bytes) -> bytes:
    data = base64.b64encode(picture).decode()
    return _svg(f'<image width="10" height="10" href="data:image/png;base64,{data}"/>')


def _filtered(primitive: str, copies: int = 1, region: str = "") -> bytes:
    """A 2048-pixel drawing of ``copies`` squares through a filter of one ``primitive``."""
    squares = '<rect width="2048" height="2048" filter="url(#f)"/>' * copies
    return _svg(f'<filter id="f"{region}>{primitive}</filter>{squares}', 2048, 2048)


def _deep(levels: int) -> bytes:
    return f'<svg {NS} width="10" height="10">'.encode() + b"<g>" * levels + b"</g>" * levels + b"</svg>"


# Each bomb the sandbox cannot draw, and the words its refusal uses ("the file looks like ...").
REFUSED = {
    "deep nesting": (_deep(100_000), f"an SVG nested more than {vector.MAX_DEPTH} elements deep"),
    "wide nesting": (_svg("<g/>" * 1_900_000), f"an SVG of more than {vector.MAX_ELEMENTS:,} elements"),
    "many elements": (_svg('<rect width="5" height="5"/>' * 20_001), "an SVG of more than 20,000 elements"),
    "use chain": (_svg(_uses(8)), "an SVG whose references draw more than 20,000 elements"),
    "pattern chain": (
        _svg(
            '<pattern id="p0" width="4" height="4"><rect width="2" height="2"/></pattern>'
            + "".join(
                f'<pattern id="p{i}" width="4" height="4">'
                + f'<rect width="4" height="4" fill="url(#p{i - 1})"/>' * 10
                + "</pattern>"
                for i in range(1, 7)
            )
            + '<rect width="100" height="100" fill="url(#p6)"/>'
        ),
        "an SVG whose references draw more than 20,000 elements",
    ),
    "use of itself": (_svg('<g id="a"><use href="#a"/></g>'), "an SVG with an element that refers to itself"),
    "huge path data": (
        _svg('<path d="M0 0' + " L1 1 L2 0" * 700_000 + '"/>'),
        f"an SVG with more than {vector.MAX_PATH_CHARS:,} characters of path data",
    ),
    "embedded picture": (
        _embedding(_png_claiming(60_000)),
        f"an SVG embedding a picture of more than {vector.MAX_IMAGE_PIXELS:,} pixels",
    ),
    "embedded picture over the bound": (
        _embedding(_png_claiming(5_000)),
        "an SVG embedding a 5,000 x 5,000 picture",
    ),
    "svgz": (zlib.compress(_svg("<rect/>" * 1000), wbits=31), vector.SVGZ),
    "blur": (
        _filtered(
            '<feGaussianBlur stdDeviation="1000000"/>',
            50,
            ' x="-1000%" y="-1000%" width="3000%" height="3000%"',
        ),
        f"an SVG that takes more than {QUICK_DRAW_SECONDS:g} s to draw",
    ),
    "morphology": (
        _filtered('<feMorphology radius="500"/>'),
        f"an SVG that takes more than {QUICK_DRAW_SECONDS:g} s to draw",
    ),
    "turbulence": (
        _filtered('<feTurbulence baseFrequency="0.5" numOctaves="1000000"/>'),
        f"an SVG that takes more than {QUICK_DRAW_SECONDS:g} s to draw",
    ),
    "huge text": (
        _svg('<text font-size="100000" y="100">' + "W" * 100_000 + "</text>", 2048, 2048),
        f"an SVG that takes more than {QUICK_DRAW_SECONDS:g} s to draw",
    ),
}

# Bombs that are drawn within the bounds: huge sizes anywhere are drawn at most 2048 pixels a side.
DRAWN = {
    "huge dimensions": _svg('<rect width="10" height="10"/>', 1_000_000_000, 1_000_000_000),
    "huge inner drawing": _svg(
        '<svg width="100000000" height="100000000"><rect width="100%" height="100%"/></svg>'
    ),
    "tiny pattern tiles": _svg(
        '<pattern id="p" width="0.0001" height="0.0001" patternUnits="userSpaceOnUse">'
        '<rect width="0.00005" height="0.00005"/></pattern><rect width="2048" height="2048" fill="url(#p)"/>',
        2048,
        2048,
    ),
    "many uses of a gradient": _svg(
        '<linearGradient id="g"><stop offset="0"/><stop offset="1" stop-color="red"/></linearGradient>'
        + '<rect width="5" height="5" fill="url(#g)"/>' * 5000
    ),
}


@pytest.fixture
def quick_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drawing child's time limit lowered: the bombs it stops take more than 20 s to draw."""
    monkeypatch.setattr(vector, "DRAW_SECONDS", QUICK_DRAW_SECONDS)


@pytest.fixture
def sandbox() -> Sandbox:
    return Sandbox(clock="manual", seed=1)


def _api(sandbox: Sandbox) -> httpx.AsyncClient:
    """A client of the in-process sandbox whose errors are answers, as over HTTP."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(sandbox.in_process(), raise_app_exceptions=False),
        base_url="http://sandbox.test",
        headers={"Authorization": f"Bearer {sandbox.demo_key}"},
        timeout=60,
    )


@pytest.mark.parametrize("bomb", list(REFUSED))
@pytest.mark.usefixtures("quick_draws")
async def test_an_svg_the_sandbox_cannot_draw_is_a_400_on_upload(sandbox: Sandbox, bomb: str) -> None:
    data, looks_like = REFUSED[bomb]
    async with _api(sandbox) as api:
        refused = await api.put(path("sandbox_upload", name="drawing.svg"), content=data)
        listed = await api.get(path("sandbox_uploads"))
    assert refused.status_code == 400, refused.text
    assert f"the file looks like {looks_like}" in refused.json()["message"]
    assert listed.json()["data"]["uploads"] == []


@pytest.mark.parametrize("bomb", list(DRAWN))
async def test_an_svg_drawn_within_the_bounds_is_stored_as_a_png(sandbox: Sandbox, bomb: str) -> None:
    async with _api(sandbox) as api:
        stored = await api.put(path("sandbox_upload", name="drawing.svg"), content=DRAWN[bomb])
    assert stored.status_code == 201, stored.text
    assert stored.json()["data"]["name"].endswith(".png")


async def test_the_drawing_child_s_memory_limit_is_a_refusal(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the tree cannot show (a drawing needing more memory than the child may map) ends the child,
    not the sandbox: here a plain 2048-pixel blur under a limit lowered to 80 MB."""
    monkeypatch.setattr(vector, "DRAW_MEMORY", 80 * 2**20)
    async with _api(sandbox) as api:
        blur = _filtered('<feGaussianBlur stdDeviation="3"/>')
        refused = await api.put(path("sandbox_upload", name="blur.svg"), content=blur)
    assert refused.status_code == 400 and "the file looks like an SVG that cannot be drawn" in refused.text


class _Host:
    """A loopback web server serving each bomb at /NAME.svg."""

    def __init__(self, files: dict[str, bytes]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = files.get(self.path.lstrip("/"), b"")
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "image/svg+xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def host() -> Iterator[_Host]:
    made = _Host({f"{i}.svg": data for i, (data, _) in enumerate(REFUSED.values())})
    thread = threading.Thread(target=made.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        made.server.shutdown()
        made.server.server_close()


@pytest.mark.usefixtures("quick_draws")
async def test_an_svg_link_the_sandbox_cannot_draw_fails_its_run_and_is_refunded(
    sandbox: Sandbox, host: _Host
) -> None:
    """Each bomb as the image link of a run: the start answers 201 (the spec checks no image at start),
    the run fails naming the input and what it is, and its credits come back."""
    async with _api(sandbox) as api:
        started = {}
        for i, bomb in enumerate(REFUSED):
            body = {
                "modelId": "seedbloom-4-edit",
                "input": {"prompt": "a sign", "input_images": [f"{host.url}/{i}.svg"]},
            }
            answer = await api.post(path("run"), json=body)
            assert answer.status_code == 201, (bomb, answer.text)
            started[bomb] = answer.json()["data"]["id"]
        sandbox.advance(3600)
        for bomb, gen_id in started.items():
            done = (await api.get(path("generation", id=gen_id))).json()["data"]
            assert done["status"] == "failed", (bomb, done)
            assert done["error"].startswith(messages.MODEL_FAILED)
            assert f"read input_images[0], {REFUSED[bomb][1]}" in done["error"], (bomb, done["error"])
            ledger = (await api.get(path("sandbox_ledger"), params={"resourceId": gen_id})).json()["data"]
            assert [e["kind"] for e in ledger["entries"]] == ["charge", "refund"]
            assert ledger["entries"][0]["credits"] == ledger["entries"][1]["credits"] == done["creditsSpent"]
