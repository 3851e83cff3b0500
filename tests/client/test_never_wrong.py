"""Never silently wrong against the real service (issue 34): topic-to-video in another spelling, both ways;
replays counted as reuse; rules no stricter than the service; advice by the kind of difference.

One sandbox served for the module; each test sets its spelling and resets it. Money is checked against
the sandbox's own ledger.
"""

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from _hostile import Answer, Request, forward, serve

import mediagen_nb  # noqa: F401  (registers df.mediagen)
from mediagen_nb.batch.usage import usage
from mediagen_nb.client import Client, ServiceResponseError, StartUncertain
from mediagen_nb.client.balance import balance
from mediagen_nb.client.catalog import InputIgnored
from mediagen_nb.client.resources.fields import Normalised
from mediagen_nb.client.videos import BodyUnconfirmed, JobDiffers
from mediagen_nb.doctor import main as doctor
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_WIRE
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig
from mediagen_nb.sandbox.sync import sync

TIME_SCALE = 600.0
JOB = {
    "job": {
        "topic": "subject",
        "seconds": "targetSeconds",
        "gender": "presenterGender",
        "look": "presenterStyle",
        "voice": "voiceName",
        "flow": "editStyle",
        "captions": "burnCaptions",
        "music": "musicBed",
        "idempotency_key": "dedupeToken",
        "webhook": "notifyUrl",
    },
    "job_read": {
        "progress": "fraction",
        "script": "narration",
        "portrait": "presenterImageUrl",
        "lipsync": "talkingHeadUrl",
        "credits": "creditsCharged",
        "edit_report": "report",
        "degraded": "simplified",
    },
}
ASKED = {"seconds": 20, "gender": "woman", "look": "pixar", "flow": "karaoke"}  # the job
TIKTOK = "https://www.tiktok.com/@a/video/123"
DEAD_MCP = "http://127.0.0.1:9/mcp"  # an agent server no one answers at: the body names stay unconfirmed


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(SandboxConfig(time_scale=TIME_SCALE, seed=1, allow_private_webhooks=True)) as served:
        yield served


def speak(sandbox: Sandbox, names: wire.Names = wire.DEFAULT) -> str:
    assert sandbox.base_url is not None
    httpx.post(sandbox.base_url + path("sandbox_reset"), timeout=30).raise_for_status()
    sandbox.world.wire = names
    return sandbox.base_url


def client_of(base_url: str, key: str, ledger: Path) -> Client:
    return Client(key, base_url=base_url, time_scale=TIME_SCALE, ledger=str(ledger))


def charged(sandbox: Sandbox) -> int:
    entries = sandbox.world.accounts.ledger
    return sum(e["credits"] * {"charge": 1, "refund": -1}.get(e["kind"], 0) for e in entries)


def jobs_charged(sandbox: Sandbox) -> set[str]:
    return {e["resourceId"] for e in sandbox.world.accounts.ledger if e["kind"] == "charge"}


def spent(ledger: Path, client: Client) -> int:
    return int(usage(client, ledger=str(ledger))["credits"].iloc[-1])


# ------------------------------------------------------------------------------------ topic-to-video


def test_a_job_in_another_spelling_is_made_as_asked_and_read_whole(sandbox: Sandbox, tmp_path: Path) -> None:
    """The start body's names come from the agent server's make_video schema, the read's by their
    shapes: the issue's job is made as asked, its script and credits read, usage the sandbox's charge."""
    speak(sandbox, wire.parse(JOB)[0])
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with client_of(sandbox.base_url or "", sandbox.demo_key, tmp_path / "l.sqlite") as client:
            job = client.make_video("why bees dance", **ASKED)
            done = client.wait_job(job, poll=5)
            figure = spent(tmp_path / "l.sqlite", client)
    assert (done.topic, done.seconds, done.voice, done.flow) == ("why bees dance", 20, "Lucy", "karaoke")
    assert done.script and done.lipsync_video_url and done.portrait_url and done.progress == 1
    assert done.credits_used == charged(sandbox) == figure
    assert not [w for w in said if issubclass(w.category, (JobDiffers, BodyUnconfirmed))]


def test_a_lost_start_under_unconfirmed_names_charges_one_job_at_most(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No agent server to confirm the body's names: the start is sent once; its lost answer is uncertain,
    never retried, and a re-run with the same key is not sent again. The sandbox charged one job at most."""
    speak(sandbox, wire.parse(JOB)[0])
    monkeypatch.setenv("MEDIAGEN_MCP_URL", DEAD_MCP)
    httpx.post(
        (sandbox.base_url or "") + path("sandbox_faults"), json={"script": ["drop"], "routes": ["job_start"]}
    ).raise_for_status()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with client_of(sandbox.base_url or "", sandbox.demo_key, tmp_path / "l.sqlite") as client:
            with pytest.raises(StartUncertain) as lost:
                client.make_video("why bees dance", idempotency_key="bees-1", **ASKED)
            with pytest.raises(StartUncertain) as again:
                client.make_video("why bees dance", idempotency_key="bees-1", **ASKED)
    assert "not sent again" in str(lost.value) and "not sent again" in str(again.value)
    assert [w for w in said if issubclass(w.category, BodyUnconfirmed)]
    assert len(sandbox.world.topic.jobs) <= 1 and len(jobs_charged(sandbox)) <= 1


def test_a_job_made_otherwise_than_asked_is_a_warning_naming_the_fields(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unconfirmed names the service does not read: the job it made shows another topic and length,
    said once naming them; its credits are read, never invented."""
    speak(sandbox, wire.parse(JOB)[0])
    monkeypatch.setenv("MEDIAGEN_MCP_URL", DEAD_MCP)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with client_of(sandbox.base_url or "", sandbox.demo_key, tmp_path / "l.sqlite") as client:
            done = client.wait_job(client.make_video("why bees dance", **ASKED), poll=5)
            figure = spent(tmp_path / "l.sqlite", client)
    [differs] = [str(w.message) for w in said if issubclass(w.category, JobDiffers)]
    assert "topic" in differs and "(asked 'why bees dance')" in differs and "seconds" in differs
    assert "[job]" in differs and ENV_WIRE in differs
    assert done.credits_used == charged(sandbox) == figure


def test_video_options_answer_or_refuse_in_one_line(sandbox: Sandbox, tmp_path: Path) -> None:
    def two_voice_lists(request: Request, answer: Answer) -> Answer:
        body = json.loads(answer.body)
        if request.target.endswith("/options"):
            body["data"] = {"voiceNames": body["data"]["voices"], "otherVoices": body["data"]["voices"]}
        return Answer(answer.status, json.dumps(body).encode(), answer.headers)

    speak(sandbox, wire.parse({"options": {"voices": "choices.voices", "flows": "editing"}})[0])
    with (
        client_of(sandbox.base_url or "", sandbox.demo_key, tmp_path / "l.sqlite") as client,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        found = client.video_options()
    assert found.voices and found.voices["woman"][0] == "Lucy" and "karaoke" in found.flows
    speak(sandbox)
    with serve() as server:
        server.on("GET", "/", forward(sandbox.base_url or "", two_voice_lists))
        with (
            client_of(server.base_url, sandbox.demo_key, tmp_path / "m.sqlite") as client,
            pytest.raises(ServiceResponseError) as refused,
        ):
            client.video_options()
    message = str(refused.value)
    assert "\n" not in message and "[options] voices" in message and ENV_WIRE in message


# ------------------------------------------------------------------------------------------- replays


def test_a_sweep_replayed_from_another_machine_is_reuse_not_spend(sandbox: Sandbox, tmp_path: Path) -> None:
    """The same sweep from a second machine (another ledger) on one account: the service replays each
    row at no charge, and there it is reuse, on every path: the sweep, usage, a run, a job, an analysis
    and a replica."""
    speak(sandbox)
    frame = pd.DataFrame({"prompt": ["a fox", "an owl"], "quality": ["low", "high"]})
    mine, theirs = tmp_path / "mine.sqlite", tmp_path / "theirs.sqlite"
    with client_of(sandbox.base_url or "", sandbox.demo_key, mine) as client:
        frame.mediagen.run("gpt-image-2", client=client, progress=False, ledger=str(mine))
        first = client.run("gpt-image-2", prompt="a heron", idempotency_key="heron-1")
        job = client.wait_job(client.make_video("tides", seconds=20, idempotency_key="tides-1"), poll=5)
        analysis = client.wait_analysis(client.analyze(TIKTOK, idempotency_key="tok-1"), poll=5)
        run = client.wait_replication(
            client.replicate(analysis.id, clips=[0], quality="low", idempotency_key="tok-r"), poll=5
        )
        assert spent(mine, client) == charged(sandbox)
    paid = charged(sandbox)
    with client_of(sandbox.base_url or "", sandbox.demo_key, theirs) as colleague:
        again = frame.mediagen.run("gpt-image-2", client=colleague, progress=False, ledger=str(theirs))
        replayed = colleague.run("gpt-image-2", prompt="a heron", idempotency_key="heron-1")
        video = colleague.make_video("tides", seconds=20, idempotency_key="tides-1")
        read = colleague.analyze(TIKTOK, idempotency_key="tok-1")
        replica = colleague.replicate(analysis.id, clips=[0], quality="low", idempotency_key="tok-r")
        assert spent(theirs, colleague) == 0
        assert balance(colleague, ledger=str(theirs)).ledger_credits == 0
    assert list(again["credits"]) == [3, 25] and charged(sandbox) == paid
    assert replayed.id == first.id and replayed.reused and video.id == job.id and video.reused
    assert read.id == analysis.id and read.reused and replica.id == run.id and replica.reused


# ---------------------------------------------------------------------------- rules and advice kinds


def test_resolution_on_infinitetalk_fast_is_dropped_with_a_note(sandbox: Sandbox, tmp_path: Path) -> None:
    """The spec: infinitetalk-fast is 480p only and ignores resolution. A call copied from infinitetalk
    runs, priced as without it, and says so."""
    speak(sandbox)
    inputs = {"image": "https://example.com/face.png", "audio": "https://example.com/voice.wav"}
    with client_of(sandbox.base_url or "", sandbox.demo_key, tmp_path / "l.sqlite") as client:
        plain = client.estimate("infinitetalk-fast", **inputs).credits
        with pytest.warns(InputIgnored, match="ignores resolution"):
            copied = client.estimate("infinitetalk-fast", **inputs, resolution="720p").credits
    assert copied == plain


@pytest.mark.parametrize(
    ("figure", "said"),
    [(-5, "never negative"), ("25 credits", "a string"), (4242, "listed")],
)
def test_an_estimate_the_spec_rules_out_is_refused_naming_the_field(
    sandbox: Sandbox, tmp_path: Path, figure: Any, said: str
) -> None:
    def priced(request: Request, answer: Answer) -> Answer:
        body = json.loads(answer.body)
        if request.target.endswith("/estimate") and answer.status == 200:
            body["data"]["credits"] = figure
        return Answer(answer.status, json.dumps(body).encode(), answer.headers)

    speak(sandbox)
    with serve() as server:
        for method in ("GET", "POST"):
            server.on(method, "/", forward(sandbox.base_url or "", priced))
        with (
            client_of(server.base_url, sandbox.demo_key, tmp_path / "l.sqlite") as client,
            pytest.raises(ServiceResponseError) as refused,
        ):
            client.estimate("qwen3-tts-flash", text="hello")  # flat-priced, listed at 2
    assert said in str(refused.value) and refused.value.field == "credits"


def test_advice_is_of_the_kind_of_the_difference(sandbox: Sandbox, tmp_path: Path) -> None:
    """A value in another case is read with one warning (no setting); a name one level deeper is named
    as its path, with the names-file line that reads it."""
    speak(sandbox, wire.parse({"serve": {"case": "upper", "numbers": "float"}})[0])
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with client_of(sandbox.base_url or "", sandbox.demo_key, tmp_path / "l.sqlite") as client:
            assert client.model("gpt-image-2").output_type == "image"
            assert len(client.models()) == 130
    notes = [str(w.message) for w in said if issubclass(w.category, Normalised)]
    assert any("'IMAGE'" in n and "no setting needed" in n for n in notes)
    assert len(notes) == len(set(notes)) <= 3  # once each (kind, credits), not once a model

    names_file = tmp_path / "names.toml"
    names_file.write_text('[catalog]\ncredits = "creditCost"\n', encoding="utf-8")
    speak(sandbox, wire.parse({"catalog": {"credits": "billing.creditCost"}})[0])
    client = Client(
        sandbox.demo_key,
        base_url=sandbox.base_url,
        time_scale=TIME_SCALE,
        ledger=str(tmp_path / "l.sqlite"),
        wire=str(names_file),
    )
    with client, pytest.raises(ServiceResponseError) as refused:
        client.models()
    assert 'it is at billing.creditCost: set [catalog] credits = "billing.creditCost"' in str(refused.value)


def test_sandbox_sync_follows_every_page(sandbox: Sandbox, tmp_path: Path) -> None:
    """``mediagen sandbox sync`` of a service paging its list by a cursor it names otherwise: all 130
    models, nothing removed (the issue: "90 removed", 40 served)."""
    names = wire.parse({"catalog": {"next": "cursorNext"}, "serve": {"page_size": 40, "paging": "cursor"}})[0]
    base_url = speak(sandbox, names)
    synced = sync(base_url, tmp_path / "snapshot", names)
    assert len(synced.served) == 130 and not synced.drift.removed and not synced.drift.added


def test_doctor_paid_confirms_the_job_read_within_its_credits(
    sandbox: Sandbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--paid 1 --max-credits 200``: the cheapest model once, then one 20 s job, whose read's names
    are learned and printed; within what the sandbox charged."""
    base_url = speak(sandbox, wire.parse(JOB)[0])
    for name, value in {"MEDIAGEN_BASE_URL": base_url, "MEDIAGEN_API_KEY": sandbox.demo_key}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MEDIAGEN_TIME_SCALE", f"{TIME_SCALE:g}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = doctor(["--json", "--paid", "1", "--max-credits", "200"])
    document = json.loads(capsys.readouterr().out)
    checks = {c["check"]: c for c in document["checks"]}
    assert code == 1 and not checks["paid: topic-to-video"]["ok"]
    assert '[job_read] script = "narration"' in checks["paid: topic-to-video"]["detail"]
    assert (
        'credits = "creditsCharged"' in document["namesFile"] and 'topic = "subject"' in document["namesFile"]
    )
    assert 0 < charged(sandbox) <= 200
