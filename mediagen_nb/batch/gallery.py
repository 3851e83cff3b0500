"""An HTML view of a result frame: a grid of cards (or a facet grid), escaped, lazy-loaded, paged.

Each card is one row's media with a caption of what varied between the rows (the inputs that are not
the same everywhere), its credits and status. Past ``per_page`` rows the view is paged
(``preview(page=2)``); ``rows=``/``cols=`` lay the cards out as a facet grid, one row per value of
a column and one column per value of another, each row headed by what its cards share. A comparison
of models (a result with ``row`` and ``model`` columns) is such a grid by default: the frame's rows
down, the models across, each cell one model's output for that row (or why it has none).
Everything is escaped and nothing is executed; media load lazily, so a page of hundreds of images
scrolls smoothly.
"""

import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from html import escape
from typing import Any

import pandas as pd

from mediagen_nb.batch import routing
from mediagen_nb.batch.runner import MODEL, RESULT_COLUMNS, ROW
from mediagen_nb.client import html
from mediagen_nb.media_formats import kind_of_url
from mediagen_nb.protocol import messages

PER_PAGE = 300  # cards on one page
NOT_CAPTIONS = (*RESULT_COLUMNS, "local_path", "download_error")  # a run's own columns (any prefix)
_HEAD = "color:#444;font-weight:normal;text-align:left;max-width:220px;word-break:break-word"
_GRID = "display:grid;grid-template-columns:repeat(auto-fill,minmax({w}px,1fr));gap:8px;font:12px sans-serif"
_CARD = "border:1px solid #ddd;border-radius:6px;padding:4px;overflow:hidden;text-align:left"
_CAPTION = "color:#444;margin-top:2px;word-break:break-word"
_TD = "border:1px solid #ddd;padding:4px;vertical-align:top"


def url_columns(df: pd.DataFrame) -> list[str]:
    """Columns whose name ends in ``output_url`` (a run's result columns, with any prefix)."""
    return [str(c) for c in df.columns if str(c).endswith("output_url")]


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and pd.isna(value))


def _text(value: Any) -> str:
    if _blank(value):
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


class Gallery:
    """A frame's results as a grid of cards; ``rows``/``cols`` make a facet grid; ``page`` pages.

    ``media`` is the column of URLs shown (default: the first ``*output_url``); ``columns`` the
    caption (default: the columns whose values differ between rows).
    """

    def __init__(
        self,
        df: pd.DataFrame,
        columns: Sequence[str] | None = None,
        *,
        rows: str | None = None,
        cols: str | None = None,
        media: str | None = None,
        page: int = 1,
        per_page: int = PER_PAGE,
        width: int = 240,
        limit: int | None = None,
    ) -> None:
        for option, value in (("rows", rows), ("cols", cols), ("media", media)):
            if value is not None and value not in df.columns:
                raise ValueError(
                    f"preview: {option}={value!r} is no column; use one of {', '.join(map(str, df.columns))}"
                )
        if per_page < 1 or page < 1:
            raise ValueError("preview: page and per_page start at 1")
        self.df = df
        self.media = [media] if media is not None else (url_columns(df)[:1] or [""])
        if rows is None and cols is None:
            rows, cols = comparison(df, self.media[0].removesuffix("output_url"))
        facets = {rows, cols}  # said once by the grid's headers, not on every card
        self.caption = (
            list(columns) if columns is not None else [c for c in self._varying() if c not in facets]
        )
        self.rows, self.cols = rows, cols
        self.per_page = limit if limit is not None else per_page
        self.page = page
        self.width = width

    def _varying(self) -> list[str]:
        """The columns worth a caption: those that differ between rows and are not results."""
        shown = []
        for column in self.df.columns:
            name = str(column)
            if name.endswith(NOT_CAPTIONS):
                continue
            values = self.df[column]
            try:
                varies = values.astype(str).nunique() > 1
            except TypeError:
                varies = True
            if varies:
                shown.append(name)
        return shown

    def __repr__(self) -> str:
        return f"<Gallery of {len(self.df)} rows, media columns {url_columns(self.df)}>"

    def _card(self, record: dict[str, Any]) -> str:
        url = record.get(self.media[0]) if self.media[0] else None
        prefix = self.media[0].removesuffix("output_url")
        kind = kind_of_url(url)
        body = html.media(url, kind, width=self.width) if kind else ""
        if not body and isinstance(url, str):
            body = html.media(url, None)
        facts = [
            f"{escape(c)}: {escape(_text(record.get(c)))}" for c in self.caption if not _blank(record.get(c))
        ]
        status, credits = record.get(prefix + "status"), record.get(prefix + "credits")
        line = " · ".join(
            x for x in (_text(status), messages.credits(_text(credits)) if not _blank(credits) else "") if x
        )
        error = record.get(prefix + "error")
        if not _blank(error):
            line += f' <span style="color:#cf222e">{escape(_text(error))}</span>'
        return (
            f'<div style="{_CARD}">{body}<div style="{_CAPTION}">{"<br>".join(facts)}</div>'
            f'<div style="color:#777">{line}</div></div>'
        )

    def _grid(self, records: list[dict[str, Any]]) -> str:
        cards = "".join(self._card(r) for r in records)
        return f'<div style="{_GRID.format(w=self.width)}">{cards}</div>'

    def _facets(self, records: list[dict[str, Any]]) -> str:
        cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for record in records:
            spot = (
                _text(record.get(self.rows)) if self.rows else "",
                _text(record.get(self.cols)) if self.cols else "",
            )
            cells.setdefault(spot, []).append(record)
        row_values = list(dict.fromkeys(r for r, _ in cells)) or [""]  # in the order they first appear
        col_values = list(dict.fromkeys(c for _, c in cells)) or [""]
        shared = self._shared_by_rows(records) if self.rows else []
        caption = self.caption
        self.caption = [c for c in caption if c not in shared]  # said once, in the row's header
        try:
            head = "".join(f'<th style="{_TD}">{escape(c)}</th>' for c in col_values)
            lines = []
            for r in row_values:
                members = [record for c in col_values for record in cells.get((r, c), [])]
                facts = "".join(
                    f"<div>{escape(column)}: {escape(_text(members[0].get(column)))}</div>"
                    for column in shared
                    if members and not _blank(members[0].get(column))
                )
                tds = "".join(
                    f'<td style="{_TD}">{self._grid(cells.get((r, c), []))}</td>' for c in col_values
                )
                lines.append(f'<tr><th style="{_TD};{_HEAD}">{escape(r)}{facts}</th>{tds}</tr>')
        finally:
            self.caption = caption
        corner = escape(f"{self.rows or ''} \\ {self.cols or ''}")
        header = f'<tr><th style="{_TD}">{corner}</th>{head}</tr>'
        return f'<table style="border-collapse:collapse">{header}{"".join(lines)}</table>'

    def _shared_by_rows(self, records: list[dict[str, Any]]) -> list[str]:
        """Caption columns with one value within each row of the grid (a comparison's prompt): the
        row's header says them once, not every card of the row."""
        first: dict[str, dict[str, str]] = {}
        varies: set[str] = set()
        for record in records:
            spot = _text(record.get(self.rows)) if self.rows else ""
            seen = first.setdefault(spot, {})
            for column in self.caption:
                value = _text(record.get(column))
                if seen.setdefault(column, value) != value:
                    varies.add(column)
        return [c for c in self.caption if c not in varies]

    def _page(self) -> tuple[list[dict[str, Any]], int, int, int]:
        """The records of this page, the first and last row numbers shown (from 1), and the pages.

        A facet grid pages by whole rows of the grid (about ``per_page`` cards a page), so one input
        row's models are never split between two pages."""
        total = len(self.df)
        if not self.rows:
            first = (self.page - 1) * self.per_page
            shown = self.df.iloc[first : first + self.per_page].to_dict("records")
            return (
                shown,
                first + 1 if shown else 0,
                min(total, first + self.per_page),
                -(-total // self.per_page),
            )
        keys = [_text(v) for v in self.df[self.rows]]
        order = list(dict.fromkeys(keys))
        size = max(1, round(self.per_page * len(order) / max(1, total)))  # grid rows a page
        pages = -(-len(order) // size)
        wanted = set(order[(self.page - 1) * size : self.page * size])
        positions = [i for i, key in enumerate(keys) if key in wanted]
        shown = self.df.iloc[positions].to_dict("records")
        return shown, positions[0] + 1 if positions else 0, positions[-1] + 1 if positions else 0, pages

    def _repr_html_(self) -> str:
        total = len(self.df)
        shown, first, last, pages = self._page()
        body = self._facets(shown) if (self.rows or self.cols) else self._grid(shown)
        note = ""
        if pages > 1 or self.page > 1:
            note = (
                f'<div style="font:12px sans-serif;margin:4px 0">'
                f"showing {first:,}-{last:,} "
                f"of {total:,} (page {self.page} of {pages}; preview(page=N) for another)</div>"
            )
        return note + body

    def to_html_page(self, title: str = "mediagen gallery") -> str:
        """A standalone HTML page (for ``mediagen sweep --gallery``)."""
        return (
            f'<!doctype html><html><head><meta charset="utf-8"><title>{escape(title)}</title></head>'
            f"<body><h1>{escape(title)}</h1>{self._repr_html_()}</body></html>"
        )


def comparison(df: pd.DataFrame, prefix: str = "") -> tuple[str | None, str | None]:
    """The default grid of a comparison of models (a ``row`` and a ``model`` column, several models):
    the frame's rows down and the models across; else no facets."""
    row, model = prefix + ROW, prefix + MODEL
    if row in df.columns and model in df.columns and df[model].nunique() > 1:
        return row, model
    return None, None


class LiveGallery:
    """A gallery that fills in as rows end (``handle.preview(live=True)``), drawn on a thread of its own.

    No widget: each drawing is static HTML put into its display by ``display_id``, so it shows in
    every front end (Colab, VS Code offline, a reopened or exported notebook keeps the last drawing)
    and stays in the cell that showed it, whichever cell runs while it fills in.
    """

    def __init__(self, draw: Callable[[], Gallery], ended: Iterable[Any]) -> None:
        self._draw = draw
        self.value = draw()._repr_html_()  # the HTML drawn last
        self._id = uuid.uuid4().hex
        self._shown = False
        self._lock = threading.Lock()
        self.drawn = threading.Event()  # set once the final frame is drawn (``handle.result()`` waits)

        def follow() -> None:
            try:
                for _ in ended:
                    self.redraw()
                self.redraw()  # the final frame, with every row's result
            finally:
                self.drawn.set()

        threading.Thread(target=follow, name="mediagen-live-preview", daemon=True).start()

    def redraw(self) -> None:
        """Draw the frame as it is now into the display (from any thread)."""
        with self._lock:
            self.value = self._draw()._repr_html_()
            if self._shown:
                routing.redraw(self._repr_mimebundle_(), self._id)

    def __repr__(self) -> str:
        return (
            f"<LiveGallery: {self.value.count('<img ')} images, {self.value.count('<video ')} videos so far>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {"text/html": self.value, "text/plain": repr(self)}

    def _ipython_display_(self) -> None:
        with self._lock:
            routing.show(self._repr_mimebundle_(), raw=True, display_id=self._id)
            self._shown = True
