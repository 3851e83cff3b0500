"""``mediagen`` one-shot commands as a user types them: real processes against a sandbox on 127.0.0.1.

They share the one connection (the environment's key and address) and one ledger (MEDIAGEN_LEDGER),
print text or ``--json``, and exit 0 (done), 1 (the work failed: a failed generation, a wait that ran
out, a start whose answer was lost, which the same command resumes free) or 2 (refused, nothing
charged, checked on the sandbox's ledger). With ``--json`` every failure is one JSON document.
"""

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mediagen_nb import __version__
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(SandboxConfig(time_scale=600.0, seed=4)) as served:
        yield served


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def charges(sandbox: Sandbox) -> list[dict[str, object]]:
    entries = httpx.get(f"{sandbox.base_url}{path('sandbox_ledger')}", timeout=10).json()["data"]["entries"]
    return [e for e in entries if e["kind"] == "charge"]


def mediagen(
    sandbox: Sandbox, tmp_path: Path, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``mediagen ARGV`` in its own process, on the sandbox, with ``env`` over the sandbox's settings."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEDIAGEN_")}
    environ.update(
        {**sandbox.client_env(), "MEDIAGEN_LEDGER": str(tmp_path / "ledger.sqlite"), **(env or {})}
    )
    done = subprocess.run(
        [sys.executable, "-m", "mediagen_nb.cli", *argv],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def test_version_and_completion(sandbox: Sandbox, tmp_path: Path) -> None:
    assert mediagen(sandbox, tmp_path, "--version").stdout.strip() == f"mediagen_nb {__version__}"
    script = mediagen(sandbox, tmp_path, "completion", "bash").stdout
    assert "complete -F _mediagen mediagen" in script and "generate" in script


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
    httpx.post(f"{sandbox.base_url}{path('sandbox_faults')}", json={"modelScript": ["hang"]}, timeout=10)
    started = mediagen(
        sandbox, tmp_path, "generate", "flare-1-swift", "prompt=a stuck kite", "--no-wait", "--json"
    )
    stuck = json.loads(started.stdout)["id"]
    waited = mediagen(sandbox, tmp_path, "wait", stuck, "--timeout", "60", "--json")
    assert "can be read again" in failure(waited, "WaitTimeout", 1)
    (tmp_path / "a-file").write_text("not a folder")
    done = json.loads(
        mediagen(sandbox, tmp_path, "generate", "flare-1-swift", "prompt=a kite", "--json").stdout
    )
    blocked = mediagen(sandbox, tmp_path, "download", done["id"], "a-file/inside", "--json")
    assert "cannot save" in failure(blocked, "DownloadFailed", 1)
    again = mediagen(
        sandbox, tmp_path, "generate", "flare-1-swift", "prompt=a kite", "--download", "a-file", "--json"
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
