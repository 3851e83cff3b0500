"""How a magic's cell runs: one-line errors that fail it, ``-o NAME``, a live status line that keeps
what started on Ctrl-C, and failed results that fail the cell unless ``--no-raise``."""

import functools
import keyword
import sys
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError

from mediagen_nb.notebook import parsing
from mediagen_nb.notebook.live import Live, describe, reused_note
from mediagen_nb.notebook.session import SESSION
from mediagen_nb.protocol import messages


class MagicError(UsageError):
    """A magic's failure: one line ``Kind: message`` as the cell's error output, no traceback.

    A subclass (not IPython's UsageError itself, which only prints to stderr) so that Jupyter gets an
    error output: the cell fails, Run All stops, and nbval sees it.
    """

    def __init__(self, message: str, kind: str = "UsageError") -> None:
        super().__init__(message)
        self.kind = kind

    def _render_traceback_(self) -> list[str]:
        return [f"{self.kind}: {self}"]


def friendly(method: Callable[..., Any]) -> Callable[..., Any]:
    """Turn every failure into one MagicError line: the message, no traceback."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from mediagen_nb.client import MediagenError

        __tracebackhide__ = True  # IPython shows none of our frames
        try:
            return method(*args, **kwargs)
        except MagicError:
            raise
        except (parsing.OptionError, UsageError) as exc:
            raise MagicError(str(exc)) from None
        except MediagenError as exc:
            if _no_raise(args, kwargs):  # a refusal too: said in one line, and the cell stays green
                print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
                return None
            raise MagicError(str(exc), type(exc).__name__) from None
        except KeyboardInterrupt as exc:  # stop the cell (and Run All), with what was kept, not our frames
            raise KeyboardInterrupt(*exc.args) from None

    return wrapper


def _no_raise(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the magic's line asks ``--no-raise`` (or ``%config MediagenMagics.raise_on_failure``
    is False): a failure, or a refusal before anything was sent, then leaves the cell green."""
    line = args[1] if len(args) > 1 else kwargs.get("line", "")
    asked = isinstance(line, str) and "--no-raise" in line.split()
    return asked or getattr(args[0] if args else None, "raise_on_failure", True) is False


def output_name(flags: dict[str, Any]) -> str | None:
    """The ``-o NAME`` asked for; a bad name is refused before anything is sent or charged."""
    name = flags.get("output")
    if name is not None and (not str(name).isidentifier() or keyword.iskeyword(str(name))):
        raise MagicError(f"-o {name!r}: give a Python variable name")
    return None if name is None else str(name)


def store(shell: Any, flags: dict[str, Any], value: Any) -> Any:
    name = output_name(flags)
    if name is not None:
        shell.user_ns[name] = value
    return value


def model_of(client: Any, model_id: str) -> Any:
    """The catalog model ``model_id``; an unknown id is one short line with a "did you mean", not 130 ids."""
    from mediagen_nb.client.catalog import model_named

    return model_named(client, model_id, "%mediagen models")  # a NotFoundError: one line, by @friendly


class Started:
    """What a cell has started so far, so a Ctrl-C can keep it (variable, history) before stopping."""

    def __init__(self, shell: Any, flags: dict[str, Any], live: Live) -> None:
        self.shell, self.flags, self.live = shell, flags, live
        self.item: Any = None

    def update(self, item: Any) -> None:
        self.item = item
        self.live.update(item)

    def keep(self) -> Any:
        """Store and remember what was started (a Ctrl-C or the end of the cell)."""
        if self.item is not None:
            store(self.shell, self.flags, self.item)
            SESSION.remember(self.item)
        return self.item

    def interrupted(self) -> str:
        """Keep what started and say so (the live line, and the message of the KeyboardInterrupt)."""
        item = self.keep()
        if item is None:
            line = "stopped; if the start was sent, running the cell again resumes it at no charge"
        else:
            line = (
                f"interrupted: {item.id} is still {item.status} and stays charged; run the cell again "
                "to pick it up at no charge"
            )
        self.live.close(line, ok=False)
        return line


def follow(
    shell: Any,
    flags: dict[str, Any],
    title: str,
    steps: Callable[[Started], Any],
    summary: Callable[[Any], tuple[str, bool]],
) -> Any:
    """Run ``steps`` under a live status line ending in ``summary(result)``; a Ctrl-C keeps what started."""
    live = Live(shell, title)
    started = Started(shell, flags, live)
    try:
        steps(started)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(started.interrupted()) from None
    except BaseException:
        started.keep()
        live.close("stopped", ok=False)
        raise
    result = started.keep()
    live.close(*summary(result))
    return result


def money(item: Any) -> str:
    """What a result cost, or that it was reused at no charge."""
    if getattr(item, "reused", False):
        return reused_note(item)
    credits = getattr(item, "credits_spent", None) or getattr(item, "credits_used", None)
    return messages.credits(credits) if credits is not None else "charged per clip as it renders"


def raise_unless(flags: dict[str, Any], result: Any) -> Any:
    """A failed result fails the cell (it is kept in ``-o NAME`` and the history), unless ``--no-raise``."""
    from mediagen_nb.client import Generation, WorkFailed

    if getattr(result, "status", None) == "failed" and not flags.get("no_raise"):
        if isinstance(result, Generation):
            result.raise_for_status()
        raise WorkFailed(result)
    return result


def video_summary(result: Any) -> tuple[str, bool]:
    return f"{describe(result)} · {money(result)}", result.status == "done"


class Compared(dict[str, Any]):
    """A cell's results on several models (``%%generate a,b``), by model id, shown side by side: each
    model's result, or why it has none."""

    @property
    def failed(self) -> list[str]:
        """The models that did not succeed (a failed run, or a start refused or broken)."""
        return [
            m for m, item in self.items() if isinstance(item, str) or getattr(item, "status", "") == "failed"
        ]

    def __repr__(self) -> str:
        lines = []
        for model_id, item in self.items():
            if isinstance(item, str):
                lines.append(f"{model_id}: {item}")
            else:
                lines.append(f"{model_id}: {describe(item)} · {money(item)}  {item.url or ''}".rstrip())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from html import escape

        cells = []
        for model_id, item in self.items():
            body = (
                f'<div style="color:#cf222e">{escape(item)}</div>'
                if isinstance(item, str)
                else item._repr_html_()
            )
            cells.append(
                f'<div style="flex:1 1 280px;min-width:0"><div style="font:600 13px sans-serif;margin:2px 0">'
                f"{escape(model_id)}</div>{body}</div>"
            )
        return (
            f'<div style="display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start">{"".join(cells)}</div>'
        )


def follow_all(
    shell: Any,
    flags: dict[str, Any],
    starts: dict[str, Callable[[], Any]],
    wait: Callable[[Any, Callable[[Any], None]], Any],
    summary: Callable[[Any], tuple[str, bool]],
) -> Compared:
    """Start every model's job (``starts``, by model id), then follow each to its end (``wait``), each
    under a live status line of its own; a model whose start or reads fail says why in its place and
    the others go on. A Ctrl-C keeps what started (in ``-o NAME`` and the history)."""
    from mediagen_nb.client import MediagenError

    lives = {model_id: Live(shell, model_id) for model_id in starts}
    results = Compared()
    closed: set[str] = set()

    def keep() -> Compared:
        store(shell, flags, results)
        for item in results.values():
            if not isinstance(item, str):
                SESSION.remember(item)
        return results

    def close(model_id: str, line: str, ok: bool) -> None:
        if model_id not in closed:
            closed.add(model_id)
            lives[model_id].close(line, ok=ok)

    def failed(model_id: str, exc: MediagenError) -> None:
        started = getattr(results.get(model_id), "id", None)
        then = f"; {started} was started and a re-run picks it up" if started else ""
        results[model_id] = f"{type(exc).__name__}: {exc}{then}"
        close(model_id, results[model_id], False)

    try:
        for model_id, start in starts.items():
            try:
                results[model_id] = start()
                lives[model_id].update(results[model_id])
            except MediagenError as exc:
                failed(model_id, exc)
        for model_id, item in list(results.items()):
            if isinstance(item, str) or item.done or flags.get("no_wait"):
                continue
            try:
                results[model_id] = wait(item, lives[model_id].update)
            except MediagenError as exc:
                failed(model_id, exc)
    except KeyboardInterrupt:
        keep()
        for model_id in starts:
            close(
                model_id, "interrupted; what started stays charged: run the cell again to pick it up", False
            )
        raise KeyboardInterrupt(
            "interrupted: run the cell again to pick up what started, at no charge"
        ) from None
    except BaseException:
        keep()
        for model_id in starts:
            close(model_id, "stopped", False)
        raise
    for model_id, item in results.items():
        if not isinstance(item, str):
            close(model_id, *summary(item))
    return keep()
