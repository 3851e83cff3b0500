"""The notebook layer: magics, schema-built forms, a catalog browser (uses the client and batch layers).

``%load_ext mediagen_nb`` registers the magics; widgets load only when a form or the browser opens.
"""

import sys
from typing import Any

if "IPython" in sys.modules:  # in a kernel: the batch layer shows its output through our display hook
    from mediagen_nb.notebook import display as _display  # noqa: F401


def load_ipython_extension(shell: Any) -> None:
    """Called by ``%load_ext mediagen_nb``."""
    from mediagen_nb.notebook import display
    from mediagen_nb.notebook.magics import load

    display.register()
    load(shell)


def form(model_id: str, client: Any = None) -> Any:
    """An ipywidgets form for ``model_id``, built from its input schema."""
    from mediagen_nb.notebook.forms import form as build

    return build(model_id, client)


def catalog(client: Any = None) -> Any:
    """A browser of every catalog model; selecting one opens its form."""
    from mediagen_nb.notebook.browser import catalog as browse

    return browse(client)
