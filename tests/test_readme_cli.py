"""Every claim of the command-line guide is what ``mediagen --help`` says (its parsers, run here).

Issue 20: the README said every command takes ``--json`` (``mediagen sweep --json`` was refused). The
table of "On the command line" is read from README.md: each command it lists is one of ``mediagen``'s
commands, each option it shows is in that command's ``--help``, and the commands that take ``--json``
are exactly those the guide says do. (The table moved from the README to docs/guides/command-line.md,
issue 39; the site's command-line reference is generated from the same parsers, docs/hooks.py.)
"""

import os
import re
from contextlib import redirect_stderr, redirect_stdout, suppress
from functools import cache
from io import StringIO
from pathlib import Path
from unittest import mock

import pytest

from mediagen_nb.cli import main

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "command-line.md"


def section() -> str:
    return GUIDE.read_text(encoding="utf-8").split("# The command line", 1)[1].split("\n## ", 1)[0]


def table() -> dict[str, set[str]]:
    """Each command of the table, with the options its row shows."""
    commands: dict[str, set[str]] = {}
    for line in section().splitlines():
        if not line.startswith("| `mediagen"):
            continue
        first = line.split(" | ", 1)[0]
        for usage in re.findall(r"`mediagen ([^`]+)`", first):
            words = usage.replace("\\|", "|").split()
            name = words[0]
            commands.setdefault(name, set()).update(
                w.strip("[]") for w in words[1:] if w.lstrip("[").startswith("--")
            )
    return commands


def without_json() -> set[str]:
    """The commands the README says print for people only."""
    found = re.search(r"((?:`\w+`, )*`\w+` and `\w+`) print\s+for\s+people\s+only", section())
    assert found, "the README says which commands take no --json"
    return set(re.findall(r"`(\w+)`", found.group(1)))


@cache
def help_of(command: str) -> str:
    """What ``mediagen COMMAND --help`` prints, at a pipe's 80 columns (in this process: the same parsers
    as the command's, without 16 interpreters that each load the client)."""
    said = StringIO()
    # argparse's help exits; `completion --help` returns its refusal
    with (
        redirect_stdout(said),
        redirect_stderr(said),
        mock.patch.dict(os.environ, {"COLUMNS": "80"}),
        suppress(SystemExit),
    ):
        main([command, "--help"])
    return said.getvalue()


def test_the_table_lists_mediagens_own_commands() -> None:
    listed = help_of("--help")
    commands = table()
    assert {"models", "generate", "sweep", "demo", "sandbox", "completion", "--version"} <= set(commands)
    for name in commands:
        assert name == "--version" or re.search(rf"^  {re.escape(name)} ", listed, re.M), name


@pytest.mark.parametrize("name", sorted(set(table()) - {"--version"}))
def test_each_option_of_the_table_is_in_the_commands_help(name: str) -> None:
    shown = help_of(name)
    for option in table()[name]:
        assert option.split("=")[0] in shown, f"mediagen {name} --help has no {option}"


def test_the_commands_that_take_json_are_those_the_readme_says() -> None:
    exceptions = without_json()
    for name in set(table()) - {"--version"}:
        takes = "--json" in help_of(name)
        assert takes == (name not in exceptions), f"mediagen {name}: --json {'taken' if takes else 'refused'}"
