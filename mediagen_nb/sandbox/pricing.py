"""The sandbox's one pricing function, shared by ``/v1/run`` and ``/v1/estimate`` so both always agree.

Each model carries an internal :class:`PriceRule`; its public ``pricing`` object
(``{"type": ..., "varies_by": [...]}``) and its listed ``credits`` are derived from that rule, so the
catalog cannot advertise one price and charge another.

Pricing type names (``pricing.type``). The spec does not show them; these names are our choice:

* ``per_option``: a price per run looked up by the value of one enum input (gpt-image-2's ``quality``).
* ``per_media_second``: per started second of the audio or video file in the model's media field,
  as measured by the service (the internal ``_audioDurationSec``; zonos2, infinitetalk).
* ``per_text_length``: per started block of characters of a text input (gemini-tts).
* ``per_output_second``: per second of requested output length, the ``duration`` input.

Any rule may carry :class:`Multiplier` s keyed by further enum or boolean inputs (infinitetalk's
``resolution``: 720p costs twice 480p); those inputs join ``varies_by``. Flat-priced models have no
pricing object: their ``credits`` is the price of every run.

Fractional credits round up; every run costs at least 1 credit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from mediagen_nb.protocol.limits import ESTIMATE_FALLBACK_SECONDS
from mediagen_nb.protocol.schema import media_kind
from mediagen_nb.protocol.wire import LISTED_MEDIA_SECONDS

if TYPE_CHECKING:
    from mediagen_nb.sandbox.catalog.model import ModelSpec

Option = str | int | float | bool

# A listed price of a length-billed model is the price of this much media (and, for text-billed
# models, of this many characters: about 10 seconds of speech at 15 characters a second).
REFERENCE_MEDIA_SECONDS = LISTED_MEDIA_SECONDS
REFERENCE_TEXT_CHARS = 150


def same_option(a: object, b: object) -> bool:
    """Equality of option values that keeps booleans apart from 0 and 1."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def input_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``default`` of every property of a model's input schema that has one."""
    return {name: prop["default"] for name, prop in schema.get("properties", {}).items() if "default" in prop}


def _credits(amount: float) -> str:
    """``"1 credit"``, ``"2.5 credits"``."""
    amount = round(amount, 4)
    return f"{amount:g} credit" + ("" if amount == 1 else "s")


def _label(field: str, option: Option) -> str:
    """An option in a sentence: ``"720p"``, ``"scale 4"``, ``"generate_audio on"``."""
    if isinstance(option, bool):
        return f"{field} {'on' if option else 'off'}"
    return option if isinstance(option, str) else f"{field} {option}"


def _ratio(ratio: float) -> str:
    """How much more an option costs, in words: ``"twice"``, ``"2.5 times"``."""
    return "twice" if math.isclose(ratio, 2) else f"{round(ratio, 2):g} times"


@dataclass(frozen=True)
class Media:
    """The length a length-billed input was priced for: measured, or assumed by an estimate."""

    seconds: float | None = None
    assumed: bool = False


@dataclass(frozen=True)
class Multiplier:
    """Scales a price by the value of one enum or boolean input, e.g. ``resolution``."""

    field: str
    factors: tuple[tuple[Option, float], ...]

    def factor(self, value: object) -> float:
        for option, factor in self.factors:
            if same_option(option, value):
                return factor
        raise ValueError(f"no price for {self.field}={value!r}")

    def options(self) -> tuple[Option, ...]:
        return tuple(option for option, _ in self.factors)

    def phrase(self) -> str:
        """``"720p costs twice 480p"``: every option compared with the cheapest one."""
        base, low = min(self.factors, key=lambda pair: pair[1])
        return ", ".join(
            f"{self.label(option)} costs {_ratio(factor / low)} {self.label(base)}"
            for option, factor in self.factors
            if not math.isclose(factor, low)
        )

    def label(self, option: Option) -> str:
        """``"720p"``; a number or boolean names its field: ``"factor 4"``, ``"generate_audio on"``."""
        return _label(self.field, option)

    def setting(self, option: Option) -> str:
        """``"resolution 720p"``, ``"factor 4"``, ``"generate_audio on"``."""
        return self.label(option) if not isinstance(option, str) else f"{self.field} {option}"


@dataclass(frozen=True, kw_only=True)
class PriceRule:
    """How a model is billed. Subclasses set ``TYPE`` (the public pricing type) and ``amount``."""

    TYPE: ClassVar[str | None] = None
    multipliers: tuple[Multiplier, ...] = ()

    def fields(self) -> tuple[str, ...]:
        """The inputs the base amount reads (before multipliers)."""
        return ()

    def varies_by(self) -> tuple[str, ...]:
        return self.fields() + tuple(m.field for m in self.multipliers)

    def public(self) -> dict[str, Any] | None:
        """The catalog's ``pricing`` object, or None for a flat price."""
        if self.TYPE is None:
            return None
        return {"type": self.TYPE, "varies_by": list(self.varies_by())}

    def amount(self, values: Mapping[str, Any], media_seconds: float | None) -> float:
        """Credits before multipliers and rounding."""
        raise NotImplementedError

    def scaled(self, factor: float) -> PriceRule:
        """The same rule with every amount ``factor`` times as much (a listed price that changed)."""
        raise NotImplementedError

    def quote(self, values: Mapping[str, Any], media_seconds: float | None) -> int:
        """Whole credits for an input with defaults applied: multipliers, then ceil, at least 1."""
        raw = self.amount(values, media_seconds)
        for multiplier in self.multipliers:
            raw *= multiplier.factor(values.get(multiplier.field))
        return max(1, math.ceil(round(raw, 6)))

    def reference_input(self, defaults: Mapping[str, Any]) -> dict[str, Any]:
        """The input a listed price is quoted for: the schema defaults (text rules add a text)."""
        return dict(defaults)

    def head(self, model: ModelSpec, values: Mapping[str, Any], media: Media) -> str:
        """The first clause of :func:`billing_text`: the rate at ``values``, and the amount it applies to."""
        raise NotImplementedError

    def caveat(self, model: ModelSpec, media: Media) -> str:
        """What the figure rests on that a run would not accept (an assumed length), or nothing."""
        return ""

    def _rate_at(self, rate: float, values: Mapping[str, Any]) -> tuple[float, str]:
        """A per-unit rate scaled to the options in ``values``, and its ``" at resolution 720p"``."""
        at = ""
        for multiplier in self.multipliers:
            value: Option = values[multiplier.field]  # every multiplied input has a default
            rate *= multiplier.factor(value)
            at += f" {'with' if isinstance(value, bool) else 'at'} {multiplier.setting(value)}"
        return rate, at


@dataclass(frozen=True, kw_only=True)
class Flat(PriceRule):
    """The same price for every run (no pricing object)."""

    credits: int

    def __post_init__(self) -> None:
        if self.multipliers or self.credits < 1:
            raise ValueError("a flat price has no multipliers and is at least 1 credit")

    def amount(self, values: Mapping[str, Any], media_seconds: float | None) -> float:
        return self.credits

    def scaled(self, factor: float) -> Flat:
        return replace(self, credits=max(1, round(self.credits * factor)))

    def head(self, model: ModelSpec, values: Mapping[str, Any], media: Media) -> str:
        return f"{_credits(self.credits)} per {_unit(model)}"


@dataclass(frozen=True, kw_only=True)
class PerOption(PriceRule):
    """A price per run looked up by one enum input (e.g. ``quality``: low 3, medium 8, high 25)."""

    TYPE: ClassVar[str] = "per_option"
    field: str
    prices: tuple[tuple[Option, float], ...]

    def fields(self) -> tuple[str, ...]:
        return (self.field,)

    def options(self) -> tuple[Option, ...]:
        return tuple(option for option, _ in self.prices)

    def scaled(self, factor: float) -> PerOption:
        return replace(self, prices=tuple((option, credits * factor) for option, credits in self.prices))

    def amount(self, values: Mapping[str, Any], media_seconds: float | None) -> float:
        value = values.get(self.field)
        for option, credits in self.prices:
            if same_option(option, value):
                return credits
        raise ValueError(f"no price for {self.field}={value!r}")

    def head(self, model: ModelSpec, values: Mapping[str, Any], media: Media) -> str:
        chosen = values.get(self.field, self.prices[0][0])

        def at(option: Option) -> int:
            return self.quote({**values, self.field: option}, None)

        sep = " " if isinstance(chosen, str) else ": "
        rest = ", ".join(
            f"{_label(self.field, o)}{sep}{at(o)}" for o, _ in self.prices if not same_option(o, chosen)
        )
        more = self._rate_at(1.0, values)[1]
        more = more.replace(" at ", " and ", 1) if more.startswith(" at ") else more
        return f"{_credits(at(chosen))} per {_unit(model)} at {self.field} {chosen}{more} ({rest})"


@dataclass(frozen=True, kw_only=True)
class PerMediaSecond(PriceRule):
    """Per started second of the file in media field ``field`` (an .mp3, .wav or .mp4 it measures).

    Whole seconds keep ratios exact: infinitetalk at 720p costs exactly twice 480p for any length.
    """

    TYPE: ClassVar[str] = "per_media_second"
    field: str
    rate: float  # credits per second

    def fields(self) -> tuple[str, ...]:
        return (self.field,)

    def scaled(self, factor: float) -> PerMediaSecond:
        return replace(self, rate=self.rate * factor)

    def amount(self, values: Mapping[str, Any], media_seconds: float | None) -> float:
        # None only reaches here from an estimate whose file could not be read: the spec's 30 s.
        seconds = ESTIMATE_FALLBACK_SECONDS if media_seconds is None else media_seconds
        return self.rate * math.ceil(round(seconds, 6))

    def head(self, model: ModelSpec, values: Mapping[str, Any], media: Media) -> str:
        rate, at = self._rate_at(self.rate, values)
        noun = media_kind(model.input_schema["properties"][self.field]) or "media"
        named = "" if noun == self.field else f" ({self.field})"
        per = f"{_credits(rate)} per second of input {noun}{named}{at}"
        if media.seconds is None:
            return per
        return (
            f"{per}, for {math.ceil(round(media.seconds, 6))} s {'assumed' if media.assumed else 'measured'}"
        )

    def caveat(self, model: ModelSpec, media: Media) -> str:
        if not media.assumed:
            return ""
        noun = media_kind(model.input_schema["properties"][self.field]) or "media"
        return f"the {noun}'s length could not be read, so it was assumed; a run would refuse this file"


@dataclass(frozen=True, kw_only=True)
class PerTextLength(PriceRule):
    """Per started block of ``chars`` characters of text input ``field``."""

    TYPE: ClassVar[str] = "per_text_length"
    field: str
    chars: int
    credits: float  # per block

    def fields(self) -> tuple[str, ...]:
        return (self.field,)

    def scaled(self, factor: float) -> PerTextLength:
        return replace(self, credits=self.credits * factor)

    def amount(self, values: Mapping[str, Any], media_seconds: float | None) -> float:
        return math.ceil(len(str(values.get(self.field) or "")) / self.chars) * self.credits

    def reference_input(self, defaults: Mapping[str, Any]) -> dict[str, Any]:
        return {**defaults, self.field: "x" * REFERENCE_TEXT_CHARS}

    def head(self, model: ModelSpec, values: Mapping[str, Any], media: Media) -> str:
        credits, at = self._rate_at(self.credits, values)
        length = len(str(values.get(self.field) or ""))
        return (
            f"{_credits(credits)} per {self.chars} characters of {self.field}{at}, for {length:,} characters"
        )


@dataclass(frozen=True, kw_only=True)
class PerOutputSecond(PriceRule):
    """Per second of requested output length, read from input ``field`` (``duration``)."""

    TYPE: ClassVar[str] = "per_output_second"
    field: str = "duration"
    rate: float  # credits per second

    def fields(self) -> tuple[str, ...]:
        return (self.field,)

    def scaled(self, factor: float) -> PerOutputSecond:
        return replace(self, rate=self.rate * factor)

    def amount(self, values: Mapping[str, Any], media_seconds: float | None) -> float:
        return self.rate * float(values[self.field])

    def head(self, model: ModelSpec, values: Mapping[str, Any], media: Media) -> str:
        rate, at = self._rate_at(self.rate, values)
        length = float(values[self.field])
        return f"{_credits(rate)} per second of {model.kind}{at}, for {self.field} {length:g} s"


RULES: dict[str, type[PriceRule]] = {
    str(cls.TYPE): cls for cls in (PerOption, PerMediaSecond, PerTextLength, PerOutputSecond)
}  # by pricing type; their names are protocol.wire.PRICING_TYPES


def _unit(model: ModelSpec) -> str:
    return "image" if model.kind == "image" else "run"


def listed_credits(rule: PriceRule, schema: Mapping[str, Any]) -> int:
    """A model's listed ``credits``: the price at the schema defaults (10 s of media, 150 characters)."""
    return rule.quote(rule.reference_input(input_defaults(schema)), REFERENCE_MEDIA_SECONDS)


def price(model: ModelSpec, input: Mapping[str, Any], media_seconds: float | None) -> int:
    """Credits a run of ``model`` costs: the same number for ``/v1/run`` and ``/v1/estimate``.

    ``input`` is the validated input (absent defaults are filled here too). ``media_seconds`` is the
    measured length of ``model.media_field``'s file; it is read only when that field is in
    ``varies_by``, and None there prices the spec's 30-second estimate fallback.
    """
    values = {**input_defaults(model.input_schema), **input}
    return model.rule.quote(values, media_seconds)


def billing_text(
    model: ModelSpec, input: Mapping[str, Any], media_seconds: float | None = None, *, assumed: bool = False
) -> str:
    """One sentence on how this input of ``model`` is billed (the estimate's billing text).

    It names the inputs that set the price with their values and the measured length of a
    length-billed file (or the 30 s assumed when it cannot be read), how the other options compare,
    and last that a run would refuse a file whose length was assumed: ``"2 credits per second of
    input audio at resolution 480p, for 12 s measured; 720p costs twice 480p"``. So one estimate's
    text is true of every input sharing its values of ``varies_by`` (a sweep prices those with one).
    """
    values = {**input_defaults(model.input_schema), **input}
    media = Media(media_seconds, assumed)
    rule = model.rule
    parts = [
        rule.head(model, values, media),
        *(m.phrase() for m in rule.multipliers),
        rule.caveat(model, media),
    ]
    return "; ".join(part for part in parts if part)
