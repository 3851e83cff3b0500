"""Run the notebooks of ``notebooks/`` and keep their executed copies here, for the site.

    .venv/bin/python docs/notebooks/refresh.py

Each runs as a newcomer's first run would (a fresh kept sandbox and ledger, no key), at time x600 so the
seven take a few minutes, with previews inlined (``MEDIAGEN_PREVIEW=inline``: images, audio and video as
``data:`` URIs) so the pages show every output with no sandbox behind them. The temporary folders in
the outputs read as the user's own. ``tests/test_site.py`` checks that each copy holds the cells of its
notebook and no error: run this again after changing a notebook. The notebooks themselves stay
committed without outputs (tests/test_notebooks_stripped.py); the suite runs them with nbval.
"""

import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE.parents[1] / "notebooks"
SHOWN_AS = "~/.local/share"  # what the kept sandbox's temporary data folder reads as in the outputs


def main(names: list[str]) -> int:
    from mediagen_nb.sandbox import kept

    for source in sorted(NOTEBOOKS.glob("[0-9]*.ipynb")):
        if names and source.stem not in names:
            continue
        with tempfile.TemporaryDirectory(prefix="mediagen-site-") as scratch:
            home = Path(scratch)
            data = home / ".local" / "share"
            env = {
                "HOME": str(home),
                "XDG_DATA_HOME": str(data),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "MEDIAGEN_TIME_SCALE": "600",
                "MEDIAGEN_PREVIEW": "inline",
                "MEDIAGEN_LEDGER": str(home / "ledger.sqlite"),
            }
            saved = {name: os.environ.get(name) for name in [*env, "MEDIAGEN_API_KEY", "MEDIAGEN_BASE_URL"]}
            os.environ.update(env)
            os.environ.pop("MEDIAGEN_API_KEY", None)
            os.environ.pop("MEDIAGEN_BASE_URL", None)
            try:
                notebook = nbformat.read(source, as_version=4)
                work = home / "work"
                work.mkdir()
                NotebookClient(notebook, timeout=600, resources={"metadata": {"path": str(work)}}).execute()
            finally:
                kept.stop(data / "mediagen_nb" / "sandbox")
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
            text = nbformat.writes(notebook).replace(str(data), SHOWN_AS).replace(str(home), "~")
        (HERE / source.name).write_text(text, encoding="utf-8")
        print(f"{source.name}: {len(text) // 1024} KB", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
