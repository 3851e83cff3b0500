"""SVG images, converted to PNG before anything reads them (the spec: "SVG image links are converted to
PNG before the model sees them"), and treated as hostile on the way.

An SVG is parsed without entities or external DTDs (defusedxml). Every reference to another file or
URL is dropped (only ``#fragment`` links and embedded raster ``data:`` images stay), as a browser
does for an SVG in ``<img>``, so drawing it reads nothing on this machine and fetches nothing; its
scripts never run (resvg has no script engine). It is drawn at most ``MAX_SIDE`` pixels a side by
resvg (``resvg-py``: wheels for Linux, macOS and Windows, no system library), in a child process
with a memory and a time limit, so a hostile file can take down nothing but that child.

Before any of that, a drawing's size is bounded where it can be read (:class:`NotDrawable` names the
bound): at most ``MAX_DEPTH`` elements deep (Python's own tree writer recurses once per level) and
``MAX_ELEMENTS`` elements, counted while it is parsed and again with every ``<use>`` and ``url(#id)``
reference drawn out (a chain of uses multiplies), at most ``MAX_PATH_CHARS`` of path data, and no
embedded picture over ``MAX_IMAGE_PIXELS``. What only drawing shows (a filter, a pattern or text that
takes too long, a picture that takes too much memory) is the child's to stop, within ``DRAW_SECONDS``
and ``DRAW_MEMORY``. A gzip-compressed SVG (``.svgz``) is not unpacked: it is refused, so no archive
bomb is ever opened.
"""

import base64
import io
import re
import subprocess
import sys
import tempfile
import warnings
import zlib
from collections.abc import Iterator
from urllib.parse import unquote_to_bytes
from xml.etree import ElementTree

from mediagen_nb.media_formats import HEAD, looks_like_svg

MAX_SVG_BYTES = 8 * 2**20  # larger files are refused before they are parsed
MAX_SIDE = 2048  # the longest side of the PNG drawn
DEFAULT_SIDE = 512  # a drawing that states no size of its own
# Drawing bounds: a map or an illustration from a design tool nests a few dozen groups and has some
# thousands of elements; resvg draws 20,000 shapes (or a megabyte of path data) in a few seconds.
MAX_DEPTH = 64
MAX_ELEMENTS = 20_000
MAX_PATH_CHARS = 2**20
MAX_IMAGE_PIXELS = 4096 * 4096  # an embedded picture (a decompression bomb claims far more)
DRAW_SECONDS = 20.0  # real seconds the child may take (a 2048-pixel blur takes 7 s on a busy machine)
DRAW_MEMORY = 2**30  # address space the child may map (where the OS enforces it)
SVG_NAMESPACE = "http://www.w3.org/2000/svg"
GZIP = b"\x1f\x8b"
_SAFE_DATA = re.compile(r"data:image/(png|jpeg|jpg|gif|webp)[;,]", re.IGNORECASE)
_GRADIENTS = {f"{{{SVG_NAMESPACE}}}{tag}" for tag in ("linearGradient", "radialGradient")}  # drawn cheaply
_REFERENCE = re.compile(r"url\(\s*['\"]?#([^'\")\s]+)")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_LENGTH = re.compile(rf"\s*({_NUMBER})\s*(?:px)?\s*")

# The child: limit its own memory first, then draw the SVG on stdin as PNG bytes on stdout.
_DRAW = """
import sys
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
except (ImportError, ValueError, OSError):
    pass
import resvg_py
svg = sys.stdin.buffer.read().decode("utf-8")
sys.stdout.buffer.write(bytes(resvg_py.svg_to_bytes(svg_string=svg, resources_dir=".")))
"""


class NotDrawable(ValueError):
    """The SVG cannot be converted; ``looks_like`` says why, in the words of an upload's refusal."""

    def __init__(self, looks_like: str) -> None:
        super().__init__(looks_like)
        self.looks_like = looks_like


def to_png(data: bytes) -> bytes:
    """The PNG of an SVG file, drawn safely (see the module); :class:`NotDrawable` when it cannot be."""
    if len(data) > MAX_SVG_BYTES:
        raise NotDrawable(f"an SVG over {MAX_SVG_BYTES // 2**20} MB")
    if is_svgz(data):
        raise NotDrawable(SVGZ)
    root = _parse(data)
    _drop_outside_references(root)
    _bound_drawing(root)
    _bound_size(root)
    svg = ElementTree.tostring(root, encoding="unicode")
    with tempfile.TemporaryDirectory(prefix="mediagen-svg-") as empty:  # its resources folder: nothing
        try:
            drawn = subprocess.run(
                [sys.executable, "-I", "-c", _DRAW, str(DRAW_MEMORY)],
                input=svg.encode("utf-8"),
                capture_output=True,
                timeout=DRAW_SECONDS,
                cwd=empty,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise NotDrawable(f"an SVG that takes more than {DRAW_SECONDS:g} s to draw") from None
    if drawn.returncode != 0 or not drawn.stdout.startswith(b"\x89PNG\r\n\x1a\n"):
        raise NotDrawable("an SVG that cannot be drawn")
    return drawn.stdout


SVGZ = "a gzip-compressed SVG (.svgz), which the sandbox does not unpack; send the SVG itself"


def is_svgz(data: bytes) -> bool:
    """Whether ``data`` is a gzip-compressed SVG: only its first few kB are unpacked to tell."""
    if not data.startswith(GZIP):
        return False
    try:
        head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[: 64 * 2**10], HEAD)
    except zlib.error:
        return False
    return looks_like_svg(head)


class _Chunks(io.BytesIO):
    """The file as the parser reads it: 16 kB first, then twice as much each time up to 1 MB. A bound
    is checked after each read, so the first reads are small (a file nested 100,000 deep is refused
    after 16 kB); expat parses a token that spans reads again at each one, so the later reads are
    large (8 MB of path data read 16 kB at a time took 9 s, instead of 0.3)."""

    size = 2**14

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(self.size)
        self.size = min(2 * self.size, 2**20)
        return chunk


def _parse(data: bytes) -> ElementTree.Element:
    """The SVG's tree, parsed as it is read so that a file past the depth or element bound is refused
    before the rest of it is."""
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import iterparse

    root: ElementTree.Element | None = None
    depth, count = 0, 0
    try:
        for event, element in iterparse(_Chunks(data), events=("start", "end")):
            if event == "end":
                depth -= 1
                continue
            if root is None:
                root = element
                if root.tag != f"{{{SVG_NAMESPACE}}}svg":
                    raise NotDrawable(
                        'an XML document whose root is not an SVG image (xmlns="http://www.w3.org/2000/svg")'
                    )
            depth, count = depth + 1, count + 1
            if depth > MAX_DEPTH:
                raise NotDrawable(f"an SVG nested more than {MAX_DEPTH} elements deep")
            if count > MAX_ELEMENTS:
                raise NotDrawable(f"an SVG of more than {MAX_ELEMENTS:,} elements")
    except DefusedXmlException:
        raise NotDrawable("an SVG that declares XML entities or external references") from None
    except ElementTree.ParseError:
        raise NotDrawable("an SVG that is not well-formed XML") from None
    if root is None:
        raise NotDrawable("an SVG that is not well-formed XML")
    return root


def _bound_drawing(root: ElementTree.Element) -> None:
    """Refuse what would take too long or too much memory to draw, where the tree shows it: more than
    ``MAX_ELEMENTS`` once every reference is drawn out, too much path data, too large a picture."""
    path_chars = sum(len(el.get("d", "")) + len(el.get("points", "")) for el in root.iter())
    if path_chars > MAX_PATH_CHARS:
        raise NotDrawable(f"an SVG with more than {MAX_PATH_CHARS:,} characters of path data")
    for element in root.iter():
        for value in _hrefs(element):
            if _SAFE_DATA.match(value):
                _bound_picture(value)
    _drawn_out(root)


def _hrefs(element: ElementTree.Element) -> Iterator[str]:
    """The element's ``href`` and ``xlink:href`` values."""
    for name, value in element.attrib.items():
        if name.rsplit("}", 1)[-1] == "href":
            yield value.strip()


def _bound_picture(url: str) -> None:
    """Refuse an embedded raster picture larger than ``MAX_IMAGE_PIXELS``, its size read from its header
    (nothing is decoded); one Pillow cannot read is left to resvg, which skips it."""
    from PIL import Image

    header, _, payload = url.partition(",")
    try:
        raw = base64.b64decode(payload) if header.lower().endswith(";base64") else unquote_to_bytes(payload)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow warns of a large picture; the bound below decides
            with Image.open(io.BytesIO(raw)) as picture:
                width, height = picture.size
    except Image.DecompressionBombError:
        raise NotDrawable(f"an SVG embedding a picture of more than {MAX_IMAGE_PIXELS:,} pixels") from None
    except (ValueError, OSError):  # not base64 (binascii.Error is a ValueError), or no picture
        return
    if width * height > MAX_IMAGE_PIXELS:
        raise NotDrawable(
            f"an SVG embedding a {width:,} x {height:,} picture (at most {MAX_IMAGE_PIXELS:,} pixels)"
        )


def _drawn_out(root: ElementTree.Element) -> None:
    """Count the elements drawn once each ``<use>`` and ``url(#id)`` reference (but a gradient's) is
    replaced by what it refers to: a loop over the tree, each element counted once and remembered, so a
    chain of uses that multiplies is measured without being expanded. Refuse past ``MAX_ELEMENTS``, and
    an element that refers to itself."""
    ids: dict[str, ElementTree.Element] = {}
    for element in root.iter():
        name = element.get("id")
        if name:
            ids.setdefault(name, element)

    def parts(element: ElementTree.Element) -> list[ElementTree.Element]:
        named = [v[1:] for v in _hrefs(element) if v.startswith("#")]
        named += [m.group(1) for value in element.attrib.values() for m in _REFERENCE.finditer(value)]
        found = (ids[name] for name in named if name in ids)
        return [*element, *(part for part in found if part.tag not in _GRADIENTS)]

    drawn: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[ElementTree.Element, bool]] = [(root, False)]
    while stack:
        element, ready = stack.pop()
        key = id(element)
        if ready:
            open_.discard(key)
            drawn[key] = 1 + sum(drawn[id(part)] for part in parts(element))
            if drawn[key] > MAX_ELEMENTS:
                raise NotDrawable(f"an SVG whose references draw more than {MAX_ELEMENTS:,} elements")
            continue
        if key in drawn:
            continue
        if key in open_:
            raise NotDrawable("an SVG with an element that refers to itself")
        open_.add(key)
        stack.append((element, True))
        stack.extend((part, False) for part in parts(element) if id(part) not in drawn)


def _drop_outside_references(root: ElementTree.Element) -> None:
    """Remove every ``href`` that points outside the file (a path, a URL, an SVG in a data: URL)."""
    for element in root.iter():
        for name in [n for n in element.attrib if n.rsplit("}", 1)[-1] == "href"]:
            value = element.attrib[name].strip()
            if not (value.startswith("#") or _SAFE_DATA.match(value)):
                del element.attrib[name]


def _bound_size(root: ElementTree.Element) -> None:
    """Give the drawing a size of at most ``MAX_SIDE`` pixels a side, keeping its proportions."""
    width, height = _length(root.get("width")), _length(root.get("height"))
    box = _view_box(root.get("viewBox"))
    if box is None and width and height:
        root.set("viewBox", f"0 0 {width:g} {height:g}")  # so the drawing scales with its new size
    natural = _natural(width, height, box)
    scale = min(1.0, MAX_SIDE / max(natural))
    root.set("width", str(max(1, round(natural[0] * scale))))
    root.set("height", str(max(1, round(natural[1] * scale))))


def _natural(
    width: float | None, height: float | None, box: tuple[float, float] | None
) -> tuple[float, float]:
    """The size the SVG states: its width and height, one of them and the view box's proportions, or
    the view box's size (as a browser sizes it)."""
    ratio = box[0] / box[1] if box else 1.0
    if width and height:
        return width, height
    if width:
        return width, width / ratio
    if height:
        return height * ratio, height
    return box or (DEFAULT_SIDE, DEFAULT_SIDE)


def _length(value: str | None) -> float | None:
    """A length in pixels (a plain number or ``px``); None for none, a percentage or another unit."""
    found = _LENGTH.fullmatch(value or "")
    number = float(found.group(1)) if found else 0.0
    return number if 0 < number < float("inf") else None


def _view_box(value: str | None) -> tuple[float, float] | None:
    """The width and height of a ``viewBox``, when both are positive."""
    parts = re.findall(_NUMBER, value or "")
    if len(parts) != 4:
        return None
    width, height = float(parts[2]), float(parts[3])
    return (width, height) if 0 < width < float("inf") and 0 < height < float("inf") else None
