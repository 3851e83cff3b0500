"""The doctor's checks that run the client itself, for free: the catalog as it reads it (every page), what
``llms.txt`` and ``openapi.json`` say of it, one estimate per pricing type (each option of a per-option
model), the topic-to-video options, and the start body's names from the agent server's ``make_video``.

Each runs the client's own code under a watch: a name it had to learn, a value it had to read in another
type or case, an answer that disagrees with what the spec makes certain, is a failed check with its fix:
the names-file lines (printed at the end), the path, or the type. What the doctor reports is what the
client would make of the service.
"""

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mediagen_nb.client import Client
from mediagen_nb.client.errors import MediagenError
from mediagen_nb.client.resources import Model
from mediagen_nb.client.resources.fields import say_again
from mediagen_nb.client.spelling import SpellingLearned
from mediagen_nb.doctor.checks import REPORT, Found, Result, credits, minimal_input
from mediagen_nb.protocol import documents, wire
from mediagen_nb.protocol.documents import KINDS
from mediagen_nb.protocol.environment import ENV_WIRE
from mediagen_nb.protocol.schema import media_kind

T = TypeVar("T")
NAMES_FIX = f"the names-file lines below (names.toml, {ENV_WIRE}=names.toml)"
MOST_OPTIONS = 6  # estimates of a per-option model's options, at most


@dataclass
class Watched:
    """What one check's client calls did: their result or error, names learned, and what was said."""

    value: Any = None
    error: MediagenError | None = None
    learned: dict[str, str] = field(default_factory=dict)
    said: list[str] = field(default_factory=list)  # normalisations and disagreements (warnings)


def watch(client: Client, found: Found, call: Callable[[], T]) -> Watched:
    """Run ``call`` and keep what it taught the client's spelling and what it warned (see the module)."""
    spelling = client.settings.spelling
    before = dict(spelling.learned)
    seen = Watched()
    say_again()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            seen.value = call()
        except MediagenError as exc:
            seen.error = exc
    seen.learned = {k: v for k, v in spelling.learned.items() if before.get(k) != v}
    seen.said = [
        str(w.message).removeprefix("mediagen_nb: ")
        for w in caught
        if issubclass(w.category, UserWarning) and not issubclass(w.category, SpellingLearned)
    ]
    found.learned.update(seen.learned)
    return seen


def _names(learned: Mapping[str, str]) -> str:
    return ", ".join(wire.line(attr, spelled) for attr, spelled in learned.items())


def verdict(check: str, seen: Watched, ok_detail: str) -> Result:
    """A check's result from what was watched: an error, learned names (their lines), or what was said."""
    if seen.error is not None:
        message = str(seen.error)
        fix = "see the message" if ENV_WIRE in message or "names file" in message else REPORT
        if seen.learned:
            fix = NAMES_FIX
        return Result(check, False, message, fix)
    if seen.learned:
        return Result(check, False, "spelled otherwise: " + _names(seen.learned), NAMES_FIX)
    if seen.said:
        return Result(
            check, False, "; ".join(seen.said), "none needed: the client reads it as said; " + REPORT
        )
    return Result(check, True, ok_detail)


def catalog(client: Client, found: Found) -> list[Result]:
    """The models list as the client reads it: every page, checked against the documents."""
    seen = watch(client, found, lambda: client.models(refresh=True))
    if seen.error is None:
        found.models = list(seen.value)
    kinds = [m.output_type for m in found.models]
    counts = ", ".join(f"{kinds.count(kind)} {kind}" for kind in sorted(KINDS))
    results = [verdict("catalog: models", seen, f"{len(kinds)} models ({counts})")]
    pages = client._engine.catalog.pages
    if pages and seen.error is None:
        first = pages[0]
        lines: dict[str, str] = {}
        if first.link is not None and "." not in first.member:
            lines = {"models_next": first.member}
        elif first.as_is and len(first.params) == 1 and "." not in first.member:
            [(param, _)] = first.params.items()
            lines = {"models_next": first.member, "models_next_param": param}
        found.pinned.update(lines)
        how = f"by {pages[0].member} ({', '.join(pages[0].params) or 'a link'})"
        fix = NAMES_FIX if lines else "none needed: the client follows them itself"
        results.append(
            Result(
                "catalog: pages",
                False,
                f"the models list comes in {len(pages) + 1} pages, each naming the next {how}: followed",
                fix,
            )
        )
    odd = sorted({str(kind) for kind in kinds if kind not in KINDS})
    if odd:
        results.append(
            Result("catalog: output kinds", False, f"kinds the client does not know: {odd}", REPORT)
        )
    return results


def document_checks(client: Client, found: Found) -> list[Result]:
    """``llms.txt`` and ``openapi.json`` against the catalog: ids, count, kinds and required inputs."""
    models = {m.id: m for m in found.models}
    results = []
    listed = watch(client, found, lambda: documents.llms_models(client.llms_txt()))
    if listed.error is not None or not listed.value:
        why = f"answered {listed.error}" if listed.error else "it lists no model the client can read"
        results.append(Result("llms.txt", False, why, REPORT))
    else:
        results.append(_llms(listed.value, models))
    doc = watch(client, found, client.openapi)
    if doc.error is not None or not isinstance(doc.value, Mapping):
        results.append(Result("openapi.json", False, f"answered {doc.error or 'no document'}", REPORT))
    else:
        results.append(_openapi(doc.value, models))
    return results


def _few(items: list[str]) -> str:
    return ", ".join(items[:4]) + (", …" if len(items) > 4 else "")


def _llms(listed: Mapping[str, documents.Listed], models: Mapping[str, Model]) -> Result:
    problems = []
    missing = [i for i in models if i not in listed]
    extra = [i for i in listed if i not in models]
    if missing:
        problems.append(f"{len(missing)} models of the catalog absent ({_few(missing)})")
    if extra:
        problems.append(f"{len(extra)} models not in the catalog ({_few(extra)})")
    kinds = [i for i, m in models.items() if i in listed and listed[i].kind != m.output_type]
    if kinds:
        problems.append(f"another output kind for {_few(kinds)}")
    required = [
        i
        for i, m in models.items()
        if i in listed and set(listed[i].required or m.required) != set(m.required)
    ]
    if required:
        problems.append(f"other required inputs for {_few(required)}")
    detail = "; ".join(problems) or f"{len(listed)} models, their kinds and required inputs as the catalog's"
    return Result("llms.txt", not problems, detail, REPORT)


GENERATION = ("id", "modelId", "status", "output", "error", "creditsSpent", "createdAt")


def _openapi(document: Mapping[str, Any], models: Mapping[str, Model]) -> Result:
    problems = []
    if not str(document.get("openapi", "")).startswith("3.1"):
        problems.append(f"openapi {document.get('openapi')!r}, not 3.1")
    paths = [str(p) for p in document.get("paths", {})] if isinstance(document.get("paths"), Mapping) else []
    if not any(p.endswith("/run") for p in paths) or not any("/generations/" in p for p in paths):
        problems.append(f"its paths {paths[:4]} lack /v1/run or /v1/generations/{{id}}")
    inputs = documents.openapi_inputs(document)
    missing = [i for i in models if i not in inputs]
    extra = [i for i in inputs if i not in models]
    if missing:
        problems.append(f"no Input_<modelId> for {len(missing)} models ({_few(missing)})")
    if extra:
        problems.append(f"input schemas of {len(extra)} models not in the catalog ({_few(extra)})")
    required = [
        i
        for i, m in models.items()
        if i in inputs and set(inputs[i].get("required") or ()) != set(m.required)
    ]
    if required:
        problems.append(f"other required inputs for {_few(required)}")
    shown = documents.openapi_fields(document, "Generation")
    absent = [name for name in GENERATION if shown and name not in shown]
    if absent:
        problems.append(f"its Generation has no {', '.join(absent)} (its fields: {', '.join(shown[:10])})")
    detail = "; ".join(problems) or (
        f"3.1, {len(paths)} paths, the input schema of each of {len(models)} models as the catalog's"
    )
    return Result("openapi.json", not problems, detail, REPORT)


def _options(model: Model) -> list[tuple[str, Any]]:
    """A per-option model's priced options: each value of the enum inputs its price varies by."""
    found: list[tuple[str, Any]] = []
    for name in model.varies_by:
        prop = model.properties.get(name)
        if isinstance(prop, Mapping) and isinstance(prop.get("enum"), list) and media_kind(prop) is None:
            found += [(name, value) for value in prop["enum"][:MOST_OPTIONS]]
    return found


def estimates(client: Client, found: Found) -> list[Result]:
    """One estimate per pricing type (flat included), through the client's own checks: a whole number,
    never negative, a flat model's its listed price, the one member that is the price; a per-option
    model's estimated at each option (free), each one of the prices its options allow."""
    by_type: dict[str | None, Model] = {}
    for model in found.models:
        by_type.setdefault(model.pricing.type if model.pricing else None, model)
    results = []
    spelling = client.settings.spelling
    settled = spelling.is_confirmed("estimate_credits")
    for kind, model in by_type.items():
        name = f"estimate: {kind or 'flat price'} ({model.id})"
        values = minimal_input(model)
        options = _options(model) if model.pricing is not None else []
        asks = [{**values, field: value} for field, value in options] or [values]

        def priced(asks: list[dict[str, Any]] = asks, model: Model = model) -> list[int]:
            return [client.estimate(model.id, ask, validate=False).credits for ask in asks]

        seen = watch(client, found, priced)
        if seen.error is None and options:
            figures = [f"{value} {figure}" for (_, value), figure in zip(options, seen.value, strict=True)]
            detail = f"{options[0][0]}: " + ", ".join(figures)
        else:
            detail = credits(seen.value[0]) if seen.value else ""
        results.append(verdict(name, seen, detail))
    if not settled and spelling.is_confirmed("estimate_credits") and "estimate_credits" not in found.learned:
        found.pinned["estimate_credits"] = spelling.names.estimate_credits
        results.append(
            Result(
                "estimate: its numbers",
                False,
                f"an estimate carries other whole numbers beside its price: the client told "
                f"{spelling.names.estimate_credits!r} to be the price by a flat-priced model's estimate (one "
                "more request a session)",
                NAMES_FIX,
            )
        )
    return results


def video_options(client: Client, found: Found) -> list[Result]:
    """The topic-to-video options answer (a free read), as the client reads it."""
    seen = watch(client, found, client.video_options)
    return [verdict("topic-to-video: options", seen, "voices, looks, edit styles and length bounds")]


def job_body(client: Client, found: Found) -> list[Result]:
    """The start body's names, from the agent server's ``make_video`` schema (``tools/list``, free): the
    client confirms them the same way before its first start."""
    from mediagen_nb.client.agent import tool_schemas

    spelling = client.settings.spelling
    check = "topic-to-video: body names"
    if spelling.given & frozenset(wire.TABLES["job"]):
        return [Result(check, True, f"set by the names file ({spelling.source})")]
    seen = watch(client, found, lambda: tool_schemas(client._engine.core))
    if seen.error is not None:
        return [
            Result(
                check,
                False,
                f"make_video's schema could not be read ({seen.error}): the start body's names are "
                "unconfirmed, so a start whose answer is lost is never sent again",
                f"set the [job] table of a names file ({', '.join(wire.TABLES['job'].values())}) as the "
                "service names them; no answer it publishes shows them",
            )
        ]
    schema = seen.value.get("make_video") if isinstance(seen.value, Mapping) else None
    before = dict(spelling.learned)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpellingLearned)
        unsettled = spelling.learn_job_body(schema)
    learned = {k: v for k, v in spelling.learned.items() if before.get(k) != v}
    found.learned.update(learned)
    if unsettled:
        return [
            Result(
                check,
                False,
                f"make_video's schema does not tell {', '.join(unsettled)} apart",
                f"set the [job] table of a names file ({', '.join(unsettled)}) as the service names them",
            )
        ]
    if learned:
        return [Result(check, False, "spelled otherwise: " + _names(learned), NAMES_FIX)]
    return [Result(check, True, "make_video's schema names them as the client does")]
