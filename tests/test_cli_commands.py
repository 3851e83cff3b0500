"""``mediagen`` one-shot commands as a user types them: real processes against a sandbox on 127.0.0.1.

They share the one connection (the environment's key and address) and one ledger (MEDIAGEN_LEDGER),
print text or ``--json``, and exit 0 (done), 1 (a failed generation) or 2 (refused, nothing charged).
"""

import json
import os
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


def charges(sandbox: Sandbox) -> list[dict[str, object]]:
    entries = httpx.get(f"{sandbox.base_url}{path('sandbox_ledger')}", timeout=10).json()["data"]["entries"]
    return [e for e in entries if e["kind"] == "charge"]


def mediagen(sandbox: Sandbox, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDIAGEN_")}
    env.update({**sandbox.client_env(), "MEDIAGEN_LEDGER": str(tmp_path / "ledger.sqlite")})
    done = subprocess.run(
        [sys.executable, "-m", "mediagen_nb.cli", *argv],
        env=env,
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
