"""SVG images, converted to PNG before anything reads them (the spec: "SVG image links are converted to
PNG before the model sees them"), and treated as hostile on the way.

An SVG is parsed without entities or external DTDs (defusedxml). Every reference to another file or
URL is dropped (only ``#fragment`` links and embedded raster ``data:`` images stay), as a browser
does for an SVG in ``<img>``, so drawing it reads nothing on this machine and fetches nothing; its
scripts never run (resvg has no script engine). It is drawn at most ``MAX_SIDE`` pixels a side by
resvg (``resvg-py``: wheels for Linux, macOS and Windows, no system library), in a child process
with a memory and a time limit, so a hostile file can take down nothing but that child.
"""

import re
import subprocess
import sys
import tempfile
from xml.etree import ElementTree

MAX_SVG_BYTES = 8 * 2**20  # larger files are refused before they are parsed
MAX_SIDE = 2048  # the longest side of the PNG drawn
DEFAULT_SIDE = 512  # a drawing that states no size of its own
DRAW_SECONDS = 20.0  # real seconds the child may take
DRAW_MEMORY = 2**30  # address space the child may map (where the OS enforces it)
SVG_NAMESPACE = "http://www.w3.org/2000/svg"
_SAFE_DATA = re.compile(r"data:image/(png|jpeg|jpg|gif|webp)[;,]", re.IGNORECASE)
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
    root = _parse(data)
    _drop_outside_references(root)
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


def _parse(data: bytes) -> ElementTree.Element:
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root = fromstring(data)
    except DefusedXmlException:
        raise NotDrawable("an SVG that declares XML entities or external references") from None
    except ElementTree.ParseError:
        raise NotDrawable("an SVG that is not well-formed XML") from None
    if root.tag != f"{{{SVG_NAMESPACE}}}svg":
        raise NotDrawable(
            'an XML document whose root is not an SVG image (xmlns="http://www.w3.org/2000/svg")'
        )
    return root


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
