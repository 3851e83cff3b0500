"""The doctor's free checks on the wire: one model's answer and its example, and the free refusals
(unknown model, a missing field, a bad option, a bad and an unknown generation id, no key and a wrong
key), each compared with the status and the start of the message the client expects. The checks that
run the client itself are in ``shapes.py``. Nothing here costs a credit.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mediagen_nb.client.config import Secret
from mediagen_nb.client.errors import ServiceResponseError
from mediagen_nb.client.generations import certain_input
from mediagen_nb.client.resources import Model
from mediagen_nb.client.spelling import Spelling
from mediagen_nb.doctor.probe import Exchange, Probe
from mediagen_nb.protocol import messages
from mediagen_nb.protocol.documents import KINDS
from mediagen_nb.protocol.environment import ENV_KEY
from mediagen_nb.protocol.schema import media_kind

PROBE_MODEL = "mediagen-doctor-no-such-model"
PROBE_OPTION = "mediagen-doctor-no-such-option"
# Generation ids no service hands out (version-4 UUIDs of all but one zero bit): one per check, so a
# recording answers each check by its path.
UNKNOWN_ID, NO_KEY_ID, WRONG_KEY_ID = (f"00000000-0000-4000-8000-00000000000{n}" for n in (1, 2, 3))
WRONG_KEY = Secret("pk_live_mediagen_doctor_not_a_key")
STAND_INS = {"image": "https://doctor.invalid/face.png", "audio": "https://doctor.invalid/voice.wav"}
STAND_INS["video"] = "https://doctor.invalid/clip.mp4"
REPORT = "no setting changes this: report it with what `mediagen doctor --record DIR` saved"


def credits(number: int | None) -> str:
    """``1 credit``, ``8 credits``."""
    return f"{number} credit" + ("" if number == 1 else "s")


@dataclass(frozen=True)
class Result:
    """One check: passed or not, what differed (or what was seen), and what fixes it."""

    check: str
    ok: bool
    detail: str
    fix: str = ""


@dataclass
class Found:
    """What the checks learn on the way: the catalog as the client read it, names it had to learn, and
    names worth pinning in a names file though the client found them itself (how the list pages)."""

    models: list[Model]
    learned: dict[str, str]
    pinned: dict[str, str] = field(default_factory=dict)


def _said(exchange: Exchange, start: str, status: int) -> str | None:
    """What differs between an error answer and the spec's (None: nothing)."""
    body = exchange.body
    if exchange.status != status or exchange.message is None or not exchange.message.startswith(start):
        return f"answered {exchange.said()}; the client expects {status} {start[:60]!r}"
    if status != 429 and not (
        isinstance(body, Mapping) and body.get("statusCode") == status and isinstance(body.get("error"), str)
    ):
        return f"the error body is {str(body)[:80]}, not {{statusCode, message, error}}"
    return None


def model_detail(probe: Probe, spelling: Spelling, found: Found) -> list[Result]:
    """One model's answer (with its ``example``) and an unknown model's 404."""
    ids = [m.id for m in found.models]
    chosen = "gpt-image-2" if "gpt-image-2" in ids else ids[0] if ids else None
    results = []
    if chosen is not None:
        one = probe.send("catalog: one model", "GET", "model", params={"id": chosen}, key=False)
        try:
            model = Model.from_api(one.data, spelling.names) if one.status == 200 else None
        except ServiceResponseError as exc:
            results.append(Result("catalog: one model", False, str(exc), "see the message"))
        else:
            shape = _example_problem(model.example) if model is not None else None
            if model is None or model.id != chosen:
                results.append(
                    Result("catalog: one model", False, f"GET models/{chosen} {one.said()}", REPORT)
                )
            elif shape is not None:
                results.append(Result("catalog: one model", False, shape, REPORT))
            else:
                seen = "with its example" if model.example else "no example"
                results.append(Result("catalog: one model", True, f"{chosen}, {seen}"))
    unknown = probe.send("catalog: unknown model", "GET", "model", params={"id": PROBE_MODEL}, key=False)
    said = [_said(unknown, start, 404) for start in ("Model not found", f"Model '{PROBE_MODEL}' not found")]
    differs = None if None in said else said[0]
    results.append(
        Result("catalog: unknown model", differs is None, differs or "404 Model not found", REPORT)
    )
    return results


def _example_problem(example: Mapping[str, Any] | None) -> str | None:
    if example is None:
        return None
    output = example.get("output")
    if (
        not isinstance(output, Mapping)
        or output.get("type") not in KINDS
        or not isinstance(output.get("url"), str)
    ):
        return f"its example's output is {str(output)[:60]}, not {{type, url}}"
    return None


def minimal_input(model: Model) -> dict[str, Any]:
    """An input with every required field filled (media by URLs no one can read: an estimate measures
    nothing it cannot download, and assumes the spec's 30 s)."""
    return certain_input(model, STAND_INS, "A short check of the service by mediagen doctor.")


def _with_enum(models: Sequence[Model]) -> tuple[Model, str] | None:
    for model in models:
        for name, prop in model.properties.items():
            if isinstance(prop, Mapping) and isinstance(prop.get("enum"), list) and media_kind(prop) is None:
                return model, name
    return None


Refusal = tuple[str, Callable[[], Exchange], str, int]


def refusals(probe: Probe, found: Found) -> list[Result]:
    """The service's free refusals, each compared with the status and message start the client expects."""
    models = found.models
    required = next((m for m in models if m.required), None)
    enum = _with_enum(models)
    cases: list[Refusal] = [
        (
            "refusal: unknown model",
            lambda: probe.send(
                "refusal: unknown model", "POST", "estimate", body={"modelId": PROBE_MODEL, "input": {}}
            ),
            f"Unknown model '{PROBE_MODEL}'. Available models:",
            400,
        ),
        (
            "refusal: input not an object",
            lambda: probe.send(
                "refusal: input not an object",
                "POST",
                "estimate",
                body={"modelId": models[0].id if models else PROBE_MODEL, "input": "x"},
            ),
            messages.INPUT_NOT_OBJECT,
            400,
        ),
    ]
    if required is not None:
        cases.append(
            (
                "refusal: missing field",
                lambda: probe.send(
                    "refusal: missing field", "POST", "estimate", body={"modelId": required.id, "input": {}}
                ),
                messages.missing_field(required.required[0]),
                400,
            )
        )
    if enum is not None:
        model, field = enum
        body = {"modelId": model.id, "input": {**minimal_input(model), field: PROBE_OPTION}}
        cases.append(
            (
                "refusal: bad option",
                lambda: probe.send("refusal: bad option", "POST", "estimate", body=body),
                f"{field} must be one of: ",
                400,
            )
        )
    cases += [
        (
            "refusal: bad generation id",
            lambda: probe.send(
                "refusal: bad generation id", "GET", "generation", params={"id": "not-a-uuid"}
            ),
            messages.INVALID_GENERATION_ID,
            400,
        ),
        (
            "refusal: unknown generation",
            lambda: probe.send("refusal: unknown generation", "GET", "generation", params={"id": UNKNOWN_ID}),
            messages.GENERATION_NOT_FOUND,
            404,
        ),
        (
            "refusal: no key",
            lambda: probe.send("refusal: no key", "GET", "generation", params={"id": NO_KEY_ID}, key=False),
            messages.MISSING_CREDENTIALS,
            401,
        ),
        (
            "refusal: wrong key",
            lambda: probe.send(
                "refusal: wrong key", "GET", "generation", params={"id": WRONG_KEY_ID}, key=WRONG_KEY
            ),
            messages.INVALID_KEY,
            401,
        ),
    ]
    results = []
    for name, send, start, status in cases:
        answer = send()
        differs = _said(answer, start, status)
        fix = REPORT
        if answer.status == 401 and status != 401:
            fix = f"the key was refused: check {ENV_KEY}"
        results.append(Result(name, differs is None, differs or f"{status} {start[:50]!r}", fix))
    return results
