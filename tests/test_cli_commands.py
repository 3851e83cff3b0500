"""``mediagen`` one-shot commands as a user types them, against a sandbox on 127.0.0.1.

Each command is called in this process as a process of its own would run it (``_shared.call_mediagen``:
its environment, folder, output and exit status, none of this process's state), which saves a Python
start per command; what only a process shows (a closed pipe's exit 141, which modules a bare
``mediagen`` loads) runs in one.

They share the one connection (the environment's key and address) and one ledger (MEDIAGEN_LEDGER),
print text or ``--json``, and exit 0 (done), 1 (the work failed: a failed generation, a wait that ran
out, a start whose answer was lost, which the same command resumes free) or 2 (refused, nothing
charged, checked on the sandbox's ledger). With ``--json`` every failure is one JSON document.
"""

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _shared import call_mediagen, environment, fresh_python, unused_port

from mediagen_nb import __version__
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(SandboxConfig(time_scale=600.0, seed=4)) as served:
        yield served


def charges(sandbox: Sandbox) -> list[dict[str, object]]:
    entries = httpx.get(f"{sandbox.base_url}{path('sandbox_ledger')}", timeout=10).json()["data"]["entries"]
    return [e for e in entries if e["kind"] == "charge"]


MEDIAGEN = [sys.executable, "-m", "mediagen_nb.cli"]


def on_sandbox(sandbox: Sandbox, tmp_path: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the sandbox's settings (and ``env``) for its MEDIAGEN_ ones."""
    ledger = str(tmp_path / "ledger.sqlite")
    return environment(**{**sandbox.client_env(), "MEDIAGEN_LEDGER": ledger, **(env or {})})


def mediagen(
    sandbox: Sandbox, tmp_path: Path, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``mediagen ARGV`` on the sandbox, with ``env`` over the sandbox's settings (called in this process)."""
    return call_mediagen(*argv, env=on_sandbox(sandbox, tmp_path, env), cwd=tmp_path)


def test_version_and_completion(sandbox: Sandbox, tmp_path: Path) -> None:
    assert mediagen(sandbox, tmp_path, "--version").stdout.strip() == f"mediagen_nb {__version__}"
    script = mediagen(sandbox, tmp_path, "completion", "bash").stdout
    assert "complete -F _mediagen mediagen" in script and "generate" in script


LIGHT_CHILD = """
import sys
from contextlib import redirect_stdout
from io import StringIO
from mediagen_nb.cli import main
with redirect_stdout(StringIO()):
    for argv in (["completion", "bash"], ["--help"], ["--version"], []):
        try:
            main(argv)
        except SystemExit:
            pass
print(sorted(m for m in ("httpx", "mediagen_nb.client", "pandas", "mcp") if m in sys.modules))
"""


def test_help_version_and_completion_load_no_client(tmp_path: Path) -> None:
    """``mediagen``, ``--help``, ``--version`` and ``completion`` load neither the client nor httpx: 0.08 s
    instead of 0.5 (``from mediagen_nb import agent_cli`` once loaded the whole client first)."""
    loaded = fresh_python(LIGHT_CHILD, cwd=tmp_path)
    assert loaded.strip() == "[]", loaded


def test_models_and_model_as_text_and_json(sandbox: Sandbox, tmp_path: Path) -> None:
    found = json.loads(mediagen(sandbox, tmp_path, "models", "--kind", "audio", "zonos", "--json").stdout)
    assert [m["id"] for m in found] == ["zonos2"] and found[0]["varies_by"] == ["audio"]
    text = mediagen(sandbox, tmp_path, "model", "gpt-image-2").stdout
    assert text.startswith("gpt-image-2: GPT Image 2") and "quality: string one of low, medium, high" in text


def test_estimate_generate_reuse_wait_and_usage(sandbox: Sandbox, tmp_path: Path) -> None:
    priced = json.loads(
        mediagen(
            sandbox, tmp_path, "estimate", "gpt-image-2", "prompt=a heron", "quality=high", "--json"
        ).stdout
    )
    assert priced["credits"] == 25
    before = len(charges(sandbox))
    made = mediagen(
        sandbox,
        tmp_path,
        "generate",
        "gpt-image-2",
        "prompt=a heron",
        "quality=low",
        "--download",
        "out",
        "--json",
    )
    assert made.returncode == 0, made.stderr
    first = json.loads(made.stdout)
    assert first["status"] == "succeeded" and Path(tmp_path / first["saved"][0]).is_file()
    again = mediagen(sandbox, tmp_path, "generate", "gpt-image-2", "prompt=a heron", "quality=low")
    assert again.returncode == 0 and "reused, no charge" in again.stdout and first["id"] in again.stdout
    assert len(charges(sandbox)) == before + 1
    waited = json.loads(mediagen(sandbox, tmp_path, "wait", first["id"], "--json").stdout)
    assert waited["id"] == first["id"] and waited["status"] == "succeeded"
    usage = json.loads(mediagen(sandbox, tmp_path, "usage", "--json").stdout)
    assert {(r["model"], r["via"], r["runs"], r["credits"]) for r in usage["rows"]} >= {
        ("gpt-image-2", "cli", 1, 3)
    }


def test_estimate_and_generate_compare_models_each_on_the_inputs_it_has(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """``estimate a,b`` and ``generate --model a --model b``: each model gets the inputs it has (quality
    is gpt-image-2's alone, said once), one result each; the same command again charges nothing."""
    priced = mediagen(
        sandbox, tmp_path, "estimate", "gpt-image-2,flare-1-swift", "prompt=a kite", "quality=high"
    )
    assert priced.returncode == 0, priced.stderr
    assert priced.stdout.splitlines() == [
        "gpt-image-2: 25 credits (25 credits per image at quality high (low 3, medium 8))",
        "flare-1-swift: 1 credit (1 credit per image)",
        "total: 26 credits",
        "note: flare-1-swift has no input quality: not sent to it",
    ]
    before = len(charges(sandbox))
    argv = ["generate", "--model", "gpt-image-2", "--model", "flare-1-swift", "prompt=a kite", "quality=low"]
    made = mediagen(sandbox, tmp_path, *argv, "--json")
    assert made.returncode == 0, made.stderr
    document = json.loads(made.stdout)
    assert [g["modelId"] for g in document["generations"]] == ["gpt-image-2", "flare-1-swift"]
    assert all(g["status"] == "succeeded" for g in document["generations"])
    assert document["notes"] == ["flare-1-swift has no input quality: not sent to it"]
    fresh = charges(sandbox)[before:]
    assert sorted(c["credits"] for c in fresh) == [1, 3]
    again = mediagen(sandbox, tmp_path, *argv)
    assert again.returncode == 0 and again.stdout.count("reused, no charge") == 2
    assert len(charges(sandbox)) == before + 2
    lacking = mediagen(
        sandbox, tmp_path, "generate", "flare-1-swift,flare-1-kontext-pro", "prompt=a red kite"
    )
    assert lacking.returncode == 1  # one model ran, one could not: the work is not all done
    assert "flare-1-kontext-pro: not run: ValidationError: Missing required field: image" in lacking.stdout
    assert [c["credits"] for c in charges(sandbox)[before + 2 :]] == [1]  # flare-1-swift's alone


def test_a_failed_generation_exits_1_and_a_mistake_exits_2_with_nothing_charged(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    httpx.post(f"{sandbox.base_url}{path('sandbox_faults')}", json={"modelScript": ["fail"]}, timeout=10)
    failed = mediagen(sandbox, tmp_path, "generate", "flare-1-swift", "prompt=a wren that fails")
    assert failed.returncode == 1 and "failed" in failed.stdout
    before = len(charges(sandbox))
    typo = mediagen(sandbox, tmp_path, "generate", "gpt-image-2", "prompt=a heron", "qualty=low")
    assert typo.returncode == 2 and "did you mean quality=?" in typo.stderr
    refused = mediagen(sandbox, tmp_path, "generate", "gpt-image-2", "prompt=a heron", "quality=ultra")
    assert (
        refused.returncode == 2
        and "ValidationError: quality must be one of: low, medium, high" in refused.stderr
    )
    unknown = mediagen(sandbox, tmp_path, "model", "gpt-image-9")
    assert unknown.returncode == 2 and "NotFoundError" in unknown.stderr
    assert len(charges(sandbox)) == before


def test_download_saves_a_started_generation_once_it_ends_and_charges_nothing(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    started = mediagen(sandbox, tmp_path, "generate", "flare-1-swift", "prompt=a kite", "--no-wait", "--json")
    assert started.returncode == 0, started.stderr
    generation = json.loads(started.stdout)["id"]
    before = len(charges(sandbox))
    saved = mediagen(sandbox, tmp_path, "download", generation, "kites")
    assert saved.returncode == 0, saved.stderr
    [file] = (tmp_path / "kites").iterdir()  # named by the id, whole (no .part left)
    assert (
        file.name.startswith(generation)
        and file.stat().st_size > 0
        and f"saved kites/{file.name}" in saved.stdout
    )
    waited = mediagen(sandbox, tmp_path, "wait", generation, "--download", "again", "--json")
    assert json.loads(waited.stdout)["saved"] == [f"again/{file.name}"]
    assert (tmp_path / "again" / file.name).read_bytes() == file.read_bytes()
    assert len(charges(sandbox)) == before
    unknown = mediagen(sandbox, tmp_path, "download", "00000000-0000-4000-8000-000000000000")
    assert unknown.returncode == 2 and "NotFoundError" in unknown.stderr


# -- the cases of issue 20: the command line does what its words say ------------------------------------


def test_models_filters_by_kind_as_the_magic_does(sandbox: Sandbox, tmp_path: Path) -> None:
    """``mediagen models video`` is the catalog's video models (it was a text search: 71 models, two of
    them audio), as ``%mediagen models video`` lists them; no listed figure is shown as a price."""
    from mediagen_nb.protocol import wire

    catalog = httpx.get(f"{sandbox.base_url}{path('models')}", timeout=10).json()["data"][wire.MODELS_LIST]
    videos = [m[wire.MODEL_ID] for m in catalog if m[wire.MODEL_OUTPUT_TYPE] == "video"]
    listed = json.loads(mediagen(sandbox, tmp_path, "models", "video", "--json").stdout)
    assert [m["id"] for m in listed] == videos and len(videos) == 72
    assert [
        m["id"] for m in json.loads(mediagen(sandbox, tmp_path, "models", "audio", "zonos", "--json").stdout)
    ] == ["zonos2"]
    text = mediagen(sandbox, tmp_path, "models", "--kind", "video", "lip-sync").stdout
    assert "infinitetalk  " in text and "priced by the audio's length and resolution" in text
    assert "credits (varies" not in text


def test_an_unknown_model_is_one_line_with_the_nearest_id(sandbox: Sandbox, tmp_path: Path) -> None:
    for argv in (["model", "gpt-imag-2"], ["estimate", "gpt-imag-2", "prompt=a"], ["generate", "gpt-imag-2"]):
        done = mediagen(sandbox, tmp_path, *argv)
        [line] = done.stderr.strip().splitlines()
        assert done.returncode == 2 and "did you mean gpt-image-2?" in line, argv
        assert "flare-1-pro" not in line and "mediagen models lists all 130" in line


def test_wait_and_download_give_up_after_their_timeout_naming_the_command(tmp_path: Path) -> None:
    """``--timeout S`` is seconds of this clock; the message names the command that goes on waiting.
    (A sandbox at x60 here: a hanging generation meets its 15-minute limit only after 15 s.)"""
    with Sandbox(SandboxConfig(time_scale=60.0, seed=5)) as slow:
        httpx.post(f"{slow.base_url}{path('sandbox_faults')}", json={"modelScript": ["hang"]}, timeout=10)
        started = mediagen(slow, tmp_path, "generate", "flare-1-swift", "prompt=slow", "--no-wait", "--json")
        stuck = json.loads(started.stdout)["id"]
        for command, then in ("wait", "wait {}`"), ("download", "download {} DIR`"):
            done = mediagen(slow, tmp_path, command, stuck, "--timeout", "0.5")
            assert done.returncode == 1 and "still processing after 0.5 s; it goes on" in done.stderr
            assert f"`mediagen {then.format(stuck)} (--timeout S waits longer)" in done.stderr
            assert "wait(" not in done.stderr and not list(tmp_path.glob(f"{stuck}*"))


def test_a_closed_pipe_ends_the_command_quietly(sandbox: Sandbox, tmp_path: Path) -> None:
    """``mediagen models --json | head -1``: the reader goes away; no BrokenPipeError traceback."""
    reader = subprocess.Popen(
        [*MEDIAGEN, "models", "--json"],
        env=on_sandbox(sandbox, tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()  # before the command has printed anything
    errors = reader.stderr.read().decode()
    assert reader.wait(timeout=60) == 141 and errors == ""


def test_a_bare_mediagen_lists_its_commands(sandbox: Sandbox, tmp_path: Path) -> None:
    from mediagen_nb.cli import APPS, COMMAND_HELP

    done = mediagen(sandbox, tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("usage: mediagen")
    assert "arguments are required" not in done.stderr
    for name, text in {**APPS, **COMMAND_HELP}.items():
        assert f"  {name}" in done.stderr and text in done.stderr


# -- with --json, every failure is one JSON document on stdout, and its exit code says what it cost -------


def failure(done: subprocess.CompletedProcess[str], kind: str, code: int) -> str:
    """``done`` printed one failure document of ``kind`` and exited ``code``; the message."""
    assert done.returncode == code, done.stderr
    document = json.loads(done.stdout)  # one document, nothing else on stdout
    assert document == {
        "ok": False,
        "error": {"type": kind, "message": document["error"]["message"], "exit": code},
    }
    assert done.stderr.strip().splitlines()[-1].endswith(document["error"]["message"])
    return str(document["error"]["message"])


@pytest.mark.parametrize(
    ("argv", "env", "kind", "says"),
    [
        (["generate"], {}, "UsageError", "the following arguments are required"),
        (["bogus"], {}, "UsageError", "invalid choice: 'bogus'"),
        (["generate", "gpt-image-2", "prompt=a heron", "qualty=low"], {}, "OptionError", "did you mean"),
        (
            ["generate", "gpt-image-2", "prompt=a heron", "quality=ultra"],
            {},
            "ValidationError",
            "quality must",
        ),
        (["model", "gpt-image-9"], {}, "NotFoundError", "Model not found"),
        (["wait", "not-a-uuid"], {}, "ValidationError", "is not a UUID"),
        (["download", "00000000-0000-4000-8000-000000000000"], {}, "NotFoundError", "not found"),
        (
            ["generate", "gpt-image-2", "prompt=a heron"],
            {"MEDIAGEN_API_KEY": "pk_live_wrong"},
            "AuthenticationError",
            "",
        ),
        (
            ["generate", "gpt-image-2", "prompt=an owl", "quality=high"],
            {"MEDIAGEN_BUDGET": "1"},
            "BudgetExceeded",
            "budget",
        ),
        (["generate", "gpt-image-2", "prompt=a heron"], {"MEDIAGEN_LEDGER": "."}, "LedgerError", "ledger"),
        (
            ["models"],
            {"MEDIAGEN_BASE_URL": f"http://127.0.0.1:{unused_port()}"},
            "ConnectionFailed",
            "cannot connect",
        ),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_a_refusal_is_one_json_document_exit_2_and_charges_nothing(
    sandbox: Sandbox, tmp_path: Path, argv: list[str], env: dict[str, str], kind: str, says: str
) -> None:
    before = len(charges(sandbox))
    message = failure(mediagen(sandbox, tmp_path, *argv, "--json", env=env), kind, 2)
    assert says.lower() in message.lower()
    assert len(charges(sandbox)) == before


def test_work_that_failed_is_one_json_document_exit_1(sandbox: Sandbox, tmp_path: Path) -> None:
    # A hung generation ends at its time limit, 15 simulated minutes: 1.5 s at this module's x600, less
    # than two commands take to start; at x60 it outlasts them by far.
    with Sandbox(SandboxConfig(time_scale=60, seed=2)) as slow:
        httpx.post(f"{slow.base_url}{path('sandbox_faults')}", json={"modelScript": ["hang"]}, timeout=10)
        started = mediagen(
            slow, tmp_path, "generate", "flare-1-swift", "prompt=a stuck kite", "--no-wait", "--json"
        )
        stuck = json.loads(started.stdout)["id"]
        waited = mediagen(slow, tmp_path, "wait", stuck, "--timeout", "1", "--json")
    assert f"it goes on: `mediagen wait {stuck}`" in failure(waited, "WaitTimeout", 1)
    (tmp_path / "a-file").write_text("not a folder")
    done = json.loads(
        mediagen(
            sandbox, tmp_path, "generate", "flare-1-swift", "prompt=a kite to save nowhere", "--json"
        ).stdout
    )
    blocked = mediagen(sandbox, tmp_path, "download", done["id"], "a-file/inside", "--json")
    assert "cannot save" in failure(blocked, "DownloadFailed", 1)
    again = mediagen(
        sandbox,
        tmp_path,
        "generate",
        "flare-1-swift",
        "prompt=a kite to save nowhere",
        "--download",
        "a-file",
        "--json",
    )
    message = failure(again, "DownloadFailed", 1)  # after the start: the message names the generation
    assert f"generation {done['id']} was started (reused, no charge)" in message
    assert f"`mediagen download {done['id']} DIR` saves its outputs" in message


def test_an_unanswered_start_exits_1_and_the_same_command_resumes_it_free(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The start is charged but every answer is lost: never "refused, nothing charged" (exit 2)."""
    faults = f"{sandbox.base_url}{path('sandbox_faults')}"
    httpx.post(faults, json={"routes": ["run"], "script": ["drop"] * 6}, timeout=10)
    before = len(charges(sandbox))
    try:
        lost = mediagen(sandbox, tmp_path, "generate", "flare-1-swift", "prompt=a lost kite", "--json")
    finally:
        httpx.post(faults, json={}, timeout=10)
    message = failure(lost, "StartUncertain", 1)
    assert "may have started it" in message and "resumes it at no cost" in message
    assert len(charges(sandbox)) == before + 1  # the sandbox's ledger: it was charged
    again = mediagen(sandbox, tmp_path, "generate", "flare-1-swift", "prompt=a lost kite", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["status"] == "succeeded"
    assert len(charges(sandbox)) == before + 1
