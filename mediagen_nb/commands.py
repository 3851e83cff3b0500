"""One-shot commands of ``mediagen``: models, model, estimate, generate, wait, download, usage.

Each uses the one connection (``mediagen_nb.current()``: the environment's key and address, else the
embedded sandbox) and the one ledger, and prints readable text or, with ``--json``, one JSON
document on standard output: the result (a generation that ended ``failed`` is a result, exit 1),
or for any other failure
``{"ok": false, "error": {"type": "ValidationError", "message": "...", "exit": 2}}`` (the message is
also the one line on stderr; notices go to stderr). Exit codes:

- 0: done.
- 1: the work failed and may have cost something: a generation that failed (its credits refunded),
  a start with no usable answer (it may have been charged; the same command again resumes it at no
  charge), a failure after the start was answered (the message names the generation), a wait that
  ran out, outputs that could not be saved, a broken connection, an answer the spec does not allow.
- 2: refused before anything was charged: a mistake to fix first (an option, an input, the key, an
  unknown id or model, the budget, the ledger, an address that cannot be reached).
- 141: the reader of standard output went away (``| head``); nothing more is printed.
"""

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import redirect_stdout, suppress
from pathlib import Path
from typing import Any, NoReturn

from mediagen_nb import agent_cli
from mediagen_nb.protocol import messages
from mediagen_nb.protocol.documents import KINDS

OK, FAILED, REFUSED, INTERRUPTED, PIPE_CLOSED = 0, 1, 2, 130, 141
EXITS = (
    "exit status: 0 done; 1 the work failed (a start with no answer may have been charged: the same "
    "command again resumes it at no charge); 2 refused before anything was charged; 141 the reader of "
    "the output went away (| head)"
)


class Mistake(Exception):
    """Words the command cannot read (argparse's error): exit 2, nothing sent."""


class Parser(argparse.ArgumentParser):
    """argparse, raising :class:`Mistake` instead of exiting, so ``--json`` can say it as JSON too."""

    def error(self, message: str) -> NoReturn:
        raise Mistake(message)


class AfterStart(Exception):
    """A failure after the start was answered: the generation exists (and is paid for, unless reused)."""

    def __init__(self, generation: Any, error: BaseException) -> None:
        money = "reused, no charge" if generation.reused else messages.credits(generation.credits_spent)
        then = "download {} DIR` saves its outputs" if generation.done else "wait {}` follows it"
        super().__init__(
            f"{error}; generation {generation.id} was started ({money}): `mediagen "
            f"{then.format(generation.id)}, and the same command again reuses it at no charge"
        )
        self.error = error


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """The command's result on standard output (only it: with --json, every notice goes to stderr)."""
    out = args.stdout
    print(json.dumps(data, indent=1, ensure_ascii=False, default=str) if args.json else text, file=out)


def _inputs(model: Any, pairs: Sequence[str]) -> dict[str, Any]:
    """``field=value`` words, typed by the model's schema (the magics' own reading)."""
    from mediagen_nb.notebook import parsing

    return parsing.parse_fields(list(pairs), model.id, model.properties, {}, {}, pairs=True).inputs


def _model(client: Any, model_id: str) -> Any:
    """The catalog model ``model_id``; an unknown id is one line with a "did you mean", not 130 ids."""
    from mediagen_nb.client.catalog import model_named

    return model_named(client, model_id, "mediagen models")


def models(args: argparse.Namespace) -> int:
    from mediagen_nb.client import current
    from mediagen_nb.client.catalog import find_models
    from mediagen_nb.client.resources.generation import listed_price

    found = find_models(current().models(), args.text, args.kind)
    rows = [
        {
            "id": m.id,
            "kind": m.output_type,
            "group": m.group,
            "credits": m.credits,
            "varies_by": list(m.varies_by),
            "price": listed_price(m),
        }
        for m in found
    ]
    width = max((len(m.id) for m in found), default=2)
    lines = [f"{m.id:<{width}}  {m.output_type or '':<5}  {listed_price(m)}" for m in found]
    _emit(args, rows, "\n".join(lines) or "no model matches")
    return OK


def model(args: argparse.Namespace) -> int:
    from mediagen_nb.client import current
    from mediagen_nb.client.resources.generation import listed_price

    found = _model(current(), args.id)
    inputs = {name: prop for name, prop in found.properties.items()}
    lines = [f"{found.id}: {found.name} ({found.output_type}, {found.group}), {listed_price(found)}"]
    lines += [
        f"  {name}{' *' if name in found.required else ''}: {prop.get('type', '')}"
        + (f" one of {', '.join(map(str, prop['enum']))}" if "enum" in prop else "")
        + (f" (default {prop['default']})" if "default" in prop else "")
        for name, prop in inputs.items()
    ]
    data = {"id": found.id, "name": found.name, "kind": found.output_type, "credits": found.credits}
    data["price"] = listed_price(found)
    _emit(args, {**data, "input_schema": dict(found.input_schema)}, "\n".join(lines))
    return OK


def _models(client: Any, args: argparse.Namespace) -> list[Any]:
    """The models asked for: ``MODEL`` (several: ``a,b``) or each ``--model``, in their order."""
    from mediagen_nb.notebook.parsing import OptionError

    if args.models:  # --model a --model b: every word is a field
        args.fields = [args.model, *args.fields] if args.model else args.fields
        given = args.models
    else:
        given = [args.model]  # main() refused a command with neither
    ids = list(dict.fromkeys(part.strip() for word in given for part in word.split(",") if part.strip()))
    if not ids:
        raise OptionError(f"{', '.join(given)!r}: give a model id, or several as a,b")
    return [_model(client, model_id) for model_id in ids]


def _shared(models: list[Any], pairs: Sequence[str]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """One ``field=value`` list for several models: each model's input, under its names; the notes."""
    from mediagen_nb.batch.plan import one_input
    from mediagen_nb.notebook import parsing

    union: dict[str, Any] = {}
    for found in models:
        for name, prop in found.properties.items():
            union.setdefault(name, prop)
    label = ", ".join(m.id for m in models)
    values = parsing.parse_fields(list(pairs), label, union, {}, {}, pairs=True).inputs
    return one_input(models, values)


def estimate(args: argparse.Namespace) -> int:
    from mediagen_nb.client import MediagenError, current

    client = current()
    models = _models(client, args)
    if len(models) == 1:
        found = client.estimate(models[0].id, _inputs(models[0], args.fields))
        _emit(
            args,
            {"model": found.model_id, "credits": found.credits, "billing": found.billing},
            f"{found.model_id}: {messages.credits(found.credits)} ({found.billing})",
        )
        return OK
    inputs, notes = _shared(models, args.fields)
    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    for model_id, given in inputs.items():
        try:
            found = client.estimate(model_id, given)
        except MediagenError as exc:  # this model cannot be priced; the others are
            why = f"{type(exc).__name__}: {exc}"
            rows.append({"model": model_id, "credits": None, "error": why})
            lines.append(f"{model_id}: not priced ({why})")
            continue
        rows.append({"model": model_id, "credits": found.credits, "billing": found.billing})
        lines.append(f"{model_id}: {messages.credits(found.credits)} ({found.billing})")
    total = sum(r["credits"] or 0 for r in rows)
    lines += [f"total: {messages.credits(total)}", *(f"note: {note}" for note in notes)]
    _emit(args, {"models": rows, "credits": total, "notes": notes}, "\n".join(lines))
    return OK if all(r["credits"] is not None for r in rows) else REFUSED


def _result(args: argparse.Namespace, generation: Any) -> int:
    """Print a generation (and save its outputs with --download); the exit code of its status."""
    code, data, text = _outcome(args, generation)
    _emit(args, data, text)
    return code


def _outcome(args: argparse.Namespace, generation: Any) -> tuple[int, dict[str, Any], str]:
    """A generation's exit code, JSON document and text (its outputs saved first with --download)."""
    from mediagen_nb.client.resources import wire_of
    from mediagen_nb.client.transport import save

    saved = []
    if getattr(args, "download", None) and generation.status == "succeeded":
        folder = Path(args.download)
        for number, url in enumerate(generation.urls):
            saved.append(str(save(url, _target(folder, generation, number, url))))
    money = "reused, no charge" if generation.reused else messages.credits(generation.credits_spent)
    lines = [f"{generation.id}  {generation.model_id}  {generation.status}  {money}"]
    lines += [f"  {url}" for url in generation.urls] + [f"  saved {path}" for path in saved]
    if generation.error:
        lines.append(f"  error: {generation.error}")
    code = {"succeeded": OK, "failed": FAILED}.get(
        generation.status, OK if getattr(args, "no_wait", False) else FAILED
    )
    return code, {**wire_of(generation), "reused": generation.reused, "saved": saved}, "\n".join(lines)


def _target(folder: Path, generation: Any, number: int, url: str) -> Callable[[str | None], Path]:
    """Where output ``number`` is saved: named by the generation's id, typed by its media type."""
    from mediagen_nb.client import files

    def named(media_type: str | None) -> Path:
        kind = files.extension(generation.output_type, url, media_type)
        return files.place(folder, generation.id, number or None, extension=kind)

    return named


def generate(args: argparse.Namespace) -> int:
    from mediagen_nb.client import MediagenError, current
    from mediagen_nb.client.ledger import via

    client = current()
    models = _models(client, args)
    if len(models) > 1:
        return _generate_all(args, client, models)
    values = _inputs(models[0], args.fields)
    with via("cli"):
        generation = client.run(models[0].id, values, reuse=True, fresh=args.fresh)
    try:
        if not args.no_wait and not generation.done:
            generation = client.wait(generation)
        return _result(args, generation)
    except MediagenError as exc:  # paid for by now: the message must say so, never "refused"
        raise AfterStart(generation, exc) from exc


def _generate_all(args: argparse.Namespace, client: Any, models: list[Any]) -> int:
    """Several models on one input: every start first (each model under its own input names), then
    each waited for; one result (or the reason it did not run) per model, and the worst exit code."""
    from mediagen_nb.client import MediagenError
    from mediagen_nb.client.ledger import via

    inputs, notes = _shared(models, args.fields)
    for note in notes:
        print(f"mediagen generate: note: {note}", file=sys.stderr)
    started: dict[str, Any] = {}
    with via("cli"):
        for model_id, given in inputs.items():
            try:
                started[model_id] = client.run(model_id, given, reuse=True, fresh=args.fresh)
            except (
                MediagenError
            ) as exc:  # this model's start failed (an input it needs ...): the others go on
                started[model_id] = exc
    documents, lines, codes = [], [], []
    for model_id, generation in started.items():
        if isinstance(generation, MediagenError):
            why = f"{type(generation).__name__}: {generation}"
            documents.append({"model": model_id, "error": why})
            lines.append(f"{model_id}: not run: {why}")
            codes.append(exit_code(generation))
            continue
        try:
            if not args.no_wait and not generation.done:
                generation = client.wait(generation)
            code, document, text = _outcome(args, generation)
            codes.append(code)
            documents.append(document)
            lines.append(text)
        except MediagenError as exc:  # paid for by now
            error = AfterStart(generation, exc)
            documents.append({"model": model_id, "id": generation.id, "error": str(error)})
            lines.append(f"{model_id}: {type(exc).__name__}: {error}")
            codes.append(FAILED)
    _emit(args, {"generations": documents, "notes": notes}, "\n".join(lines))
    if all(code == REFUSED for code in codes):
        return REFUSED
    return OK if all(code == OK for code in codes) else FAILED


def _waited(args: argparse.Namespace, then: str) -> Any:
    """The generation ``args.id`` once it ends, waiting at most ``--timeout`` seconds of this clock."""
    from mediagen_nb.client import WaitTimeout, current

    client = current()
    timeout = None if args.timeout is None else client.clock.service(args.timeout)
    try:
        return client.wait(args.id, timeout=timeout)
    except WaitTimeout as exc:
        status = getattr(exc.last, "status", "running")
        raise WaitTimeout(
            f"generation {args.id} is still {status} after {args.timeout:g} s; it goes on: "
            f"`mediagen {then.format(args.id)}` (--timeout S waits longer)",
            exc.last,
        ) from None


def wait(args: argparse.Namespace) -> int:
    return _result(args, _waited(args, "wait {}"))


def download(args: argparse.Namespace) -> int:
    """Save a generation's outputs (waiting for it first if it is still running); never charges."""
    args.download = args.folder
    return _result(args, _waited(args, "download {} DIR"))


def usage(args: argparse.Namespace) -> int:
    from mediagen_nb.batch.usage import usage as read

    frame = read()
    rows = frame.to_dict("records")
    month, service = frame.attrs["month"], frame.attrs["service"]
    lines = [f"{month} on {service}"] + [
        f"  {r['model']:<28} {r['via']:<15} {r['runs']:>5} runs {r['credits']:>7} credits  {r['note']}"
        for r in rows
    ]
    _emit(
        args,
        {"month": frame.attrs["month"], "service": frame.attrs["service"], "rows": rows},
        "\n".join(lines),
    )
    return OK


def parser(prog: str, command: str) -> argparse.ArgumentParser:
    """The arguments of one command."""
    p = Parser(prog=f"{prog} {command}", description=COMMANDS[command][1], epilog=EXITS)
    p.add_argument(
        "--json",
        action="store_true",
        help='print one JSON document, for scripts (a failure: {"ok": false, "error": {...}})',
    )
    if command == "models":
        p.add_argument("--kind", choices=KINDS)
        p.add_argument("text", nargs="*", help="words to look for in the id, name or description")
    elif command == "model":
        p.add_argument("id", help="a model id, e.g. gpt-image-2")
    elif command in ("estimate", "generate"):
        p.add_argument("model", nargs="?", help="a model id, e.g. gpt-image-2 (several: a,b)")
        p.add_argument("fields", nargs="*", metavar="FIELD=VALUE", help="the model's inputs")
        p.add_argument(
            "--model",
            dest="models",
            action="append",
            default=[],
            help="a model (repeat it to compare models: each gets the inputs it has)",
        )
        if command == "generate":
            p.add_argument("--download", type=Path, help="save the outputs in this folder")
            p.add_argument("--no-wait", action="store_true", help="print the started generation and return")
            p.add_argument("--fresh", action="store_true", help="a new one even if this input ran before")
    elif command in ("wait", "download"):
        p.add_argument("id", help="a generation id")
        if command == "wait":
            p.add_argument("--download", type=Path, help="save the outputs in this folder")
        else:
            p.add_argument("folder", nargs="?", type=Path, default=Path("."), help="where (default: here)")
        p.add_argument(
            "--timeout", type=float, metavar="S", help="give up after S seconds (the generation goes on)"
        )
    elif command in agent_cli.COMMANDS:
        agent_cli.arguments(p, command)
    return p


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "models": (models, "list the catalog's models"),
    "model": (model, "one model and its inputs"),
    "estimate": (estimate, "what a run would charge (never charges)"),
    "generate": (generate, "run a model (the same input again: reused, no charge; --fresh for a new one)"),
    "wait": (wait, "wait for a generation to end"),
    "download": (download, "save a generation's outputs in a folder (named by its id)"),
    "usage": (usage, "this month's runs and credits, from the ledger"),
    **agent_cli.COMMANDS,  # balance, mcp-config: the account through its agent (MCP) server
}


def exit_code(error: Exception) -> int:
    """1 for work that failed (and may have cost something), 2 for a refusal before anything was charged."""
    from mediagen_nb.client import errors

    if isinstance(error, errors.ConnectionFailed):
        return FAILED if error.sent else REFUSED  # never sent: the address is the mistake
    failed = (
        errors.GenerationError,
        errors.WorkFailed,
        errors.WaitTimeout,
        errors.DownloadFailed,
        errors.StartUncertain,
        errors.ServiceResponseError,
        errors.ServerError,
        errors.CapacityError,
        errors.RateLimitError,
    )
    return FAILED if isinstance(error, failed) else REFUSED


def fail(args: argparse.Namespace, name: str, kind: str, message: str, code: int) -> int:
    """A failure: one line on stderr and, with ``--json``, its JSON document on stdout; the exit code."""
    print(f"{name}: {kind}: {message}" if kind else f"{name}: {message}", file=sys.stderr)
    if args.json:
        from mediagen_nb.client.errors import failure_document

        document = failure_document(kind or "UsageError", message, code)
        print(json.dumps(document, ensure_ascii=False), file=args.stdout)
    return code


def closed_pipe() -> int:
    """The reader of standard output went away (``mediagen models --json | head -1``): stop quietly.

    Standard output is pointed at the null device, so the interpreter's last flush cannot fail again.
    """
    with suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return PIPE_CLOSED


def main(command: str, argv: list[str]) -> int:
    """Run one command; a failure is one line on stderr (and a JSON document with --json)."""
    from mediagen_nb.client import MediagenError
    from mediagen_nb.notebook.parsing import OptionError

    name = f"mediagen {command}"
    wants_json = argparse.Namespace(json="--json" in argv, stdout=sys.stdout)
    try:
        args = parser("mediagen", command).parse_args(argv)
        if command in ("estimate", "generate") and not args.model and not args.models:
            raise Mistake(
                "the following arguments are required: model (or --model, repeated to compare models)"
            )
    except Mistake as exc:
        parser("mediagen", command).print_usage(sys.stderr)
        return fail(wants_json, name, "", str(exc), REFUSED)
    args.stdout = sys.stdout
    try:
        if args.json:  # notices (the embedded sandbox's, a progress bar) must not mix into the JSON
            with redirect_stdout(sys.stderr):
                return COMMANDS[command][0](args)
        return COMMANDS[command][0](args)
    except OptionError as exc:
        return fail(args, name, "OptionError", str(exc), REFUSED)
    except AfterStart as exc:
        return fail(args, name, type(exc.error).__name__, str(exc), FAILED)
    except MediagenError as exc:
        return fail(args, name, type(exc).__name__, str(exc), exit_code(exc))
    except BrokenPipeError:
        raise  # the reader went away: nobody to tell (the command line stops quietly)
    except KeyboardInterrupt:
        message = "interrupted; a start already sent is in the ledger: the same command again resumes it free"
        return fail(args, name, "KeyboardInterrupt", message, INTERRUPTED)
    except Exception as exc:  # a bug: its traceback follows on stderr, and a script still gets its document
        fail(args, name, type(exc).__name__, str(exc), FAILED)
        raise
