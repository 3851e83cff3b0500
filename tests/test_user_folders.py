"""A test session, like a newcomer's commands run with HOME elsewhere, leaves the user's own folders alone.

The suite's root conftest points HOME, XDG_DATA_HOME and XDG_CACHE_HOME at a folder of the session; this
checks that what follows them (the ledger, the kept sandbox, the shared limits) really goes there.
"""

import json
from pathlib import Path

from _shared import environment, run_mediagen

from mediagen_nb.sandbox import kept


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder`` with its size and modification time."""
    if not folder.exists():
        return {}
    found = {}
    for item in folder.rglob("*"):
        stat = item.stat()
        found[str(item.relative_to(folder))] = (stat.st_size, stat.st_mtime_ns)
    return found


def test_a_generate_and_usage_with_home_elsewhere_leave_the_user_folders_untouched(
    tmp_path: Path, user_folders: tuple[Path, Path]
) -> None:
    watched = [folder / "mediagen_nb" for folder in user_folders]
    before = {str(folder): listing(folder) for folder in watched}
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in environment().items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), MEDIAGEN_TIME_SCALE="600")
    ours = home / ".local" / "share" / "mediagen_nb"
    outputs = []
    try:
        for argv in (["generate", "gpt-image-2", "prompt=a heron", "quality=low"], ["usage", "--json"]):
            done = run_mediagen(*argv, env=env, cwd=tmp_path, timeout=120)
            assert done.returncode == 0, done.stdout + done.stderr
            outputs.append(done.stdout)
    finally:
        kept.stop(ours / "sandbox")
    assert {str(folder): listing(folder) for folder in watched} == before, "the user's folders changed"
    assert (ours / "ledger.sqlite").is_file() and (ours / "sandbox" / "state.sqlite").is_file()
    assert (home / ".cache" / "mediagen_nb" / "limits.sqlite").is_file()
    usage = json.loads(outputs[1])
    assert [(row["model"], row["runs"]) for row in usage["rows"] if row["model"] != "total"] == [
        ("gpt-image-2", 1)
    ]
