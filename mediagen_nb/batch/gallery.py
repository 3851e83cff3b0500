"""An HTML view of a result frame with its media inline: escaped, lazy-loaded, never executed."""

from collections.abc import Sequence
from html import escape
from typing import Any

import pandas as pd

from mediagen_nb.client import html
from mediagen_nb.protocol.schema import url_extension

MEDIA_KINDS = {
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".webp": "image",
    ".gif": "image",
    ".mp4": "video",
    ".webm": "video",
    ".mov": "video",
    ".wav": "audio",
    ".mp3": "audio",
    ".ogg": "audio",
}
_TD = "border:1px solid #ddd;padding:4px;vertical-align:top"
_STYLE = "border-collapse:collapse;font-family:sans-serif;font-size:12px"


def media_kind(url: object) -> str | None:
    """image / video / audio from the URL's extension."""
    return MEDIA_KINDS.get(url_extension(url)) if isinstance(url, str) else None


def url_columns(df: pd.DataFrame) -> list[str]:
    """Columns whose name ends in ``output_url`` (a run's result columns, with any prefix)."""
    return [str(c) for c in df.columns if str(c).endswith("output_url")]


def _cell(value: Any, width: int) -> str:
    kind = media_kind(value)
    if kind is not None:
        return html.media(value, kind, width=width)
    if isinstance(value, (list, tuple)):
        return escape(", ".join(map(str, value)))
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return escape(str(value))


class Gallery:
    """Rows of a frame as an HTML table; media columns become ``<img>``/``<video>``/``<audio>``."""

    def __init__(
        self, df: pd.DataFrame, columns: Sequence[str] | None = None, *, limit: int = 200, width: int = 240
    ):
        self.df = df
        self.columns = (
            list(columns) if columns is not None else [str(c) for c in df.columns if str(c) != "output_urls"]
        )
        self.limit = limit
        self.width = width

    def __repr__(self) -> str:
        return f"<Gallery of {len(self.df)} rows, media columns {url_columns(self.df)}>"

    def _repr_html_(self) -> str:
        head = "".join(
            f'<th style="border:1px solid #ddd;padding:4px">{escape(c)}</th>' for c in self.columns
        )
        body = []
        for _, row in self.df.head(self.limit).iterrows():
            cells = "".join(f'<td style="{_TD}">{_cell(row[c], self.width)}</td>' for c in self.columns)
            body.append(f"<tr>{cells}</tr>")
        more = len(self.df) - self.limit
        tail = f"<div>... {more} more rows (limit={self.limit})</div>" if more > 0 else ""
        return f'<table style="{_STYLE}"><tr>{head}</tr>{"".join(body)}</table>{tail}'

    def to_html_page(self, title: str = "mediagen gallery") -> str:
        """A standalone HTML page (for ``mediagen sweep --gallery``)."""
        return (
            f'<!doctype html><html><head><meta charset="utf-8"><title>{escape(title)}</title></head>'
            f"<body><h1>{escape(title)}</h1>{self._repr_html_()}</body></html>"
        )
