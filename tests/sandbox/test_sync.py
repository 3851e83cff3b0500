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
from _hostile import Answer, data, serve
from _shared import call_mediagen, environment
from _spellings import THEIRS, names_file

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime import mcp_sdk
from mediagen_nb.sandbox import Sandbox
from mediagen_nb.sandbox.__main__ import main as sandbox_main
from mediagen_nb.sandbox.catalog import BY_ID
from mediagen_nb.sandbox.catalog import record as public_record
from mediagen_nb.sandbox.catalog import snapshot as snapshots
from mediagen_nb.sandbox.sync import SyncError, sync
from mediagen_nb.sandbox.sync import main as sync_main

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
        served = sync(source, tmp_path / "snap", transport=recording, now=lambda: DAY)
        report = served.drift
    assert report.none and report.lines()[-1].endswith("no model added, removed or changed")
    assert len(served.served) == 130 and served.flagged == {} and served.date == "2026-10-01"
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
    served = sync(changed_service.base_url, tmp_path / "new", now=lambda: DAY)
    report = served.drift
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
        served = sync(service.base_url, tmp_path / "again", now=lambda: DAY)
        report = served.drift
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
    done = call_mediagen(
        "sandbox", "sync", changed_service.base_url, "--out", "snap", "--json", env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["added"] == ["zeta-voice-1", "mystery-voice"] and report["removed"] == ["chatterbox-turbo"]
    assert report["snapshot"] == "snap" and report["models"] == 131
    text = call_mediagen("sandbox", "sync", changed_service.base_url, "--out", "snap", env=env, cwd=tmp_path)
    assert text.returncode == 0 and "- chatterbox-turbo" in text.stdout
    assert "mediagen sandbox --catalog snap" in text.stdout
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    refused = call_mediagen(
        "sandbox", "sync", changed_service.base_url, "--out", "mine", env=env, cwd=tmp_path
    )
    assert refused.returncode == 1 and "no snapshot.json" in refused.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"
    help_text = call_mediagen("sandbox", "--help", env=env, cwd=tmp_path).stdout
    assert "--catalog DIR" in help_text and "--wire NAMES.toml" in help_text


def test_a_catalog_in_another_spelling_needs_its_names_file(tmp_path: Path) -> None:
    with Sandbox(time_scale=TIME_SCALE, seed=1, wire=THEIRS) as service:
        assert service.base_url is not None
        with pytest.raises(SyncError, match=r"--wire NAMES\.toml"):
            sync(service.base_url, tmp_path / "plain")
        names = wire.load(names_file(tmp_path))[0]
        served = sync(service.base_url, tmp_path / "theirs", names)
        report = served.drift
    assert len(served.served) == 130 and report.none and served.flagged == {}
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


def _deep_schema(levels: int) -> bytes:
    """A model's answer whose one input's schema nests ``levels`` objects deep (written as text: Python's
    own JSON writer cannot)."""
    head = '{"success": true, "data": {"id": "deep-model", "outputType": "image", "credits": 1, '
    head += '"input_schema": {"type": "object", "properties": {"prompt": '
    level = '{"type": "object", "description": "a level", "properties": {"inner": '
    leaf = '{"type": "string", "description": "the leaf"}'
    return (head + level * levels + leaf + "}}" * levels + "}}}}").encode()


DEEP_JSON = b'{"success": true, "data": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"


@pytest.mark.parametrize("where", ["schema 300", "schema 3000", "json", "list"])
def test_a_catalog_nested_past_the_bound_is_refused_in_one_line(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A schema nesting 300 or 3,000 objects deep (the first parses, then broke the writer), or an
    answer nesting 200,000 lists deep (a model's or the list's): one line naming the address and the
    bound, no traceback, and nothing kept."""
    record = {"id": "deep-model", "outputType": "image", "credits": 1, "input_schema": {}}
    with serve() as server:
        server.on("GET", path("models"), data({"models": [record]}))
        if where.startswith("schema"):
            levels = int(where.split()[1])
            server.on("GET", path("model", id="deep-model"), Answer(200, _deep_schema(levels)))
        elif where == "json":
            server.on("GET", path("model", id="deep-model"), Answer(200, DEEP_JSON))
        else:
            server.on("GET", path("models"), Answer(200, DEEP_JSON))
        assert sync_main([server.base_url, "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "RecursionError" not in err
    assert "nested more than 64 levels deep, deeper than the sandbox reads" in err
    assert f"GET {server.base_url}{path('model' if where != 'list' else 'models', id='deep-model')}" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("file", ["models.json", "models/gpt-image-2.json", "snapshot.json"])
def test_a_snapshot_nested_past_the_bound_is_refused_in_one_line(
    file: str, bundled_snapshot: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``mediagen sandbox --catalog DIR`` on a snapshot one of whose files nests too deep (edited, or
    written by a sync of an older version): one line naming the file, exit 1, nothing served."""
    (bundled_snapshot / file).write_bytes(DEEP_JSON)
    monkeypatch.setattr(mcp_sdk, "own_process", lambda: None)  # this test process is not the sandbox's
    assert sandbox_main(["--catalog", str(bundled_snapshot)]) == 1
    err = capsys.readouterr().err
    deep = "nested more than 64 levels deep, deeper than the sandbox reads"
    assert err == f"mediagen sandbox: {bundled_snapshot / file}: {deep}\n"
    with pytest.raises(snapshots.SnapshotError, match="nested more than 64 levels"):
        Sandbox(catalog=bundled_snapshot)


class Scripted(httpx.BaseTransport):
    """A service whose catalog has ``count`` models, each answer made when asked (``detail_bytes`` of
    description each); it notes which models' files were already kept when each answer was asked for."""

    def __init__(self, out: Path, count: int, detail_bytes: int = 1000, fail_at: int | None = None) -> None:
        self.out, self.count, self.detail_bytes, self.fail_at = out, count, detail_bytes, fail_at
        self.kept_before: list[int] = []

    def record(self, n: int) -> dict[str, Any]:
        qwen = public_record(BY_ID["qwen3-tts-flash"], "https://service.example")
        return {**qwen, "id": f"voice-{n:03d}"}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url_path = request.url.path
        if url_path == path("models"):
            return httpx.Response(
                200, json={"success": True, "data": {"models": [self.record(n) for n in range(self.count)]}}
            )
        if url_path.startswith(path("models") + "/"):
            n = int(url_path.rsplit("-", 1)[1])
            if n == self.fail_at:
                return httpx.Response(
                    500, json={"statusCode": 500, "message": "oops", "error": "Internal Server Error"}
                )
            kept = self.out / snapshots.STAGING / "models"
            self.kept_before.append(len(list(kept.glob("*.json"))) if kept.is_dir() else -1)
            detail = {**self.record(n), "description": "d" * self.detail_bytes}
            return httpx.Response(200, json={"success": True, "data": detail})
        if url_path == path("openapi"):
            return httpx.Response(200, json={"openapi": "3.1.0"})
        return httpx.Response(200, text="voice-000 audio")


def test_each_model_is_kept_as_its_answer_arrives_and_the_old_snapshot_stays_whole(tmp_path: Path) -> None:
    """Sync holds one model's answer at a time (benchmarks/sync_memory.py measures the memory): each is
    on disk before the next is asked for. A sync that fails midway leaves the snapshot that was there
    as it was, and nothing of its own."""
    out = tmp_path / "snap"
    first = Scripted(out, 5)
    synced = sync("https://service.example", out, transport=first, now=lambda: DAY)
    assert first.kept_before == [0, 1, 2, 3, 4]  # the files of the models before, each time
    assert synced.served == tuple(f"voice-{n:03d}" for n in range(5)) and synced.drift.added == synced.served
    assert sorted(p.name for p in (out / "models").iterdir()) == [f"voice-{n:03d}.json" for n in range(5)]
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(SyncError, match="voice-003 answered 500"):
        sync("https://service.example", out, transport=Scripted(out, 8, fail_at=3), now=lambda: DAY)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert Sandbox(catalog=out).world.catalog.by_id.keys() == set(synced.served)
