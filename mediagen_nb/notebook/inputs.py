"""One ipywidgets input per schema property, chosen by a small table of (predicate, builder) rows.

``build_field`` walks :data:`REGISTRY` in order and uses the first row whose predicate accepts the
property; a property no row accepts, or one whose builder fails, becomes a JSON text field, so an
unexpected schema shape never breaks a form. Every field reads back a typed Python value (or None
when empty) and never clamps or drops what it is given: bounds and options are judged by the same
checks the service runs, so the message under a field is the service's own.
"""

import json
import math
from collections.abc import Callable, Mapping
from html import escape
from typing import Any, TypeGuard
from urllib.parse import urlsplit

import ipywidgets as widgets

from mediagen_nb.client import html
from mediagen_nb.notebook import compat
from mediagen_nb.protocol import messages
from mediagen_nb.protocol.schema import media_kind

Prop = Mapping[str, Any]
LONG_TEXT_CHARS = 1000  # a string allowed this long gets a text area
SLIDER_INT_SPAN = 256  # wider integer ranges (pixels, seeds) get a text box
SLIDER_NUMBER_SPAN = 1000.0
PREVIEW_WIDTH = 160


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def preview_html(url: Any, kind: str | None) -> str:
    """A small escaped preview of an http(s) media URL (``<img>``, ``<audio>``, ``<video>``); else empty."""
    if not isinstance(url, str) or urlsplit(url.strip()).scheme.lower() not in ("http", "https"):
        return ""
    return html.media(url, kind, width=PREVIEW_WIDTH)


class Field:
    """A property as widgets: ``.value`` (typed, None when empty), ``.set()``, ``.error``, ``.widget``."""

    kind = "text"

    def __init__(self, name: str, prop: Prop, required: bool) -> None:
        self.name = name
        self.prop = prop
        self.required = required
        self._listeners: list[Callable[[], None]] = []
        self.input = self._build()
        self.error = widgets.HTML()
        star = ' <span style="color:#cf222e" title="required">*</span>' if required else ""
        self.label = widgets.HTML(f"<b>{escape(name)}</b>{star}")
        description = prop.get("description")
        self.help = widgets.HTML(
            f'<div style="color:#555;font-size:12px">{escape(str(description))}</div>' if description else ""
        )
        self.widget = widgets.VBox([self.label, self._body(), self.help, self.error])
        if "default" in prop:
            self.set(prop["default"])

    def _build(self) -> widgets.Widget:
        text = widgets.Text(layout={"width": "100%"})
        text.observe(self._changed, names="value")
        return text

    def _body(self) -> widgets.Widget:
        """The input as laid out (the input itself, or it with a preview or buttons)."""
        return self.input

    @property
    def value(self) -> Any:
        text = self.input.value
        return text if text.strip() else None

    def set(self, value: Any) -> None:
        """Show ``value`` in the field (None clears it)."""
        self.input.value = "" if value is None else str(value)

    @property
    def problem(self) -> str | None:
        """What the field itself cannot read (text that is not a number, invalid JSON); else None."""
        return None

    def observe(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` whenever the field's value changes."""
        self._listeners.append(callback)

    def show_error(self, message: str | None) -> None:
        self.error.value = (
            f'<div style="color:#cf222e;font-size:12px">{escape(message)}</div>' if message else ""
        )

    def _changed(self, _change: Any = None) -> None:
        for callback in self._listeners:
            callback()


class TextareaField(Field):
    """Long text (``format: textarea`` or a large ``maxLength``)."""

    kind = "textarea"

    def _build(self) -> widgets.Widget:
        limit = self.prop.get("maxLength")
        area = widgets.Textarea(
            layout=widgets.Layout(width="100%", height="6em"),
            placeholder=f"up to {limit} characters" if limit else "",
        )
        area.observe(self._changed, names="value")
        return area


class EnumField(Field):
    """A Dropdown of the ``enum`` options, values kept with their schema type."""

    kind = "enum"

    def _build(self) -> widgets.Widget:
        options: list[tuple[str, Any]] = [(str(option), option) for option in self.prop["enum"]]
        if "default" not in self.prop:
            options.insert(0, ("(choose)" if self.required else "(none)", None))
        dropdown = widgets.Dropdown(options=options, value=options[0][1])
        dropdown.observe(self._changed, names="value")
        return dropdown

    @property
    def value(self) -> Any:
        return self.input.value

    def set(self, value: Any) -> None:
        """Select ``value`` (None: the default); one outside the options is added for validation to flag."""
        if value is None and "default" in self.prop:
            value = self.prop["default"]
        if not any(value == option for _, option in self.input.options):
            self.input.options = (*self.input.options, (repr(value), value))
        self.input.value = value


class BooleanField(Field):
    """A Checkbox."""

    kind = "boolean"

    def _build(self) -> widgets.Widget:
        box = widgets.Checkbox(indent=False, description="")
        box.observe(self._changed, names="value")
        return box

    @property
    def value(self) -> bool:
        return bool(self.input.value)

    def set(self, value: Any) -> None:
        self.input.value = bool(value)


class SliderField(Field):
    """A slider for a bounded number with a default and a short range."""

    kind = "slider"

    def _build(self) -> widgets.Widget:
        low, high = self.prop["minimum"], self.prop["maximum"]
        if self.prop["type"] == "integer":
            slider: widgets.Widget = widgets.IntSlider(min=low, max=high, step=1, continuous_update=False)
        else:
            step = 10.0 ** math.floor(math.log10((high - low) / 100))
            decimals = max(0, -round(math.log10(step)))
            slider = widgets.FloatSlider(
                min=low, max=high, step=step, readout_format=f".{decimals}f", continuous_update=False
            )
        slider.observe(self._changed, names="value")
        return slider

    @property
    def value(self) -> int | float:
        value: int | float = self.input.value
        return value

    def set(self, value: Any) -> None:
        """Show ``value``; one out of range widens the slider rather than clamping, so validation flags it."""
        if value is None:
            value = self.prop["default"]
        self.input.min = min(self.input.min, value)
        self.input.max = max(self.input.max, value)
        self.input.value = value


class ParsedField(Field):
    """A field typed from free text: ``value`` is None and ``problem`` says why when it cannot be read."""

    def _parse(self) -> Any:
        raise NotImplementedError

    def _unreadable(self, exc: ValueError) -> str:
        raise NotImplementedError

    @property
    def value(self) -> Any:
        try:
            return self._parse()
        except ValueError:
            return None

    @property
    def problem(self) -> str | None:
        try:
            self._parse()
        except ValueError as exc:
            return self._unreadable(exc)
        return None


class NumberField(ParsedField):
    """A text box for a number (unbounded or a wide range); empty means absent."""

    kind = "number"

    def _build(self) -> widgets.Widget:
        word = "whole number" if self.prop.get("type") == "integer" else "number"
        low, high = self.prop.get("minimum"), self.prop.get("maximum")
        bounds = f" from {low} to {high}" if low is not None and high is not None else ""
        text = widgets.Text(placeholder=f"{word}{bounds}", layout=widgets.Layout(width="16em"))
        text.observe(self._changed, names="value")
        return text

    def _parse(self) -> int | float | None:
        text = self.input.value.strip()
        if not text:
            return None
        number = float(text)  # ValueError for text that is not a number
        if self.prop.get("type") == "integer":
            if not number.is_integer():
                raise ValueError(text)
            return int(text) if text.lstrip("+-").isdigit() else int(number)
        return number

    def _unreadable(self, exc: ValueError) -> str:
        word = "an integer" if self.prop.get("type") == "integer" else "a number"
        return messages.wrong_type(self.name, word)


class MediaField(Field):
    """A URL or file path box, a file picker, and a live preview (image, audio player or video player).

    A picked file is kept in the user's cache folder under its content's name and its path goes into
    the box; like any local path, it is uploaded (once) where the service can read it when the form runs.
    """

    kind = "media"

    def _build(self) -> widgets.Widget:
        self.media = media_kind(self.prop)
        text = widgets.Text(
            placeholder=f"https://… or ./file ({self.media or 'file'})", layout={"width": "100%"}
        )
        self.preview = widgets.HTML()
        accept = {"image": "image/*", "audio": "audio/*", "video": "video/*"}.get(self.media or "", "")
        self.picker = widgets.FileUpload(accept=accept, multiple=False, description="file…")
        self.picker.observe(self._picked, names="value")
        text.observe(self._changed, names="value")
        text.observe(self._update_preview, names="value")
        return text

    def _body(self) -> widgets.Widget:
        return widgets.VBox([widgets.HBox([self.input, self.picker]), self.preview])

    def _picked(self, change: Any) -> None:
        from mediagen_nb.client.uploads import keep

        for name, content in compat.picked_files(change["new"]):
            self.input.value = str(keep(name, content))

    @property
    def value(self) -> str | None:
        return self.input.value.strip() or None

    def _update_preview(self, _change: Any = None) -> None:
        self.preview.value = preview_html(self.input.value, self.media)


class UrlListField(Field):
    """A list editor of URLs: one row (text, remove button, preview) per item and an add button."""

    kind = "url_list"

    def _build(self) -> widgets.Widget:
        self.media = media_kind(self.prop)
        limit = self.prop.get("maxItems")
        self.max_items = limit if isinstance(limit, int) else None
        self.rows: list[widgets.HBox] = []
        self.add_button = widgets.Button(description="add", icon="plus", layout=widgets.Layout(width="7em"))
        self.add_button.on_click(lambda _: self.add())
        self._box = widgets.VBox()
        self.add()
        return self._box

    def _body(self) -> widgets.Widget:
        hint = f"up to {self.max_items} URLs" if self.max_items else "one URL per row"
        note = widgets.HTML(f'<span style="color:#555;font-size:12px">{escape(hint)}</span>')
        return widgets.VBox([self._box, widgets.HBox([self.add_button, note])])

    def add(self, url: str = "") -> None:
        """Add a row holding ``url``."""
        text = widgets.Text(
            value=url, placeholder=f"https://… ({self.media or 'file'} URL)", layout={"width": "100%"}
        )
        preview = widgets.HTML(preview_html(url, self.media))
        remove = widgets.Button(icon="minus", tooltip="remove", layout=widgets.Layout(width="3em"))
        row = widgets.HBox([text, remove, preview])
        remove.on_click(lambda _: self.remove(row))

        def update(_change: Any) -> None:
            preview.value = preview_html(text.value, self.media)
            self._changed()

        text.observe(update, names="value")
        self.rows.append(row)
        self._relayout()
        self._changed()

    def remove(self, row: widgets.HBox) -> None:
        """Drop a row (the last one is emptied instead, so there is always a box to type in)."""
        if len(self.rows) == 1:
            row.children[0].value = ""
            return
        self.rows.remove(row)
        self._relayout()
        self._changed()

    def _relayout(self) -> None:
        self._box.children = tuple(self.rows)
        self.add_button.disabled = self.max_items is not None and len(self.rows) >= self.max_items

    @property
    def value(self) -> list[str] | None:
        urls = [row.children[0].value.strip() for row in self.rows]
        return [url for url in urls if url] or None

    def set(self, value: Any) -> None:
        """Show a list of URLs, or a single URL as a one-item list (more than ``maxItems`` are kept)."""
        urls = [value] if isinstance(value, str) else [str(url) for url in value or ()]
        self.rows = self.rows[:1]
        self._relayout()
        self.rows[0].children[0].value = urls[0] if urls else ""
        for url in urls[1:]:
            self.add(url)
        self._changed()


class JsonField(ParsedField):
    """The fallback: a text area taking JSON, for any property shape no registry row builds."""

    kind = "json"

    def _build(self) -> widgets.Widget:
        area = widgets.Textarea(placeholder="a JSON value", layout=widgets.Layout(width="100%", height="4em"))
        area.observe(self._changed, names="value")
        return area

    def _parse(self) -> Any:
        text = self.input.value
        return json.loads(text) if text.strip() else None

    def _unreadable(self, exc: ValueError) -> str:
        return f"{self.name} is not valid JSON: {exc}"

    def set(self, value: Any) -> None:
        self.input.value = "" if value is None else json.dumps(value, default=str)


def _is_enum(prop: Prop) -> bool:
    return isinstance(prop.get("enum"), list) and bool(prop["enum"])


def _is_boolean(prop: Prop) -> bool:
    return prop.get("type") == "boolean"


def _is_url_list(prop: Prop) -> bool:
    items = prop.get("items")
    return prop.get("type") == "array" and isinstance(items, Mapping) and _is_url(items)


def _is_url(prop: Prop) -> bool:
    return prop.get("type", "string") == "string" and (
        prop.get("format") == "uri" or media_kind(prop) is not None
    )


def _is_long_text(prop: Prop) -> bool:
    limit = prop.get("maxLength")
    return prop.get("type") == "string" and (
        prop.get("format") == "textarea" or (_is_number(limit) and limit >= LONG_TEXT_CHARS)
    )


def _is_slider(prop: Prop) -> bool:
    kind, low, high, default = prop.get("type"), prop.get("minimum"), prop.get("maximum"), prop.get("default")
    if kind not in ("integer", "number") or not (
        _is_number(low) and _is_number(high) and _is_number(default)
    ):
        return False
    if not low < high or not low <= default <= high:
        return False
    if kind == "integer":
        return all(isinstance(v, int) for v in (low, high, default)) and high - low <= SLIDER_INT_SPAN
    return high - low <= SLIDER_NUMBER_SPAN


def _is_number_prop(prop: Prop) -> bool:
    return prop.get("type") in ("integer", "number")


def _is_string(prop: Prop) -> bool:
    return prop.get("type") == "string"


Builder = Callable[[str, Prop, bool], Field]

# First matching row wins: options before types, media before plain text, sliders before text boxes.
REGISTRY: list[tuple[Callable[[Prop], bool], Builder]] = [
    (_is_enum, EnumField),
    (_is_boolean, BooleanField),
    (_is_url_list, UrlListField),
    (_is_url, MediaField),
    (_is_long_text, TextareaField),
    (_is_slider, SliderField),
    (_is_number_prop, NumberField),
    (_is_string, Field),
]


def build_field(name: str, prop: Any, required: bool = False, main: bool = False) -> Field:
    """The field of the first registry row accepting ``prop``; a JSON text field when none can build it.

    ``main``: the model's main text (its prompt, the text a voice speaks): several lines, as the body
    of a ``%%generate`` cell, whatever its length limit."""
    if not isinstance(prop, Mapping):
        return JsonField(name, {}, required)
    if (
        main
        and prop.get("type") == "string"
        and not any(row(prop) for row in (_is_enum, _is_url, _is_url_list))
    ):
        return TextareaField(name, prop, required)
    for accepts, builder in REGISTRY:
        try:
            if accepts(prop):
                return builder(name, prop, required)
        except Exception:  # an odd schema shape (bad bounds, unhashable options): fall back, never crash
            break
    return JsonField(name, prop, required)
