"""The code blocks of the README and the site's pages, as their readers see them.

Every fenced block names its language. ``python`` blocks are cells, run in order in one fresh IPython
shell per page; ``bash`` blocks are commands, each run as written; ``text`` blocks are what something
prints, and ``toml`` blocks are files, parsed. A block that cannot run in a test (it installs packages,
serves until stopped, or needs a real key) is preceded by ``<!-- not run: WHY -->``, and WHY says what
checks it instead. Importable from any test module, as ``_shared.py`` is.
"""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<why>.*?)\s*-->\s*$", re.S)
LANGUAGES = {"python", "bash", "text", "toml"}


@dataclass(frozen=True)
class Block:
    page: str  # the path from the repository's root
    line: int
    language: str
    code: str
    not_run: str | None  # why, when it is not run

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """The README and every Markdown page of the site."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        indent = match.group("indent")
        body = "".join(line[len(indent) :] + "\n" for line in match.group("body").splitlines())
        before = text[: match.start()].rstrip().rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        found.append(
            Block(
                str(page.relative_to(ROOT)),
                text.count("\n", 0, match.start()) + 1,
                match.group("info").split("{")[0].strip().split(" ")[0],
                body,
                marker.group("why") if marker else None,
            )
        )
    return found


def commands(code: str) -> list[str]:
    """The command lines of a bash block: comments dropped, ``\\`` continuations joined."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [
        line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
