"""The magics in a real IPython ``InteractiveShell``, against a sandbox served on 127.0.0.1.

Each test gets a fresh shell with ``%load_ext mediagen_nb`` and a session client on its own sandbox
(time x600, seed 1). Every request the client sends is recorded, so a test can tell that a refused
option or a client-side validation sent nothing. Errors must arrive as IPython UsageErrors (one
short line, the service's message), never as a traceback.
"""

import getpass
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest
from _shell import TIME_SCALE, Notebook, assert_short
from _wait import wait_until
from IPython.core.completer import provisionalcompleter
from IPython.core.displaypub import CapturingDisplayPublisher

from mediagen_nb.client import Estimate, Generation, Model, ReplicationRun, ShortVideoJob, settings
from mediagen_nb.notebook.live import Live, describe
from mediagen_nb.notebook.magics import HistoryTable, ModelTable, UsageTable
from mediagen_nb.notebook.session import SESSION
from mediagen_nb.protocol.paths import PATHS
from mediagen_nb.runtime.clock import ManualClock

TIKTOK = "https://www.tiktok.com/@demo/video/7301"  # a platform link: the sandbox downloads nothing


# -- %%generate: the cell body is plain text -----------------------------------------------------


BODIES = {
    "apostrophes": "A cat's hat, the dog's bone and O'Brien's 'quoted' words",
    "double_quotes": 'She said "hello" and then \\"escaped\\" it',
    "json": '{"style": "noir", "shots": [{"camera": "dolly"}, {"camera": "pan"}], "n": 2}',
    "braces": "a {single} brace, {name}, {0} and {} stay as typed; {{ 1 + 2 }} is no name",
    "ipython_syntax": "$HOME and ${x} and !ls and %time stay; so does a trailing backslash \\",
    "multiline": "line one\n  indented line two\n\nline four after a blank",
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_cell_body_is_sent_untouched(nb: Notebook, body: str) -> None:
    """Apostrophes, quotes, JSON, braces and IPython's own syntax reach the service as typed."""
    value = nb.ok(f"%%generate gpt-image-2 -o img\n{body}\n")
    assert isinstance(value, Generation) and value.status == "succeeded"
    assert nb.ns["img"] is value  # stored in NAME and returned as the cell's value
    assert nb.generation(value).input["prompt"] == body
    assert value.url and value.output_type == "image"
    assert "<img" in value._repr_html_()  # the media, shown inline when the cell ends


def test_body_fills_the_models_main_text_field(nb: Notebook) -> None:
    """zonos2 has no ``prompt``: the body goes to ``text``; options fill the other fields."""
    nb.ns["voice"] = f"{nb.sandbox.base_url}/_sandbox/samples/voice.wav"
    speech = nb.ok('%%generate zonos2 --audio {{voice}} --clean_speaker_background true\nIt\'s "me" {again}.')
    sent = nb.generation(speech).input
    assert sent["text"] == 'It\'s "me" {again}.'
    assert sent["audio"] == nb.ns["voice"]
    assert sent["clean_speaker_background"] is True


def test_option_line_is_shell_quoted_and_typed_by_the_schema(nb: Notebook) -> None:
    """Quoted option values keep apostrophes; numbers and booleans follow the schema's types."""
    value = nb.ok(
        '%%generate flare-1-dev --negative_prompt "no gore, don\'t blur" --seed 7 '
        "--guidance_scale 3.5 --enable_safety_checker false\nA calm lake at dawn"
    )
    sent = nb.generation(value).input
    assert sent["prompt"] == "A calm lake at dawn"
    assert sent["negative_prompt"] == "no gore, don't blur"  # moderation skips what to keep out
    assert (sent["seed"], sent["guidance_scale"], sent["enable_safety_checker"]) == (7, 3.5, False)
    message = nb.usage_error("%%generate flare-1-dev --seed seven\na lake")
    assert message == "--seed: 'seven' is not a whole number"


def test_interpolation_expands_once_with_attributes(nb: Notebook) -> None:
    """``{{name}}`` and ``{{obj.url}}`` expand exactly once; a Generation stands for its URL."""
    first = nb.ok("%%generate gpt-image-2 -o shot\na red door")
    nb.ns["style"] = "{{secret}}"  # text that looks like a placeholder is not expanded again
    nb.ns["secret"] = "must not appear"
    value = nb.ok("%%generate gpt-image-2\n{{style}} | {{ shot.url }} | {{shot}} | {{shot.model_id}}")
    assert nb.generation(value).input["prompt"] == f"{{{{secret}}}} | {first.url} | {first.url} | gpt-image-2"


def test_unknown_name_is_an_error_and_nothing_is_sent(nb: Notebook) -> None:
    nb.ns["portrait"] = "x"
    message = nb.usage_error("%%generate gpt-image-2\na photo of {{portrat}}")
    assert "portrat" in message and "did you mean {{portrait}}" in message
    message = nb.usage_error("%%generate gpt-image-2\n{{portrait.url}}")
    assert "str has no attribute 'url'" in message
    nb.ns.setdefault("open", open)  # IPython 8+ puts its own helper there (7 does not): never a suggestion
    message = nb.usage_error("%%generate gpt-image-2\na photo of {{nope}}")
    assert message == "{{nope}}: there is no variable named 'nope'"
    assert nb.sent("run") == [] and nb.sent("estimate") == []


@pytest.mark.spellings
def test_line_form_builds_a_three_step_chain(nb: Notebook) -> None:
    """Face, cloned voice, lip-sync; the last step has no text input, so it uses the line form."""
    nb.ns["voice"] = f"{nb.sandbox.base_url}/_sandbox/samples/voice.wav"
    face = nb.ok('%%generate gpt-image-2 --aspect_ratio 2:3 -o face\nA presenter\'s portrait, "studio" light')
    speech = nb.ok('%generate zonos2 text="Hi, it\'s {me}" audio={{voice}} -o speech')
    talk = nb.ok(
        "%generate infinitetalk --image {{face.url}} --audio {{speech.url}} --resolution 480p -o talk"
    )
    assert nb.generation(face).input["aspect_ratio"] == "2:3"
    assert nb.generation(speech).input["text"] == "Hi, it's {me}"
    sent = nb.generation(talk).input
    assert (sent["image"], sent["audio"], sent["resolution"]) == (face.url, speech.url, "480p")
    assert talk.status == "succeeded" and talk.output_type == "video"
    assert [nb.ns[n] for n in ("face", "speech", "talk")] == [face, speech, talk]


def test_line_form_quoting_and_ipython_expansion_is_off(nb: Notebook) -> None:
    nb.ns["x"] = "EXPANDED"
    value = nb.ok('%generate gpt-image-2 prompt="it\'s {x} and $x" --quality low')
    assert nb.generation(value).input["prompt"] == "it's {x} and $x"
    assert nb.generation(value).input["quality"] == "low"
    message = nb.usage_error("%generate gpt-image-2 prompt=don't")
    assert message.startswith("could not read the options") and "don't blur" in message
    assert nb.usage_error("%generate gpt-image-2 a cat").startswith("unexpected 'a'")


def test_unknown_option_lists_the_fields_with_a_suggestion(nb: Notebook) -> None:
    message = nb.usage_error("%%generate gpt-image-2 --qualty high\na cat")
    assert message.startswith("unknown option --qualty for gpt-image-2; did you mean --quality?")
    assert "fields: --prompt --quality --aspect_ratio" in message
    assert "-o" in message and "--estimate" in message
    message = nb.usage_error("%generate gpt-image-2 prompt=cat aspect=1:1")
    assert message == (
        "unknown input aspect for gpt-image-2; did you mean aspect_ratio=? "
        "(inputs: prompt, quality, aspect_ratio)"
    )
    assert nb.usage_error("%%generate gpt-image-2 --quality\na cat") == "--quality needs a value"
    assert nb.sent("run") == []


def test_unknown_model_is_one_short_line(nb: Notebook) -> None:
    message = nb.usage_error("%%generate gpt-image-3\na cat")
    assert_short(message, "404 Model not found: 'gpt-image-3'; did you mean gpt-image-2")
    assert_short(nb.usage_error("%mediagen model zonos3"), "404 Model not found: 'zonos3'")
    assert nb.sent("run") == []


def test_bad_output_name_is_refused_before_anything_is_charged(nb: Notebook) -> None:
    before = nb.balance()
    assert nb.usage_error("%%generate gpt-image-2 -o 1st\na cat") == "-o '1st': give a Python variable name"
    assert nb.usage_error("%generate gpt-image-2 prompt=cat -o class").startswith("-o 'class'")
    assert nb.sent("run") == [] and nb.balance() == before


@pytest.mark.spellings
def test_estimate_shows_the_price_and_runs_nothing(nb: Notebook) -> None:
    before = nb.balance()
    price = nb.ok("%%generate gpt-image-2 --quality high --estimate -o price\na cat's portrait")
    assert isinstance(price, Estimate) and price.credits == 25 and nb.ns["price"] is price
    assert nb.ok("%mediagen estimate gpt-image-2 prompt=cat quality=low").credits == 3
    assert len(nb.sent("estimate")) == 2 and nb.sent("run") == []
    assert nb.sandbox.world.generations.items == {} and nb.balance() == before


def test_no_wait_returns_the_running_generation(nb: Notebook) -> None:
    value = nb.ok("%%generate gpt-image-2 --no-wait -o later\na cat")
    assert value.status == "processing" and nb.ns["later"] is value
    assert nb.sent("generation") == []


def test_live_status_then_the_result_in_a_kernel(nb: Notebook, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a kernel one display updates in place: status and elapsed seconds, then a final line."""
    monkeypatch.setattr(nb.shell, "kernel", object(), raising=False)
    publisher = CapturingDisplayPublisher()
    monkeypatch.setattr(nb.shell, "display_pub", publisher)
    value = nb.ok("%%generate gpt-image-2\na cat")
    lines = [o["data"]["text/html"] for o in publisher.outputs if "text/html" in o.get("data", {})]
    ids = {o.get("transient", {}).get("display_id") for o in publisher.outputs}
    assert len(ids) == 1 and None not in ids  # one display, updated in place
    assert "gpt-image-2: starting · 0 s" in lines[0]
    assert any("gpt-image-2: processing · " in line for line in lines)
    assert "&#10003; gpt-image-2: succeeded · 8 credits · " in lines[-1]
    assert value.status == "succeeded"


def test_live_line_ticks_and_its_final_line_stays(nb: Notebook, monkeypatch: pytest.MonkeyPatch) -> None:
    """The elapsed seconds tick once a second; after ``close`` the ticker never redraws."""
    monkeypatch.setattr(nb.shell, "kernel", object(), raising=False)
    publisher = CapturingDisplayPublisher()
    monkeypatch.setattr(nb.shell, "display_pub", publisher)
    clock = ManualClock()
    live = Live(nb.shell, "job", clock=clock)
    assert live._ticker is not None
    live.update(Generation(id="g", model_id="m", status="processing"))
    wait_until(clock.pending, what="the ticker waiting for its next second")
    clock.advance(1.0)
    wait_until(
        lambda: any("job: processing · 1 s" in o["data"]["text/html"] for o in publisher.outputs),
        what="the tick of the first second",
    )
    wait_until(clock.pending, what="the ticker waiting for its next second")
    live.close("done")
    drawn = len(publisher.outputs)
    clock.advance(1.2)  # the ticker's next second comes after the close
    live._ticker.thread.join(timeout=15)
    assert not live._ticker.thread.is_alive(), "the ticker goes on after close"
    assert len(publisher.outputs) == drawn  # no tick drew over the final line
    assert "&#10003; job: done · 1 s" in publisher.outputs[-1]["data"]["text/html"]


def test_a_failed_generation_fails_its_cell_in_one_line_and_is_kept(
    nb: Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generation that fails fails its cell (so Run All stops there) with one line naming the model
    and the reason; the failed result is still in ``-o NAME``; nothing was charged. ``--no-raise``
    keeps the cell green and returns the failed generation."""
    monkeypatch.setattr(nb.shell, "kernel", object(), raising=False)
    publisher = CapturingDisplayPublisher()
    monkeypatch.setattr(nb.shell, "display_pub", publisher)
    before = nb.balance()
    nb.post("sandbox_faults", {"modelScript": ["fail"]})
    kind, message = nb.error_kind("%%generate gpt-image-2 -o bad\na cat")
    assert kind == "GenerationFailed" and message.startswith("gpt-image-2 failed: Model failed")
    assert "credits were refunded" in message and "\n" not in message
    value = nb.ns["bad"]
    assert value.status == "failed" and value.error and value.error in value._repr_html_()
    assert "&#10007; gpt-image-2: failed · 8 credits refunded" in publisher.outputs[-1]["data"]["text/html"]
    assert nb.balance() == before
    nb.post("sandbox_faults", {"modelScript": ["fail"]})
    kept = nb.ok("%%generate gpt-image-2 --no-raise -o bad\na dog")
    assert kept.status == "failed" and nb.ns["bad"] is kept


# -- the spec's errors: one short line each, the service's message -------------------------------


def _hang_then_forget(nb: Notebook) -> None:
    """The generation starts, then the sandbox forgets it (reset) while the magic waits: 404."""
    nb.post("sandbox_faults", {"modelScript": ["hang"]})

    def reset() -> None:  # 10 s was too short for the Colab-pinned run at nice 19 on a loaded machine
        wait_until(lambda: nb.sandbox.world.generations.items, 120, "the generation to start")
        nb.post("sandbox_reset", {})

    threading.Thread(target=reset, daemon=True).start()


SERVICE_ERRORS: dict[str, tuple[Callable[[Notebook], Any], str, str]] = {
    "400_moderation": (
        lambda nb: None,
        "a gore scene",
        "400 Prompt rejected by content moderation",
    ),
    "400_credits": (
        lambda nb: nb.post("sandbox_account", {"balance": 0}),
        "a cat",
        "400 Not enough credits",
    ),
    "401_revoked_key": (
        lambda nb: nb.use_key(nb.new_key(state="revoked")),
        "a cat",
        "401 Invalid, expired, or revoked API key",
    ),
    "401_unknown_key": (
        lambda nb: nb.use_key("pk_live_not_a_key_of_this_sandbox"),
        "a cat",
        "401 Invalid, expired, or revoked API key",
    ),
    "403_suspended": (
        lambda nb: nb.post("sandbox_account", {"suspended": True}),
        "a cat",
        "403 Your account has been suspended.",
    ),
    "404_generation": (_hang_then_forget, "a cat", "404 Generation not found"),
    "429_key_cap": (
        lambda nb: nb.use_key(nb.new_key(monthlyCap=1)),
        "a cat",
        "429 API key monthly credit limit reached (1 credits).",
    ),
    "503_capacity": (
        lambda nb: nb.post("sandbox_faults", {"script": ["503"] * 6, "routes": ["run"]}),
        "a cat",
        "503 The model is at capacity",
    ),
}


@pytest.mark.parametrize(("setup", "body", "expected"), SERVICE_ERRORS.values(), ids=SERVICE_ERRORS.keys())
def test_service_errors_are_short_messages(
    nb: Notebook, setup: Callable[[Notebook], Any], body: str, expected: str
) -> None:
    setup(nb)
    before = nb.balance()
    assert_short(nb.usage_error(f"%%generate gpt-image-2 -o out\n{body}"), expected)
    if expected.startswith("404"):  # the 404 case reset the sandbox (and its balance)
        # it had started: the cell keeps the started generation (its id), though it can no longer be read
        assert nb.ns["out"].status == "processing" and nb.ns["out"].id
    else:
        assert "out" not in nb.ns, "a refused start makes nothing to keep"
        assert nb.balance() == before, "a refused or failed start must cost nothing"


def test_capacity_errors_are_retried_then_refunded(nb: Notebook) -> None:
    nb.post("sandbox_faults", {"script": ["503"] * 6, "routes": ["run"]})
    assert_short(nb.usage_error("%%generate gpt-image-2\na cat"), "503 The model is at capacity")
    starts = nb.sent("run", "POST")
    assert len(starts) == 6  # the retry policy's six attempts, then the message
    assert len({r.headers["Idempotency-Key"] for r in starts}) == 1  # one key: at most one charge
    entries = nb.control.get(PATHS["sandbox_ledger"]).json()["data"]["entries"]
    assert sum(e["credits"] if e["kind"] == "refund" else -e["credits"] for e in entries) == 0


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        (
            "%%generate gpt-image-2 --quality ultra\na cat",
            "quality must be one of: low, medium, high",
        ),
        (
            "%generate infinitetalk image=https://x.test/a.png audio=https://x.test/a.wav resolution=1080p",
            "resolution must be one of: 480p, 720p",
        ),
        ("%generate gpt-image-2 quality=high", "Missing required field: prompt"),
        (
            "%mediagen estimate gpt-image-2 prompt=cat aspect_ratio=4:3",
            "aspect_ratio must be one of",
        ),
    ],
    ids=["enum_cell", "enum_line", "missing_field", "enum_estimate"],
)
def test_client_side_validation_sends_nothing(nb: Notebook, cell: str, expected: str) -> None:
    assert_short(nb.usage_error(cell), expected)
    assert nb.sent("run") == [] and nb.sent("estimate") == []
    free = (PATHS["models"], PATHS["llms_txt"], PATHS["openapi"])  # the catalog, checked against llms.txt
    assert all(r.url.path.startswith(free) for r in nb.requests)  # catalog reads only


def test_usage_lines(nb: Notebook) -> None:
    assert nb.usage_error("%generate").startswith("usage: %%generate MODEL")
    assert nb.usage_error("%replicate --model p-video").startswith("usage: %replicate URL")
    assert nb.usage_error("%mediagen model").startswith("usage: %mediagen model ID")
    message = nb.usage_error("%mediagen modles")
    assert "did you mean models?" in message and "commands: models, model, estimate" in message
    assert nb.usage_error("%mediagen models --kind photo") == "--kind 'photo': use image, video or audio"


# -- %replicate, %%make_video, %mediagen reedit ------------------------------------------------------


def test_replicate_estimate_pays_nothing_then_analyze_once_and_reuse(
    nb: Notebook, capsys: pytest.CaptureFixture[str]
) -> None:
    """--estimate before any analysis pays nothing and says what the analysis costs; --analyze pays
    the 5 credits once; --estimate then prices the render from that analysis; the render reuses it."""
    nb.ns["link"] = TIKTOK
    assert nb.ok("%replicate {{link}} --clips 0,2 --estimate -o plan") is None
    out = capsys.readouterr().out
    assert "the analysis costs 5 credits" in out and "Nothing was charged" in out
    assert nb.sent("analyze") == [] and nb.charges() == []

    analysis = nb.ok("%replicate {{link}} --clips 0,2 --analyze -o plan")
    assert nb.ns["plan"] is analysis and analysis.status == "ready" and analysis.blueprint is not None
    shown = capsys.readouterr().out
    assert shown.count("clip 0:") == 1 and "{'framing'" not in shown  # the camera in words, once
    assert "<table" not in analysis._repr_html_()  # the analysis card does not repeat the blueprint
    again = nb.ok("%replicate {{link}} --clips 0,2 --estimate -o plan")
    assert again.id == analysis.id and again.reused
    assert "about 40 credits: 2 clips x 20 credits" in capsys.readouterr().out
    assert nb.sent("replicate") == [] and nb.sandbox.world.replication.runs == {}
    assert [(e["resource"], e["credits"]) for e in nb.charges()] == [("analysis", 5)]

    run = nb.ok("%replicate {{link}} --clips 0,2 -o rep")  # reuses the analysis: no second 5 credits
    assert run.status == "done" and run.analysis_id == analysis.id
    shown = capsys.readouterr().out  # the plan of a reused analysis: its price, not its table again
    assert "render: about" in shown and "clip 0:" not in shown
    assert len(nb.sent("analyze")) == 1 and [e["resource"] for e in nb.charges()].count("analysis") == 1


@pytest.mark.spellings
def test_replicate_renders_with_the_options_given(nb: Notebook) -> None:
    run = nb.ok(
        f"%replicate {TIKTOK} --clips 0 --quality low --accuracy exact --captions --audio original "
        "--marketing-aspect 16:9 -o rep"
    )
    assert isinstance(run, ReplicationRun) and run.status == "done" and nb.ns["rep"] is run
    sent = nb.sandbox.world.replication.runs[run.id]
    assert (sent.quality, sent.accuracy, sent.captions) == ("low", "exact", True)
    assert sent.audio == {"mode": "original"} and sent.marketing_aspect == "16:9"
    assert run.total_clips == 1 and run.output_video_url
    # The marketing cuts come after done: %replicate waited for them (MEDIAGEN_MARKETING_WAIT bounds it).
    assert run.marketing_video_url and run.marketing_video_url_169 and not run.marketing_coming


def test_a_replica_whose_marketing_cuts_are_coming_says_so() -> None:
    """Returned at done without its cuts (the wait was 0 or ran out), the run's status line says so."""
    run = ReplicationRun.from_api({"id": "r1", "status": "done", "totalClips": 1, "doneClips": 1})
    assert run.marketing_coming and describe(run).startswith("done; marketing cuts still coming")
    arrived = ReplicationRun.from_api(
        {
            "id": "r1",
            "status": "done",
            "marketingVideoUrl": "https://x/m.mp4",
            "marketingVideoUrl169": "https://x/w.mp4",
        }
    )
    assert not arrived.marketing_coming and describe(arrived) == "done"


def test_replicate_checks_every_option_before_it_pays(nb: Notebook) -> None:
    """A typo in any option is refused before the analysis is started: no request, nothing charged."""
    assert nb.usage_error(f"%replicate {TIKTOK} --clips 0,x").startswith("--clips '0,x': give clip indexes")
    assert nb.usage_error(f"%replicate {TIKTOK} -o 2x").startswith("-o '2x'")
    assert_short(nb.usage_error(f"%replicate {TIKTOK} --model nope"), "Unknown replication model")
    for option, message in (
        ("--quality ultra", "quality must be one of: low, medium, high"),
        ("--accuracy precise", "accuracy must be one of: fast, balanced, exact"),
        ("--marketing-aspect 4:3", "marketingAspect must be one of: 9:16, 16:9"),
        ("--character http://example.com/face.png", "characterImage must be an https URL"),
    ):
        assert_short(nb.usage_error(f"%replicate {TIKTOK} {option}"), message)
    assert "did you mean --quality?" in nb.usage_error(f"%replicate {TIKTOK} --qualty low")
    assert nb.sent("analyze") == [] and nb.charges() == []  # refused before the analysis charged 5
    assert_short(nb.usage_error("%replicate http://example.com/a.mp4"), "URL must be https")
    # a clip index past the video's clips is known only after the analysis: refused before rendering
    message = nb.usage_error(f"%replicate {TIKTOK} --clips 0,99")
    assert message.startswith("--clips 0,99: this video has") and "nothing was rendered" in message
    assert nb.sent("replicate") == [] and [e["resource"] for e in nb.charges()] == ["analysis"]


@pytest.mark.spellings
def test_make_video_then_reedit(nb: Notebook) -> None:
    topic = 'Why cats\' whiskers {matter}: a "quick" guide'
    job = nb.ok(f"%%make_video --seconds 20 --gender woman --look pixar --no-music -o job\n{topic}\n")
    assert isinstance(job, ShortVideoJob) and job.status == "done" and nb.ns["job"] is job
    sent = nb.sandbox.world.topic.jobs[job.id]
    assert (sent.topic, sent.seconds, sent.gender, sent.look, sent.music) == (
        topic,
        20,
        "woman",
        "pixar",
        False,
    )
    again = nb.ok("%mediagen reedit job --flow karaoke --no-captions -o cut")
    assert again.id != job.id and again.status == "done" and nb.ns["cut"] is again
    assert nb.sandbox.world.topic.jobs[again.id].flow == "karaoke"
    assert nb.ok("%mediagen reedit {{job}} --flow classic").status == "done"
    assert nb.usage_error("%%make_video --seconds soon\nx").startswith("--seconds 'soon'")


# -- %mediagen ------------------------------------------------------------------------------------


@pytest.mark.spellings
def test_models_model_history_and_usage(nb: Notebook) -> None:
    table = nb.ok("%mediagen models --kind audio zonos")
    assert isinstance(table, ModelTable) and [m.id for m in table.models] == ["zonos2"]
    assert "zonos2" in repr(table) and "<img" in table._repr_html_()
    assert all(m.output_type == "video" for m in nb.ok("%mediagen models --kind video").models)
    videos = nb.ok("%mediagen models video").models  # a kind as the first word filters by kind
    assert len(videos) == 72 and all(m.output_type == "video" for m in videos)  # as `mediagen models video`
    assert [m.id for m in nb.ok("%mediagen models audio zonos").models] == ["zonos2"]
    model = nb.ok("%mediagen model gpt-image-2")
    assert isinstance(model, Model) and "quality" in model.properties

    image = nb.ok("%%generate gpt-image-2 --quality low\na cat")
    nb.ok("%%generate gpt-image-2 --estimate\na dog")  # an estimate is neither history nor usage
    history = nb.ok("%mediagen history")
    assert isinstance(history, HistoryTable) and history.items == [image]
    assert image.id in repr(history) and image.url in repr(history)

    usage = nb.ok("%mediagen usage")
    assert isinstance(usage, UsageTable) and usage.rows()[0] == ("gpt-image-2", "magic", 1, 3, "")
    assert usage.rows()[-1][2:4] == (1, 3) and usage.rows()[-1][0].startswith("total ")


def test_key_is_never_echoed_or_stored(nb: Notebook, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    key = nb.new_key(name="typed")
    prompts: list[str] = []

    def fake_getpass(prompt: str = "") -> str:
        prompts.append(prompt)
        return f"  {key}\n"

    monkeypatch.setattr(getpass, "getpass", fake_getpass)
    monkeypatch.setattr("builtins.input", lambda prompt="": str(nb.sandbox.base_url))
    monkeypatch.setenv(settings.ENV_TIME_SCALE, str(TIME_SCALE))
    assert nb.run("%mediagen key").success
    assert prompts and "pk_live_" in prompts[0]
    value = nb.ok("%%generate gpt-image-2\na cat")  # the typed key is the one in use
    assert nb.generation(value).caller.key.secret == key

    out, err = capsys.readouterr()
    assert "fingerprint" in out and key not in out + err
    assert all(key not in repr(v) and key not in str(v) for v in list(nb.ns.values()))
    assert key not in repr(SESSION.client) and key not in repr(SESSION.client.settings)
    assert key not in "".join(nb.ns["_ih"])

    monkeypatch.setattr(getpass, "getpass", lambda prompt="": "   ")
    assert nb.usage_error("%mediagen key") == "no key entered; nothing changed"


def test_use_service_and_sandbox(nb: Notebook, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.ENV_KEY, nb.new_key(name="env"))
    monkeypatch.setenv(settings.ENV_BASE_URL, str(nb.sandbox.base_url))
    monkeypatch.setenv(settings.ENV_TIME_SCALE, str(TIME_SCALE))
    nb.ok("%mediagen use service")
    assert SESSION.client.base_url == nb.sandbox.base_url and not SESSION.client.settings.sandbox
    assert nb.ok("%%generate gpt-image-2\na cat").status == "succeeded"
    nb.ok("%mediagen use sandbox")  # the test's own kept sandbox (tests/conftest.py)
    assert SESSION.client.settings.sandbox
    assert nb.usage_error("%mediagen use cloud") == "usage: %mediagen use sandbox|service"


# -- tab completion -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("%%generate gpt-im", ["gpt-image-2"]),
        ("%generate zon", ["zonos2"]),
        ("%%generate gpt-image-2 --asp", ["--aspect_ratio"]),
        ("%%generate gpt-image-2 --no", ["--no-wait", "--no-raise"]),
        ("%generate infinitetalk res", ["resolution="]),
        ("%mediagen us", ["use", "usage"]),
        ("%mediagen models vi", ["video"]),
        ("%mediagen use s", ["sandbox", "service"]),
        ("%mediagen model zon", ["zonos2"]),
        ("%replicate https://x --acc", ["--accuracy"]),
    ],
)
def test_tab_completion(nb: Notebook, line: str, expected: list[str]) -> None:
    with provisionalcompleter():
        matches = [c.text for c in nb.shell.Completer.completions(line, len(line))]
    assert matches == expected


# -- import cost ----------------------------------------------------------------------------------

HEAVY = ("starlette", "uvicorn", "PIL", "av", "pandas", "ipywidgets", "mcp")
CHILD = """
import sys
heavy = {heavy!r}
{first}
import mediagen_nb
print("import", [m for m in heavy if m in sys.modules])
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "mediagen_nb")
assert "generate" in shell.magics_manager.magics["cell"]
print("load_ext", [m for m in heavy if m in sys.modules])
"""


@pytest.mark.parametrize(
    ("first", "heavy"),
    [
        ("", HEAVY),
        # pandas first: df.mediagen is registered at once, and must not load the client (httpx) for it
        ("import pandas", (*(m for m in HEAVY if m != "pandas"), "httpx")),
    ],
    ids=["fresh", "after_pandas"],
)
def test_import_and_load_ext_stay_light(tmp_path: Any, first: str, heavy: tuple[str, ...]) -> None:
    """A module-presence check in a fresh interpreter (timings belong in benchmarks/import_time.py)."""
    env = {"IPYTHONDIR": str(tmp_path / "ipython"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(heavy=heavy, first=first)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["import []", "load_ext []"], done.stdout


# -- %config MediagenMagics: the kernel's defaults ---------------------------------------------------


def test_config_sets_the_magics_defaults(nb: Notebook, capsys: pytest.CaptureFixture[str]) -> None:
    nb.ok("%config MediagenMagics")
    listed = capsys.readouterr().out
    for option in ("model", "quality", "wait", "raise_on_failure", "fresh", "preview_width"):
        assert f"MediagenMagics.{option}" in listed
    nb.ok('%config MediagenMagics.model = "gpt-image-2"')
    nb.ok('%config MediagenMagics.quality = "low"')
    made = nb.ok("%%generate -o made\na heron at dawn")  # no model on the line: the default
    assert made.model_id == "gpt-image-2" and nb.generation(made).input["quality"] == "low"
    high = nb.ok("%%generate --quality high\na heron at dusk")  # the cell's own option wins
    assert nb.generation(high).input["quality"] == "high"
    nb.ok("%config MediagenMagics.preview_width = 200")
    assert "max-width:200px" in made._repr_html_()
    nb.ok("%config MediagenMagics.preview_width = 320")
    nb.ok("%config MediagenMagics.raise_on_failure = False")
    nb.post("sandbox_faults", {"modelScript": ["fail"]})
    assert nb.ok("%%generate\na heron that fails").status == "failed"  # kept green by the default
    nb.ok("%config MediagenMagics.wait = False")
    running = nb.ok("%%generate\na heron, not waited for")
    assert running.status == "processing"


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("fresh = 'yes'", "MediagenMagics.fresh must be a boolean, not 'yes'; it stays False"),
        (
            "raise_on_failure = None",
            "MediagenMagics.raise_on_failure must be a boolean, not None; it stays True",
        ),
        ("preview_width = '200px'", "MediagenMagics.preview_width must be an int, not '200px'; it stays 320"),
        ("model = 7", "MediagenMagics.model must be a unicode string, not 7; it stays ''"),
    ],
)
def test_config_refuses_a_value_a_setting_cannot_take_with_one_line(
    nb: Notebook, capsys: pytest.CaptureFixture[str], setting: str, expected: str
) -> None:
    magics = nb.shell.magics_manager.registry["MediagenMagics"]
    before = {name: getattr(magics, name) for name in magics.traits(config=True)}
    capsys.readouterr()
    nb.run(f"%config MediagenMagics.{setting}")
    assert capsys.readouterr().err.strip() == f"UsageError: {expected}"  # as IPython shows its own
    assert {name: getattr(magics, name) for name in before} == before
    nb.ok("%config MediagenMagics.fresh = True")  # a good value still applies
    assert magics.fresh is True


# -- %%generate a,b: one cell on several models ----------------------------------------------------


def test_generate_on_two_models_shows_both_results_side_by_side(nb: Notebook) -> None:
    """``%%generate gpt-image-2,flare-1-swift``: the body is each model's prompt, ``--quality`` goes to
    gpt-image-2 alone (said once), both start before either is waited for, both show; run again, free."""
    cell = "%%generate gpt-image-2,flare-1-swift --quality low -o both\nA kite over dunes"
    both = nb.ok(cell)
    assert list(both) == ["gpt-image-2", "flare-1-swift"] and nb.ns["both"] is both
    assert all(isinstance(g, Generation) and g.status == "succeeded" for g in both.values())
    sent = [nb.sent("run")[i] for i in (0, 1)]
    assert [json.loads(r.content)["input"] for r in sent] == [
        {"prompt": "A kite over dunes", "quality": "low"},
        {"prompt": "A kite over dunes"},
    ]
    kinds = [
        "start" if r.url.path == PATHS["run"] else "read"
        for r in nb.requests
        if "/generations/" in str(r.url) or r.url.path == PATHS["run"]
    ]
    assert kinds[:2] == ["start", "start"] and kinds.count("start") == 2
    shown = both._repr_html_()
    assert shown.count("<img ") == 2 and ">gpt-image-2</div>" in shown and ">flare-1-swift</div>" in shown
    charged = len(nb.charges())
    assert charged == 2
    again = nb.ok(cell)
    assert [g.id for g in again.values()] == [g.id for g in both.values()] and len(nb.charges()) == 2
    assert all(g.reused for g in again.values())


def test_generate_on_two_models_keeps_the_others_when_one_cannot_run(nb: Notebook, capsys: Any) -> None:
    """A model that lacks a required input says why in its place; the other runs and shows; the cell fails."""
    kind, message = nb.error_kind("%%generate flare-1-swift,flare-1-kontext-pro -o pair\nA lighthouse")
    assert kind == "GenerationFailed" and message.startswith("flare-1-kontext-pro did not succeed")
    pair = nb.ns["pair"]
    assert pair["flare-1-swift"].status == "succeeded"
    assert pair["flare-1-kontext-pro"] == "ValidationError: Missing required field: image"
    assert len(nb.charges()) == 1
