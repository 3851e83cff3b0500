"""The doctor's free checks: the catalog endpoints and their shapes, ``openapi.json`` and ``llms.txt``,
one estimate per pricing type, the topic-to-video options, and the free refusals (unknown model, a
missing field, a bad option, a bad and an unknown generation id, no key and a wrong key).

Each compares the status, the start of the message and the shape with what the client expects, and
hands the answer to the client's own parsers. Nothing here costs a credit: catalog reads, estimates,
reads and refusals are free.
"""

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mediagen_nb.client.config import Secret
from mediagen_nb.client.errors import ServiceResponseError
from mediagen_nb.client.resources import Estimate, Model, VideoOptions
from mediagen_nb.client.spelling import KINDS, Spelling, SpellingLearned
from mediagen_nb.doctor.probe import Exchange, Probe
from mediagen_nb.protocol import messages, wire
from mediagen_nb.protocol.environment import ENV_BASE_URL, ENV_KEY, ENV_WIRE
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
NAMES_FIX = f"set these names in a names file and point {ENV_WIRE} at it (lines below)"


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
    """What the checks learn on the way: the catalog as the client read it, and names it had to learn."""

    models: list[Model]
    learned: dict[str, str]


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


def catalog(probe: Probe, spelling: Spelling, found: Found) -> list[Result]:
    """The models list and its records, as the client reads them."""
    listed = probe.send("catalog: models", "GET", "models", key=False)
    if listed.status != 200 or listed.data is None:
        return [Result("catalog: models", False, f"GET models {listed.said()}", f"check {ENV_BASE_URL}")]
    before = dict(spelling.learned)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SpellingLearned)
            records = spelling.model_records(listed.data)
            found.models = [Model.from_api(record, spelling.names) for record in records]
    except ServiceResponseError as exc:
        return [Result("catalog: models", False, str(exc), NAMES_FIX)]
    kinds = [m.output_type for m in found.models]
    counts = ", ".join(f"{kinds.count(kind)} {kind}" for kind in sorted(KINDS))
    learned = {k: v for k, v in spelling.learned.items() if before.get(k) != v}
    found.learned.update(learned)
    odd = sorted({str(kind) for kind in kinds if kind not in KINDS})
    results = [Result("catalog: models", not learned and not odd, f"{len(kinds)} models ({counts})")]
    if learned:
        results[0] = Result("catalog: models", False, "spelled otherwise: " + _names(learned), NAMES_FIX)
    if odd:
        results.append(
            Result("catalog: output kinds", False, f"kinds the client does not know: {odd}", REPORT)
        )
    return results


def _names(learned: Mapping[str, str]) -> str:
    return ", ".join(f"{wire.setting(attr)} = {spelled!r}" for attr, spelled in learned.items())


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
            results.append(Result("catalog: one model", False, str(exc), NAMES_FIX))
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


def documents(probe: Probe, found: Found) -> list[Result]:
    """``openapi.json`` (3.1, the run and read paths, each model's input schema) and ``llms.txt``."""
    ids = [m.id for m in found.models]
    doc = probe.send("openapi.json", "GET", "openapi", key=False)
    body = doc.body if isinstance(doc.body, Mapping) else {}
    paths = [str(p) for p in body.get("paths", {})] if isinstance(body.get("paths"), Mapping) else []
    schemas = (
        body.get("components", {}).get("schemas", {}) if isinstance(body.get("components"), Mapping) else {}
    )
    missing = [i for i in ids if f"Input_{i}" not in schemas] if isinstance(schemas, Mapping) else ids
    problems = []
    if doc.status != 200 or not str(body.get("openapi", "")).startswith("3.1"):
        problems.append(f"answered {doc.said()}, not an OpenAPI 3.1 document")
    if not any(p.endswith("/run") for p in paths) or not any("/generations/" in p for p in paths):
        problems.append(f"its paths {paths[:4]} lack /v1/run or /v1/generations/{{id}}")
    if missing:
        problems.append(f"no Input_<modelId> for {len(missing)} models ({', '.join(missing[:3])})")
    detail = "; ".join(problems) or f"3.1, {len(paths)} paths, an input schema for each of {len(ids)} models"
    text = probe.send("llms.txt", "GET", "llms_txt", key=False)
    words = text.body if isinstance(text.body, str) else ""
    absent = [i for i in ids if i not in words]
    llms_ok = text.status == 200 and bool(words) and not absent
    llms = f"{len(ids)} model ids" if llms_ok else f"{text.status}: {len(absent)} model ids absent"
    return [Result("openapi.json", not problems, detail, REPORT), Result("llms.txt", llms_ok, llms, REPORT)]


def minimal_input(model: Model) -> dict[str, Any]:
    """An input with every required field filled (media by URLs no one can read: an estimate measures
    nothing it cannot download, and assumes the spec's 30 s)."""
    values: dict[str, Any] = {}
    for name in model.required:
        prop = model.properties.get(name)
        prop = prop if isinstance(prop, Mapping) else {}
        kind = media_kind(prop)
        if kind is not None:
            values[name] = [STAND_INS[kind]] if prop.get("type") == "array" else STAND_INS[kind]
        elif "default" in prop:
            values[name] = prop["default"]
        elif isinstance(prop.get("enum"), list) and prop["enum"]:
            values[name] = prop["enum"][0]
        elif prop.get("type") in ("integer", "number"):
            values[name] = prop.get("minimum", 1)
        elif prop.get("type") == "boolean":
            values[name] = False
        else:
            values[name] = "A short check of the service by mediagen doctor."
    return values


def estimates(probe: Probe, spelling: Spelling, found: Found) -> list[Result]:
    """One estimate per pricing type (flat included): an integer the client reads; a flat model's equals
    its listed cost."""
    by_type: dict[str | None, Model] = {}
    for model in found.models:
        by_type.setdefault(model.pricing.type if model.pricing else None, model)
    results = []
    for kind, model in by_type.items():
        name = f"estimate: {kind or 'flat price'} ({model.id})"
        answer = probe.send(
            name, "POST", "estimate", body={"modelId": model.id, "input": minimal_input(model)}
        )
        before = dict(spelling.learned)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SpellingLearned)
                if answer.status != 200 or not isinstance(answer.data, Mapping):
                    raise ServiceResponseError(f"answered {answer.said()}")
                estimate = Estimate.from_api(spelling.estimate_data(answer.data, model.id), spelling.names)
        except ServiceResponseError as exc:
            results.append(Result(name, False, str(exc), NAMES_FIX if "names file" in str(exc) else REPORT))
            continue
        learned = {k: v for k, v in spelling.learned.items() if before.get(k) != v}
        found.learned.update(learned)
        if learned:
            results.append(Result(name, False, "spelled otherwise: " + _names(learned), NAMES_FIX))
        elif kind is None and estimate.credits != model.credits:
            results.append(
                Result(name, False, f"{credits(estimate.credits)}, listed at {model.credits}", REPORT)
            )
        else:
            results.append(Result(name, True, credits(estimate.credits)))
    return results


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


def video_options(probe: Probe, spelling: Spelling) -> list[Result]:
    """The topic-to-video options answer (a free read): every name the client reads it by is there."""
    answer = probe.send("topic-to-video: options", "GET", "job_options")
    names = spelling.names
    wanted = [names.options_voices, names.options_genders, names.options_looks, names.options_flows]
    if answer.status != 200 or not isinstance(answer.data, Mapping):
        return [Result("topic-to-video: options", False, f"answered {answer.said()}", REPORT)]
    absent = [name for name in wanted if name not in answer.data]
    try:
        VideoOptions.from_api(answer.data, names)
    except ServiceResponseError as exc:
        return [Result("topic-to-video: options", False, str(exc), NAMES_FIX)]
    if absent:
        detail = f"no {', '.join(absent)} (its members: {', '.join(map(str, answer.data))[:80]})"
        return [Result("topic-to-video: options", False, detail, NAMES_FIX)]
    results = [
        Result("topic-to-video: options", True, f"voices, looks and edit styles ({', '.join(wanted)})")
    ]
    defaults = answer.data.get(names.options_defaults)
    if isinstance(defaults, Mapping):  # keyed by the start body's names: the only free word on them
        body = [names.job_gender, names.job_look, names.job_voice, names.job_flow]
        unknown = [name for name in body if name not in defaults]
        detail = (
            f"its defaults name {', '.join(map(str, defaults))[:80]}; the client sends {', '.join(unknown)}"
        )
        ok = not unknown
        results.append(
            Result("topic-to-video: body names", ok, detail if unknown else ", ".join(body), NAMES_FIX)
        )
    return results
