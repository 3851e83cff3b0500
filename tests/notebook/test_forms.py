"""The model input form: built for every catalog model, validated, priced, run and shown as code.

Every test drives a served sandbox (uvicorn on 127.0.0.1, time x600) through a real ``Client``;
requests are counted with an httpx event hook, so "no request" means none left the client.
"""

import threading
from collections.abc import Callable, Iterator
from html import escape
from pathlib import Path
from typing import Any

import httpx
import ipywidgets as widgets
import pytest
from _shared import wav
from _wait import wait_until

from mediagen_nb import Client, Model, Sandbox, ValidationError
from mediagen_nb.client import ModerationError, budget
from mediagen_nb.notebook import inputs
from mediagen_nb.notebook.forms import Form, form, listed_price, main_text_field
from mediagen_nb.notebook.parsing import parse_fields, split
from mediagen_nb.notebook.session import SESSION
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.schema import media_kind
from mediagen_nb.runtime.clock import ManualClock


class Requests:
    """Every request the client sends, by method and path (an httpx event hook)."""

    def __init__(self) -> None:
        self.seen: list[httpx.Request] = []
        self._lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> None:
        with self._lock:
            self.seen.append(request)

    def to(self, suffix: str) -> int:
        return sum(1 for r in self.seen if r.url.path.endswith(suffix))

    def clear(self) -> None:
        self.seen.clear()


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    sandbox = Sandbox(time_scale=600, seed=1).start()
    yield sandbox
    sandbox.stop()


@pytest.fixture(scope="module")
def client(sb: Sandbox) -> Iterator[Client]:
    with Client.for_sandbox(sb) as c:
        yield c


@pytest.fixture
def counted(sb: Sandbox) -> Iterator[tuple[Client, Requests]]:
    """A client whose every request is recorded."""
    requests = Requests()
    http = httpx.Client(event_hooks={"request": [requests]}, follow_redirects=True)
    with Client.for_sandbox(sb, http_client=http) as c:
        yield c, requests
    http.close()


@pytest.fixture
def make(client: Client) -> Iterator[Callable[..., Form]]:
    """Build forms on the shared client; each is closed (pending estimate cancelled) after the test."""
    made: list[Form] = []

    def build(model: str | Model, **options: Any) -> Form:
        made.append(Form(model, options.pop("client", client), **options))
        return made[-1]

    yield build
    for f in made:
        f.close()


def sample(sb: Sandbox, name: str) -> str:
    return f"{sb.base_url}/_sandbox/samples/{name}"


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    wait_until(condition, timeout, "the form's condition")


def pauses(f: Form) -> list[threading.Thread]:
    """The form's pauses before a price estimate that have not ended yet."""
    return [t for t in threading.enumerate() if t.name == f"mediagen-price-{id(f):x}"]


def end_pauses(f: Form, clock: ManualClock) -> None:
    """Let the debounce time pass once every pending pause waits on ``clock``, and wait for them to end."""
    wait_for(lambda: len(clock.pending()) == len(pauses(f)))
    clock.advance(f.debounce)
    wait_for(lambda: not pauses(f))


def expected_kind(prop: dict[str, Any], main: bool = False) -> str:
    """The registry row a catalog property should land on, stated independently of the registry
    (``main``: the model's main text, its prompt or the text a voice speaks, takes several lines)."""
    kind = prop.get("type")
    if "enum" in prop:
        return "enum"
    if kind == "boolean":
        return "boolean"
    if kind == "array":
        return "url_list"
    if media_kind(prop):
        return "media"
    if prop.get("format") == "textarea" or prop.get("maxLength", 0) >= 1000 or (main and kind == "string"):
        return "textarea"
    if kind in ("integer", "number"):
        span = prop["maximum"] - prop["minimum"]
        return "slider" if span <= (256 if kind == "integer" else 1000) else "number"
    return "text"


WIDGET_TYPES = {
    "enum": (widgets.Dropdown,),
    "boolean": (widgets.Checkbox,),
    "url_list": (widgets.VBox,),
    "media": (widgets.Text,),
    "textarea": (widgets.Textarea,),
    "slider": (widgets.IntSlider, widgets.FloatSlider),
    "number": (widgets.Text,),
    "text": (widgets.Text,),
}


def test_a_form_builds_for_every_catalog_model(client: Client) -> None:
    models = client.models()
    assert len(models) == 130
    for model in models:
        f = Form(model.id, client=client, debounce=60)
        try:
            assert list(f.fields) == list(model.properties)
            main = main_text_field(model)
            for name, prop in model.properties.items():
                field = f.fields[name]
                assert field.kind == expected_kind(prop, name == main), (model.id, name)
                assert isinstance(field.input, WIDGET_TYPES[field.kind]), (model.id, name)
                assert field.widget in f.widget.children
                assert ("*" in field.label.value) == (name in model.required), (model.id, name)
                assert escape(prop["description"]) in field.help.value
                if prop.get("default") not in (None, ""):
                    assert field.value == prop["default"], (model.id, name)
                    assert f.values[name] == prop["default"]
                if field.kind == "slider":
                    is_int = prop["type"] == "integer"
                    assert isinstance(field.input, widgets.IntSlider if is_int else widgets.FloatSlider)
            if model.required:
                assert f.run_button.disabled  # nothing required is filled in yet
            assert "price:" in f.price_line.value
        finally:
            f.close()


def test_values_are_typed(make: Callable[..., Form], sb: Sandbox) -> None:
    f = make("prism-xl", debounce=60)
    assert f.fields["num_inference_steps"].kind == "slider"
    assert f.fields["width"].kind == f.fields["seed"].kind == "number"  # wide ranges: text boxes
    f.set(prompt="a lighthouse", width="768", guidance_scale=7.5, enable_safety_checker=False, seed=42)
    values = f.values
    assert values["prompt"] == "a lighthouse"
    assert values["width"] == 768 and type(values["width"]) is int
    assert values["seed"] == 42 and type(values["seed"]) is int
    assert type(values["num_inference_steps"]) is int
    assert values["guidance_scale"] == 7.5 and type(values["guidance_scale"]) is float
    assert values["enable_safety_checker"] is False
    assert "negative_prompt" not in values  # empty text is absent, not ""

    f.fields["width"].set(None)
    assert "width" not in f.values  # cleared: the service applies the default

    edit = make("seedbloom-4-edit", debounce=60)
    images = edit.fields["input_images"]
    assert images.value is None
    images.set(sample(sb, "face.png"))  # a single URL is a one-item list
    assert edit.values["input_images"] == [sample(sb, "face.png")]
    images.add(sample(sb, "face.png") + "?2")
    assert edit.values["input_images"] == [sample(sb, "face.png"), sample(sb, "face.png") + "?2"]
    images.remove(images.rows[0])
    assert edit.values["input_images"] == [sample(sb, "face.png") + "?2"]
    images.remove(images.rows[0])  # the last row is emptied, not removed
    assert len(images.rows) == 1 and "input_images" not in edit.values

    duration = make("vidor-q2-reference", debounce=60).fields["duration"]
    assert duration.kind == "slider" and type(duration.value) is int


def test_validation_messages_per_field_and_the_run_button(make: Callable[..., Form]) -> None:
    f = make("prism-xl", debounce=60)
    assert f.run_button.disabled
    assert f.fields["prompt"].error.value == ""  # untouched fields stay quiet until validate()

    f.set(scheduler="turbo")  # an option the enum does not have
    assert "must be one of" in f.fields["scheduler"].error.value
    assert f.fields["prompt"].error.value == ""

    f.set(width=99999, seed="twelve", num_inference_steps=500)
    problems = f.validate()
    assert set(problems) == {"prompt", "scheduler", "width", "seed", "num_inference_steps"}
    assert "prompt" in problems["prompt"] and "required" in problems["prompt"].lower()
    assert "256" in problems["width"] and "2048" in problems["width"]
    assert problems["seed"] == "seed must be an integer"
    assert "100" in problems["num_inference_steps"]  # the slider widened rather than clamping
    for name, message in problems.items():
        assert message.split()[0] in f.fields[name].error.value
    assert f.run_button.disabled

    f.set(prompt="a lighthouse", scheduler=None, width=512, seed=-1, num_inference_steps=30)
    assert f.validate() == {}
    assert all(field.error.value == "" for field in f.fields.values())
    assert not f.run_button.disabled

    f.set(prompt="  ")  # blank is missing, as the service sees it
    assert "prompt" in f.validate() and f.run_button.disabled


def test_validation_of_lists_and_length_billed_media(make: Callable[..., Form], sb: Sandbox) -> None:
    edit = make("kiwi-image-edit", debounce=60)  # at most 3 images
    edit.set(prompt="combine", input_images=[sample(sb, "face.png")] * 4)
    assert "3" in edit.validate()["input_images"]
    edit.set(input_images=[sample(sb, "face.png")] * 3)
    assert edit.validate() == {}
    assert edit.fields["input_images"].add_button.disabled  # full

    voice = make("zonos2", debounce=60)
    voice.set(text="Hello there.", audio=sample(sb, "face.png"))  # length-billed: .mp3/.wav only
    assert voice.validate()["audio"].startswith("Unsupported media format: audio must be a .mp3, .wav, .mp4")


def test_flat_price_sends_no_request(counted: tuple[Client, Requests]) -> None:
    client, requests = counted
    model = next(m for m in client.models() if m.pricing is None)
    clock = ManualClock()
    f = Form(model.id, client=client, debounce=0.01, clock=clock)
    try:
        requests.clear()
        assert f.price() == (model.credits, f"{model.credits} credits per run")
        f.set(**{main_text_field(model): "a quiet harbour at dawn"})
        end_pauses(f, clock)
        assert f.price()[0] == model.credits
        assert requests.seen == []
        assert f"{model.credits} credits per run" in f.price_line.value
    finally:
        f.close()


def test_priced_model_estimates_once_per_priced_value(counted: tuple[Client, Requests]) -> None:
    client, requests = counted
    f = Form("gpt-image-2", client=client, debounce=60)  # no live timer: price() is called here
    try:
        medium = (8, "8 credits: 8 credits per image at quality medium (low 3, high 25)")
        assert f.price() == medium  # no prompt yet: it does not matter to the price
        assert requests.to("/estimate") == 1
        f.set(prompt="A studio portrait")
        assert f.price() == medium  # the price of what is chosen, naming it
        assert f.price()[0] == 8
        f.set(prompt="Another portrait", aspect_ratio="3:2")  # not priced inputs: no new estimate
        assert f.price()[0] == 8
        assert requests.to("/estimate") == 1
        f.set(quality="high")
        assert f.price()[0] == 25
        f.set(quality="medium")
        assert f.price()[0] == 8
        assert requests.to("/estimate") == 2
        assert requests.to("/run") == 0  # an estimate never starts a run
    finally:
        f.close()


def test_live_price_is_debounced(counted: tuple[Client, Requests]) -> None:
    client, requests = counted
    clock = ManualClock()
    f = Form("gpt-image-2", client=client, debounce=0.3, clock=clock)
    try:
        for word in ("A", "A studio", "A studio portrait"):
            f.set(prompt=word)
        f.set(quality="low")
        assert requests.to("/estimate") == 0  # typing has not paused yet
        end_pauses(f, clock)
        assert "3 credits" in f.price_line.value
        assert requests.to("/estimate") == 1  # one estimate after typing paused
        f.set(quality="high")
        end_pauses(f, clock)
        assert "25 credits" in f.price_line.value
        f.set(quality="low")  # known already: shown at once, no request
        assert "3 credits" in f.price_line.value
        assert requests.to("/estimate") == 2
    finally:
        f.close()


def test_submit_runs_the_three_step_chain(make: Callable[..., Form], sb: Sandbox) -> None:
    image_form = make("gpt-image-2", debounce=60)
    image_form.set(prompt="Studio portrait of a smiling presenter", quality="low")
    image = image_form.submit()
    assert image.status == "succeeded" and image.url
    assert f'src="{image.url}"' in image_form.result.value and "<img" in image_form.result.value
    assert image_form.history == [image] and SESSION.history[-1] is image
    assert image_form.history_view.get_title(0) == "history (1)"
    assert len(image_form._history_box.children) == 1
    assert "succeeded" in image_form.status.value and not image_form.run_button.disabled

    voice_form = make("zonos2", debounce=60)
    voice_form.set(text="Hello, and welcome to the show.", audio=sample(sb, "voice.wav"))
    assert voice_form.price()[0] is not None
    voice = voice_form.submit()
    assert voice.status == "succeeded" and voice.output_type == "audio"
    assert "<audio" in voice_form.result.value

    talk_form = make("infinitetalk", debounce=60)
    talk_form.set(image=sample(sb, "face.png"), audio=voice.url, resolution="480p")
    assert "<img" in talk_form.fields["image"].preview.value
    assert "<audio" in talk_form.fields["audio"].preview.value
    talk = talk_form.submit()
    assert talk.status == "succeeded" and talk.output_type == "video"
    assert "<video" in talk_form.result.value

    again = talk_form.submit()
    assert talk_form.history == [talk, again] and talk_form.history_view.get_title(0) == "history (2)"


@pytest.mark.spellings
def test_a_form_prices_and_runs_in_the_services_spelling(served: Sandbox) -> None:
    """The form reads its catalog, listed prices and estimates as the service spells them (another
    spelling with its names file: MEDIAGEN_WIRE), and runs what it shows."""
    with Client.for_sandbox(served) as client:
        flat = next(m for m in client.models() if m.pricing is None)
        assert flat.credits is not None and flat.credits > 0  # never 0 for a name read otherwise
        flat_form = Form(flat.id, client=client, debounce=60)
        priced = Form("gpt-image-2", client=client, debounce=60)
        try:
            assert flat_form.price() == (flat.credits, f"{flat.credits} credits per run")
            priced.set(prompt="A red bicycle", quality="low")
            assert priced.price()[0] == 3
            image = priced.submit()
            assert image.status == "succeeded" and image.url and image.credits_spent == 3
        finally:
            flat_form.close()
            priced.close()


def test_submit_without_waiting_returns_the_started_run(make: Callable[..., Form]) -> None:
    f = make("gpt-image-2", debounce=60)
    generation = f.set(prompt="A red bicycle").submit(wait=False)
    assert generation.status in ("processing", "queued", "succeeded") and f.history == [generation]


def test_submit_refuses_an_invalid_form_without_a_request(counted: tuple[Client, Requests]) -> None:
    client, requests = counted
    f = Form("gpt-image-2", client=client, debounce=60)
    try:
        requests.clear()
        with pytest.raises(ValidationError) as refused:
            f.submit()
        assert refused.value.field == "prompt" and refused.value.sent is False
        assert requests.seen == [] and f.history == []
        assert "prompt" in f.status.value and f.run_button.disabled
    finally:
        f.close()


def test_a_refused_run_is_shown_in_the_form(make: Callable[..., Form]) -> None:
    f = make("gpt-image-2", debounce=60)
    f.set(prompt="nsfw poster")  # the sandbox's moderation rule
    with pytest.raises(ModerationError):
        f.submit()
    assert "moderation" in f.status.value and f.history == []
    assert not f.run_button.disabled  # the input is valid; the user may edit and retry


def test_the_run_button_runs_in_the_background(make: Callable[..., Form]) -> None:
    f = make("gpt-image-2", debounce=60)
    f.set(prompt="A lighthouse at night", quality="low")
    f.run_button.click()
    wait_for(lambda: len(f.history) == 1 and not f.run_button.disabled)
    assert f.history[0].status == "succeeded" and f.history[0].url in f.result.value


def test_forms_clicked_at_once_never_charge_past_the_budget(sb: Sandbox) -> None:
    """Three forms of a 5-credit model clicked together under ``budget(12)``: each runs in its own
    thread on one client; two start and the third shows the budget's refusal, nothing sent for it. The
    sandbox charged 10, what the budget says was spent (issue 35)."""

    def charged() -> int:
        return sum(e["credits"] * (1 if e["kind"] == "charge" else -1) for e in sb.world.accounts.ledger)

    before = charged()
    budget(12)
    with Client.for_sandbox(sb) as client:
        forms = [Form("flare-1-pro", client, debounce=60) for _ in range(3)]
        for n, f in enumerate(forms):
            f.set(prompt=f"a lighthouse in a storm, take {n} of a budget test")
        for f in forms:
            f.run_button.click()
        wait_for(lambda: all(not f._running for f in forms))
        shown = sorted(len(f.history) for f in forms)
        for f in forms:
            f.close()
    assert shown == [0, 1, 1]
    [refused] = [f for f in forms if not f.history]
    assert "budget: flare-1-pro would cost 5 credits" in refused.status.value
    assert charged() - before == 10 == budget().spent and budget().held == 0


WEIRD = {
    wire.MODEL_ID: "weird-model",
    wire.MODEL_NAME: "Weird <model>",
    wire.MODEL_DESCRIPTION: "<script>alert('x')</script> & more",
    wire.MODEL_OUTPUT_TYPE: "image",
    wire.MODEL_CREDITS: 2,
    "pricing": None,
    "input_schema": {
        "type": "object",
        "required": ["settings"],
        "properties": {
            "settings": {"type": "object", "description": "<b>raw</b> options", "default": {"a": 1}},
            "choice": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "anything": True,
            "broken_list": {"type": "array", "items": {"format": "uri"}, "default": 5},
            "prompt": {"type": "string", "description": "<img src=x onerror=alert(1)>"},
        },
    },
}


def test_fields_the_registry_cannot_build_become_json(make: Callable[..., Form]) -> None:
    model = Model.from_api(WEIRD)
    f = make(model, debounce=60)
    kinds = {name: field.kind for name, field in f.fields.items()}
    assert kinds == {
        "settings": "json",
        "choice": "json",
        "anything": "json",
        "broken_list": "json",
        "prompt": "textarea",  # the main text: several lines, as a %%generate cell's body
    }
    assert f.values["settings"] == {"a": 1}  # default prefilled as JSON
    f.fields["settings"].input.value = "{not json"
    problems = f.validate()
    assert "not valid JSON" in problems["settings"] and "settings" not in f.values
    assert problems["broken_list"] == "broken_list must be a list"  # its odd default, judged like any value
    f.fields["broken_list"].set(["https://example.com/a.png"])
    f.fields["settings"].input.value = '{"steps": 3, "tags": ["x"]}'
    f.fields["choice"].input.value = "7"
    assert f.validate() == {}
    assert f.values["settings"] == {"steps": 3, "tags": ["x"]} and f.values["choice"] == 7
    assert f.price() == (2, "2 credits per run")
    assert "--settings" in f.code().cell and '"steps": 3' in f.code().python
    with pytest.raises(ValidationError):  # not in the catalog: refused by the client, shown, no crash
        f.submit()
    assert "weird-model" in f.status.value


def test_from_api_records_with_odd_shapes_build(make: Callable[..., Form]) -> None:
    model = Model.from_api(
        {
            "id": "odd",
            "outputType": "image",
            "credits": 1,
            "input_schema": {
                "properties": {
                    "config": {"type": "object"},
                    "mode": {"oneOf": [{"const": "a"}, {"const": "b"}]},
                    "bad_bounds": {"type": "integer", "minimum": "low", "maximum": 3, "default": "x"},
                    "empty_enum": {"enum": []},
                }
            },
        }
    )
    f = make(model, debounce=60)
    assert {n: fl.kind for n, fl in f.fields.items()} == {
        "config": "json",
        "mode": "json",
        "bad_bounds": "number",
        "empty_enum": "json",
    }
    assert f.validate() == {"bad_bounds": "bad_bounds must be an integer"}


def test_code_shows_the_magic_cell_and_the_python_call(make: Callable[..., Form], sb: Sandbox) -> None:
    f = make("gpt-image-2", debounce=60)
    f.set(prompt='Portrait of Ana\'s "best" side\nsecond line', quality="high")
    code = f.code()
    assert code.cell == (  # every input the form sends, defaults included: the same Idempotency-Key
        "%%generate gpt-image-2 --quality high --aspect_ratio 1:1\n"
        'Portrait of Ana\'s "best" side\nsecond line'
    )
    assert code.python == (  # long calls get one argument a line
        "client.generate(\n"
        '    "gpt-image-2",\n'
        '    prompt="Portrait of Ana\'s \\"best\\" side\\nsecond line",\n'
        '    quality="high",\n'
        '    aspect_ratio="1:1",\n'
        "    reuse=True,\n"
        ")"
    )
    assert str(code).startswith(code.cell) and code.python in str(code)
    assert f.code_view.value == str(code)  # the "copy as code" box follows the form
    f.set(prompt="A fox", quality="medium")
    assert f.code().cell == "%%generate gpt-image-2 --quality medium --aspect_ratio 1:1\nA fox"

    edit = make("nanobloom-edit", debounce=60)
    urls = [sample(sb, "face.png"), sample(sb, "face.png") + "?v=2"]
    edit.set(
        prompt="swap the background",
        input_images=urls,
        resolution=edit.model.properties["resolution"]["enum"][-1],
    )
    line, body = edit.code().cell.split("\n", 1)
    words = split(line)
    assert words[:2] == ["%%generate", "nanobloom-edit"] and body == "swap the background"
    parsed = parse_fields(words[2:], "nanobloom-edit", edit.model.properties, {}, {})
    assert parsed.inputs == {k: v for k, v in edit.values.items() if k != "prompt"}

    flags = make("prism-xl", debounce=60)
    flags.set(prompt="x", enable_safety_checker=False, guidance_scale=2.5, seed=7, negative_prompt="--blur")
    line = flags.code().cell.split("\n")[0]
    assert "--enable_safety_checker false" in line and "--guidance_scale 2.5" in line and "--seed 7" in line
    assert "--num_inference_steps 30" in line  # defaults are sent by the form, so written too
    assert "--negative_prompt=--blur" in line  # not mistaken for an option
    parsed = parse_fields(split(line)[2:], "prism-xl", flags.model.properties, {}, {})
    assert parsed.inputs == {k: v for k, v in flags.values.items() if k != "prompt"}
    assert parsed.inputs["negative_prompt"] == "--blur" and parsed.inputs["guidance_scale"] == 2.5


def test_python_call_evaluates_to_the_form_values(make: Callable[..., Form], sb: Sandbox) -> None:
    f = make("infinitetalk", debounce=60)
    f.set(image=sample(sb, "face.png"), audio=sample(sb, "voice.wav"), seed=3, resolution="480p")
    captured: dict[str, Any] = {}

    class Recorder:
        def generate(self, model_id: str, *, reuse: bool = False, **inputs: Any) -> None:
            captured.update(inputs, model_id=model_id, reuse=reuse)

    exec(f.code().python, {"client": Recorder()})  # the generated snippet, on a stub
    assert captured == {"model_id": "infinitetalk", "reuse": True, **f.values}
    assert f.code().cell.startswith("%%generate infinitetalk --image ")  # no text field: no body


def test_main_text_field(client: Client) -> None:
    by_id = {m.id: m for m in client.models()}
    assert main_text_field(by_id["gpt-image-2"]) == "prompt"
    assert main_text_field(by_id["zonos2"]) == "text"
    assert main_text_field(by_id["infinitetalk"]) is None
    custom = Model(
        id="m",
        input_schema={
            "properties": {
                "image": {"type": "string", "format": "uri"},
                "audio": {"type": "string", "contentMediaType": "audio/*"},
                "script": {"type": "string"},
            },
            "required": ["image", "audio", "script"],
        },
    )
    assert main_text_field(custom) == "script"


def test_html_is_escaped(make: Callable[..., Form]) -> None:
    model = Model(
        id="x<y",
        name="<b>bold</b>",
        description="<script>alert(1)</script>",
        input_schema={
            "properties": {
                "prompt": {"type": "string", "description": "<img src=x onerror=alert(1)>"},
                "picture": {"type": "string", "format": "uri", "contentMediaType": "image/*"},
                "<i>": {"type": "boolean"},
            }
        },
    )
    f = make(model, debounce=60)
    assert "<script>" not in f.header.value and "&lt;script&gt;" in f.header.value
    assert "<b>bold" not in f.header.value
    assert "<img" not in f.fields["prompt"].help.value and "&lt;img" in f.fields["prompt"].help.value
    assert "<i>" not in f.fields["<i>"].label.value

    picture = f.fields["picture"]
    picture.set("javascript:alert(1)")
    assert picture.preview.value == ""  # only http(s) URLs are previewed
    picture.set("data:image/png;base64,AAAA")
    assert picture.preview.value == ""
    picture.set('https://example.com/a.png?x="><script>alert(1)</script>')
    assert "<script>" not in picture.preview.value and "&quot;&gt;&lt;script&gt;" in picture.preview.value
    picture.set("")
    assert picture.preview.value == ""

    f.fields["prompt"].set("<b>x</b>")
    f.fields["prompt"].show_error("<script>bad</script>")
    assert "<script>" not in f.fields["prompt"].error.value


def test_listed_price_text(client: Client) -> None:
    by_id = {m.id: m for m in client.models()}
    flat = next(m for m in by_id.values() if m.pricing is None)
    assert listed_price(flat) == f"{flat.credits} credits per run"
    assert listed_price(by_id["gpt-image-2"]) == "varies by quality (billed per option); listed at 8 credits"
    assert listed_price(by_id["infinitetalk"]) == (
        "priced by the audio's length and resolution (billed per media second)"
    )


def test_form_renders_as_its_widget(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    SESSION.use(
        client
    )  # form() without a client uses the session's  # the autouse fixture forgets it after the test
    f = form("zonos2")
    try:
        assert f.client is client
        bundle = f._repr_mimebundle_()
        assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == f.widget.model_id
        assert "zonos2" in repr(f)
    finally:
        f.close()


def test_registry_rows_are_tried_in_order() -> None:
    assert inputs.REGISTRY[0][1] is inputs.EnumField
    assert inputs.build_field("n", {"type": "integer", "enum": [1, 2], "default": 2}).kind == "enum"
    assert (
        inputs.build_field("n", {"type": "integer", "minimum": 0, "maximum": 10}).kind == "number"
    )  # no default
    assert inputs.build_field("n", {"type": "string", "maxLength": 2000}).kind == "textarea"
    assert inputs.build_field("n", {"type": "string", "format": "uri"}).kind == "media"
    assert inputs.build_field("n", "not a schema").kind == "json"


def test_a_file_picked_in_a_form_is_uploaded_and_billed_by_its_length(
    make: Callable[..., Form], sb: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    from datetime import datetime, timezone

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # where picked files are kept
    sound = io.BytesIO(wav(20))
    own = Client.for_sandbox(sb)  # a client of its own: the module's may have been closed by now
    f = make("zonos2", client=own, debounce=60)
    f.set(text="Hello from a picked file")
    picked = {"name": "my voice.wav", "type": "audio/wav", "size": len(sound.getvalue())}
    picker = f.fields["audio"].picker
    if hasattr(picker, "data"):  # ipywidgets 7 (Colab): the browser sends metadata and data, then counts
        picker.metadata, picker.data = [picked], [sound.getvalue()]
        picker._counter += 1
    else:  # ipywidgets 8: the browser sends the value, a tuple of files
        picker.value = (
            {**picked, "content": memoryview(sound.getvalue()), "last_modified": datetime.now(timezone.utc)},
        )
    kept = Path(f.values["audio"])
    assert kept.suffix == ".wav" and kept.read_bytes() == sound.getvalue()
    voice = f.submit()
    assert voice.status == "succeeded"
    charged = [e for e in sb.world.accounts.ledger if e["resourceId"] == voice.id and e["kind"] == "charge"]
    assert [e["credits"] for e in charged] == [10]  # 0.5 credits a second of the picked file
    own.close()
