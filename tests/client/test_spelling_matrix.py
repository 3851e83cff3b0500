"""Never silently wrong, whatever shape the service's answers take (issue 34): a matrix of spellings.

One sandbox, served once for the module, speaks each spelling in turn (``--wire``: names, dotted paths,
pages of the models list, credits in another type, kinds and statuses in another case, other numbers
beside an estimate's price, the job's read and start-body names). For each, a client with no names file
takes a user's steps: every step gives the figure the faithful service gives, or a clear refusal whose
advice is a kind that works (a names-file line, a path, a type); never a wrong figure. ``mediagen
doctor`` exits non-zero on each and prints the names-file lines that, set, make every step right.
"""

import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

import mediagen_nb  # noqa: F401  (registers df.mediagen)
from mediagen_nb.batch.usage import usage
from mediagen_nb.client import Client, MediagenError, ServiceResponseError
from mediagen_nb.client.catalog import find_models
from mediagen_nb.doctor import main as doctor
from mediagen_nb.notebook.forms import Form
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_WIRE
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

TIME_SCALE = 600.0
THEIRS_JOB = {
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
# Each spelling: the names file the sandbox serves (the cases and others it did not name).
SPELLINGS: dict[str, dict[str, Any]] = {
    "pages by cursor": {"serve": {"page_size": 40, "paging": "cursor"}},
    "pages by a renamed cursor": {
        "catalog": {"next": "continuation", "next_param": "after"},
        "serve": {"page_size": 30, "paging": "cursor"},
    },
    "pages by number": {"serve": {"page_size": 40, "paging": "page"}},
    "pages by offset": {"serve": {"page_size": 25, "paging": "offset"}},
    "pages by link": {"catalog": {"next": "nextPage"}, "serve": {"page_size": 50, "paging": "link"}},
    "pages by an unnamed link": {"catalog": {"next": "more"}, "serve": {"page_size": 50, "paging": "link"}},
    "record one level deeper": {"catalog": {"credits": "billing.credits", "output_type": "meta.kind"}},
    "estimate one level deeper": {"estimate": {"credits": "price.credits", "billing": "price.text"}},
    "credits as strings": {"serve": {"numbers": "string"}},
    "credits as floats": {"serve": {"numbers": "float"}},
    "kinds and statuses in capitals": {"serve": {"case": "upper"}},
    "kinds and statuses in title case": {"serve": {"case": "title"}},
    "an estimate with the balance after as credits": {
        "estimate": {"credits": "cost"},
        "serve": {"estimate_extra": {"credits": "balance_after"}},
    },
    "an estimate with the balance beside": {"serve": {"estimate_extra": {"remaining": "balance"}}},
    "an estimate with the listed price beside": {
        "estimate": {"credits": "amount"},
        "serve": {"estimate_extra": {"listedCredits": "listed"}},
    },
    "all at once": {
        "catalog": {"list": "result.items", "id": "slug", "credits": "cost.credits", "output_type": "kind"},
        "estimate": {"credits": "quote.total", "model": "quote.model"},
        "serve": {"page_size": 45, "paging": "page", "numbers": "string", "case": "upper"},
        **THEIRS_JOB,
    },
}
# What the steps give on a faithful service (checked below).
RIGHT = {
    "models": (130, 41, 72, 17),
    "model": ("image", 8),
    "estimate": 25,
    "generate": ("succeeded", "image", 3),
    "sweep estimate": [3, 25],
    "sweep run": (["succeeded"], [3]),
    "form": 8,
    "video models": 72,
    "flat-priced estimate": [2, 2],
    "usage": 6,
    "video options": ("Lucy", 180),
}
Outcome = Any


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One sandbox for the module, on loopback; each test sets its spelling and resets its state."""
    with Sandbox(SandboxConfig(time_scale=TIME_SCALE, seed=1, allow_private_webhooks=True)) as served:
        yield served


def speak(sandbox: Sandbox, names: wire.Names) -> str:
    """The sandbox, fresh, in spelling ``names``: its address."""
    assert sandbox.base_url is not None
    httpx.post(sandbox.base_url + path("sandbox_reset"), timeout=30).raise_for_status()
    sandbox.world.wire = names
    return sandbox.base_url


def client_of(sandbox: Sandbox, ledger: Path, names: Path | None = None) -> Client:
    return Client(
        sandbox.demo_key,
        base_url=sandbox.base_url,
        time_scale=TIME_SCALE,
        ledger=str(ledger),
        wire=str(names) if names is not None else None,
    )


def steps(client: Client, ledger: Path) -> dict[str, Outcome]:
    """A user's steps; each one's figures, or the error it raised."""
    outcomes: dict[str, Outcome] = {}

    def step(name: str, make: Callable[[], Any]) -> None:
        try:
            outcomes[name] = make()
        except MediagenError as exc:
            outcomes[name] = exc

    def counts() -> tuple[int, ...]:
        kinds = [m.output_type for m in client.models()]
        return (len(kinds), kinds.count("image"), kinds.count("video"), kinds.count("audio"))

    def generated() -> tuple[str, str | None, int]:
        made = client.generate("gpt-image-2", prompt="a paper fox", quality="low")
        return made.status, made.output_type, made.credits_spent

    def sweep_run() -> tuple[list[str], list[int]]:
        done = pd.DataFrame({"prompt": ["a lighthouse"], "quality": ["low"]}).mediagen.run(
            "gpt-image-2", client=client, progress=False, ledger=str(ledger)
        )
        return list(done["status"]), [int(c) for c in done["credits"]]

    def form_price() -> int | str:
        shown = Form("gpt-image-2", client=client, debounce=60)
        try:
            credits, line = shown.price()
            return line if credits is None else credits  # no figure: the line says why
        finally:
            shown.close()

    def sweep_estimate(model: str, frame: pd.DataFrame) -> list[int] | str:
        priced = frame.mediagen.estimate(model, client=client, show=False)
        if priced["credits"].isna().any():  # a row without a figure: its error says why
            return str(priced["error"].dropna().iloc[0])
        return [int(c) for c in priced["credits"]]

    def options() -> tuple[str, int]:
        found = client.video_options()
        return found.voices["woman"][0], found.seconds["max"]

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
    step("usage", lambda: int(usage(client, ledger=str(ledger))["credits"].iloc[-1]))
    step("video options", options)
    return outcomes


def charged(sandbox: Sandbox) -> int:
    """What the sandbox's own ledger charged since its reset (charges less refunds)."""
    entries = sandbox.world.accounts.ledger
    return sum(e["credits"] * {"charge": 1, "refund": -1}.get(e["kind"], 0) for e in entries)


def advised(said: str) -> bool:
    """A refusal's advice is of a kind that works: a names-file line or path, or a type."""
    return ENV_WIRE in said or "names file" in said or "no setting" in said


def wrong(outcomes: dict[str, Outcome], sandbox: Sandbox) -> dict[str, Outcome]:
    """The steps whose outcome is neither the faithful figure nor a refusal with working advice; usage
    is right when it is what the sandbox charged."""
    right = {**RIGHT, "usage": charged(sandbox)}
    odd = {}
    for name, outcome in outcomes.items():
        if isinstance(outcome, MediagenError):
            if not isinstance(outcome, ServiceResponseError) or not advised(str(outcome)):
                odd[name] = outcome
        elif isinstance(outcome, str) and not isinstance(right[name], str):
            if not advised(outcome):
                odd[name] = outcome
        elif outcome != right[name]:
            odd[name] = outcome
    return odd


def test_on_a_faithful_service_the_steps_give_its_figures(sandbox: Sandbox, tmp_path: Path) -> None:
    speak(sandbox, wire.DEFAULT)
    with client_of(sandbox, tmp_path / "ledger.sqlite") as client:
        assert steps(client, tmp_path / "ledger.sqlite") == RIGHT


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_no_step_is_silently_wrong_and_the_doctor_prints_the_fix(
    spelling: str,
    sandbox: Sandbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without a names file every step is right or refused with advice that works; the doctor fails and
    prints the lines; with them (as a user would set ``MEDIAGEN_WIRE``) every step is right and no name is
    learned."""
    names = wire.parse(SPELLINGS[spelling])[0]
    base_url = speak(sandbox, names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with client_of(sandbox, tmp_path / "first.sqlite") as client:
            outcomes = steps(client, tmp_path / "first.sqlite")
    assert wrong(outcomes, sandbox) == {}, outcomes

    speak(sandbox, names)
    monkeypatch.setenv("MEDIAGEN_BASE_URL", base_url)
    monkeypatch.setenv("MEDIAGEN_API_KEY", sandbox.demo_key)
    monkeypatch.setenv("MEDIAGEN_TIME_SCALE", f"{TIME_SCALE:g}")
    monkeypatch.delenv(ENV_WIRE, raising=False)
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = doctor(["--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1 and not document["ok"], spelling
    failed = [c for c in document["checks"] if not c["ok"]]
    assert failed and all(c["fix"] for c in failed)
    promised = [c for c in failed if c["fix"].startswith("the names-file lines below")]
    assert bool(promised) == bool(document["namesFile"])  # every line it says it prints is printed

    if document["namesFile"] is None:  # nothing to set: the first steps were right already
        assert outcomes == {**RIGHT, "usage": outcomes["usage"]}
        return
    told = tmp_path / "names.toml"
    told.write_text(document["namesFile"], encoding="utf-8")
    speak(sandbox, names)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with client_of(sandbox, tmp_path / "second.sqlite", told) as client:
            assert steps(client, tmp_path / "second.sqlite") == {**RIGHT, "usage": charged(sandbox)}
            assert client.settings.spelling.learned == {}
    assert not [w for w in said if "spell" in type(w.message).__name__.lower()]
