"""Where a preview's media come from, so pictures show wherever the browser is.

The sandbox serves its media on 127.0.0.1 of the kernel's machine. A browser on that machine reads
them directly; one elsewhere (Binder, JupyterHub, VS Code remote) cannot, and a notebook saved with
outputs outlives the sandbox. ``MEDIAGEN_PREVIEW`` (or :func:`preview_mode`) chooses:

- ``direct``: the URL as it is;
- ``proxy``: a loopback URL through the Jupyter server (``jupyter-server-proxy``:
  ``{JUPYTERHUB_SERVICE_PREFIX}proxy/{port}/{path}``), which any browser of that server reaches;
- ``inline``: a loopback image (and audio or video up to ``INLINE_LIMIT``) as a ``data:`` URI in the
  output itself, so a saved notebook shows it with the sandbox gone; larger files stay links;
- ``auto`` (the default): ``proxy`` on JupyterHub and Binder (``JUPYTERHUB_SERVICE_PREFIX`` set) when
  jupyter-server-proxy is installed, ``inline`` on Google Colab (its browser cannot reach the
  runtime's loopback), else ``direct``.

Only loopback URLs are ever rewritten: the service's https URLs are public and always go direct.
"""

import base64
import importlib.util
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from mediagen_nb.client import settings
from mediagen_nb.client.config import on_this_machine
from mediagen_nb.client.errors import DownloadFailed
from mediagen_nb.client.transport import MAX_MEDIA, fetch
from mediagen_nb.media_formats import MEDIA_TYPES
from mediagen_nb.protocol.schema import url_extension

MODES = settings.PREVIEW_MODES
INLINE_LIMIT = 4 * 2**20  # bytes of one audio or video inlined; images are always small enough
MIME = {"image": "image/png", "audio": "audio/wav", "video": "video/mp4"}
RESULT_WIDTH = 320  # px of a result's media when none is given (%config MediagenMagics.preview_width)


@dataclass
class Choices:
    """This process's preview choices, kept here, where they are made and read (as pandas keeps its
    display options with them): the mode, the width, and each loopback media URL inlined once."""

    mode: str | None = None  # preview_mode(...): None follows MEDIAGEN_PREVIEW
    width: int = RESULT_WIDTH  # preview_width(...)
    inlined: dict[str, str | None] = field(default_factory=dict)  # media URL -> its data: URI, read once


CHOICES = Choices()


def preview_mode(mode: str | None = None) -> str:
    """Set the mode for this process (None: back to ``MEDIAGEN_PREVIEW``); return the one in force."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"preview mode {mode!r}: use one of {', '.join(MODES)}")
    CHOICES.mode = mode
    return _resolved()


def preview_width(width: int) -> None:
    """Pixels of a result's media when none is given (``%config MediagenMagics.preview_width``)."""
    CHOICES.width = int(width)


def width() -> int:
    """Pixels of a result's media when none is given."""
    return CHOICES.width


def _resolved() -> str:
    mode = CHOICES.mode or settings.preview()
    if mode == "auto" and settings.on_colab():
        return "inline"
    if mode == "auto":
        on_hub = settings.hub_prefix() is not None
        proxied = on_hub and importlib.util.find_spec("jupyter_server_proxy") is not None
        return "proxy" if proxied else "direct"
    return mode


def shown(url: str, kind: str | None) -> str:
    """The URL a browser should load for ``url`` (a ``kind`` of image, audio or video) in this mode;
    ``kind`` None is a link (a share page, a history row): proxied like media, never inlined."""
    if not on_this_machine(url):
        return url
    parts = urlsplit(url)
    mode = _resolved()
    if mode == "proxy" and parts.port is not None:
        prefix = settings.hub_prefix() or "/"
        query = f"?{parts.query}" if parts.query else ""
        return f"{prefix.rstrip('/')}/proxy/{parts.port}{parts.path}{query}"
    if mode == "inline" and kind in MIME:
        return _inline(url, kind) or url
    return url


def _inline(url: str, kind: str | None) -> str | None:
    """``url`` as a data: URI (read once per process), or None when too large or unreadable."""
    inlined = CHOICES.inlined
    if url not in inlined:
        try:
            data = fetch(url, timeout=30, limit=MAX_MEDIA if kind == "image" else INLINE_LIMIT)
        except DownloadFailed:
            inlined[url] = None
        else:
            mime = MEDIA_TYPES.get(url_extension(url)) or MIME.get(kind or "", "application/octet-stream")
            inlined[url] = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    return inlined[url]
