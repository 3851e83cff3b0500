"""``mediagen`` against a hostile server: an id from an answer never becomes a path.

Each command, called in this process as a process of its own would run it (``_shared.call_mediagen``)
with HOME pointed at a folder of the test, talks to the scripted server of ``tests/_hostile.py``. It
answers a start and its reads with ids that are paths (up and out of the download folder, absolute, a
UUID followed by ``/../..``, one into IPython's startup folder) and an output URL ending in ``.py``
whose body would print a marker if IPython ever ran it (a real IPython, started after, shows it never
does). Each command exits non-zero with one line (and one JSON document with ``--json``), and nothing is
written outside the download folder.
"""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _hostile import GENERATION_ID, Answer, Hostile, generation, serve
from _shared import call_mediagen, environment

READS, STARTS = "/v3/playground/v1/generations/", "/v3/playground/v1/run"
MARKER = "PWNED-RAN"
PAYLOAD = f"print({MARKER!r})\n".encode()
STARTUP = "../.ipython/profile_default/startup/PWNED"  # from HOME/out up into HOME/.ipython
HOSTILE_IDS = [
    "../../../../somewhere/PWNED",
    "/an/absolute/path/PWNED4",
    f"{GENERATION_ID}/../../../somewhere/PWNED2",
    STARTUP,
]


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    with serve() as server:
        server.catalog()
        server.on("GET", "/media/", Answer(200, PAYLOAD, {"Content-Type": "text/x-python"}))
        yield server


def mediagen(server: Hostile, home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``mediagen ARGV`` in ``home`` (also its HOME), with the hostile server as the service (called in this
    process)."""
    env = environment(
        HOME=str(home),
        MEDIAGEN_API_KEY="pk_live_hostile_test_key",
        MEDIAGEN_BASE_URL=server.base_url,
        MEDIAGEN_LEDGER=str(home / "ledger.sqlite"),
        MEDIAGEN_LIMITS_URL="memory",
        MEDIAGEN_TIME_SCALE="600",
    )
    return call_mediagen(*argv, env=env, cwd=home)


def written(home: Path) -> set[str]:
    """Every file under ``home`` but the ledger and the caches (relative paths)."""
    return {
        str(p.relative_to(home))
        for p in home.rglob("*")
        if p.is_file() and not p.name.startswith("ledger.sqlite") and ".cache" not in p.parts
    }


def one_failure(done: subprocess.CompletedProcess[str], kind: str) -> dict[str, object]:
    """The command printed one JSON failure document and one line on stderr; the document's error."""
    document = json.loads(done.stdout)
    assert document["ok"] is False and document["error"]["exit"] == done.returncode
    assert document["error"]["type"] == kind
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == f"mediagen {done.args[1]}: {kind}: {document['error']['message']}"
    return dict(document["error"])


@pytest.mark.parametrize("status", ["succeeded", "processing"])  # saved at once, or after a wait
@pytest.mark.parametrize("ident", HOSTILE_IDS)
def test_generate_download_never_writes_where_an_id_points(
    hostile: Hostile, tmp_path: Path, ident: str, status: str
) -> None:
    url = hostile.base_url + "/media/PWNED.py"
    hostile.on("POST", STARTS, generation(ident, url if status == "succeeded" else None, status))
    hostile.on("GET", READS, generation(ident, url))
    done = mediagen(
        hostile, tmp_path, "generate", "gpt-image-2", "prompt=a fox", "--download", "out", "--json"
    )
    assert done.returncode == 1
    error = one_failure(done, "StartUncertain")
    assert "Generation.id" in str(error["message"]) and "resumes it at no cost" in str(error["message"])
    assert written(tmp_path) == set() and hostile.starts() == 1


@pytest.mark.parametrize("command", ["wait", "download"])
@pytest.mark.parametrize("ident", HOSTILE_IDS)
def test_reads_answering_a_path_for_an_id_write_nothing(
    hostile: Hostile, tmp_path: Path, ident: str, command: str
) -> None:
    hostile.on("GET", READS, generation(ident, hostile.base_url + "/media/x.py"))
    argv = ["--download", "out"] if command == "wait" else ["out"]
    done = mediagen(hostile, tmp_path, command, GENERATION_ID, *argv, "--json")
    assert done.returncode == 1
    assert "Generation.id" in str(one_failure(done, "ServiceResponseError")["message"])
    assert written(tmp_path) == set()


def test_nothing_reaches_ipythons_startup_folder_and_ipython_runs_clean(
    hostile: Hostile, tmp_path: Path
) -> None:
    url = hostile.base_url + "/media/PWNED.py"
    hostile.on("POST", STARTS, generation(STARTUP, url))
    hostile.on("GET", READS, generation(STARTUP, url))
    for argv in (
        ["generate", "gpt-image-2", "prompt=a fox", "--download", "out"],
        ["wait", GENERATION_ID, "--download", "out"],
        ["download", GENERATION_ID, "out"],
    ):
        done = mediagen(hostile, tmp_path, *argv)
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / ".ipython").exists()
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("IPYTHONDIR", None)
    shell = subprocess.run(
        [sys.executable, "-m", "IPython", "--quick", "--no-banner", "-c", "print('clean')"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "clean" in shell.stdout and MARKER not in shell.stdout + shell.stderr


def test_a_valid_id_with_a_script_url_is_saved_as_its_media_type(hostile: Hostile, tmp_path: Path) -> None:
    hostile.on("GET", READS, generation(GENERATION_ID, hostile.base_url + "/m/a.py"))
    hostile.on("GET", "/m/", Answer(200, b"\x89PNG\r\n\x1a\n", {"Content-Type": "image/png"}))
    done = mediagen(hostile, tmp_path, "download", GENERATION_ID, "out", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["saved"] == [f"out/{GENERATION_ID}.png"]
    assert written(tmp_path) == {f"out/{GENERATION_ID}.png"}


def test_a_failure_after_the_start_says_the_generation_was_started(hostile: Hostile, tmp_path: Path) -> None:
    hostile.on("POST", STARTS, generation(GENERATION_ID, status="processing"))
    hostile.on("GET", READS, Answer(200, b"<html>", {"Content-Type": "text/html"}))
    done = mediagen(hostile, tmp_path, "generate", "gpt-image-2", "prompt=a fox", "--json")
    assert done.returncode == 1
    message = str(one_failure(done, "ServiceResponseError")["message"])
    assert f"generation {GENERATION_ID} was started (3 credits)" in message
    assert f"mediagen wait {GENERATION_ID}" in message


def test_a_server_answering_html_to_a_read_is_one_failure(hostile: Hostile, tmp_path: Path) -> None:
    hostile.on("GET", READS, Answer(200, b"<html>", {"Content-Type": "text/html"}))
    done = mediagen(hostile, tmp_path, "wait", GENERATION_ID, "--json")
    assert done.returncode == 1 and "is not JSON (text/html)" in str(
        one_failure(done, "ServiceResponseError")["message"]
    )
    reads = [t for m, t in hostile.seen if "/generations/" in t]
    assert len(reads) == 1  # a whole answer that is wrong is not asked again
