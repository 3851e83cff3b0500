"""A catalog snapshot is checked when it is loaded (``snapshot.spec_of``): a model whose input schema the
sandbox cannot apply (a default its own options refuse, a shape it cannot read) is not served, and a
start or estimate of it is a 400 naming the model and the input; a model whose price the sandbox
cannot compute is served at its listed credits with a warning. No answer is a 5xx, nothing is charged
by a refusal. In-process sandboxes on the manual clock; each snapshot written as a sync writes it."""

import copy
from pathlib import Path
from typing import Any

import httpx
import pytest

from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox
from mediagen_nb.sandbox.catalog import BY_ID, record
from mediagen_nb.sandbox.catalog import snapshot as snapshots

pytestmark = pytest.mark.anyio


def _record(model_id: str, change: dict[str, Any] | None = None, **props: dict[str, Any]) -> dict[str, Any]:
    """A bundled model's public record, its input properties changed (``props``), and more (``change``)."""
    made = record(BY_ID[model_id], "https://service.example")
    schema = copy.deepcopy(made["input_schema"])
    for name, prop in props.items():
        schema["properties"][name] = {**schema["properties"].get(name, {}), **prop}
    return {**made, "input_schema": schema, **(change or {})}


def _sandbox(folder: Path, *records: dict[str, Any]) -> Sandbox:
    """A manual-clock sandbox serving a snapshot of ``records`` (and qwen3-tts-flash as it is)."""
    served = [*records, _record("qwen3-tts-flash")]
    writer = snapshots.Writer(folder)
    for each in served:
        writer.detail(each["id"], each)
    writer.finish({"date": "2026-10-01"}, {"models": served}, {}, "")
    return Sandbox(clock="manual", seed=1, catalog=folder)


async def _calls(sandbox: Sandbox, *bodies: dict[str, Any]) -> list[httpx.Response]:
    """For each body an estimate then a run, on the in-process sandbox (its errors are answers)."""
    transport = httpx.ASGITransport(sandbox.in_process(), raise_app_exceptions=False)
    headers = {"Authorization": f"Bearer {sandbox.demo_key}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://sandbox.test", headers=headers) as api:
        answers = []
        for body in bodies:
            answers.append(await api.post(path("estimate"), json=body))
            answers.append(await api.post(path("run"), json=body))
        return answers


def _charged(sandbox: Sandbox) -> list[int]:
    return [e["credits"] for e in sandbox.world.accounts.ledger if e["kind"] == "charge"]


async def test_a_default_outside_its_options_is_refused_naming_the_model_and_the_input(
    tmp_path: Path,
) -> None:
    """The issue's case: ``quality`` enum [low, high], default ``medium`` (estimate and run answered 500)."""
    quality = {"enum": ["low", "high"], "default": "medium"}
    sandbox = _sandbox(tmp_path / "snap", _record("gpt-image-2", quality=quality))
    why = sandbox.world.catalog.flagged["gpt-image-2"]
    default = "its default 'medium' breaks its own rule (quality must be one of: low, high)"
    assert why == f"not served: input quality: {default}"
    answers = await _calls(
        sandbox,
        {"modelId": "gpt-image-2", "input": {"prompt": "a kite"}},
        {"modelId": "gpt-image-2", "input": {"prompt": "a kite", "quality": "low"}},
        {"modelId": "qwen3-tts-flash", "input": {"text": "Hello."}},
    )
    assert [a.status_code for a in answers] == [400, 400, 400, 400, 200, 201]
    message = answers[0].json()["message"]
    assert message.startswith(
        "Model 'gpt-image-2' is in this sandbox's catalog snapshot but not served: input quality"
    )
    assert _charged(sandbox) == [2]  # the model that is served, and nothing else
    assert "gpt-image-2" not in {m["id"] for m in _models(sandbox)}


def _models(sandbox: Sandbox) -> list[dict[str, Any]]:
    return [record(m, "http://sandbox.test") for m in sandbox.world.catalog.models]


@pytest.mark.parametrize(
    ("prop", "named"),
    [
        ({"type": ["string", "null"]}, "input quality: type ['string', 'null'] is none the sandbox checks"),
        ({"enum": "low,high"}, "input quality: enum 'low,high' is not a list of options"),
        ({"enum": []}, "input quality: enum [] is not a list of options"),
        ({"type": "string", "maxLength": "10"}, "input quality: maxLength '10' is not a whole number"),
        (
            {"type": "integer", "enum": None, "minimum": "1", "default": 1},
            "input quality: minimum '1' is not a number",
        ),
        ({"type": "integer", "enum": None, "default": "high"}, "its default 'high' breaks its own rule"),
        (
            {"type": "array", "items": "string", "enum": None, "default": []},
            "input quality[] is str, not an object",
        ),
        ("low", "input quality is str, not an object"),
    ],
    ids=[
        "type list",
        "enum text",
        "enum empty",
        "maxLength text",
        "minimum text",
        "default",
        "items",
        "text",
    ],
)
async def test_a_schema_the_sandbox_cannot_read_is_refused_never_a_500(
    prop: Any, named: str, tmp_path: Path
) -> None:
    made = _record("gpt-image-2")
    if isinstance(prop, dict):
        quality = {
            k: v
            for k, v in {**made["input_schema"]["properties"]["quality"], **prop}.items()
            if v is not None
        }
    else:
        quality = prop
    made["input_schema"]["properties"]["quality"] = quality
    sandbox = _sandbox(tmp_path / "snap", made)
    assert named in sandbox.world.catalog.flagged["gpt-image-2"]
    answers = await _calls(
        sandbox, {"modelId": "gpt-image-2", "input": {"prompt": "a kite", "quality": "high"}}
    )
    assert [a.status_code for a in answers] == [400, 400]
    assert named in answers[1].json()["message"] and _charged(sandbox) == []


async def test_a_price_the_sandbox_cannot_compute_is_the_listed_one_with_a_warning(tmp_path: Path) -> None:
    """``duration`` priced per second but given as words (``5s``): every run is charged the listed
    credits, the estimate says the price is approximated, and the run ends like any other."""
    listed = BY_ID["seedance-2-fast-t2v"].credits
    duration = {"type": "string", "enum": ["5s", "10s"], "default": "5s", "minimum": None, "maximum": None}
    made = _record("seedance-2-fast-t2v", duration=duration)
    made["input_schema"]["properties"]["duration"] = {k: v for k, v in duration.items() if v is not None} | {
        "description": "Video length."
    }
    sandbox = _sandbox(tmp_path / "snap", made)
    assert sandbox.world.catalog.flagged["seedance-2-fast-t2v"] == (
        "per_output_second by duration, resolution cannot be priced (duration is not a number input with a "
        f"maximum or options): every run costs its listed {listed}"
    )
    body = {"modelId": "seedance-2-fast-t2v", "input": {"prompt": "a kite", "duration": "10s"}}
    estimate, run = await _calls(sandbox, body)
    assert estimate.status_code == 200 and estimate.json()["data"]["credits"] == listed
    assert "the sandbox approximates this price" in estimate.json()["data"]["billing"]
    assert run.status_code == 201 and run.json()["data"]["creditsSpent"] == listed
    sandbox.advance(3600)
    generation = sandbox.world.generations.items[run.json()["data"]["id"]]
    assert generation.status == "succeeded" and _charged(sandbox) == [listed]
