"""MkDocs hooks of the site (``hooks:`` in mkdocs.yml): pages made from the code, and links into the
repository checked.

- ``reference/cli.md``: every ``mediagen`` command's ``--help``, from the parsers themselves.
- ``reference/api/NAME.md``: a page per public class of ``mediagen_nb`` (its ``__all__``), and one for
  its functions, rendered from the docstrings by mkdocstrings; their nav entries are added here, so a new
  public class gets its page without editing mkdocs.yml.
- A link from a page to a file of the repository outside ``docs/`` (``../tests/test_docs.py``, which works
  when the page is read on a forge) is checked to exist (else the strict build fails) and shown as the
  file's path, as the site has no address of the repository to link to.
"""

import inspect
import logging
import os
import re
from contextlib import redirect_stderr, redirect_stdout, suppress
from io import StringIO
from pathlib import Path
from typing import Any
from unittest import mock

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.mediagen")
ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CLI_PAGE = "reference/cli.md"
API = "reference/api"
REPO_LINK = re.compile(r"(!?)\[([^\]]*)\]\(((?:\.\./)+[^)#\s]+)(#[^)]*)?\)")


def public() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(name, dotted path where it is defined) of mediagen_nb's public classes, and of its functions."""
    import mediagen_nb

    classes, functions = [], []
    for name in mediagen_nb.__all__:
        if name.startswith("_"):
            continue
        value = getattr(mediagen_nb, name)
        where = f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', name)}"
        if inspect.isclass(value):
            classes.append((name, where))
        elif callable(value):
            functions.append((name, where))
    return classes, functions


def on_config(config: Any) -> Any:
    """The nav's "API reference" section: an overview, the functions, then a page per public class."""
    classes, _ = public()
    pages: list[Any] = [f"{API}/index.md", {"Functions": f"{API}/functions.md"}]
    pages += [{name: f"{API}/{name}.md"} for name, _ in sorted(classes)]
    for section in config["nav"]:
        if isinstance(section, dict) and "Reference" in section:
            section["Reference"].append({"API reference": pages})
    return config


def on_files(files: Files, config: Any) -> Files:
    classes, functions = public()
    files.append(File.generated(config, CLI_PAGE, content=cli_reference()))
    listing = "\n".join(f"- [`{name}`]({name}.md)" for name, _ in sorted(classes))
    overview = (
        "# API reference\n\nEverything public is importable from the top: `import mediagen_nb as mg`, then "
        "`mg.Client`, `mg.template`, ... Generated from the docstrings.\n\n"
        f"- [Functions](functions.md): {', '.join(f'`{name}`' for name, _ in functions)}\n\n"
        f"Classes:\n\n{listing}\n"
    )
    files.append(File.generated(config, f"{API}/index.md", content=overview))
    described = "\n\n".join(f"::: {where}\n    options:\n      heading: {name}" for name, where in functions)
    files.append(File.generated(config, f"{API}/functions.md", content=f"# Functions\n\n{described}\n"))
    for name, where in classes:
        files.append(File.generated(config, f"{API}/{name}.md", content=class_page(name, where)))
    return files


def class_page(name: str, where: str) -> str:
    """A class's page: its docstring and members; for the clients, each operation of the service too.

    ``Client.run`` and ``AsyncClient.run`` are one operation written once (``operation(Generations.run)``
    in mediagen_nb/client/clients.py), bound when read: mkdocstrings reads the source, so the page names
    each one with its signature as the client shows it and the docstring of the function that does it.
    """
    import mediagen_nb
    from mediagen_nb.client.clients import operation

    cls = getattr(mediagen_nb, name)
    page = f"# {name}\n\n::: {where}\n"
    ops = {
        n: v for klass in reversed(cls.__mro__) for n, v in vars(klass).items() if isinstance(v, operation)
    }
    if not ops:
        return page
    returns = "returns a coroutine of what is shown" if name == "AsyncClient" else "returns what is shown"
    page += (
        "\n## Operations\n\nEach is one operation of the service, shared by `Client` and `AsyncClient` "
        f"({returns}).\n"
    )
    for op_name, op in ops.items():
        fn = op.fn
        page += (
            f"\n### `{op_name}`\n\n```python\n{op_name}{short(str(op.__signature__))}\n```\n\n"
            f"::: {fn.__module__}.{fn.__qualname__}\n    options:\n      show_signature: false\n"
            "      show_root_heading: false\n      show_root_toc_entry: false\n"
        )
    return page


def short(signature: str) -> str:
    """A signature with its types named as a reader writes them (``Model``, not its module's path)."""
    return re.sub(r"\b(?:mediagen_nb|collections\.abc|typing)(?:\.\w+)*\.(?=\w)", "", signature)


def cli_reference() -> str:
    """Every command's help, as ``mediagen COMMAND --help`` prints it at 100 columns."""
    from mediagen_nb.cli import APPS, COMMAND_HELP, main

    parts = [
        "# Command-line reference\n",
        "What `mediagen --help` and each `mediagen COMMAND --help` print, generated from the parsers when "
        "the site is built. The [command-line guide](../guides/command-line.md) tells what they are for.\n",
        section("mediagen", ["--help"], main),
    ]
    for command in [*APPS, *COMMAND_HELP]:
        if command != "completion":
            parts.append(section(f"mediagen {command}", [command, "--help"], main))
    for sub in ("status", "stop", "reset", "sync"):
        parts.append(section(f"mediagen sandbox {sub}", ["sandbox", sub, "--help"], main))
    return "\n".join(parts)


def section(title: str, argv: list[str], main: Any) -> str:
    said = StringIO()
    with (
        redirect_stdout(said),
        redirect_stderr(said),
        mock.patch.dict(os.environ, {"COLUMNS": "100"}),
        suppress(SystemExit),
    ):
        main(argv)
    return f"## `{title}`\n\n```text\n{said.getvalue().rstrip()}\n```\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Links to files of the repository outside docs/: checked, then shown as their path."""
    here = (DOCS / page.file.src_uri).parent

    def shown(match: re.Match[str]) -> str:
        image, text, target = match.group(1), match.group(2), match.group(3)
        found = (here / target).resolve()
        if not found.is_relative_to(ROOT) or found.is_relative_to(DOCS):
            return match.group(0)  # a page of the site, or outside the repository: mkdocs checks it
        if not found.exists():
            log.warning("%s links %s, which is not a file of the repository", page.file.src_uri, target)
            return match.group(0)
        path = found.relative_to(ROOT).as_posix()
        if image:
            log.warning("%s shows %s from outside docs/: copy it into docs/", page.file.src_uri, path)
        return text if text.strip("`") == path else f"{text} (`{path}`)"

    return REPO_LINK.sub(shown, markdown)
