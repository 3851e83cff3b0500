"""``mediagen sandbox sync``: a service's public catalog kept as a dated snapshot, its drift against the
bundled catalog reported, and the snapshot served (``Sandbox(catalog=DIR)``, ``--catalog DIR``).

The "service" is a second sandbox serving a catalog that differs from the bundled one: a model added,
one removed, listed prices changed, a pricing type the sandbox does not know.
"""

import json
import shutil
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from _hostile import data, serve
from _shared import environment, run_mediagen
from _spellings import THEIRS, names_file

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox
from mediagen_nb.sandbox.catalog import snapshot as snapshots
from mediagen_nb.sandbox.sync import SyncError, sync

TIME_SCALE = 600.0
DAY = datetime(2026, 10, 1, 9, 30, tzinfo=timezone.utc)


class Recording(httpx.HTTPTransport):
    """A real HTTP transport that keeps every request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        return super().handle_request(request)


@pytest.fixture
def bundled_snapshot(tmp_path: Path) -> Path:
    """A sync of a sandbox serving the bundled catalog."""
    with Sandbox(time_scale=TIME_SCALE, seed=1) as service:
        assert service.base_url is not None
        sync(service.base_url, tmp_path / "bundled", now=lambda: DAY)
    return tmp_path / "bundled"


def _edit(folder: Path, model_id: str, change: dict[str, Any]) -> None:
    """Change one model's record in a snapshot (the list's and its own answer's)."""
    listed = json.loads((folder / "models.json").read_text())
    for record in listed["models"]:
        if record["id"] == model_id:
            record.update(change)
    (folder / "models.json").write_text(json.dumps(listed))
    detail = snapshots.detail_file(folder, model_id)
    detail.write_text(json.dumps({**json.loads(detail.read_text()), **change}))


def _add(folder: Path, like: str, record: dict[str, Any]) -> None:
    """Add a model to a snapshot, a copy of ``like`` with ``record`` over it."""
    listed = json.loads((folder / "models.json").read_text())
    model = {**next(r for r in listed["models"] if r["id"] == like), **record}
    listed["models"].append(model)
    (folder / "models.json").write_text(json.dumps(listed))
    snapshots.detail_file(folder, record["id"]).write_text(json.dumps(model))


def _remove(folder: Path, model_id: str) -> None:
    listed = json.loads((folder / "models.json").read_text())
    listed["models"] = [r for r in listed["models"] if r["id"] != model_id]
    (folder / "models.json").write_text(json.dumps(listed))
    snapshots.detail_file(folder, model_id).unlink()


@pytest.fixture
def changed_service(bundled_snapshot: Path, tmp_path: Path) -> Iterator[Sandbox]:
    """A second sandbox whose catalog differs from the bundled one."""
    changed = tmp_path / "changed"
    shutil.copytree(bundled_snapshot, changed)
    _edit(changed, "qwen3-tts-flash", {"credits": 4})  # a flat price changed: 2 -> 4
    _edit(changed, "gpt-image-2", {"credits": 10})  # a listed price by option changed: 8 -> 10
    _add(changed, "qwen3-tts-flash", {"id": "zeta-voice-1", "name": "Zeta Voice", "credits": 7})
    mystery = {"type": "per_word", "varies_by": ["text"]}
    _add(changed, "qwen3-tts-flash", {"id": "mystery-voice", "credits": 9, "pricing": mystery})
    _remove(changed, "chatterbox-turbo")
    with Sandbox(time_scale=TIME_SCALE, seed=1, catalog=changed) as service:
        yield service


def test_a_sync_of_the_bundled_catalog_keeps_every_answer_and_finds_no_drift(tmp_path: Path) -> None:
    recording = Recording()
    with Sandbox(time_scale=TIME_SCALE, seed=1) as service:
        source = service.base_url
        assert source is not None
        served, report = sync(source, tmp_path / "snap", transport=recording, now=lambda: DAY)
    assert report.none and report.lines()[-1].endswith("no model added, removed or changed")
    assert len(served.models) == 130 and served.flagged == {} and served.date == "2026-10-01"
    meta = json.loads((tmp_path / "snap" / "snapshot.json").read_text())
    assert meta["date"] == "2026-10-01" and meta["models"] == 130 and meta["source"] == source
    detail = json.loads(snapshots.detail_file(tmp_path / "snap", "gpt-image-2").read_text())
    assert detail["example"]["output"]["type"] == "image"  # each model's own answer, with its example
    assert (
        "Input_gpt-image-2"
        in json.loads((tmp_path / "snap" / "openapi.json").read_text())["components"]["schemas"]
    )
    assert "gpt-image-2" in (tmp_path / "snap" / "llms.txt").read_text()
    assert len(recording.sent) == 1 + 130 + 2  # the list, each model, openapi.json, llms.txt
    assert all("authorization" not in r.headers for r in recording.sent), "the catalog needs no key"


def test_a_sync_of_a_catalog_that_differs_reports_its_drift(changed_service: Sandbox, tmp_path: Path) -> None:
    assert changed_service.base_url is not None
    served, report = sync(changed_service.base_url, tmp_path / "new", now=lambda: DAY)
    assert report.added == ("zeta-voice-1", "mystery-voice") and report.removed == ("chatterbox-turbo",)
    prices = {c.model: (c.before, c.after) for c in report.of("listed price")}
    assert prices == {"qwen3-tts-flash": (2, 4), "gpt-image-2": (8, 10)}  # an added model is no change
    assert report.of("pricing type") == []
    assert set(served.flagged) == {"gpt-image-2", "mystery-voice"}
    assert "per_word" in served.flagged["mystery-voice"] and "unknown" in served.flagged["mystery-voice"]
    text = "\n".join(report.lines())
    assert "+ zeta-voice-1" in text and "- chatterbox-turbo" in text
    assert "~ qwen3-tts-flash: listed price 2 -> 4" in text and "! mystery-voice" in text


def test_a_schema_change_is_reported_input_by_input(bundled_snapshot: Path, tmp_path: Path) -> None:
    changed = tmp_path / "schema"
    shutil.copytree(bundled_snapshot, changed)
    record = json.loads(snapshots.detail_file(changed, "gpt-image-2").read_text())
    schema = record["input_schema"]
    schema["properties"]["quality"]["enum"] = ["low", "medium", "high", "ultra"]
    schema["properties"]["style"] = {"type": "string", "description": "A style."}
    _edit(changed, "gpt-image-2", {"input_schema": schema})
    with Sandbox(time_scale=TIME_SCALE, seed=1, catalog=changed) as service:
        assert service.base_url is not None
        served, report = sync(service.base_url, tmp_path / "again", now=lambda: DAY)
    whats = {c.what: c for c in report.changes if c.model == "gpt-image-2"}
    assert whats["quality.enum"].after == ["low", "medium", "high", "ultra"]
    assert "style" in whats["inputs"].after and "style" not in whats["inputs"].before
    assert "gpt-image-2" in served.flagged  # its price table no longer fits: priced from its listing


def test_the_snapshot_is_served_at_its_prices_with_approximations_flagged(
    changed_service: Sandbox, tmp_path: Path
) -> None:
    """A run costs the snapshot's listed price; an unknown pricing type is charged its listed cost and
    its estimate says the sandbox approximates it; an added model runs."""
    base_url = changed_service.base_url
    assert base_url is not None
    headers = {"Authorization": f"Bearer {changed_service.demo_key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as api:
        listed = {r["id"]: r for r in api.get(path("models")).json()["data"]["models"]}
        assert listed["qwen3-tts-flash"]["credits"] == 4 and "chatterbox-turbo" not in listed
        assert listed["mystery-voice"]["pricing"] == {"type": "per_word", "varies_by": ["text"]}

        def estimate(model_id: str, values: dict[str, Any]) -> dict[str, Any]:
            answer = api.post(path("estimate"), json={"modelId": model_id, "input": values})
            assert answer.status_code == 200, answer.text
            return dict(answer.json()["data"])

        assert estimate("qwen3-tts-flash", {"text": "Hi."})["credits"] == 4
        assert estimate("gpt-image-2", {"prompt": "x", "quality": "medium"})["credits"] == 10
        assert estimate("gpt-image-2", {"prompt": "x", "quality": "high"})["credits"] == 32  # 25 x 10/8
        mystery = estimate("mystery-voice", {"text": "a long text " * 40})
        assert mystery["credits"] == 9 and "approximates this price" in mystery["billing"]
        charged = []
        for model_id in ("mystery-voice", "zeta-voice-1", "qwen3-tts-flash"):
            run = api.post(path("run"), json={"modelId": model_id, "input": {"text": "Hello."}})
            assert run.status_code == 201, run.text
            charged.append(run.json()["data"]["creditsSpent"])
        assert charged == [9, 7, 4]
        ledger = api.get(path("sandbox_ledger")).json()["data"]["entries"]
        assert [e["credits"] for e in ledger if e["kind"] == "charge"] == [9, 7, 4]
        info = api.get(path("sandbox_info")).json()["data"]["catalog"]
        assert info["models"] == 131 and set(info["flagged"]) == {"gpt-image-2", "mystery-voice"}
        refused = api.post(path("run"), json={"modelId": "chatterbox-turbo", "input": {"text": "x"}})
        assert refused.status_code == 400 and "Unknown model 'chatterbox-turbo'" in refused.json()["message"]


def test_the_command_syncs_prints_the_drift_and_serves_the_snapshot(
    changed_service: Sandbox, tmp_path: Path
) -> None:
    assert changed_service.base_url is not None
    env = environment()
    done = run_mediagen(
        "sandbox", "sync", changed_service.base_url, "--out", "snap", "--json", env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["added"] == ["zeta-voice-1", "mystery-voice"] and report["removed"] == ["chatterbox-turbo"]
    assert report["snapshot"] == "snap" and report["models"] == 131
    text = run_mediagen("sandbox", "sync", changed_service.base_url, "--out", "snap", env=env, cwd=tmp_path)
    assert text.returncode == 0 and "- chatterbox-turbo" in text.stdout
    assert "mediagen sandbox --catalog snap" in text.stdout
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    refused = run_mediagen(
        "sandbox", "sync", changed_service.base_url, "--out", "mine", env=env, cwd=tmp_path
    )
    assert refused.returncode == 1 and "no snapshot.json" in refused.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"
    help_text = run_mediagen("sandbox", "--help", env=env, cwd=tmp_path).stdout
    assert "--catalog DIR" in help_text and "--wire NAMES.toml" in help_text


def test_a_catalog_in_another_spelling_needs_its_names_file(tmp_path: Path) -> None:
    with Sandbox(time_scale=TIME_SCALE, seed=1, wire=THEIRS) as service:
        assert service.base_url is not None
        with pytest.raises(SyncError, match=r"--wire NAMES\.toml"):
            sync(service.base_url, tmp_path / "plain")
        names = wire.load(names_file(tmp_path))[0]
        served, report = sync(service.base_url, tmp_path / "theirs", names)
    assert len(served.models) == 130 and report.none and served.flagged == {}
    with Sandbox(time_scale=TIME_SCALE, seed=1, catalog=tmp_path / "theirs") as again:
        assert again.base_url is not None
        record = httpx.get(again.base_url + path("model", id="gpt-image-2"), timeout=30).json()["data"]
    assert record["outputType"] == "image" and record["pricing"]["type"] == "per_option"


def test_a_model_id_that_cannot_name_a_file_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    hostile_record = {"id": "../../escaped", "outputType": "image", "credits": 1, "input_schema": {}}
    with serve() as server:
        server.on("GET", path("models"), data({"models": [hostile_record]}))
        with pytest.raises(SyncError, match="cannot name a file"):
            sync(server.base_url, tmp_path / "out")
        server.on("GET", path("models"), data({"models": []}))
        with pytest.raises(SyncError, match="no list of models"):
            sync(server.base_url, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "escaped.json").exists()
