"""The ``mediagen`` command. Subcommands import what they need, so ``mediagen --help`` is instant.

``mediagen completion bash`` prints a completion script (``eval "$(mediagen completion bash)"``).
"""

import argparse
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mediagen_nb._version import __version__
from mediagen_nb.commands import COMMANDS, REFUSED, Mistake, Parser, closed_pipe, fail
from mediagen_nb.commands import main as one_shot

APPS = {
    "sandbox": "serve the emulator of the service, or manage the kept one (status, stop, reset)",
    "demo": "the main job: a sweep and the three-step chain, on the embedded sandbox",
    "sweep": "run a spreadsheet of inputs through a model",
    "doctor": "check the configured service with free calls (--paid N --max-credits C also runs some)",
}
COMMAND_HELP = {
    **{name: text for name, (_, text) in COMMANDS.items()},
    "completion": 'print a shell completion script: eval "$(mediagen completion bash)"',
}
COMPLETION = """_mediagen() {
    local words="%s"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$words --version --help" -- "${COMP_WORDS[1]}"))
    else
        COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
    fi
}
complete -F _mediagen mediagen
"""


def top() -> argparse.ArgumentParser:
    listing = "\n".join(f"  {name:<11} {text}" for name, text in {**APPS, **COMMAND_HELP}.items())
    p = Parser(
        prog="mediagen",
        description="mediagen_nb on the command line: every command uses the one connection and ledger.",
        epilog=f"commands:\n{listing}\n\n`mediagen COMMAND --help` for a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"mediagen_nb {__version__}")
    p.add_argument(
        "command", choices=[*APPS, *COMMAND_HELP], metavar="COMMAND", help="one of the commands below"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # a bare `mediagen`: what it can do, not argparse's complaint
        top().print_help(sys.stderr)
        return REFUSED
    if argv[:1] in (["--version"], ["-h"], ["--help"]):
        top().parse_args(argv[:1])  # prints and exits
    try:
        command = top().parse_args(argv[:1]).command
    except Mistake as exc:  # with --json, a script gets its one document for this mistake too
        top().print_usage(sys.stderr)
        return fail(argparse.Namespace(json="--json" in argv, stdout=sys.stdout), "mediagen", "", str(exc), 2)
    try:
        with said_beside(command):
            return run(command, argv[1:])
    except BrokenPipeError:
        return closed_pipe()


@contextmanager
def said_beside(command: str) -> Iterator[None]:
    """Standard output holds the command's result: the toolkit's notices (which sandbox it uses) go to
    standard error, and warnings as one line each. ``completion`` loads no client, so it is left alone."""
    if command == "completion":
        yield
        return
    from mediagen_nb.client.context import notices_to

    before = notices_to(sys.stderr)
    try:
        with one_line_warnings():
            yield
    finally:
        notices_to(before)


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """A warning (the service's spelling learned, a near-miss column) as one line on standard error,
    ``mediagen: warning: ...``, not Python's file, line number and source line."""

    def show(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
        print(f"mediagen: warning: {message}", file=sys.stderr)

    before = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = before


def run(command: str, rest: list[str]) -> int:
    """Run ``command`` with its own arguments ``rest``."""
    if command == "sandbox":
        from mediagen_nb.sandbox.__main__ import main as sandbox

        return sandbox(rest)
    if command == "sweep":
        from mediagen_nb.batch.cli import main as sweep

        return sweep(rest)
    if command == "demo":
        from mediagen_nb.demo import main as demo

        return demo(rest)
    if command == "doctor":
        return doctor(rest)
    if command == "completion":
        if rest != ["bash"]:
            print("mediagen completion: only bash is supported: mediagen completion bash", file=sys.stderr)
            return 2
        print(COMPLETION % " ".join([*APPS, *COMMAND_HELP]))
        return 0
    return one_shot(command, rest)


def doctor(rest: list[str]) -> int:
    """``mediagen doctor``: the configured service checked against what the client expects (a process of
    our own: the MCP SDK it reads make_video's schema with loads without jsonschema's iri grammar)."""
    from mediagen_nb.doctor import main as examine
    from mediagen_nb.runtime import mcp_sdk

    mcp_sdk.own_process()
    return examine(rest)


if __name__ == "__main__":
    raise SystemExit(main())
