"""Inline HTML for results: every URL and text escaped, only http(s) sources, nothing that runs.

The markup is plain tags with inline styles, so it renders alike in JupyterLab, Notebook 7 and
VS Code; media are lazy-loaded so a table of a thousand results stays light.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from urllib.parse import urlsplit

from mediagen_nb.client import previews
from mediagen_nb.media_formats import kind_of_url
from mediagen_nb.protocol.documents import KINDS

_CARD = "font-family:sans-serif;font-size:13px;border:1px solid #ddd;border-radius:6px;padding:8px"
_STATUS_COLORS = {
    "succeeded": "#1a7f37",
    "done": "#1a7f37",
    "ready": "#1a7f37",
    "failed": "#cf222e",
}


def safe_url(url: object) -> str | None:
    """The URL escaped for an attribute: http(s) or a relative path, never ``javascript:`` or ``data:``."""
    if (
        not isinstance(url, str)
        or not url.strip()
        or urlsplit(url.strip()).scheme.lower() not in ("http", "https", "")
    ):
        return None
    return escape(url.strip(), quote=True)


def media(url: object, kind: str | None, *, width: int | None = None) -> str:
    """An ``<img>``, ``<video controls>`` or ``<audio controls>`` for ``url``; a plain link otherwise."""
    width = previews.width() if width is None else width
    src = safe_url(url)
    if src is None:
        return ""
    if isinstance(url, str) and kind in KINDS:  # a sandbox's media: see previews
        src = escape(previews.shown(url.strip(), kind), quote=True)
    if kind == "image":
        return (
            f'<img src="{src}" loading="lazy" style="max-width:{width}px;max-height:{width}px" alt="output">'
        )
    if kind == "video":
        player = f'<video src="{src}" controls preload="metadata" style="max-width:{width}px"></video>'
        return f"<div>{player}{download(url)}</div>"
    if kind == "audio":
        return f'<div><audio src="{src}" controls preload="metadata"></audio>{download(url)}</div>'
    return link(url)


def download(url: object) -> str:
    """A small "download" link to a video or audio, beside its player: where the player cannot play it
    (a front end without the codec, a notebook opened where the media are not served), the file is a
    click away. It goes through the preview path like the player, never inlined."""
    src = safe_url(url)
    if src is None or not isinstance(url, str):
        return ""
    src = escape(previews.shown(url.strip(), None), quote=True)
    return (
        f'<div style="font-size:12px"><a href="{src}" download target="_blank" '
        f'rel="noopener noreferrer">download</a></div>'
    )


def link(url: object, text: str | None = None) -> str:
    """An ``<a>`` to ``url`` through the preview path (a sandbox's page, proxied where the browser needs
    it), showing the URL itself unless ``text`` is given; plain text when it is no http(s) URL."""
    src = safe_url(url)
    if src is None:
        return escape(str(text or url or ""))
    if isinstance(url, str):
        src = escape(previews.shown(url.strip(), None), quote=True)
    return f'<a href="{src}" target="_blank" rel="noopener noreferrer">{escape(text or str(url))}</a>'


def badge(status: object) -> str:
    color = _STATUS_COLORS.get(str(status), "#9a6700")
    return f'<span style="color:{color};font-weight:bold">{escape(str(status))}</span>'


def card(title: object, status: object, facts: Sequence[tuple[str, object]], body: str = "") -> str:
    """A result card: a title line with the status, a line of facts, then the media."""
    shown = " · ".join(f"{escape(k)} {escape(str(v))}" for k, v in facts if v is not None)
    return (
        f'<div style="{_CARD}"><div><b>{escape(str(title or ""))}</b> {badge(status)}</div>'
        f'<div style="color:#555">{shown}</div>{body}</div>'
    )


def error_line(error: object) -> str:
    if not error:
        return ""
    return f'<div style="color:#cf222e">{escape(str(error))}</div>'


@dataclass(frozen=True)
class Media:
    """A media URL as a notebook output: an image, a video or audio player, through the preview path.

    ``mg.Media(run.compare_video_url, width=480)`` instead of a hand-made ``<video>`` or IPython's
    ``Video(url)``: a sandbox's media then play on Binder and JupyterHub too (see ``preview_mode``).
    ``kind`` is ``image``, ``video`` or ``audio`` (default: from the URL's extension).
    """

    url: str
    kind: str | None = None
    width: int | None = None
    caption: str | None = None

    def _repr_html_(self) -> str:
        shown = media(self.url, self.kind or kind_of_url(self.url), width=self.width)
        caption = f"<figcaption>{escape(self.caption)}</figcaption>" if self.caption else ""
        return f'<figure style="margin:0 0 8px 0">{shown}{caption}</figure>'
