"""``mediagen doctor``: the configured service checked, for free, against what the client expects.

Against the sandbox every check passes (exit 0); against the sandbox in another spelling without the
names file it fails naming the setting, and passes with it; against an odd server it fails naming
what differed. ``--record`` keeps every exchange with the key scrubbed, and a recording served back
is a replay test that passes. ``--paid`` spends only within ``--max-credits`` and checks the charge,
the replay and a refund against the sandbox's own ledger.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _hostile import Answer, Request, data, serve
from _shared import call_mediagen, environment
from _spellings import THEIRS, names_file

from mediagen_nb.doctor import main
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_WIRE
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig
from mediagen_nb.sandbox.accounts import DEMO_KEY

TIME_SCALE = 600.0


@pytest.fixture
def pointed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Point this process's client at a sandbox (as its user would, with the environment)."""

    def at(sandbox: Sandbox, **more: str) -> None:
        for name, value in {**sandbox.client_env(), **more}.items():
            monkeypatch.setenv(name, value)

    yield at


def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """``mediagen doctor --json ARGV`` in this process: its exit status and its document."""
    code = main(["--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def failed(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in document["checks"] if not c["ok"]}


def test_against_the_sandbox_every_check_passes(served: Sandbox, tmp_path: Path) -> None:
    done = call_mediagen("doctor", env=environment(**served.client_env()), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].endswith("passed, 0 failed") and all("✗" not in line for line in lines)
    for check in (
        "catalog: models",
        "openapi.json",
        "llms.txt",
        "refusal: wrong key",
        "topic-to-video: options",
    ):
        assert any(f"✓ {check}" in line for line in lines), check
    assert sum("✓ estimate:" in line for line in lines) == 5  # flat and the four pricing types


def test_records_every_exchange_with_keys_scrubbed(
    served: Sandbox, pointed: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pointed(served)
    code, document = doctor(capsys, "--record", str(tmp_path / "rec"))
    assert code == 0 and document["ok"] and document["namesFile"] is None
    files = sorted((tmp_path / "rec").iterdir())
    assert len(files) == 23  # one a request (the agent server's tools/list goes through the MCP SDK)
    text = "".join(f.read_text() for f in files)
    assert DEMO_KEY not in text and "pk_live_mediagen_doctor_not_a_key" not in text and "pk_live_***" in text
    first = json.loads(files[0].read_text())
    assert first["request"]["path"] == path("models") and first["request"]["headers"] == {}
    assert first["response"]["status"] == 200
    keyed = [json.loads(f.read_text()) for f in files if "refusal-unknown-generation" in f.name]
    assert keyed[0]["request"]["headers"] == {"Authorization": "Bearer pk_live_***"}


def replaying(recording: Path) -> Any:
    """A route answering each request with the recorded answer of the same method, path, body and key."""
    table = {}
    for file in sorted(recording.iterdir()):
        saved = json.loads(file.read_text())
        sent = saved["request"]
        table[(sent["method"], sent["path"], json.dumps(sent["body"], sort_keys=True), sent["key"])] = saved

    def route(request: Request) -> Answer:
        body = json.loads(request.body) if request.body else None
        keyed = "authorization" in request.headers
        target = request.target.split("?", 1)[0]
        saved = table[(request.method, target, json.dumps(body, sort_keys=True), keyed)]["response"]
        raw = saved["body"] if isinstance(saved["body"], str) else json.dumps(saved["body"])
        kind = "text/plain" if isinstance(saved["body"], str) else "application/json"
        return Answer(saved["status"], raw.encode(), {"Content-Type": kind})

    return route


def test_a_recording_served_back_is_a_replay_test_that_passes(
    served: Sandbox,
    pointed: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    told = tmp_path / "names.toml"  # the start body's names told: the agent server is not recorded
    told.write_text(wire.dump(wire.DEFAULT, frozenset(wire.TABLES["job"])), encoding="utf-8")
    pointed(served, **{ENV_WIRE: str(told)})
    assert doctor(capsys, "--record", str(tmp_path / "rec"))[0] == 0
    with serve() as server:
        for method in ("GET", "POST"):
            server.on(method, "/", replaying(tmp_path / "rec"))
        monkeypatch.setenv("MEDIAGEN_BASE_URL", server.base_url)
        code, document = doctor(capsys)
    assert code == 0, failed(document)


def test_another_spelling_without_the_names_file_fails_naming_the_setting(
    pointed: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Sandbox(SandboxConfig(time_scale=TIME_SCALE, seed=1, wire=THEIRS)) as theirs:
        pointed(theirs)
        code, document = doctor(capsys)
        assert code == 1
        wrong = failed(document)
        assert '[catalog] credits = "creditCost"' in wrong["catalog: models"]["detail"]
        assert ENV_WIRE in wrong["catalog: models"]["fix"]
        assert '[estimate] credits = "cost"' in wrong["estimate: by_option (gpt-image-2)"]["detail"]
        assert "voiceNames" in wrong["topic-to-video: options"]["detail"]
        assert '[job] topic = "subject"' in wrong["topic-to-video: body names"]["detail"]
        assert (
            'credits = "creditCost"' in document["namesFile"] and 'topic = "subject"' in document["namesFile"]
        )
        passed = [c for c in document["checks"] if c["ok"]]
        assert passed and all(c["fix"] is None for c in passed)  # issue 39: no fix on a passed check
        pointed(theirs, **{ENV_WIRE: str(names_file(tmp_path))})
        code, document = doctor(capsys)
    assert code == 0, failed(document)
    assert all(c["fix"] is None for c in document["checks"])


def test_an_odd_server_fails_naming_what_differed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server with the catalog but the wrong words elsewhere: every refusal it words otherwise, its
    missing documents and an estimate without credits are failed checks, each saying what it sent."""
    with serve() as server:
        server.catalog()
        server.on("POST", path("estimate"), Answer(400, b'"Bad Request"'))
        server.on("GET", path("generation", id="x").removesuffix("x"), data({"unexpected": True}))
        server.on("GET", path("job_options"), data({"voices": {}, "looks": [], "flows": [], "genders": []}))
        monkeypatch.setenv("MEDIAGEN_BASE_URL", server.base_url)
        monkeypatch.setenv("MEDIAGEN_API_KEY", "pk_live_odd_server_key")
        code, document = doctor(capsys)
    assert code == 1
    wrong = failed(document)
    assert "answered 404" in wrong["openapi.json"]["detail"] and "llms.txt" in wrong
    assert "the client expects 400" in wrong["refusal: unknown model"]["detail"]
    assert "answered 200" in wrong["refusal: unknown generation"]["detail"]
    assert "answered 200" in wrong["refusal: wrong key"]["detail"]
    assert "Bad Request" in wrong["estimate: flat price (gpt-image-2)"]["detail"]
    assert "catalog: models" not in wrong and "topic-to-video: options" not in wrong
    assert "pk_live_odd_server_key" not in json.dumps(document)


def test_paid_checks_charge_replay_and_refund_within_the_cap(
    served: Sandbox, pointed: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pointed(served)
    assert served.base_url is not None
    script = {"modelScript": ["ok", "fail"]}  # the second run fails and is refunded
    httpx.post(served.base_url + path("sandbox_faults"), json=script).raise_for_status()
    code, document = doctor(capsys, "--paid", "3", "--max-credits", "3")
    checks = {c["check"]: c for c in document["checks"]}
    assert code == 0, failed(document)
    assert checks["paid: charge"]["detail"] == "3 runs of flare-1-swift: 1 credit each, as listed"
    assert "answered 200, no second charge" in checks["paid: replay"]["detail"]
    assert checks["paid: refund"]["detail"].startswith("1 of 3 runs failed, each refunded 1 credit")
    ledger = served.world.accounts.ledger  # the runs go at once: the refund may come before a charge
    assert sorted(e["kind"] for e in ledger) == ["charge", "charge", "charge", "refund"]
    refunded = [e["resourceId"] for e in ledger if e["kind"] == "refund"]
    assert refunded and set(refunded) <= {e["resourceId"] for e in ledger if e["kind"] == "charge"}


def test_paid_is_refused_before_anything_is_spent(
    served: Sandbox, pointed: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pointed(served)
    assert main(["--paid", "5", "--max-credits", "4"]) == 2
    assert "cost 5 credits, over --max-credits 4: none started" in capsys.readouterr().err
    assert main(["--paid", "2"]) == 2
    assert main(["--paid", "50", "--max-credits", "500"]) == 2
    assert served.world.accounts.ledger == []
