"""``mediagen_nb.catalog()``: every catalog model as a card, filtered by kind, group and text.

The logic is plain methods (``filter``, ``show``, ``open``); the dropdowns, search box, pager and
Open buttons only call them. Cards are built for the page shown only, and preview images load lazily.
"""

from html import escape
from typing import Any

import ipywidgets as widgets

from mediagen_nb.client import Client, MediagenError, Model, html
from mediagen_nb.notebook import compat
from mediagen_nb.notebook.forms import Form
from mediagen_nb.notebook.prices import listed_price
from mediagen_nb.notebook.session import SESSION
from mediagen_nb.protocol.documents import KINDS

ALL = "all"
CHOICES = (ALL, *KINDS)
PAGE_SIZE = 24
PREVIEW_WIDTH = 160
NO_WIDGETS = (
    "The catalog browser. Nothing above? This front end shows no widgets (a saved, exported or offline "
    "notebook): run the cell again in JupyterLab, Colab or VS Code, or list the models with "
    '%mediagen models [--kind image|video|audio] [TEXT] and open one with mg.form("MODEL").'
)


def card_html(model: Model) -> str:
    """A model's card: lazy preview image, name, id, kind and group, price and billing (all escaped)."""
    facts = " · ".join(escape(str(f)) for f in (model.output_type, model.group) if f)
    return (
        f'<div style="font-family:sans-serif;font-size:12px;line-height:1.35">'
        f"{html.media(model.preview_url, 'image', width=PREVIEW_WIDTH)}"
        f"<div><b>{escape(model.name or model.id)}</b></div><code>{escape(model.id)}</code>"
        f'<div style="color:#555">{facts}</div><div>{escape(listed_price(model))}</div></div>'
    )


def _matches(model: Model, terms: list[str]) -> bool:
    text = " ".join(str(part or "") for part in (model.id, model.name, model.description)).lower()
    return all(term in text for term in terms)


class CatalogBrowser:
    """A browser of the catalog: filters, a page of cards, and the form of the model opened below."""

    @property
    def client(self) -> Client:
        """The client given, else the process's current connection (``%mediagen use`` switches it)."""
        return self._client or SESSION.client

    def __init__(self, client: Client | None = None, *, page_size: int = PAGE_SIZE) -> None:
        """Read the catalog once with ``client`` (the current connection by default), show its first page."""
        self._client = client
        self.models: list[Model] = self.client.models()
        self.page_size = page_size
        self.page = 0
        self.shown: list[Model] = []
        self.form: Form | None = None
        groups = sorted({m.group for m in self.models if m.group})
        self.kind = widgets.Dropdown(options=CHOICES, value=ALL, description="kind")
        self.group = widgets.Dropdown(options=[ALL, *groups], value=ALL, description="group")
        self.text = widgets.Text(placeholder="search id, name, description")
        self.count = widgets.HTML()
        self.prev_button = widgets.Button(
            icon="chevron-left", tooltip="previous page", layout={"width": "3em"}
        )
        self.next_button = widgets.Button(icon="chevron-right", tooltip="next page", layout={"width": "3em"})
        self.grid = widgets.GridBox(
            layout=widgets.Layout(
                grid_template_columns="repeat(auto-fill, minmax(190px, 1fr))", grid_gap="8px"
            )
        )
        self.detail = widgets.VBox()
        self.back_button = widgets.Button(description="back to the catalog", icon="chevron-left")
        self.back_button.on_click(lambda _: self.back())
        self.browsing = widgets.VBox(
            [
                widgets.HBox([self.kind, self.group, self.text]),
                widgets.HBox([self.prev_button, self.next_button, self.count]),
                self.grid,
            ]
        )
        self.widget = widgets.VBox([self.browsing, self.detail])
        for control in (self.kind, self.group, self.text):
            control.observe(lambda _: self.show(), names="value")
        self.prev_button.on_click(lambda _: self.show(self.page - 1))
        self.next_button.on_click(lambda _: self.show(self.page + 1))
        self.show()

    def __repr__(self) -> str:
        return f"<CatalogBrowser {len(self.shown)} of {len(self.models)} models, page {self.page + 1}>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The browser's widget, with a plain-text form saying what to do where widgets do not show."""
        return compat.widget_bundle(self.widget, f"{self!r}\n{NO_WIDGETS}")

    def _ipython_display_(self) -> None:
        """Shown as the browser's widget, and under it a line that stays where no widget shows."""
        compat.show(self.widget, repr(self), NO_WIDGETS)

    def filter(
        self, kind: str | None = None, group: str | None = None, text: str | None = None
    ) -> list[Model]:
        """Models of ``kind`` in ``group`` with every word of ``text`` in id, name or description."""
        terms = (text or "").lower().split()
        return [
            m
            for m in self.models
            if kind in (None, "", ALL, m.output_type)
            and group in (None, "", ALL, m.group)
            and _matches(m, terms)
        ]

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.shown) // self.page_size))

    def show(self, page: int = 0) -> list[Model]:
        """Apply the filter controls and show ``page`` of the matches; returns the models on it."""
        self.shown = self.filter(self.kind.value, self.group.value, self.text.value)
        self.page = min(max(page, 0), self.pages - 1)
        start = self.page * self.page_size
        on_page = self.shown[start : start + self.page_size]
        self.grid.children = [self._card(model) for model in on_page]
        span = f"{start + 1} to {start + len(on_page)} of " if on_page else ""
        summary = f"{span}{len(self.shown)} models · page {self.page + 1} of {self.pages}"
        self.count.value = f'<span style="color:#555">{escape(summary)}</span>'
        self.prev_button.disabled = self.page == 0
        self.next_button.disabled = self.page >= self.pages - 1
        return on_page

    def _card(self, model: Model) -> widgets.Widget:
        button = widgets.Button(description="Open", tooltip=f"open the form of {model.id}")
        button.on_click(lambda _: self._open_clicked(model.id))
        return widgets.VBox(
            [widgets.HTML(card_html(model)), button],
            layout=widgets.Layout(border="1px solid #ddd", padding="6px"),
        )

    def open(self, model_id: str) -> Form:
        """Open ``model_id``'s form in place of the cards, so it is in view where the click was; a back
        button returns to the cards as they were (filters and page kept)."""
        form = Form(self.client.model(model_id), self._client)
        if self.form is not None:
            self.form.close()
        self.form = form
        self.detail.children = [self.back_button, form.widget]
        self.browsing.layout.display = "none"
        return form

    def back(self) -> None:
        """Close the open form and show the cards again."""
        if self.form is not None:
            self.form.close()
            self.form = None
        self.detail.children = []
        self.browsing.layout.display = None

    def _open_clicked(self, model_id: str) -> None:
        try:
            self.open(model_id)
        except MediagenError as exc:  # a click has no caller to raise to: say it where the form would be
            self.detail.children = [widgets.HTML(html.error_line(f"could not open {model_id}: {exc}"))]


def catalog(client: Client | None = None) -> CatalogBrowser:
    """A browser of every catalog model (shown when it is a cell's last expression)."""
    return CatalogBrowser(client)
