"""What differs between the two widget lines the forms run on, and what shows where widgets do not.

Colab's runtime pins IPython 7.34, ipywidgets 7.7 and ipykernel 6.17; JupyterLab 4 and VS Code run
IPython 8-9 with ipywidgets 8. The forms and the catalog browser use only what both lines have, and
go through here where they differ: a picked file's shape, an accordion's titles, a widget's bundle.
A widget shows nothing in a saved, exported or offline notebook (no widget manager, or none with
its state), so :func:`show` puts a static line under it saying what to do there.
"""

from collections.abc import Mapping
from html import escape
from typing import Any

import ipywidgets as widgets

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# The line for front ends that show no widget is hidden where the widget above it did show: in JupyterLab
# and Notebook 7 a rendered widget is a Lumino widget (``lm-Widget``, ``p-Widget`` before Lab 4) in a
# ``.jupyter-widgets`` element of the output area just before the line's. An export keeps that element
# with only the widget's script in it, so there (and in a saved notebook opened without the widget's
# state, or on GitHub) the line shows.
NO_WIDGET = "mediagen-no-widget"
_RENDERED = ",".join(
    f".jupyter-widgets{inside}{lumino}" for inside in ("", " ") for lumino in (".lm-Widget", ".p-Widget")
)
NO_WIDGET_STYLE = (
    f"<style>.jp-OutputArea-child:has({_RENDERED}) + .jp-OutputArea-child .{NO_WIDGET}"
    "{display:none}</style>"
)


def picked_files(value: Any) -> list[tuple[str, bytes]]:
    """The files a ``FileUpload`` holds, as (name, content): ipywidgets 7 keeps a dict of name ->
    ``{content, metadata}``, ipywidgets 8 a tuple of ``{name, content, ...}``."""
    if isinstance(value, Mapping):
        return [(str(name), bytes(item["content"])) for name, item in value.items()]
    return [(str(item["name"]), bytes(item["content"])) for item in value or ()]


def accordion(child: widgets.Widget, title: str) -> widgets.Accordion:
    """A closed one-section accordion titled ``title`` (``titles=`` exists only from ipywidgets 8)."""
    box = widgets.Accordion(children=[child], selected_index=None)
    box.set_title(0, title)
    return box


def tooltip(widget: widgets.Widget, text: str) -> None:
    """Hover text of a described widget: ``tooltip`` from ipywidgets 8, ``description_tooltip`` in 7."""
    setattr(widget, "tooltip" if widget.has_trait("tooltip") else "description_tooltip", text)


def widget_bundle(widget: widgets.Widget, text: str) -> dict[str, Any]:
    """A widget's display bundle on both lines (ipywidgets 7 has no ``_repr_mimebundle_``), with
    ``text`` as its plain-text form: what a front end without a widget manager shows instead."""
    return {
        "text/plain": text,
        WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": widget.model_id},
    }


def show(widget: widgets.Widget, text: str, note: str, code: str | None = None) -> None:
    """Display ``widget`` (``text`` its plain form), then a static line that stays in every front end:
    ``note`` says what to do where no widget shows, ``code`` (copy as code) runs the same without one."""
    from IPython.display import HTML, display

    display(widget_bundle(widget, text), raw=True)
    copy = f"<details><summary>copy as code</summary><pre>{escape(code)}</pre></details>" if code else ""
    display(
        HTML(
            f'{NO_WIDGET_STYLE}<div style="font:12px sans-serif;color:#555"><span class="{NO_WIDGET}">'
            f"{escape(note)}</span>{copy}</div>"
        )
    )
