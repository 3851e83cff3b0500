"""A one-line live status (stage, elapsed time) in the output of the cell that started a job.

In JupyterLab, Notebook 7 and VS Code it is a display that updates in place; in a terminal
IPython nothing is drawn until the result, which prints as readable text. :class:`Ticker` moves the
elapsed time of this line and of a form's progress line.
"""

import threading
from collections.abc import Callable
from html import escape
from typing import Any

from mediagen_nb.runtime.clock import REAL, Clock

TICK_SECONDS = 1.0  # how often a status line's elapsed time moves


class Ticker:
    """Redraws a status line every ``TICK_SECONDS`` of ``clock`` on a thread of its own (``thread``),
    from its start until :meth:`stop`; after that no tick draws over the final line."""

    def __init__(self, draw: Callable[[], None], clock: Clock = REAL) -> None:
        self.clock = clock
        self.started = clock.monotonic()
        self._draw = draw
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._tick, name="mediagen-ticker", daemon=True)
        self.thread.start()

    @property
    def elapsed(self) -> float:
        """Seconds since the line started."""
        return self.clock.monotonic() - self.started

    def _tick(self) -> None:
        while not self._stop.is_set():
            self.clock.sleep(TICK_SECONDS)
            with self._lock:
                if not self._stop.is_set():
                    self._draw()

    def stop(self, final: Callable[[], None]) -> None:
        """Stop ticking, then draw the final line with ``final``."""
        with self._lock:
            self._stop.set()
            final()


def describe(item: Any) -> str:
    """A short status of a generation, analysis, replication run or topic-to-video job."""
    status = getattr(item, "status", None) or "starting"
    name = type(item).__name__
    if name == "ReplicationRun" and status == "generating":
        return f"generating clips {item.done_clips or 0}/{item.total_clips or '?'}"
    if name == "ReplicationRun" and item.marketing_coming:
        return "done; marketing cuts still coming (read the run again for them)"
    if name == "ShortVideoJob" and isinstance(item.progress, (int, float)):
        return f"{item.stage or status} {item.progress:.0%}"
    if (
        name == "Analysis"
        and status == "ready"
        and item.blueprint is not None
        and not item.blueprint.has_prompts
    ):
        return "ready; writing clip prompts"
    return str(status)


def is_rich(shell: Any) -> bool:
    """True under a Jupyter kernel (rich outputs); False in a terminal IPython or plain Python."""
    return getattr(shell, "kernel", None) is not None


class Live:
    """A status line that shows ``title``, the latest status and the seconds of ``clock`` since it
    started."""

    def __init__(self, shell: Any, title: str, clock: Clock = REAL) -> None:
        self.title = title
        self.status = "starting"
        self.clock = clock
        self.started = clock.monotonic()
        self._handle = None
        self._ticker: Ticker | None = None
        if is_rich(shell):
            from IPython.display import HTML, display

            self._html = HTML
            self._handle = display(HTML(self._line()), display_id=True)
            self._ticker = Ticker(self._show, clock)

    def _line(self, icon: str = "&#8987;") -> str:
        elapsed = self.clock.monotonic() - self.started
        return (
            f'<div style="font-family:sans-serif;font-size:13px;color:#555">{icon} '
            f"{escape(self.title)}: {escape(self.status)} · {elapsed:.0f} s</div>"
        )

    def _show(self, icon: str = "&#8987;") -> None:
        if self._handle is not None:
            self._handle.update(self._html(self._line(icon)))

    def update(self, item: Any) -> None:
        """Take the latest reading of the job (an ``on_update`` callback)."""
        self.status = describe(item)
        self._show()

    def close(self, status: str, ok: bool = True) -> None:
        """Stop ticking and leave a final line; the result itself is the cell's value."""

        def final() -> None:
            self.status = status
            self._show("&#10003;" if ok else "&#10007;")

        if self._ticker is None:
            final()
        else:
            self._ticker.stop(final)


def reused_note(item: Any) -> str:
    """``reused from 14:02, no charge; --fresh for a new one`` (the earlier start's local time)."""
    from datetime import datetime

    created = getattr(item, "created_at", None)
    when = ""
    if isinstance(created, str):
        try:
            when = " from " + datetime.fromisoformat(created.replace("Z", "+00:00")).astimezone().strftime(
                "%H:%M"
            )
        except ValueError:
            when = ""
    return f"reused{when}, no charge; --fresh for a new one"
