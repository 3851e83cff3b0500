"""Never silently wrong when the service spells the names the spec does not show otherwise.

The issue's measurement, as a test: a sandbox speaking another spelling (``--wire``) and nine
ordinary steps of a user whose client has no names file. Each step is right (the client learned the
spelling from answers that leave one member it can be, and said so once) or a clear refusal naming
the field and ``MEDIAGEN_WIRE``; never a wrong figure, an empty catalog or a blame on the model. What
no answer can settle (two integers where the cost should be) is refused, and a names file settles it.
"""

import json
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from _hostile import GENERATION_ID, Answer, Request, data, forward, serve
from _spellings import THEIRS, names_file

import mediagen_nb  # noqa: F401  (registers df.mediagen)
from mediagen_nb.client import (
    Client,
    ConfigurationError,
    NotFoundError,
    ServiceResponseError,
    ValidationError,
)
from mediagen_nb.client.catalog import find_models
from mediagen_nb.client.spelling import SpellingLearned
from mediagen_nb.notebook.forms import Form
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_WIRE
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

TIME_SCALE = 600.0
SPELLINGS = {
    "catalog fields": {"catalog": {"output_type": "type", "credits": "creditCost", "name": "title"}},
    "models list": {"catalog": {"list": "items"}},
    "estimate fields": {"estimate": {"credits": "cost", "model": "model", "billing": "text"}},
    "record id": {"catalog": {"id": "slug", "group": "category", "preview": "image"}},
}
# What the nine steps give on a service that spells everything as the client does (checked below).
RIGHT = {
    "models": (130, 41, 72, 17),
    "model": ("image", 8),
    "estimate": 25,
    "generate": ("succeeded", 3),
    "sweep estimate": [3, 25],
    "sweep run": (["succeeded"], [3]),
    "form": 8,
    "video models": 72,
    "flat-priced estimate": [2, 2],
}
Outcome = Any  # a step's result, or the ServiceResponseError it raised


@contextmanager
def sandbox_in(names: wire.Names) -> Iterator[Sandbox]:
    with Sandbox(SandboxConfig(time_scale=TIME_SCALE, seed=1, wire=names)) as sandbox:
        yield sandbox


def client_of(base_url: str, key: str, names: Path | None = None) -> Client:
    wire_file = str(names) if names is not None else None
    return Client(key, base_url=base_url, time_scale=TIME_SCALE, wire=wire_file)


def nine_steps(client: Client) -> dict[str, Outcome]:
    """The issue's nine ordinary steps; each one's result, or the ServiceResponseError it raised."""
    outcomes: dict[str, Outcome] = {}

    def step(name: str, make: Callable[[], Any]) -> None:
        try:
            outcomes[name] = make()
        except ServiceResponseError as exc:
            outcomes[name] = exc

    def counts() -> tuple[int, ...]:
        kinds = [m.output_type for m in client.models()]
        return (len(kinds), kinds.count("image"), kinds.count("video"), kinds.count("audio"))

    def generated() -> tuple[str, int]:
        made = client.generate("gpt-image-2", prompt="a paper fox", quality="low")
        return made.status, made.credits_spent

    def sweep_run() -> tuple[list[str], list[int]]:
        done = pd.DataFrame({"prompt": ["a lighthouse"], "quality": ["low"]}).mediagen.run(
            "gpt-image-2", client=client, progress=False
        )
        return list(done["status"]), [int(c) for c in done["credits"]]

    def form_price() -> int:
        shown = Form("gpt-image-2", client=client, debounce=60)
        try:
            return shown.price()[0]
        finally:
            shown.close()

    def sweep_estimate(model: str, frame: pd.DataFrame) -> list[int]:
        return [int(c) for c in frame.mediagen.estimate(model, client=client, show=False)["credits"]]

    step("models", counts)
    step("model", lambda: (client.model("gpt-image-2").output_type, client.model("gpt-image-2").credits))
    step("estimate", lambda: client.estimate("gpt-image-2", prompt="a fox", quality="high").credits)
    step("generate", generated)
    sweep = pd.DataFrame({"prompt": ["a fox", "an owl"], "quality": ["low", "high"]})
    step("sweep estimate", lambda: sweep_estimate("gpt-image-2", sweep))
    step("sweep run", sweep_run)
    step("form", form_price)
    step("video models", lambda: len(find_models(client.models(), kind="video")))
    step(
        "flat-priced estimate", lambda: sweep_estimate("qwen3-tts-flash", pd.DataFrame({"text": ["a", "b"]}))
    )
    return outcomes


def test_in_our_spelling_the_nine_steps_give_the_service_figures() -> None:
    with sandbox_in(wire.DEFAULT) as sandbox:
        assert sandbox.base_url is not None
        with client_of(sandbox.base_url, sandbox.demo_key) as client:
            assert nine_steps(client) == RIGHT


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_another_spelling_is_learned_where_answers_leave_no_doubt(spelling: str) -> None:
    """Each of the nine steps gives the same figures as in our spelling, and the client says once, for
    each name, which spelling it used."""
    names, given = wire.parse(SPELLINGS[spelling])
    with sandbox_in(names) as sandbox, warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert sandbox.base_url is not None
        with client_of(sandbox.base_url, sandbox.demo_key) as client:
            outcomes = nine_steps(client)
            learned = client.settings.spelling.learned
    assert outcomes == RIGHT
    display = {"model_name", "model_group", "model_preview"}  # not needed for any figure: not learned
    expected = {attr: getattr(names, attr) for attr in given - display}
    assert learned == expected
    notices = [str(w.message) for w in said if issubclass(w.category, SpellingLearned)]
    assert len(notices) == len(expected), notices  # once each, whatever the steps
    for attr, spelled in expected.items():
        [notice] = [n for n in notices if repr(spelled) in n]
        assert wire.setting(attr) in notice and ENV_WIRE in notice


def test_every_name_spelled_otherwise_is_right_with_the_names_file(tmp_path: Path) -> None:
    """The sandbox in a spelling of every unshown name, the client told by the same names file."""
    with sandbox_in(THEIRS) as sandbox:
        assert sandbox.base_url is not None
        with client_of(sandbox.base_url, sandbox.demo_key, names_file(tmp_path)) as client:
            assert nine_steps(client) == RIGHT
            assert client.settings.spelling.learned == {}


def ambiguous(request: Request, answer: Answer) -> Answer:
    """A man in the middle adding an integer to each catalog record and to each estimate: where the
    cost was the one integer, two integers leave no answer to learn from."""
    body = json.loads(answer.body)
    found = body.get("data")
    if isinstance(found, dict):
        records = found.get(THEIRS.models_list) if THEIRS.models_list in found else [found]
        for rank, record in enumerate(records):
            record["rank"] = rank
    return Answer(answer.status, json.dumps(body).encode(), answer.headers)


@contextmanager
def ambiguous_service() -> Iterator[tuple[str, str]]:
    """A sandbox spelling every unshown name otherwise, behind ``ambiguous``: its address and key."""
    with sandbox_in(THEIRS) as sandbox, serve() as server:
        assert sandbox.base_url is not None
        for method in ("GET", "POST", "PUT"):
            server.on(method, "/", forward(sandbox.base_url, ambiguous))
        yield server.base_url, sandbox.demo_key


def test_what_answers_cannot_settle_is_refused_naming_the_field_and_the_setting(tmp_path: Path) -> None:
    with ambiguous_service() as (base_url, key):
        with client_of(base_url, key) as client:
            outcomes = nine_steps(client)
        with client_of(base_url, key, names_file(tmp_path)) as told:
            assert nine_steps(told) == RIGHT  # the names file settles it
    for name, outcome in outcomes.items():
        assert isinstance(outcome, ServiceResponseError), (name, outcome)
        message = str(outcome)
        assert "without credits" in message and "creditCost" in message and "rank" in message
        assert "[catalog] credits" in message and ENV_WIRE in message


def test_an_estimate_with_two_numbers_is_settled_by_a_flat_price_or_refused(tmp_path: Path) -> None:
    """An estimate carrying the balance beside its price: one free estimate of a flat-priced model tells
    which number is the price (the one equal to its listed price); where none can, it is refused."""

    def two_numbers(balance: int | None) -> Callable[[Request, Answer], Answer]:
        def change(request: Request, answer: Answer) -> Answer:
            body = json.loads(answer.body)
            if request.target.endswith("/estimate") and answer.status == 200:
                body["data"]["balance"] = body["data"]["cost"] if balance is None else balance
            return Answer(answer.status, json.dumps(body).encode(), answer.headers)

        return change

    names = wire.parse(SPELLINGS["estimate fields"])[0]
    for balance, told in ((2997, True), (None, False)):
        with sandbox_in(names) as sandbox, serve() as server:
            assert sandbox.base_url is not None
            for method in ("GET", "POST"):
                server.on(method, "/", forward(sandbox.base_url, two_numbers(balance)))
            with client_of(server.base_url, sandbox.demo_key) as client, warnings.catch_warnings():
                warnings.simplefilter("ignore", SpellingLearned)
                if told:
                    assert client.estimate("gpt-image-2", prompt="a fox", quality="high").credits == 25
                    assert client.settings.spelling.learned["estimate_credits"] == "cost"
                    continue
                with pytest.raises(ServiceResponseError) as raised:
                    client.estimate("gpt-image-2", prompt="a fox", quality="high")
        message = str(raised.value)
        assert (
            "cost = 25, balance = 25" in message and "[estimate] credits" in message and ENV_WIRE in message
        )


def test_a_catalog_read_wrongly_never_blames_the_model() -> None:
    """An empty list, a list under a name that is not one, a record without its kind: each is a
    ServiceResponseError, never ``Unknown model 'gpt-image-2'. Available models:`` (empty)."""
    answers = [
        data({"models": []}),
        data({"models": [], "featured": []}),
        data({"items": [{"id": "gpt-image-2", "credits": 3}], "more": [{"id": "x"}]}),
        data({"models": [{"id": "gpt-image-2", "outputType": "image"}]}),
        data({"models": [{"id": "gpt-image-2", "outputType": "image", "credits": "3 credits"}]}),
    ]
    for answer in answers:
        with serve() as server:
            server.on("GET", "/v3/playground/v1/models", answer)
            with (
                client_of(server.base_url, "pk_live_x") as client,
                pytest.raises(ServiceResponseError) as raised,
            ):
                client.run("gpt-image-2", prompt="a fox")
            assert "Unknown model" not in str(raised.value)
            assert "MEDIAGEN" in str(raised.value) and server.starts() == 0


GENERATION = {
    "id": GENERATION_ID,
    "modelId": "gpt-image-2",
    "status": "succeeded",
    "output": {"type": "image", "urls": ["https://x.test/a.png"]},
    "error": None,
    "creditsSpent": 3,
    "createdAt": "2026-09-16T00:00:00Z",
}


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ({k: v for k, v in GENERATION.items() if k != "creditsSpent"}, "creditsSpent"),
        ({k: v for k, v in GENERATION.items() if k != "id"}, "id"),
        ({k: v for k, v in GENERATION.items() if k != "status"}, "status"),
        ({**GENERATION, "output": None}, "output"),
        ({**GENERATION, "output": {"type": "image"}}, "output"),
        ({**GENERATION, "creditsSpent": None}, "creditsSpent"),
    ],
)
def test_a_generation_answer_missing_what_the_client_needs_is_refused(
    answer: dict[str, Any], field: str
) -> None:
    """A generation without its id, status or charge, or succeeded without output, is never read as a
    free run or a result with no file."""
    with serve() as server:
        server.on("GET", path("generation", id=GENERATION_ID), data(answer))
        with client_of(server.base_url, "pk_live_x") as client, pytest.raises(ServiceResponseError) as raised:
            client.generation(GENERATION_ID)
    assert raised.value.field == field and "MEDIAGEN_BASE_URL" in str(raised.value)


def test_a_generation_answer_without_data_is_refused() -> None:
    with serve() as server:
        server.on(
            "GET", path("generation", id=GENERATION_ID), Answer(200, json.dumps({"success": True}).encode())
        )
        client = client_of(server.base_url, "pk_live_x")
        with client, pytest.raises(ServiceResponseError) as raised:
            client.generation(GENERATION_ID)
    assert raised.value.field == "data"


def test_the_sandbox_speaks_the_names_file_it_is_given(tmp_path: Path) -> None:
    """``Sandbox(wire=FILE)`` (``mediagen sandbox --wire FILE``) spells every unshown name as the file
    says, and tells the clients it serves which file that is."""
    with Sandbox(time_scale=TIME_SCALE, seed=1, wire=names_file(tmp_path)) as sandbox:
        assert sandbox.base_url is not None
        assert sandbox.client_env()[ENV_WIRE] == str((tmp_path / "names.toml").resolve())
        headers = {"Authorization": f"Bearer {sandbox.demo_key}"}
        with httpx.Client(base_url=sandbox.base_url, headers=headers, timeout=30) as api:
            listed = api.get(path("models")).json()["data"]["items"]
            gpt = next(r for r in listed if r["slug"] == "gpt-image-2")
            assert {"slug", "displayName", "type", "creditCost", "category", "endpoints"} <= set(gpt)
            assert gpt["pricing"]["type"] == "by_option" and gpt["type"] == "image"
            priced = api.post(path("estimate"), json={"modelId": "gpt-image-2", "input": {"prompt": "x"}})
            assert set(priced.json()["data"]) == {"model", "cost", "explanation"}
            options = api.get(path("job_options")).json()["data"]
            assert {"voiceNames", "editStyles", "lengthSeconds", "defaultValues"} <= set(options)
            assert options["defaultValues"]["presenterGender"] == "man"
            started = api.post(path("job_start"), json={"subject": "tides", "targetSeconds": 25})
            job = api.get(path("job", id=started.json()["data"]["jobId"])).json()["data"]
            assert job["seconds"] == 25 and job["topic"] == "tides" and "fraction" in job
            refused = api.post(path("job_start"), json={"targetSeconds": 500})
            assert refused.status_code == 400 and "targetSeconds" in refused.json()["message"]


def test_a_names_file_that_cannot_be_used_is_refused_naming_the_key(tmp_path: Path) -> None:
    bad = {
        "[catalog]\nprice = 'x'\n": "[catalog] has no 'price'",
        "[catalog]\ncredits = 3\n": "[catalog] credits must be a field name",
        "[catalog]\ncredits = 'pricing'\n": "is a name the spec shows",
        "[catalog]\ncredits = 'name'\n": "name and credits are both 'name'",
        "[money]\ncredits = 'x'\n": "[money] is not a table of names",
        "not toml [": "not TOML",
    }
    for text, said in bad.items():
        (tmp_path / "names.toml").write_text(text)
        with pytest.raises(wire.WireError, match=said.replace("[", r"\[")):
            wire.load(tmp_path / "names.toml")
    with pytest.raises(ConfigurationError) as raised:
        Client("pk_live_x", base_url="http://127.0.0.1:9", wire=str(tmp_path / "names.toml"))
    assert ENV_WIRE in str(raised.value) and "names.toml" in str(raised.value)


def test_an_unknown_model_is_said_only_of_a_catalog_read_right() -> None:
    with sandbox_in(THEIRS) as sandbox:
        assert sandbox.base_url is not None
        with client_of(sandbox.base_url, sandbox.demo_key) as client, warnings.catch_warnings():
            warnings.simplefilter("ignore", SpellingLearned)
            with pytest.raises(ValidationError) as raised:
                client.run("gpt-image-9", prompt="a fox")
            assert raised.value.message.startswith("Unknown model 'gpt-image-9'. Available models: ")
            assert "gpt-image-2" in raised.value.message
            with pytest.raises(NotFoundError):
                client.model("gpt-image-9")
