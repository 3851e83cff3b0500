"""Text a background thread prints, sent to the cell that started the work.

ipykernel writes each output under a parent (the request of a cell). Since ipykernel 7 a thread may
have its own (``set_thread_parent``); without one, and always on ipykernel 6 (Colab's 6.17), it is
the newest cell's, so a sweep's text progress bar redrawn from the loop would land in whatever cell
runs now. :func:`here` remembers the starting cell; ``Route.applied()`` makes a worker thread's
stdout and stderr go there where the kernel allows it. Live views do not print: they redraw their
display by ``display_id`` (left under the newest cell's parent, where every front end and nbclient
look for it), which updates the display they name in whichever cell it is, on ipykernel 6 too.
"""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol


class Display(Protocol):
    """How the notebook layer shows things in a kernel: its shell, and IPython's display calls."""

    def shell(self) -> Any:
        """The running shell, or None outside one."""
        ...

    def display(self, item: Any, **options: Any) -> None: ...

    def update_display(self, bundle: dict[str, str], *, display_id: str) -> None: ...


_display: Display | None = None  # registered by the notebook layer (mediagen_nb.notebook.display)


def register(display: Display | None) -> None:
    """The notebook layer's display hook (None: none); the batch layer never looks IPython up itself."""
    global _display
    _display = display


def _shell() -> Any:
    """The running shell, if the notebook layer registered one."""
    return _display.shell() if _display is not None else None


def in_notebook() -> bool:
    """True in a kernel whose front end shows rich output (a terminal IPython prints text)."""
    shell = _shell()
    return shell is not None and type(shell).__name__ != "TerminalInteractiveShell"


def show(item: Any, **options: Any) -> None:
    """Display ``item`` in the running shell's cell output (``options``: ``raw``, ``display_id``)."""
    if _display is not None:
        _display.display(item, **options)


def redraw(bundle: dict[str, str], display_id: str) -> None:
    """Replace the display named ``display_id`` with ``bundle``, in whichever cell it is."""
    if _display is not None:
        _display.update_display(bundle, display_id=display_id)


def _writers() -> list[Any]:
    """The streams a thread prints to that can take a parent of their own (ipykernel 7 and later)."""
    streams = (sys.stdout, sys.stderr)
    return [w for w in streams if hasattr(w, "set_thread_parent") and hasattr(w, "reset_thread_parent")]


@dataclass(frozen=True)
class Route:
    """The parent of the cell that started some work (None outside a kernel)."""

    parent: dict[str, Any] | None

    @contextmanager
    def applied(self) -> Iterator[None]:
        """In a worker thread: what it prints goes to the starting cell (ipykernel 7 and later)."""
        tokens = [(w, w.set_thread_parent(self.parent)) for w in _writers()] if self.parent else []
        try:
            yield
        finally:
            for writer, token in reversed(tokens):
                writer.reset_thread_parent(token)


def here() -> Route:
    """The route to the cell running now (call it in the thread that runs the cell)."""
    parent = getattr(_shell(), "parent_header", None)
    return Route(dict(parent) if isinstance(parent, dict) and parent else None)
