"""Every magic's own options, declared with IPython's ``@magic_arguments`` and read by :func:`read`.

A magic's options are an argparse parser (as jupysql's); what it does not know is left for the
model's fields (``--field value``, ``field=value``), which :mod:`.parsing` reads against the schema.
Tab completion offers the same options, read from the same parsers.
"""

import re
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

from mediagen_nb.notebook.parsing import OptionError, interpolate_value
from mediagen_nb.notebook.session import SESSION
from mediagen_nb.protocol.documents import KINDS

SUBCOMMANDS = (
    "models",
    "model",
    "estimate",
    "key",
    "use",
    "usage",
    "balance",
    "sign-in",
    "budget",
    "history",
    "reedit",
    "help",
)
# What follows each %mediagen subcommand, for tab completion (model ids are read from the catalog).
SUBCOMMAND_WORDS = {"models": ["--kind", *KINDS], "use": ["sandbox", "service"], "budget": ["off", "balance"]}
_NEEDS_VALUE = re.compile(r"argument (\S+): expected one argument")

# The options several magics share, declared once.
OUTPUT = argument("-o", "--output", help="Keep the result in this variable.")
ESTIMATE = argument("--estimate", action="store_true", help="Say what it costs; nothing is charged.")
FRESH = argument("--fresh", action="store_true", help="Start anew instead of reusing an earlier result.")
NO_RAISE = argument("--no-raise", action="store_true", help="A failed result keeps the cell green.")
NO_CAPTIONS = argument("--no-captions", action="store_true", help="No burned-in captions.")
NO_MUSIC = argument("--no-music", action="store_true", help="No music bed.")
FLOW = argument("--flow", help="The edit style.")


def names(magic: Callable[..., Any]) -> list[str]:
    """Every option string of ``magic``'s parser, in the order they are declared."""
    return [name for action in magic.parser._actions for name in action.option_strings]  # type: ignore[attr-defined]


def read(
    magic: Callable[..., Any], words: list[str], namespace: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """``magic``'s own options among ``words`` (``{{name}}`` values interpolated), and the words it does not
    know, in order (the model's fields, or a mistake the caller names)."""
    parser = magic.parser  # type: ignore[attr-defined]
    parser.allow_abbrev = False  # --est is no --estimate: a field may start like an option
    try:
        known, rest = parser.parse_known_args(words)
    except UsageError as exc:
        needs = _NEEDS_VALUE.match(str(exc))
        if needs is None:
            raise OptionError(str(exc)) from None
        spellings = needs.group(1).split("/")
        typed = next((word for word in words if word in spellings), spellings[0])
        raise OptionError(f"{typed} needs a value") from None
    flags = {
        name: interpolate_value(v, namespace) if isinstance(v, str) else v for name, v in vars(known).items()
    }
    return flags, rest


def _complete_generate(shell: Any, event: Any) -> list[str]:
    """Tab completion: model ids after %%generate / %generate, then its ``--field`` names and options."""
    words = event.line.split()
    typing_model = len(words) == 1 or (len(words) == 2 and not event.line.endswith(" "))
    try:
        client = SESSION.client
        if typing_model:
            return [m.id for m in client.models()]
        model = client.model(words[1])
    except Exception:  # completion must never raise into the shell
        return []
    own = names(_magics(shell).generate)
    if words[0].startswith("%%"):
        return [f"--{name}" for name in model.properties] + own
    return [f"{name}=" for name in model.properties] + own


def _complete_mediagen(shell: Any, event: Any) -> list[str]:
    """Tab completion of ``%mediagen``: its subcommands, then their words (model ids for model/estimate)."""
    words = event.line.split()
    if len(words) == 1 or (len(words) == 2 and not event.line.endswith(" ")):
        return list(SUBCOMMANDS)
    command = words[1]
    if command in ("model", "estimate"):
        try:
            return [m.id for m in SESSION.client.models()]
        except Exception:  # completion must never raise into the shell
            return []
    if command == "reedit":
        return names(_magics(shell)._cmd_reedit)
    return SUBCOMMAND_WORDS.get(command, [])


def _complete_options(magic: str) -> Callable[[Any, Any], list[str]]:
    """Tab completion of the options of the magic named ``magic``."""

    def complete(shell: Any, event: Any) -> list[str]:
        return names(getattr(_magics(shell), magic))

    return complete


def _magics(shell: Any) -> Any:
    """The shell's MediagenMagics."""
    return shell.magics_manager.registry["MediagenMagics"]


def complete_on(shell: Any) -> None:
    """Register tab completion of every magic on ``shell``."""
    for magic in ("%%generate", "%generate"):
        shell.set_hook("complete_command", _complete_generate, str_key=magic)
    shell.set_hook("complete_command", _complete_mediagen, str_key="%mediagen")
    shell.set_hook("complete_command", _complete_options("replicate"), str_key="%replicate")
    shell.set_hook("complete_command", _complete_options("make_video"), str_key="%%make_video")
