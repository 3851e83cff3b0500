"""The generation API's resources: a model of the catalog, its pricing, an estimate, a generation."""

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from html import escape
from pathlib import Path
from typing import Any

from mediagen_nb.client import html
from mediagen_nb.client.errors import (
    GenerationFailed,
    GenerationTimedOut,
    MediagenError,
    ServiceResponseError,
)
from mediagen_nb.client.resources.fields import (
    ARRAY,
    BASE_URL_HINT,
    GENERATION_FIELDS,
    KINDS,
    TEXT,
    Field,
    Shown,
    checked,
    estimate_fields,
    expect,
    model_fields,
    parse,
    short,
)
from mediagen_nb.protocol import messages, wire
from mediagen_nb.protocol.schema import length_billed_field, media_kind


@dataclass(frozen=True, repr=False)
class Generation(Shown):
    """One run of a catalog model. ``url`` is the main result; ``elapsed_s`` is measured by this client."""

    id: str
    model_id: str
    status: str
    output: Mapping[str, Any] | None = None
    error: str | None = None
    credits_spent: int = 0
    created_at: str | None = None
    media_duration_sec: float | None = None
    still_running: bool | None = None
    elapsed_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False  # an earlier start of the same ask, returned at no charge

    _headline = ("id", "model_id", "status", "credits_spent", "elapsed_s", "url", "error", "reused")

    @classmethod
    def from_api(cls, data: Mapping[str, Any], *, elapsed_s: float | None = None) -> "Generation":
        """A generation answer; one without its id, status or ``creditsSpent``, or a ``succeeded`` one
        without output URLs, is a ServiceResponseError: a charge is never read as 0, nor a result as none."""
        needed = ("model_id", "status", "credits_spent")
        generation = parse(cls, data, GENERATION_FIELDS, required=needed, elapsed_s=elapsed_s)
        output = generation.output or {}
        kind = checked("Generation.output", Field("type", vocab=KINDS), output.get("type"))
        if kind != output.get("type"):
            generation = replace(generation, output={**output, "type": kind})
            output = generation.output or {}
        expect("Generation.output", "urls", output.get("urls"), ARRAY)
        for url in output.get("urls") or ():
            expect("Generation.output", "urls[]", url, TEXT)
        if generation.status == "succeeded" and not output.get("urls"):
            raise ServiceResponseError(
                f"the service sent Generation {generation.id} succeeded with output = "
                f"{str(generation.output)[:60]}, not an object with urls: {BASE_URL_HINT}",
                field="output",
            )
        return generation

    @property
    def output_type(self) -> str | None:
        return (self.output or {}).get("type")

    @property
    def urls(self) -> tuple[str, ...]:
        return tuple((self.output or {}).get("urls") or ())

    @property
    def url(self) -> str | None:
        """The main result (the first output URL), or None until success."""
        return self.urls[0] if self.urls else None

    def _output(self) -> str:
        """The main output's URL; GenerationFailed (or a wait hint) when there is none."""
        if self.url is None:
            self.raise_for_status()  # a failed one says why
            raise MediagenError(
                f"{self.model_id} {self.id} has no output yet ({self.status}): wait() for it first"
            )
        return self.url

    def bytes(self) -> bytes:
        """The main output's bytes, downloaded now (raises GenerationFailed when there is none)."""
        from mediagen_nb.client.transport import fetch

        return fetch(self._output())

    def save(self, path: "str | os.PathLike[str]") -> Path:
        """Write the main output to ``path``; a path without an extension gets the output's media
        type's (the URL's own only when it is an extension of that type)."""
        from mediagen_nb.client import files
        from mediagen_nb.client.transport import save

        url = self._output()
        target = Path(path)
        if target.suffix:
            return save(url, target)
        return save(
            url, lambda media_type: target.with_suffix(files.extension(self.output_type, url, media_type))
        )

    @property
    def done(self) -> bool:
        """Ended: ``succeeded`` or ``failed`` (``queued`` counts as processing, as the spec says)."""
        return self.status in ("succeeded", "failed")

    @property
    def timed_out(self) -> bool:
        return self.status == "failed" and str(self.error or "").startswith(messages.GENERATION_TIMED_OUT)

    def raise_for_status(self) -> "Generation":
        """Return self when not failed; raise GenerationTimedOut or GenerationFailed otherwise."""
        if self.status == "failed":
            raise GenerationTimedOut(self) if self.timed_out else GenerationFailed(self)
        return self

    def _repr_html_(self) -> str:
        facts: list[tuple[str, object]] = [
            ("credits", self.credits_spent),
            ("elapsed", f"{self.elapsed_s:.1f} s" if self.elapsed_s is not None else None),
            ("media", f"{self.media_duration_sec:g} s" if self.media_duration_sec is not None else None),
            ("id", self.id),
        ]
        body = "".join(html.media(u, self.output_type) for u in self.urls) + html.error_line(self.error)
        if self.status not in ("succeeded", "failed"):
            body += '<div style="color:#555">running…</div>'
        return html.card(self.model_id, self.status, facts, body)


@dataclass(frozen=True, repr=False)
class Pricing:
    """How a model's price depends on its input: ``type`` (billing method) and ``varies_by``."""

    type: str | None
    varies_by: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Pricing(type={self.type!r}, varies_by={self.varies_by!r})"


@dataclass(frozen=True, repr=False)
class Model(Shown):
    """A catalog record. ``credits`` is the price of every run when ``pricing`` is None."""

    id: str
    name: str | None = None
    description: str | None = None
    output_type: str | None = None
    group: str | None = None
    credits: int | None = None
    preview_url: str | None = None
    links: Mapping[str, Any] | None = None
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    pricing: Pricing | None = None
    example: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("id", "output_type", "group", "credits", "pricing")

    @classmethod
    def from_api(cls, data: Mapping[str, Any], names: wire.Names = wire.DEFAULT) -> "Model":
        """A catalog record in spelling ``names``; one without its id, output kind or listed cost is a
        ServiceResponseError naming the field: a catalog is never read with no kinds or free models."""
        who = f" {data.get(names.model_id)}" if isinstance(data, Mapping) and data.get(names.model_id) else ""
        model = parse(cls, data, model_fields(names), required=("id", "output_type", "credits"), who=who)
        raw = data.get("pricing")
        pricing = None
        if isinstance(raw, Mapping):
            expect("Model.pricing", "varies_by", raw.get("varies_by"), ARRAY)
            for name in raw.get("varies_by") or ():
                expect("Model.pricing", "varies_by[]", name, TEXT)
            rest = {k: v for k, v in raw.items() if k not in ("type", "varies_by")}
            pricing = Pricing(raw.get("type"), tuple(raw.get("varies_by") or ()), rest)
        return replace(model, pricing=pricing, input_schema=model.input_schema or {})

    @property
    def properties(self) -> Mapping[str, Any]:
        properties = self.input_schema.get("properties")
        return properties if isinstance(properties, Mapping) else {}

    @property
    def required(self) -> tuple[str, ...]:
        required = self.input_schema.get("required")
        return tuple(n for n in required if isinstance(n, str)) if isinstance(required, list) else ()

    @property
    def varies_by(self) -> tuple[str, ...]:
        return self.pricing.varies_by if self.pricing else ()

    @property
    def length_billed_field(self) -> str | None:
        """The audio/video input whose file length sets the price (``.mp3``/``.wav``/``.mp4`` only)."""
        raw = {"varies_by": list(self.varies_by)} if self.pricing else None
        return length_billed_field(self.input_schema, raw)

    @property
    def list_fields(self) -> tuple[str, ...]:
        """Inputs that take a list of URLs (a single URL is sent as a one-item list)."""
        return tuple(n for n, p in self.properties.items() if p.get("type") == "array" and media_kind(p))

    def _repr_html_(self) -> str:
        facts: list[tuple[str, object]] = [
            ("kind", self.output_type),
            ("group", self.group),
            ("price", listed_price(self)),
        ]
        described = {n: p for n, p in self.properties.items() if isinstance(p, Mapping)}  # not `true`
        rows = "".join(
            f"<tr><td><code>{escape(str(name))}</code>{' *' if name in self.required else ''}</td>"
            f"<td>{escape(str(prop.get('type', '')))}</td>"
            f"<td>{escape(short(prop.get('enum', prop.get('default', '')), 40))}</td>"
            f"<td>{escape(str(prop.get('description', '')))}</td></tr>"
            for name, prop in described.items()
        )
        preview = html.media(self.preview_url, "image", width=240)
        body = (
            f"<div>{escape(self.description or '')}</div>{preview}"
            f'<table style="font-size:12px"><tr><th>input</th><th>type</th><th>options / default</th>'
            f"<th>description</th></tr>{rows}</table>"
        )
        return html.card(f"{self.name or self.id} ({self.id})", self.output_type or "", facts, body)


def billed(model: Model) -> str:
    """`` (billed per option)``: the pricing type in words, or nothing."""
    kind = model.pricing.type if model.pricing is not None else None
    return f" (billed {kind.replace('_', ' ')})" if kind else ""


def listed_price(model: Model) -> str:
    """The catalog's price, with no request: ``N credits per run``, else what the price depends on.

    A length-billed model says it is priced by its file's length (its listed figure is the price of
    some length the catalog does not name); another priced model shows its figure as the listing,
    never as a minimum ("from N"): the catalog does not say it is one.
    """
    if model.pricing is None:
        return f"{messages.credits(model.credits)} per run"
    media = model.length_billed_field
    others = [name for name in model.varies_by if name != media]
    if media is not None:
        kind = media_kind(model.properties.get(media, {})) or "media"
        named = "" if kind == media else f" ({media})"
        rest = f" and {', '.join(others)}" if others else ""
        return f"priced by the {kind}'s length{named}{rest}{billed(model)}"
    varies = ", ".join(others) or "input"
    return f"varies by {varies}{billed(model)}; listed at {messages.credits(model.credits)}"


@dataclass(frozen=True, repr=False)
class Estimate(Shown):
    """What a run with this input will charge; ``billing`` says how the model is billed."""

    model_id: str
    credits: int
    billing: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("model_id", "credits", "billing")

    @classmethod
    def from_api(cls, data: Mapping[str, Any], names: wire.Names = wire.DEFAULT) -> "Estimate":
        """An estimate answer in spelling ``names``; one without its credits is a ServiceResponseError."""
        return parse(cls, data, estimate_fields(names), required=("credits",))

    def _repr_html_(self) -> str:
        return html.card(self.model_id, messages.credits(self.credits), [("billing", self.billing)])
