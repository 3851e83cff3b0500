"""The magics: ``%%generate``, ``%generate``, ``%replicate``, ``%%make_video`` and ``%mediagen``.

Service errors and option mistakes surface as one short line (IPython's UsageError), never as a
traceback. IPython's own ``{var}`` expansion is off for these magics: ``{{name}}`` is ours.
"""

import difflib
import functools
import getpass
import keyword
import os
import sqlite3
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from html import escape
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class, no_var_expand

from mediagen_nb.notebook import parsing
from mediagen_nb.notebook.live import Live, describe, is_rich
from mediagen_nb.notebook.session import SESSION

GENERATE_FLAGS = {"-o": True, "--output": True, "--estimate": False, "--no-wait": False}
REPLICATE_FLAGS = {
    "--model": True,
    "--quality": True,
    "--accuracy": True,
    "--clips": True,
    "--captions": False,
    "--audio": True,
    "--character": True,
    "--marketing-aspect": True,
    "--estimate": False,
    "-o": True,
    "--output": True,
}
VIDEO_FLAGS = {
    "--seconds": True,
    "--gender": True,
    "--look": True,
    "--voice": True,
    "--flow": True,
    "--no-captions": False,
    "--no-music": False,
    "-o": True,
    "--output": True,
}
SUBCOMMANDS = ("models", "model", "estimate", "key", "use", "usage", "history", "reedit", "help")


def friendly(method: Callable[..., Any]) -> Callable[..., Any]:
    """Turn our errors into a one-line UsageError: the message, no traceback."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from mediagen_nb.client import MediagenError

        try:
            return method(*args, **kwargs)
        except parsing.OptionError as exc:
            raise UsageError(str(exc)) from None
        except MediagenError as exc:
            raise UsageError(f"mediagen: {exc}") from None

    return wrapper


def _output_name(flags: dict[str, Any]) -> str | None:
    """The ``-o NAME`` asked for; a bad name is refused before anything is sent or charged."""
    name = flags.get("-o") or flags.get("--output")
    if name is not None and (not str(name).isidentifier() or keyword.iskeyword(str(name))):
        raise UsageError(f"-o {name!r}: give a Python variable name")
    return None if name is None else str(name)


def _store(shell: Any, flags: dict[str, Any], value: Any) -> Any:
    name = _output_name(flags)
    if name is not None:
        shell.user_ns[name] = value
    return value


def _model(client: Any, model_id: str) -> Any:
    """The catalog model ``model_id``; an unknown id is one short line with a "did you mean", not 130 ids."""
    from mediagen_nb.client import NotFoundError

    try:
        return client.model(model_id)
    except NotFoundError as exc:
        if not exc.message.startswith("Model not found"):
            raise
        ids = [m.id for m in client.models()]
        close = difflib.get_close_matches(model_id, ids, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UsageError(
            f"mediagen: 404 Model not found: {model_id!r}{hint} (%mediagen models lists all {len(ids)})"
        ) from None


def _record(generation: Any) -> None:
    """Keep the result in this kernel's history and in the local ledger (for ``%mediagen usage``)."""
    from mediagen_nb.batch.ledger import Ledger

    SESSION.remember(generation)
    if generation.status not in ("succeeded", "failed"):
        return
    try:
        ledger = Ledger()
    except (OSError, sqlite3.Error) as exc:  # a read-only folder must not lose a result already paid for
        print(
            f"mediagen: not recorded in the local ledger ({exc}); %mediagen usage will miss it",
            file=sys.stderr,
        )
        return
    try:
        key = f"magic-{generation.id}"
        ledger.started(key, SESSION.client.base_url, {}, generation)
        ledger.finished(key, generation)
    except sqlite3.Error as exc:
        print(
            f"mediagen: not recorded in the local ledger ({exc}); %mediagen usage will miss it",
            file=sys.stderr,
        )
    finally:
        ledger.close()


@magics_class
class MediagenMagics(Magics):
    """Generation, replication and topic-to-video from a cell."""

    # -- %%generate / %generate ------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    @friendly
    def generate(self, line: str, cell: str | None = None) -> Any:
        """%%generate MODEL [--field value ...] [-o NAME] [--estimate] [--no-wait]  (body: the main text)
        %generate MODEL field=value ... [-o NAME] [--estimate] [--no-wait]"""
        words = parsing.split(line)
        if not words:
            raise UsageError("usage: %%generate MODEL [--field value ...] [-o NAME] [--estimate] [--no-wait]")
        client = SESSION.client
        model = _model(client, words[0])
        namespace = self.shell.user_ns
        options = parsing.parse_fields(
            words[1:], model.id, model.properties, GENERATE_FLAGS, namespace, pairs=cell is None
        )
        _output_name(options.flags)
        inputs = options.inputs
        if cell is not None and cell.strip():
            main = parsing.main_text_field(model.properties, model.required)
            if main is None:
                raise UsageError(f"{model.id} has no text input for the cell body; use --field value options")
            inputs[main] = parsing.interpolate(cell.strip("\n"), namespace)
        if options.flags.get("--estimate"):
            return _store(self.shell, options.flags, client.estimate(model.id, inputs))
        live = Live(self.shell, model.id)
        try:
            result = client.run(model.id, inputs)
            live.update(result)  # "processing" from the start, not only after the first long poll
            if not options.flags.get("--no-wait"):
                result = client.wait(result, on_update=live.update)
        except BaseException:
            live.close("stopped", ok=False)
            raise
        failed = result.status == "failed"  # a failed run's creditsSpent is the amount refunded
        money = f"{result.credits_spent} credits" + (" refunded" if failed else "")
        live.close(f"{describe(result)} · {money}", ok=not failed)
        _record(result)
        return _store(self.shell, options.flags, result)

    # -- %replicate -------------------------------------------------------------------------

    @no_var_expand
    @line_magic
    @friendly
    def replicate(self, line: str) -> Any:
        """%replicate URL [--model ID] [--quality q] [--accuracy a] [--clips 0,2,5] [--captions]
        [--audio chunks|original|URL] [--character IMAGE] [--marketing-aspect 9:16|16:9]
        [--estimate] [-o NAME]"""
        words = parsing.split(line)
        if not words or words[0].startswith("-"):
            raise UsageError("usage: %replicate URL [--model ...] [--quality ...] [--clips 0,2,5] [-o NAME]")
        url = str(parsing.interpolate_value(words[0], self.shell.user_ns))
        flags = parsing.parse_fields(words[1:], "replicate", {}, REPLICATE_FLAGS, self.shell.user_ns).flags
        _output_name(flags)
        clips = self._clips(flags.get("--clips"))  # before the analysis charges its 5 credits
        client = SESSION.client
        live = Live(self.shell, "replicate")
        analysis = client.analyze(url)
        live.update(analysis)
        analysis = client.wait_analysis(analysis, on_update=live.update)
        if analysis.status == "failed":
            live.close("analysis failed", ok=False)
            raise UsageError(f"mediagen: the analysis failed: {analysis.error} (its 5 credits were refunded)")
        self._show_plan(analysis, flags.get("--model"), clips)
        if flags.get("--estimate"):
            live.close("analysis ready; nothing rendered (--estimate)")
            return _store(self.shell, flags, analysis)
        run = client.replicate(
            analysis.id,
            model_id=flags.get("--model"),
            quality=flags.get("--quality"),
            accuracy=flags.get("--accuracy"),
            clips=clips,
            character_image=flags.get("--character"),
            captions=True if flags.get("--captions") else None,
            audio=flags.get("--audio"),
            marketing_aspect=flags.get("--marketing-aspect"),
        )
        run = client.wait_replication(run, on_update=live.update)
        live.close(describe(run), ok=run.status == "done")
        SESSION.remember(run)
        return _store(self.shell, flags, run)

    @staticmethod
    def _clips(raw: Any) -> list[int] | None:
        if raw is None:
            return None
        try:
            return [int(part) for part in str(raw).replace(" ", "").split(",") if part]
        except ValueError:
            raise UsageError(f"--clips {raw!r}: give clip indexes counted from 0, like 0,2,5") from None

    def _show_plan(self, analysis: Any, model_id: str | None, clips: list[int] | None) -> None:
        """The blueprint as a table and what rendering will cost, before anything is charged."""
        from mediagen_nb.client import Model

        client = SESSION.client
        models = {m.id: m for m in client.models()}
        model: Model | None = models.get(model_id or "seedance-2-fast-i2v")
        chosen = len(clips) if clips is not None else analysis.clip_count or 0
        price = model.credits if model is not None else None
        cost = (
            f"about {chosen * price} credits at most: {chosen} clips x {price} credits "
            f"({model.id} listed price); accuracy=fast packs clips into fewer generations"
            if price is not None
            else "cost: the model's price per clip"
        )
        if is_rich(self.shell):
            from IPython.display import HTML, display

            blueprint = analysis.blueprint._repr_html_() if analysis.blueprint is not None else ""
            display(HTML(f"{blueprint}<div>{escape(cost)}</div>"))
        else:
            for row in analysis.blueprint.rows() if analysis.blueprint is not None else []:
                print(
                    f"  clip {row['clip']}: {row['start']}-{row['end']} s  {row['camera']}  {row['prompt']}"
                )
            print(cost)

    # -- %%make_video -------------------------------------------------------------------------

    @no_var_expand
    @cell_magic
    @friendly
    def make_video(self, line: str, cell: str) -> Any:
        """%%make_video [--seconds 45] [--gender man|woman] [--look creator|newscaster|pixar] [--voice NAME]
        [--flow STYLE] [--no-captions] [--no-music] [-o NAME]   (body: the topic)"""
        flags = parsing.parse_fields(
            parsing.split(line), "make_video", {}, VIDEO_FLAGS, self.shell.user_ns
        ).flags
        _output_name(flags)
        seconds = flags.get("--seconds")
        try:
            seconds = float(seconds) if seconds is not None else None
        except ValueError:
            raise UsageError(f"--seconds {seconds!r}: give a number from 20 to 180") from None
        client = SESSION.client
        topic = parsing.interpolate(cell.strip(), self.shell.user_ns) or None
        live = Live(self.shell, "make_video")
        job = client.make_video(
            topic,
            seconds=seconds,
            gender=flags.get("--gender"),
            look=flags.get("--look"),
            voice=flags.get("--voice"),
            flow=flags.get("--flow"),
            captions=False if flags.get("--no-captions") else None,
            music=False if flags.get("--no-music") else None,
        )
        job = client.wait_job(job, on_update=live.update)
        live.close(describe(job), ok=job.status == "done")
        SESSION.remember(job)
        return _store(self.shell, flags, job)

    # -- %mediagen ----------------------------------------------------------------------------

    @no_var_expand
    @line_magic
    @friendly
    def mediagen(self, line: str) -> Any:
        """%mediagen models [--kind image|video|audio] [TEXT] | model ID | estimate MODEL field=value ...
        | key | use sandbox|service | usage | history
        | reedit JOB --flow STYLE [--no-captions] [--no-music]"""
        words = parsing.split(line)
        command, rest = (words[0], words[1:]) if words else ("help", [])
        handler = getattr(self, f"_cmd_{command}", None)
        if handler is None:
            close = [c for c in SUBCOMMANDS if c.startswith(command[:2])]
            hint = f"; did you mean {close[0]}?" if close else ""
            raise UsageError(
                f"%mediagen {command}: unknown command{hint} (commands: {', '.join(SUBCOMMANDS)})"
            )
        return handler(rest)

    def _cmd_help(self, words: list[str]) -> None:
        print(self.mediagen.__doc__)

    def _cmd_models(self, words: list[str]) -> Any:
        kind, text = None, []
        pending = iter(words)
        for word in pending:
            if word == "--kind":
                kind = next(pending, None)
            elif word.startswith("-"):
                raise UsageError(
                    f"%mediagen models: unknown option {word}; use --kind image|video|audio [TEXT]"
                )
            else:
                text.append(word)
        search = " ".join(text)
        if kind is not None and kind not in ("image", "video", "audio"):
            raise UsageError(f"--kind {kind!r}: use image, video or audio")
        found = [
            m
            for m in SESSION.client.models()
            if (kind is None or m.output_type == kind)
            and search.lower() in f"{m.id} {m.name} {m.description} {m.group}".lower()
        ]
        return ModelTable(found)

    def _cmd_model(self, words: list[str]) -> Any:
        if len(words) != 1:
            raise UsageError("usage: %mediagen model ID")
        return _model(SESSION.client, words[0])

    def _cmd_estimate(self, words: list[str]) -> Any:
        if not words:
            raise UsageError("usage: %mediagen estimate MODEL field=value ...")
        client = SESSION.client
        model = _model(client, words[0])
        options = parsing.parse_fields(
            words[1:], model.id, model.properties, {}, self.shell.user_ns, pairs=True
        )
        return client.estimate(model.id, options.inputs)

    def _cmd_key(self, words: list[str]) -> None:
        """Ask for a key without echoing it; it goes into the client only, never the notebook."""
        from mediagen_nb.client.config import ENV_BASE_URL

        key = getpass.getpass("MEDIAGEN API key (pk_live_...): ").strip()
        if not key:
            raise UsageError("no key entered; nothing changed")
        base_url = os.environ.get(ENV_BASE_URL) or input("Service base URL (the spec's {base_url}): ").strip()
        client = SESSION.use_service(key, base_url or None)
        del key
        print(
            f"mediagen: using {client.base_url} with key {client.settings.keys[0].fingerprint} (fingerprint)"
        )

    def _cmd_use(self, words: list[str]) -> None:
        if words == ["sandbox"]:
            client = SESSION.use_sandbox()
        elif words == ["service"]:
            client = SESSION.use_service()
        else:
            raise UsageError("usage: %mediagen use sandbox|service")
        print(f"mediagen: now using {'the embedded sandbox' if client.settings.sandbox else client.base_url}")

    def _cmd_usage(self, words: list[str]) -> Any:
        """Credits spent this month, by model, from the local ledger (the service has no balance endpoint)."""
        from mediagen_nb.batch.ledger import Ledger

        now = datetime.now(timezone.utc)
        month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()
        ledger = Ledger()
        try:
            rows = ledger.usage(month, SESSION.client.base_url)
        finally:
            ledger.close()
        return UsageTable(rows, now.strftime("%B %Y"))

    def _cmd_history(self, words: list[str]) -> Any:
        return HistoryTable(list(SESSION.history))

    def _cmd_reedit(self, words: list[str]) -> Any:
        if not words:
            raise UsageError(
                "usage: %mediagen reedit JOB --flow STYLE [--no-captions] [--no-music] [-o NAME]"
            )
        target = parsing.interpolate_value(words[0], self.shell.user_ns)
        if isinstance(target, str) and target in self.shell.user_ns:
            target = self.shell.user_ns[target]
        job_id = getattr(target, "id", target)
        flags = parsing.parse_fields(
            words[1:],
            "reedit",
            {},
            {"--flow": True, "--no-captions": False, "--no-music": False, "-o": True, "--output": True},
            self.shell.user_ns,
        ).flags
        _output_name(flags)
        client = SESSION.client
        live = Live(self.shell, "reedit")
        job = client.reedit(
            str(job_id),
            flow=flags.get("--flow"),
            captions=False if flags.get("--no-captions") else None,
            music=False if flags.get("--no-music") else None,
        )
        job = client.wait_job(job, on_update=live.update)
        live.close(describe(job), ok=job.status == "done")
        return _store(self.shell, flags, job)


class _Table:
    """A small result table: HTML in a notebook, aligned text in a terminal."""

    headers: tuple[str, ...] = ()

    def rows(self) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def cell_html(self, index: int, value: Any) -> str:
        return escape("" if value is None else str(value))

    def __repr__(self) -> str:
        rows = [tuple("" if v is None else str(v) for v in row) for row in self.rows()]
        widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(self.headers)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(self.headers, widths, strict=True))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{escape(h)}</th>" for h in self.headers)
        body = "".join(
            "<tr>" + "".join(f"<td>{self.cell_html(i, v)}</td>" for i, v in enumerate(row)) + "</tr>"
            for row in self.rows()
        )
        return f'<table style="font-size:12px"><tr>{head}</tr>{body}</table>'


class ModelTable(_Table):
    """``%mediagen models``: previews, ids, kinds, groups and prices."""

    headers = ("preview", "id", "name", "kind", "group", "price")

    def __init__(self, models: list[Any]) -> None:
        self.models = models

    def rows(self) -> list[tuple[Any, ...]]:
        return [
            (
                m.preview_url,
                m.id,
                m.name,
                m.output_type,
                m.group,
                f"{m.credits} credits"
                + ("" if m.pricing is None else f" (varies by {', '.join(m.varies_by)})"),
            )
            for m in self.models
        ]

    def cell_html(self, index: int, value: Any) -> str:
        if index == 0:
            from mediagen_nb.client import html

            return html.media(value, "image", width=96)
        return super().cell_html(index, value)


class UsageTable(_Table):
    """``%mediagen usage``: this month's credits by model, from the local ledger."""

    headers = ("model", "runs", "credits")

    def __init__(self, rows: list[tuple[str, int, int]], month: str) -> None:
        self._rows, self.month = rows, month

    def rows(self) -> list[tuple[Any, ...]]:
        total = sum(r[2] or 0 for r in self._rows)
        return [*self._rows, ("total " + self.month, sum(r[1] for r in self._rows), total)]


class HistoryTable(_Table):
    """``%mediagen history``: this kernel's results, newest last."""

    headers = ("#", "kind", "id", "status", "credits", "result")

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def rows(self) -> list[tuple[Any, ...]]:
        return [
            (
                i,
                getattr(item, "model_id", None) or type(item).__name__,
                item.id,
                item.status,
                getattr(item, "credits_spent", None) or getattr(item, "credits_used", None),
                getattr(item, "url", None)
                or getattr(item, "video_url", None)
                or getattr(item, "output_video_url", None),
            )
            for i, item in enumerate(self.items)
        ]

    def cell_html(self, index: int, value: Any) -> str:
        if index == 5 and value:
            from mediagen_nb.client import html

            return html.link(value)
        return super().cell_html(index, value)


def _complete(shell: Any, event: Any) -> list[str]:
    """Tab completion: model ids after %%generate / %generate, then its ``--field`` names."""
    words = event.line.split()
    typing_model = len(words) == 1 or (len(words) == 2 and not event.line.endswith(" "))
    try:
        client = SESSION.client
        if typing_model:
            return [m.id for m in client.models()]
        model = client.model(words[1])
    except Exception:  # completion must never raise into the shell
        return []
    if words[0].startswith("%%"):
        return [f"--{name}" for name in model.properties]
    return [f"{name}=" for name in model.properties]


def load(shell: Any) -> None:
    """Register the magics and their tab completion on ``shell``."""
    shell.register_magics(MediagenMagics)
    for magic in ("%%generate", "%generate"):
        shell.set_hook("complete_command", _complete, str_key=magic)
