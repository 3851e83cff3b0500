"""Every magic's options, one table each, read by the parser and by tab completion."""

from typing import Any

from mediagen_nb.notebook.session import SESSION

OUTPUT_FLAGS = {"-o": True, "--output": True}
GENERATE_FLAGS = {
    **OUTPUT_FLAGS,
    "--estimate": False,
    "--no-wait": False,
    "--fresh": False,
    "--no-raise": False,
    "--extra-inputs": False,
}
REPLICATE_FLAGS = {
    **OUTPUT_FLAGS,
    "--model": True,
    "--quality": True,
    "--accuracy": True,
    "--clips": True,
    "--captions": False,
    "--audio": True,
    "--character": True,
    "--marketing-aspect": True,
    "--estimate": False,
    "--analyze": False,
    "--fresh": False,
    "--no-raise": False,
}
VIDEO_FLAGS = {
    **OUTPUT_FLAGS,
    "--seconds": True,
    "--gender": True,
    "--look": True,
    "--voice": True,
    "--flow": True,
    "--no-captions": False,
    "--no-music": False,
    "--estimate": False,
    "--fresh": False,
    "--no-raise": False,
}
REEDIT_FLAGS = {**OUTPUT_FLAGS, "--flow": True, "--no-captions": False, "--no-music": False}
SUBCOMMANDS = ("models", "model", "estimate", "key", "use", "usage", "budget", "history", "reedit", "help")
KINDS = ("image", "video", "audio")
# What follows each %mediagen subcommand, for tab completion (model ids are read from the catalog).
SUBCOMMAND_WORDS = {
    "models": ["--kind", *KINDS],
    "use": ["sandbox", "service"],
    "budget": ["off"],
    "reedit": list(REEDIT_FLAGS),
}


def _complete_generate(shell: Any, event: Any) -> list[str]:
    """Tab completion: model ids after %%generate / %generate, then its ``--field`` names and flags."""
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
        return [f"--{name}" for name in model.properties] + list(GENERATE_FLAGS)
    return [f"{name}=" for name in model.properties] + list(GENERATE_FLAGS)


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
    return SUBCOMMAND_WORDS.get(command, [])


def _complete_options(options: dict[str, bool]) -> Any:
    """Tab completion of a magic's options."""

    def complete(shell: Any, event: Any) -> list[str]:
        return list(options)

    return complete


def complete_on(shell: Any) -> None:
    """Register tab completion of every magic on ``shell``."""
    for magic in ("%%generate", "%generate"):
        shell.set_hook("complete_command", _complete_generate, str_key=magic)
    shell.set_hook("complete_command", _complete_mediagen, str_key="%mediagen")
    shell.set_hook("complete_command", _complete_options(REPLICATE_FLAGS), str_key="%replicate")
    shell.set_hook("complete_command", _complete_options(VIDEO_FLAGS), str_key="%%make_video")
