"""The sandbox's model catalog as data: 130 models (72 video, 41 image, 17 audio), as on 16 Sep 2026.

The spec fixes gpt-image-2, zonos2, the two infinitetalk lip-sync models, seven speech models and the
five replication video models; the rest are invented but shaped like real ones, so that together the
schemas use every JSON Schema feature a client must handle and every billing method. Each model's
``credits`` and public ``pricing`` are derived from its internal price rule (see ``pricing.py``).
"""

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mediagen_nb.protocol.paths import PATHS, path
from mediagen_nb.protocol.wire import (
    MODEL_CREDITS,
    MODEL_DESCRIPTION,
    MODEL_GROUP,
    MODEL_ID,
    MODEL_LINKS,
    MODEL_NAME,
    MODEL_OUTPUT_TYPE,
    MODEL_PREVIEW,
)
from mediagen_nb.sandbox.pricing import (
    Flat,
    Multiplier,
    Option,
    PerMediaSecond,
    PerOption,
    PerOutputSecond,
    PerTextLength,
    PriceRule,
    input_defaults,
    listed_credits,
    same_option,
)

Schema = dict[str, Any]

KINDS = ("image", "video", "audio")
ID_PATTERN = re.compile(r"^[a-z0-9.-]+$")
DEFAULT_OUTPUT_SECONDS = 5.0  # a video (or audio) model without a duration input makes this much
SPEECH_CHARS_PER_SECOND = 15.0  # text-to-speech output length: about 15 characters a second


@dataclass(frozen=True)
class ModelSpec:
    """One catalog model: its public record plus the rules the sandbox prices and runs it by.

    A run's mean simulated time is ``runtime_s + runtime_per_second * output seconds`` (see
    :func:`simulated_runtime`); for lip-sync and video-to-video the output is as long as the input media.
    """

    id: str
    name: str
    description: str
    kind: str
    group: str
    credits: int
    input_schema: Schema
    pricing: dict[str, Any] | None
    rule: PriceRule
    runtime_s: float
    runtime_per_second: float = 0.0
    media_field: str | None = None
    example: dict[str, Any] | None = None
    list_fields: tuple[str, ...] = ()
    min_media_seconds: tuple[tuple[str, float], ...] = ()  # (field, seconds) its media must be longer than

    def __post_init__(self) -> None:
        if not self.list_fields:
            props = self.input_schema.get("properties", {})
            fields = tuple(n for n, p in props.items() if p.get("type") == "array" and media_kind(p))
            object.__setattr__(self, "list_fields", fields)


def media_kind(schema_property: Mapping[str, Any]) -> str | None:
    """``"image"``, ``"audio"`` or ``"video"`` from a property's ``contentMediaType`` (an array's items')."""
    media = schema_property.get("contentMediaType")
    items = schema_property.get("items")
    if media is None and isinstance(items, Mapping):
        media = items.get("contentMediaType")
    kind = str(media).split("/")[0] if media else None
    return kind if kind in KINDS else None


def output_seconds(model: ModelSpec, input: Mapping[str, Any], media_seconds: float | None) -> float | None:
    """Length of the audio or video a run produces; None for images.

    Speech (and zonos2) follows the text, at 15 characters a second; models with a ``duration`` input
    make that much; lip-sync and other media-driven models follow the measured input media.
    """
    if model.kind == "image":
        return None
    values = {**input_defaults(model.input_schema), **input}
    if model.kind == "audio" and "text" in model.input_schema["properties"]:
        return max(1.0, len(str(values.get("text") or "")) / SPEECH_CHARS_PER_SECOND)
    if values.get("duration") is not None:
        return float(values["duration"])
    if model.media_field is not None and media_seconds is not None:
        return float(media_seconds)
    return DEFAULT_OUTPUT_SECONDS


def simulated_runtime(model: ModelSpec, input: Mapping[str, Any], media_seconds: float | None) -> float:
    """Mean simulated run time of one run, in simulated seconds."""
    return model.runtime_s + model.runtime_per_second * (output_seconds(model, input, media_seconds) or 0.0)


def record(model: ModelSpec, base_url: str) -> dict[str, Any]:
    """The public catalog record of ``model`` (list and single-model endpoints)."""
    base = base_url.rstrip("/")
    return {
        MODEL_ID: model.id,
        MODEL_NAME: model.name,
        MODEL_DESCRIPTION: model.description,
        MODEL_OUTPUT_TYPE: model.kind,
        MODEL_GROUP: model.group,
        MODEL_CREDITS: model.credits,
        MODEL_PREVIEW: base + path("sandbox_media", name=f"preview-{model.id}.png"),
        "input_schema": copy.deepcopy(model.input_schema),
        "pricing": copy.deepcopy(model.pricing),
        MODEL_LINKS: {"run": base + path("run"), "poll": base + PATHS["generation"]},
    }


def example_record(model: ModelSpec, base_url: str) -> dict[str, Any] | None:
    """``model.example`` with its sample paths (output and input) made absolute; None without one."""
    if model.example is None:
        return None
    base, prefix = base_url.rstrip("/"), _sample("")

    def absolute(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(prefix):
            return base + value
        if isinstance(value, dict):
            return {key: absolute(item) for key, item in value.items()}
        if isinstance(value, list):
            return [absolute(item) for item in value]
        return value

    return absolute(model.example)


# --- Schema pieces -------------------------------------------------------------------------------


def _prop(type_: str, description: str, default: Any = None, **keywords: Any) -> Schema:
    """One input property; every property carries a description."""
    prop: Schema = {"type": type_, "description": description, **keywords}
    if default is not None:
        prop["default"] = default
    return prop


def _string(description: str, default: str | None = None, max_length: int | None = None) -> Schema:
    return _prop("string", description, default, **({"maxLength": max_length} if max_length else {}))


def _text(description: str, max_length: int) -> Schema:
    """Long text: shown as a text area by form builders."""
    return _prop("string", description, format="textarea", maxLength=max_length)


def _integer(description: str, minimum: int, maximum: int, default: int | None = None) -> Schema:
    return _prop("integer", description, default, minimum=minimum, maximum=maximum)


def _number(description: str, minimum: float, maximum: float, default: float | None = None) -> Schema:
    return _prop("number", description, default, minimum=minimum, maximum=maximum)


def _boolean(description: str, default: bool) -> Schema:
    return _prop("boolean", description, default)


def _enum(description: str, options: Sequence[Option], default: Option | None) -> Schema:
    if all(isinstance(o, str) for o in options):
        type_ = "string"
    else:
        type_ = "integer" if all(isinstance(o, int) for o in options) else "number"
    return _prop(type_, description, default, enum=list(options))


def _media(kind: str, description: str) -> Schema:
    """A public https URL of an image, audio or video file."""
    return _prop("string", description, format="uri", contentMediaType=f"{kind}/*")


def _media_list(kind: str, description: str, max_items: int) -> Schema:
    item = _media(kind, f"Public https URL of one {kind}.")
    return _prop("array", description, items=item, minItems=1, maxItems=max_items)


def _schema(required: Sequence[str], properties: Mapping[str, Schema]) -> Schema:
    return {"type": "object", "properties": dict(properties), "required": list(required)}


def _prompt(subject: str) -> Schema:
    return _string(f"What the {subject} should show.")


def _negative() -> Schema:
    return _string("What to keep out of the result.", default="")


def _seed() -> Schema:
    return _integer("Random seed; -1 picks a random one.", -1, 2_147_483_647, -1)


def _safety() -> Schema:
    return _boolean("Check the result with the safety filter.", True)


def _cfg() -> Schema:
    return _number("How closely the video follows the prompt.", 0.0, 1.0, 0.5)


def _durations(*options: int, default: int | None = None) -> Schema:
    return _enum("Video length in seconds.", options, options[0] if default is None else default)


def _duration_range(minimum: int, maximum: int, default: int) -> Schema:
    return _integer("Video length in seconds.", minimum, maximum, default)


def _resolution(options: Sequence[str], default: str) -> Schema:
    return _enum("Output resolution.", options, default)


def _aspect(options: Sequence[str], default: str) -> Schema:
    return _enum("Aspect ratio of the output.", options, default)


def _sample(name: str) -> str:
    """Relative path of a sandbox sample file (face.png, voice.wav, clip.mp4, music.mp3)."""
    return path("sandbox_samples", name=name)


def _example(kind: str, sample: str, **input: Any) -> dict[str, Any]:
    return {"output": {"type": kind, "url": _sample(sample)}, "input": input}


IMAGE_ASPECTS = ("1:1", "16:9", "9:16", "4:3", "3:4", "3:2", "2:3")
VIDEO_ASPECTS = ("16:9", "9:16", "1:1")
FACE = _sample("face.png")
VOICE = _sample("voice.wav")


# --- Price rules ---------------------------------------------------------------------------------


def _multipliers(by: Mapping[str, Mapping[Option, float]]) -> tuple[Multiplier, ...]:
    return tuple(Multiplier(field, tuple(factors.items())) for field, factors in by.items())


def _by_option(field: str, prices: Mapping[Option, float], **by: Mapping[Option, float]) -> PerOption:
    return PerOption(field=field, prices=tuple(prices.items()), multipliers=_multipliers(by))


def _per_media(field: str, rate: float, **by: Mapping[Option, float]) -> PerMediaSecond:
    return PerMediaSecond(field=field, rate=rate, multipliers=_multipliers(by))


def _per_second(rate: float, **by: Mapping[Option, float]) -> PerOutputSecond:
    return PerOutputSecond(rate=rate, multipliers=_multipliers(by))


def _same_options(a: Sequence[Option], b: Sequence[Option]) -> bool:
    return len(a) == len(b) and all(any(same_option(x, y) for y in b) for x in a)


def _check(model: ModelSpec) -> None:
    """Refuse, at import, a model whose schema and price rule disagree."""
    props = model.input_schema["properties"]
    problems = [] if ID_PATTERN.match(model.id) and model.kind in KINDS else ["bad id or kind"]
    problems += [f"required {n} not a property" for n in model.input_schema["required"] if n not in props]
    problems += [f"{n} has no description" for n, p in props.items() if not p.get("description")]
    problems += [f"prices unknown input {n}" for n in model.rule.varies_by() if n not in props]
    rule = model.rule
    if isinstance(rule, PerOption) and not _same_options(rule.options(), props[rule.field].get("enum", [])):
        problems.append(f"price table of {rule.field} does not match its enum")
    for m in rule.multipliers:
        options = [False, True] if props[m.field]["type"] == "boolean" else props[m.field].get("enum", [])
        if not _same_options(m.options(), options):
            problems.append(f"multipliers of {m.field} do not match its options")
    if isinstance(rule, PerMediaSecond) and media_kind(props[rule.field]) not in ("audio", "video"):
        problems.append(f"{rule.field} is not an audio or video field")
    if isinstance(rule, PerOutputSecond) and "default" not in props[rule.field]:
        problems.append(f"{rule.field} needs a default")
    if problems:
        raise ValueError(f"catalog model {model.id}: " + "; ".join(problems))


def _model(
    id: str,
    name: str,
    description: str,
    kind: str,
    group: str,
    schema: Schema,
    rule: PriceRule | int,
    runtime_s: float,
    runtime_per_second: float = 0.0,
    example: dict[str, Any] | None = None,
) -> ModelSpec:
    """A checked model; an int rule is a flat price. ``credits``, ``pricing``, ``media_field`` derive."""
    rule = Flat(credits=rule) if isinstance(rule, int) else rule
    model = ModelSpec(
        id=id,
        name=name,
        description=description,
        kind=kind,
        group=group,
        credits=listed_credits(rule, schema),
        input_schema=schema,
        pricing=rule.public(),
        rule=rule,
        runtime_s=runtime_s,
        runtime_per_second=runtime_per_second,
        media_field=rule.field if isinstance(rule, PerMediaSecond) else None,
        example=example,
    )
    _check(model)
    return model


# --- Images --------------------------------------------------------------------------------------


def _text_to_image(
    id: str,
    name: str,
    description: str,
    rule: PriceRule | int,
    runtime_s: float,
    *,
    aspects: Sequence[str] | None = IMAGE_ASPECTS,
    steps: tuple[int, int, int] | None = (1, 50, 28),
    guidance: tuple[float, float, float] | None = (1.0, 10.0, 3.5),
    negative: bool = True,
    extra: Mapping[str, Schema] | None = None,
    example: dict[str, Any] | None = None,
) -> ModelSpec:
    """A text-to-image model; ``aspects=None`` asks for width and height instead."""
    props: Schema = {"prompt": _prompt("image")}
    if negative:
        props["negative_prompt"] = _negative()
    if aspects:
        props["aspect_ratio"] = _aspect(aspects, aspects[0])
    else:
        props["width"] = _integer("Image width in pixels.", 256, 2048, 1024)
        props["height"] = _integer("Image height in pixels.", 256, 2048, 1024)
    if steps:
        props["num_inference_steps"] = _integer("Denoising steps; more is slower and finer.", *steps)
    if guidance:
        props["guidance_scale"] = _number("How strictly the image follows the prompt.", *guidance)
    props |= {**(extra or {}), "seed": _seed(), "enable_safety_checker": _safety()}
    schema = _schema(["prompt"], props)
    return _model(id, name, description, "image", "Text to image", schema, rule, runtime_s, example=example)


def _edit(
    id: str,
    name: str,
    description: str,
    rule: PriceRule | int,
    runtime_s: float,
    *,
    images: int = 0,
    prompt: bool = True,
    extra: Mapping[str, Schema] | None = None,
) -> ModelSpec:
    """An image editor on one ``image`` or, with ``images`` > 0, a list ``input_images``."""
    props: Schema = {"prompt": _string("The edit to make, as an instruction.")} if prompt else {}
    if images:
        props["input_images"] = _media_list("image", "Images to edit or combine, in order.", images)
    else:
        props["image"] = _media("image", "Public https URL of the image to edit.")
    props |= extra or {}
    required = [*(["prompt"] if prompt else []), "input_images" if images else "image"]
    schema = _schema(required, props)
    return _model(id, name, description, "image", "Image editing", schema, rule, runtime_s)


def _upscale(
    id: str, name: str, description: str, rule: PriceRule | int, runtime_s: float, **extra: Schema
) -> ModelSpec:
    """An image upscaler: one ``image`` plus its own options."""
    props = {"image": _media("image", "Public https URL of the image to upscale."), **extra}
    return _model(id, name, description, "image", "Upscale", _schema(["image"], props), rule, runtime_s)


IMAGES: tuple[ModelSpec, ...] = (
    _model(
        "gpt-image-2",
        "GPT Image 2",
        "Follows long, detailed prompts closely; good for portraits, product shots and text in images.",
        "image",
        "Text to image",
        _schema(
            ["prompt"],
            {
                "prompt": _prompt("image"),
                "quality": _enum(
                    "Rendering quality; higher costs more.", ("low", "medium", "high"), "medium"
                ),
                "aspect_ratio": _aspect(("1:1", "3:2", "2:3"), "1:1"),
            },
        ),
        _by_option("quality", {"low": 3, "medium": 8, "high": 25}),
        30,
        example=_example(
            "image", "face.png", prompt="Studio portrait of a smiling presenter", quality="medium"
        ),
    ),
    _text_to_image(
        "flare-1-pro",
        "Flare 1 Pro",
        "Sharp, prompt-faithful images with accurate hands and legible text.",
        5,
        12,
        example=_example("image", "face.png", prompt="Headshot of a news anchor, soft light"),
    ),
    _text_to_image(
        "flare-1-dev", "Flare 1 Dev", "Open-weights sibling of Flare 1 Pro for experiments.", 3, 10
    ),
    _text_to_image(
        "flare-1-swift",
        "Flare 1 Swift",
        "Four-step distilled model for near-instant drafts.",
        1,
        5,
        steps=(1, 8, 4),
        guidance=None,
        negative=False,
    ),
    _text_to_image(
        "flare-1-ultra",
        "Flare 1 Ultra",
        "Large-format renders up to 4K with an optional raw photographic look.",
        _by_option("resolution", {"1K": 6, "2K": 9, "4K": 14}),
        25,
        extra={
            "resolution": _resolution(("1K", "2K", "4K"), "2K"),
            "raw": _boolean("Less processed, more natural-looking photos.", False),
        },
    ),
    _text_to_image(
        "prism-xl",
        "Prism XL",
        "General-purpose open model with a large ecosystem of styles.",
        2,
        8,
        aspects=None,
        steps=(1, 100, 30),
        guidance=(1.0, 20.0, 7.0),
        extra={
            "scheduler": _enum(
                "Sampling scheduler.", ("DPM++ 2M Karras", "Euler a", "DDIM", "UniPC"), "DPM++ 2M Karras"
            )
        },
    ),
    _text_to_image(
        "prism-xl-lightning",
        "Prism XL Lightning",
        "Prism XL distilled to four steps.",
        1,
        5,
        aspects=None,
        steps=(1, 8, 4),
        guidance=(0.0, 2.0, 0.0),
        negative=False,
    ),
    _text_to_image(
        "imagica-4",
        "Imagica 4",
        "Photorealistic images with fine typography.",
        4,
        14,
        steps=None,
        guidance=None,
        extra={
            "person_generation": _enum(
                "Whether people may appear.", ("allow_adult", "dont_allow"), "allow_adult"
            )
        },
        example=_example("image", "face.png", prompt="Portrait of a friendly teacher, 35mm"),
    ),
    _text_to_image(
        "imagica-4-fast", "Imagica 4 Fast", "Quicker, cheaper Imagica 4.", 2, 7, steps=None, guidance=None
    ),
    _text_to_image(
        "imagica-4-ultra",
        "Imagica 4 Ultra",
        "Imagica 4 at its most detailed, up to 2K.",
        _by_option("resolution", {"1K": 6, "2K": 10}),
        22,
        steps=None,
        guidance=None,
        extra={"resolution": _resolution(("1K", "2K"), "1K")},
    ),
    _text_to_image(
        "ideograph-3",
        "Ideograph 3",
        "Strong at logos, posters and words inside images.",
        _by_option("quality", {"turbo": 3, "balanced": 6, "quality": 9}),
        15,
        steps=None,
        guidance=None,
        extra={
            "quality": _enum("Speed against quality.", ("turbo", "balanced", "quality"), "balanced"),
            "style_type": _enum("Overall style.", ("auto", "general", "realistic", "design"), "auto"),
            "magic_prompt": _boolean("Let the model expand the prompt.", True),
        },
    ),
    _text_to_image(
        "draftcraft-v3",
        "Draftcraft V3",
        "Vector-style illustrations and brand-consistent design assets.",
        4,
        12,
        steps=None,
        guidance=None,
        negative=False,
        extra={
            "style": _enum(
                "Rendering style.",
                ("any", "realistic_image", "digital_illustration", "vector_illustration", "icon"),
                "any",
            )
        },
    ),
    _text_to_image(
        "seedbloom-4",
        "Seedbloom 4",
        "High-resolution images with consistent characters across a series.",
        3,
        18,
        steps=None,
        guidance=(1.0, 10.0, 2.5),
    ),
    _text_to_image(
        "dreamhaus-i1-full",
        "Dreamhaus I1 Full",
        "Seventeen-billion-parameter open model for richly detailed scenes.",
        4,
        30,
        steps=(1, 100, 50),
        guidance=(1.0, 10.0, 5.0),
    ),
    _text_to_image(
        "dreamhaus-i1-fast",
        "Dreamhaus I1 Fast",
        "Dreamhaus I1 in sixteen steps.",
        2,
        9,
        steps=(1, 32, 16),
        guidance=None,
    ),
    _text_to_image(
        "stellar-3.5-large",
        "Stellar 3.5 Large",
        "Diffusion transformer with strong composition and a wide style range.",
        4,
        15,
        guidance=(1.0, 10.0, 4.5),
    ),
    _text_to_image(
        "stellar-3.5-medium",
        "Stellar 3.5 Medium",
        "Smaller Stellar 3.5 for fast iteration.",
        2,
        9,
        steps=(1, 50, 40),
        guidance=(1.0, 10.0, 4.5),
    ),
    _text_to_image(
        "playfield-v3",
        "Playfield V3",
        "Graphic design and marketing visuals with rich color.",
        3,
        12,
        steps=None,
        extra={"style": _enum("Style preset.", ("Auto", "General", "Realism", "Design", "Anime"), "Auto")},
    ),
    _text_to_image(
        "photon-real-2",
        "Photon Real 2",
        "Natural-light photography, skin texture and product shots.",
        _by_option("quality", {"draft": 2, "standard": 4, "hd": 8}),
        16,
        steps=None,
        extra={"quality": _enum("Rendering quality.", ("draft", "standard", "hd"), "standard")},
    ),
    _text_to_image(
        "sable-anime-xl",
        "Sable Anime XL",
        "Anime and illustration style with clean line art.",
        1,
        7,
        aspects=None,
        steps=(1, 60, 28),
        guidance=(1.0, 12.0, 7.0),
        extra={"clip_skip": _integer("Text-encoder layers to skip.", 1, 2, 2)},
    ),
    _text_to_image(
        "mosaic-logo-1",
        "Mosaic Logo 1",
        "Logos and icons on plain backgrounds, ready to cut out.",
        2,
        6,
        steps=None,
        guidance=None,
        negative=False,
        extra={"transparent_background": _boolean("Return a PNG with a transparent background.", True)},
    ),
    _edit(
        "flare-1-kontext-pro",
        "Flare 1 Kontext Pro",
        "Edits an image from an instruction while keeping the rest intact.",
        5,
        12,
        extra={"seed": _seed()},
    ),
    _edit(
        "flare-1-kontext-max",
        "Flare 1 Kontext Max",
        "The strongest Kontext editor, best at typography edits.",
        9,
        18,
        extra={"aspect_ratio": _aspect(("match_input_image", "1:1", "16:9", "9:16"), "match_input_image")},
    ),
    _edit(
        "flare-1-fill",
        "Flare 1 Fill",
        "Repaints the masked part of an image from a prompt.",
        5,
        14,
        extra={"mask": _media("image", "Black-and-white mask; white areas are repainted.")},
    ),
    _edit("imagica-4-edit", "Imagica 4 Edit", "Instruction editing with Imagica 4 quality.", 4, 14),
    _edit(
        "seedbloom-4-edit",
        "Seedbloom 4 Edit",
        "Multi-reference editing: combine up to 10 images in one instruction.",
        3,
        20,
        images=10,
        extra={"size": _enum("Output size.", ("1K", "2K", "4K"), "2K")},
    ),
    _edit(
        "nanobloom-edit",
        "Nanobloom Edit",
        "Conversational multi-image editing and compositing.",
        _by_option("resolution", {"1K": 4, "2K": 6, "4K": 10}),
        15,
        images=8,
        extra={"resolution": _resolution(("1K", "2K", "4K"), "1K")},
    ),
    _edit(
        "kiwi-image-edit", "Kiwi Image Edit", "Precise bilingual text editing inside images.", 3, 16, images=3
    ),
    _edit(
        "dreamhaus-e1",
        "Dreamhaus E1",
        "Instruction-based editing built on Dreamhaus I1.",
        3,
        18,
        extra={
            "num_inference_steps": _integer("Denoising steps.", 10, 50, 28),
            "guidance_scale": _number("How strictly the edit follows the instruction.", 1.0, 10.0, 5.0),
        },
    ),
    _edit(
        "bg-eraser-2",
        "BG Eraser 2",
        "Cuts the subject out onto a transparent background.",
        1,
        5,
        prompt=False,
        extra={"output_format": _enum("File format of the cut-out.", ("png", "webp"), "png")},
    ),
    _edit(
        "face-fusion-1",
        "Face Fusion 1",
        "Puts the face from one photo onto the person in another.",
        2,
        8,
        prompt=False,
        extra={"face_image": _media("image", "Public https URL of the face to use.")},
    ),
    _edit(
        "relight-2",
        "Relight 2",
        "Changes the lighting of a photo to match a prompt.",
        3,
        10,
        extra={
            "light_direction": _enum("Where the light comes from.", ("none", "left", "right", "top"), "none")
        },
    ),
    _edit(
        "outpaint-xl",
        "Outpaint XL",
        "Extends an image beyond its borders.",
        2,
        12,
        extra={
            "expand_pixels": _integer("How far to extend, in pixels.", 0, 1024, 256),
            "direction": _enum("Which borders to extend.", ("all", "left", "right", "up", "down"), "all"),
        },
    ),
    _edit(
        "sketchcraft-xl",
        "Sketchcraft XL",
        "Turns a sketch, edge map or pose into a finished image.",
        2,
        9,
        extra={
            "control_type": _enum(
                "What the input image is.", ("canny", "depth", "scribble", "pose"), "scribble"
            ),
            "conditioning_scale": _number("How strongly the sketch constrains the result.", 0.0, 2.0, 0.8),
        },
    ),
    _edit(
        "style-shift-1",
        "Style Shift 1",
        "Restyles a photo after up to four reference images.",
        3,
        14,
        extra={"style_images": _media_list("image", "Reference images whose style to copy.", 4)},
    ),
    _edit(
        "portrait-retouch-1",
        "Portrait Retouch 1",
        "Skin, teeth and eye retouching that keeps identity.",
        1,
        6,
        prompt=False,
        extra={"strength": _number("How strong the retouch is.", 0.0, 1.0, 0.5)},
    ),
    _upscale(
        "clarity-upscaler-2",
        "Clarity Upscaler 2",
        "Upscales and re-imagines fine detail, guided by an optional prompt.",
        4,
        30,
        scale=_integer("Upscale factor.", 2, 4, 2),
        creativity=_number("How much new detail to invent.", 0.0, 1.0, 0.35),
        prompt=_string("Optional description of the image.", default=""),
    ),
    _upscale(
        "crisp-upscale",
        "Crisp Upscale",
        "Faithful upscaling without invented detail.",
        _by_option("scale", {2: 1, 4: 3}),
        8,
        scale=_enum("Upscale factor.", (2, 4), 2),
    ),
    _upscale(
        "realsr-plus",
        "RealSR Plus",
        "Classic GAN upscaler, fast and cheap.",
        1,
        5,
        scale=_integer("Upscale factor.", 1, 4, 4),
        face_enhance=_boolean("Also restore faces.", False),
    ),
    _upscale(
        "tessera-image-upscale",
        "Tessera Image Upscale",
        "Studio-grade upscaling up to 6x with face recovery.",
        _by_option("scale", {2: 3, 4: 6, 6: 10}),
        20,
        scale=_enum("Upscale factor.", (2, 4, 6), 2),
        model=_enum("Enhancement model.", ("standard", "high_fidelity", "low_resolution"), "standard"),
    ),
    _upscale(
        "facemend-1.4",
        "Facemend 1.4",
        "Restores blurred or damaged faces in old photos.",
        1,
        6,
        scale=_integer("Upscale factor.", 1, 4, 2),
    ),
)


# --- Video ---------------------------------------------------------------------------------------


def _video(
    id: str,
    name: str,
    description: str,
    group: str,
    required: Sequence[str],
    props: Mapping[str, Schema],
    rule: PriceRule | int,
    runtime_s: float,
    runtime_per_second: float = 0.0,
    example: dict[str, Any] | None = None,
) -> ModelSpec:
    schema = _schema(required, props)
    return _model(id, name, description, "video", group, schema, rule, runtime_s, runtime_per_second, example)


def _pair(
    slug: str,
    name: str,
    blurb: str,
    options: Mapping[str, Schema],
    rule: PriceRule | int,
    runtime_s: float,
    runtime_per_second: float = 0.0,
    example: dict[str, Any] | None = None,
) -> tuple[ModelSpec, ModelSpec]:
    """A family's text-to-video and image-to-video models; the i2v one keeps the image's aspect ratio."""
    prompt = {"prompt": _prompt("video")}
    image = {
        "image": _media("image", "Public https URL of the first frame; the video keeps its aspect ratio.")
    }
    i2v_options = {k: v for k, v in options.items() if k != "aspect_ratio"}
    return (
        _video(
            f"{slug}-t2v",
            f"{name} Text to Video",
            f"{blurb}, from a text prompt.",
            "Text to video",
            ["prompt"],
            {**prompt, **options},
            rule,
            runtime_s,
            runtime_per_second,
            example,
        ),
        _video(
            f"{slug}-i2v",
            f"{name} Image to Video",
            f"{blurb}, animating a still image.",
            "Image to video",
            ["prompt", "image"],
            {**prompt, **image, **i2v_options},
            rule,
            runtime_s,
            runtime_per_second,
        ),
    )


def _video_edit(
    id: str,
    name: str,
    description: str,
    rule: PriceRule | int,
    runtime_s: float,
    runtime_per_second: float,
    group: str = "Video to video",
    **extra: Schema,
) -> ModelSpec:
    """A model that transforms an input ``video`` (.mp4), usually billed per second of it."""
    props = {"video": _media("video", "Public https URL of the source .mp4 video."), **extra}
    return _video(id, name, description, group, ["video"], props, rule, runtime_s, runtime_per_second)


def _talking(
    id: str,
    name: str,
    description: str,
    face: str,
    rule: PriceRule,
    runtime_s: float,
    per_s: float,
    example: dict[str, Any] | None = None,
    **extra: Schema,
) -> ModelSpec:
    """A lip-sync model: a face ``image`` or ``video`` (``face`` names which) plus the speech ``audio``."""
    props = {
        face: _media(face, f"Public https URL of the face {face}."),
        "audio": _media("audio", "Public https URL of the speech, an .mp3 or .wav file."),
        **extra,
    }
    return _video(id, name, description, "Lip-sync", [face, "audio"], props, rule, runtime_s, per_s, example)


_AUDIO_TOGGLE = {"generate_audio": _boolean("Also generate a synchronized soundtrack.", True)}
_KORAL = {
    "duration": _durations(5, 10),
    "aspect_ratio": _aspect(VIDEO_ASPECTS, "16:9"),
    "negative_prompt": _negative(),
    "cfg_scale": _cfg(),
}
_WAVI = {
    "resolution": _resolution(("480p", "720p"), "720p"),
    "negative_prompt": _negative(),
    "enable_prompt_expansion": _boolean("Let the model expand a short prompt.", False),
    "seed": _seed(),
    "enable_safety_checker": _safety(),
}
_VELA3 = {
    "duration": _durations(4, 6, 8, default=8),
    "resolution": _resolution(("720p", "1080p"), "720p"),
    **_AUDIO_TOGGLE,
    "negative_prompt": _negative(),
    "seed": _seed(),
}
_LUMO = {
    "duration": _durations(5, 9),
    "resolution": _resolution(("540p", "720p", "1080p"), "720p"),
    "aspect_ratio": _aspect(VIDEO_ASPECTS, "16:9"),
    "loop": _boolean("Make the last frame flow back into the first.", False),
}
_LUMO_RES = {"540p": 1, "720p": 2, "1080p": 4}
_LYTX = {
    "duration": _durations(6, 8, 10),
    "resolution": _resolution(("1080p", "1440p", "2160p"), "1080p"),
    **_AUDIO_TOGGLE,
    "fps": _enum("Frames per second.", (25, 50), 25),
}
_LYTX_RES = {"1080p": 1, "1440p": 2, "2160p": 4}
_CADENCE = {
    "duration": _duration_range(3, 12, 5),
    "resolution": _resolution(("480p", "720p", "1080p"), "720p"),
    "camera_fixed": _boolean("Keep the camera still.", False),
    "seed": _seed(),
}
_CADENCE_RES = {"480p": 1, "720p": 2, "1080p": 4.5}
_CAMERA = _enum(
    "Camera movement.", ("auto", "static", "pan_left", "pan_right", "zoom_in", "zoom_out", "orbit"), "auto"
)
_STEPS_GUIDANCE = {
    "negative_prompt": _negative(),
    "num_inference_steps": _integer("Denoising steps.", 20, 100, 50),
    "guidance_scale": _number("How strictly the video follows the prompt.", 1.0, 10.0, 4.5),
    "seed": _seed(),
}
_ANIMATE = {
    "image": _media("image", "Public https URL of the character image."),
    "resolution": _resolution(("480p", "720p"), "720p"),
}

REPLICATION_MODELS: tuple[str, ...] = (
    "seedance-2-fast-i2v",
    "kling-v2-6-std-motion-control",
    "seedance-v1-5-pro-i2v",
    "p-video",
    "seedance-2-fast-t2v",
)  # default first

_SEEDANCE_FAST = {
    "duration": _duration_range(4, 12, 5),
    "resolution": _resolution(("480p", "720p"), "720p"),
    "camera_fixed": _boolean("Keep the camera still.", False),
    "seed": _seed(),
}

VIDEOS: tuple[ModelSpec, ...] = (
    _talking(
        "infinitetalk-fast",
        "InfiniteTalk Fast",
        "Lip-syncs a face image to speech at 480p; the video keeps the image's aspect ratio.",
        "image",
        _per_media("audio", 1.5),
        60,
        3,
        _example("video", "clip.mp4", image=FACE, audio=VOICE),
        seed=_seed(),
    ),
    _talking(
        "infinitetalk",
        "InfiniteTalk",
        "Lip-syncs a face image to speech at 480p or 720p with natural head motion; slow but detailed.",
        "image",
        _per_media("audio", 2, resolution={"480p": 1, "720p": 2}),
        90,
        12,
        _example("video", "clip.mp4", image=FACE, audio=VOICE, resolution="720p"),
        seed=_seed(),
        resolution=_resolution(("480p", "720p"), "720p"),
    ),
    _video(
        "seedance-2-fast-i2v",
        "Seedance 2 Fast Image to Video",
        "Animates a frame while following it closely; the default replication model.",
        "Image to video",
        ["prompt", "image"],
        {
            "prompt": _prompt("video"),
            "image": _media("image", "Public https URL of the first frame."),
            **_SEEDANCE_FAST,
        },
        _per_second(4, resolution={"480p": 0.5, "720p": 1}),
        90,
        10,
        _example("video", "clip.mp4", prompt="The presenter turns and smiles", image=FACE),
    ),
    _video(
        "kling-v2-6-std-motion-control",
        "Kling 2.6 Standard Motion Control",
        "Makes the person in an image perform the movement of a reference video, up to 30 seconds.",
        "Image to video",
        ["image", "video"],
        {
            "image": _media("image", "Public https URL of the character to animate."),
            "video": _media("video", "Public https URL of the .mp4 whose movement to copy."),
            "prompt": _string("Optional notes on the scene.", default=""),
            "character_orientation": _enum(
                "Face the way the image or the video does.", ("image", "video"), "image"
            ),
            "keep_original_sound": _boolean("Keep the reference video's sound.", True),
        },
        35,
        150,
        10,
    ),
    _video(
        "seedance-v1-5-pro-i2v",
        "Seedance 1.5 Pro Image to Video",
        "Detailed 1080p image animation with optional sound and an optional last frame.",
        "Image to video",
        ["prompt", "image"],
        {
            "prompt": _prompt("video"),
            "image": _media("image", "Public https URL of the first frame."),
            "end_image": _media("image", "Optional public https URL of the last frame."),
            "duration": _durations(5, 10),
            "resolution": _resolution(("480p", "720p", "1080p"), "1080p"),
            "generate_audio": _boolean("Also generate a synchronized soundtrack.", False),
            "camera_fixed": _boolean("Keep the camera still.", False),
            "seed": _seed(),
        },
        _per_second(2.4, resolution={"480p": 1, "720p": 1.5, "1080p": 2.5}),
        150,
        12,
    ),
    _video(
        "p-video",
        "P-Video",
        "Quick five-second clips from a prompt, optionally starting from an image.",
        "Text to video",
        ["prompt"],
        {
            "prompt": _prompt("video"),
            "image": _media("image", "Optional public https URL of the first frame."),
            "resolution": _resolution(("720p", "1080p"), "720p"),
            "aspect_ratio": _aspect(VIDEO_ASPECTS, "9:16"),
            "seed": _seed(),
        },
        _by_option("resolution", {"720p": 25, "1080p": 45}),
        100,
    ),
    _video(
        "seedance-2-fast-t2v",
        "Seedance 2 Fast Text to Video",
        "Fast text-to-video for prompt-only replication.",
        "Text to video",
        ["prompt"],
        {"prompt": _prompt("video"), "aspect_ratio": _aspect(VIDEO_ASPECTS, "9:16"), **_SEEDANCE_FAST},
        _per_second(4, resolution={"480p": 0.5, "720p": 1}),
        80,
        10,
    ),
    *_pair(
        "koral-v2-5-turbo",
        "Koral 2.5 Turbo",
        "Fast, cinematic motion with strong prompt adherence",
        _KORAL,
        _per_second(7),
        80,
        10,
        _example("video", "clip.mp4", prompt="A drone shot over a beach"),
    ),
    *_pair(
        "koral-v2-1-master",
        "Koral 2.1 Master",
        "Koral's top motion quality and detail",
        _KORAL,
        _per_second(28),
        200,
        20,
    ),
    *_pair(
        "wavi-2-2",
        "Wavi 2.2",
        "Open mixture-of-experts model with film-like lighting, 5-second clips",
        _WAVI,
        _by_option("resolution", {"480p": 10, "720p": 20}),
        150,
    ),
    *_pair(
        "wavi-2-2-fast",
        "Wavi 2.2 Fast",
        "Distilled Wavi 2.2 for quick 5-second previews",
        _WAVI,
        _by_option("resolution", {"480p": 5, "720p": 10}),
        60,
    ),
    *_pair(
        "wavi-2-5-preview",
        "Wavi 2.5 Preview",
        "Wavi with sound, optionally synced to your own track",
        {
            "duration": _durations(5, 10),
            "resolution": _resolution(("480p", "720p", "1080p"), "720p"),
            "audio": _media("audio", "Optional public https .mp3 or .wav to sync the video to."),
            "negative_prompt": _negative(),
            "seed": _seed(),
        },
        _per_second(2, resolution={"480p": 1, "720p": 2, "1080p": 3}),
        120,
        15,
    ),
    *_pair(
        "vela-3",
        "Vela 3",
        "Photoreal video with native dialogue, music and effects",
        _VELA3,
        _per_second(6, generate_audio={False: 1, True: 2}),
        180,
        15,
    ),
    *_pair(
        "vela-3-fast",
        "Vela 3 Fast",
        "Vela 3 quality at half the price",
        _VELA3,
        _per_second(3, generate_audio={False: 1, True: 2}),
        90,
        8,
    ),
    *_pair(
        "vela-2",
        "Vela 2",
        "Smooth camera work and realistic physics at 720p",
        {
            "duration": _duration_range(5, 8, 5),
            "aspect_ratio": _aspect(VIDEO_ASPECTS, "16:9"),
            "negative_prompt": _negative(),
            "enhance_prompt": _boolean("Let the model rewrite the prompt.", True),
        },
        _per_second(10),
        160,
        12,
    ),
    *_pair(
        "hailo-02",
        "Hailo 02",
        "Precise physics and choreography at 768p or 1080p",
        {
            "duration": _durations(6, 10),
            "resolution": _resolution(("768p", "1080p"), "768p"),
            "prompt_optimizer": _boolean("Let the model refine the prompt.", True),
        },
        _per_second(4.5, resolution={"768p": 1, "1080p": 1.6}),
        150,
        12,
    ),
    *_pair(
        "pixa-v5",
        "Pixa V5",
        "Stylized or realistic clips with built-in effect styles",
        {
            "duration": _durations(5, 8),
            "resolution": _resolution(("360p", "540p", "720p", "1080p"), "720p"),
            "style": _enum(
                "Visual style.", ("none", "anime", "3d_animation", "clay", "comic", "cyberpunk"), "none"
            ),
            "negative_prompt": _negative(),
            "seed": _seed(),
        },
        _per_second(3, resolution={"360p": 1, "540p": 1.25, "720p": 1.5, "1080p": 3}),
        70,
        8,
    ),
    *_pair(
        "pixa-v4-5",
        "Pixa V4.5",
        "Previous Pixa generation with camera presets, 5-second clips",
        {"camera_movement": _CAMERA, "seed": _seed()},
        12,
        60,
    ),
    *_pair(
        "lumo-ray-2",
        "Lumo Ray 2",
        "Coherent motion and lifelike detail",
        _LUMO,
        _per_second(6, resolution=_LUMO_RES),
        200,
        15,
    ),
    *_pair(
        "lumo-ray-2-flash",
        "Lumo Ray 2 Flash",
        "Lumo Ray 2, faster and cheaper",
        _LUMO,
        _per_second(2, resolution=_LUMO_RES),
        80,
        6,
    ),
    *_pair(
        "huan-video-1.5",
        "Huan Video 1.5",
        "Open 8B model, efficient at 480p and 720p",
        {
            "resolution": _resolution(("480p", "720p"), "480p"),
            "num_inference_steps": _integer("Denoising steps.", 10, 50, 30),
            "negative_prompt": _negative(),
            "seed": _seed(),
        },
        _by_option("resolution", {"480p": 12, "720p": 25}),
        180,
    ),
    *_pair(
        "lytx-2-pro",
        "Lytx 2 Pro",
        "Up to 4K clips with synchronized audio",
        _LYTX,
        _per_second(6, resolution=_LYTX_RES),
        140,
        10,
    ),
    *_pair(
        "lytx-2-fast",
        "Lytx 2 Fast",
        "Lytx 2 tuned for speed",
        _LYTX,
        _per_second(4, resolution=_LYTX_RES),
        70,
        5,
    ),
    *_pair(
        "cadence-1-lite",
        "Cadence 1 Lite",
        "Multi-shot storytelling at an entry price",
        _CADENCE,
        _per_second(1.8, resolution=_CADENCE_RES),
        90,
        8,
    ),
    *_pair(
        "cadence-1-pro",
        "Cadence 1 Pro",
        "Multi-shot storytelling with richer detail",
        _CADENCE,
        _per_second(3, resolution=_CADENCE_RES),
        150,
        12,
    ),
    *_pair(
        "aurora-2",
        "Aurora 2",
        "World-simulating video with sound and consistent physics, 720p",
        {
            "duration": _durations(4, 8, 12),
            "aspect_ratio": _aspect(("16:9", "9:16"), "16:9"),
        },
        _per_second(10),
        240,
        15,
    ),
    *_pair(
        "aurora-2-pro",
        "Aurora 2 Pro",
        "Aurora 2 at up to 1080p with finer detail",
        {
            "duration": _durations(4, 8, 12),
            "resolution": _resolution(("720p", "1080p"), "720p"),
            "aspect_ratio": _aspect(("16:9", "9:16"), "16:9"),
        },
        _per_second(30, resolution={"720p": 1, "1080p": 1.7}),
        360,
        8,
    ),
    _video(
        "koral-v2-1-std-i2v",
        "Koral 2.1 Standard Image to Video",
        "Affordable Koral image animation at 720p.",
        "Image to video",
        ["prompt", "image"],
        {
            "prompt": _prompt("video"),
            "image": _media("image", "Public https URL of the first frame."),
            **{k: v for k, v in _KORAL.items() if k != "aspect_ratio"},
        },
        _per_second(5),
        100,
        10,
    ),
    _video(
        "hailo-02-fast-i2v",
        "Hailo 02 Fast Image to Video",
        "Quick 512p animation of a still image.",
        "Image to video",
        ["image"],
        {
            "image": _media("image", "Public https URL of the first frame."),
            "prompt": _string("Optional description of the motion.", default=""),
            "duration": _durations(6, 10),
        },
        _per_second(1.7),
        60,
        5,
    ),
    _video(
        "runa-gen-4-turbo-i2v",
        "Runa Gen-4 Turbo",
        "Fast, controllable image animation with consistent subjects.",
        "Image to video",
        ["prompt", "image"],
        {
            "prompt": _prompt("video"),
            "image": _media("image", "Public https URL of the first frame."),
            "duration": _durations(5, 10),
            "ratio": _enum("Output size.", ("1280:720", "720:1280", "960:960"), "1280:720"),
            "seed": _seed(),
        },
        _per_second(5),
        70,
        6,
    ),
    _video(
        "magus-1-i2v",
        "Magus 1",
        "Autoregressive model for long, smooth continuations of an image.",
        "Image to video",
        ["prompt", "image"],
        {
            "prompt": _prompt("video"),
            "image": _media("image", "Public https URL of the first frame."),
            "duration": _duration_range(1, 10, 5),
            "resolution": _resolution(("480p", "720p"), "720p"),
            "seed": _seed(),
        },
        _per_second(3, resolution={"480p": 1, "720p": 2}),
        200,
        15,
    ),
    _video(
        "vidor-q2-reference",
        "Vidor Q2 Reference to Video",
        "Keeps characters and products consistent from up to 7 reference images.",
        "Image to video",
        ["prompt", "input_images"],
        {
            "prompt": _prompt("video"),
            "input_images": _media_list("image", "Reference images of the subjects to keep.", 7),
            "duration": _duration_range(1, 10, 5),
            "resolution": _resolution(("540p", "720p", "1080p"), "720p"),
            "movement_amplitude": _enum(
                "How much things move.", ("auto", "small", "medium", "large"), "auto"
            ),
        },
        _per_second(4, resolution={"540p": 1, "720p": 1.5, "1080p": 2.5}),
        120,
        10,
    ),
    _video(
        "koral-v1-6-pro-i2v",
        "Koral 1.6 Pro Image to Video",
        "Image animation with an optional last frame to end on.",
        "Image to video",
        ["prompt", "image"],
        {
            "prompt": _prompt("video"),
            "image": _media("image", "Public https URL of the first frame."),
            "end_image": _media("image", "Optional public https URL of the last frame."),
            **{k: v for k, v in _KORAL.items() if k != "aspect_ratio"},
        },
        _per_second(9),
        180,
        15,
    ),
    _video(
        "wavi-2-1-flf2v",
        "Wavi 2.1 First-Last Frame",
        "Fills in the motion between a first and a last frame.",
        "Image to video",
        ["prompt", "image", "end_image"],
        {
            "prompt": _prompt("video"),
            "image": _media("image", "Public https URL of the first frame."),
            "end_image": _media("image", "Public https URL of the last frame."),
            "resolution": _resolution(("480p", "720p"), "720p"),
            "seed": _seed(),
        },
        _by_option("resolution", {"480p": 10, "720p": 20}),
        200,
    ),
    _video(
        "stable-motion-xt",
        "Stable Motion XT",
        "Short, prompt-free animation of a still image.",
        "Image to video",
        ["image"],
        {
            "image": _media("image", "Public https URL of the image to animate."),
            "motion_bucket_id": _integer("Amount of motion.", 1, 255, 127),
            "fps": _integer("Frames per second.", 5, 30, 6),
            "cond_aug": _number("Noise added to the input image.", 0.0, 1.0, 0.02),
        },
        6,
        60,
    ),
    _video(
        "tidal-1-t2v",
        "Tidal 1",
        "Open 10B model with strong motion and prompt adherence, 480p.",
        "Text to video",
        ["prompt"],
        {"prompt": _prompt("video"), **_STEPS_GUIDANCE},
        15,
        200,
    ),
    _video(
        "mira-1-t2v",
        "Mira 1",
        "High-fidelity motion at 848x480, open weights.",
        "Text to video",
        ["prompt"],
        {"prompt": _prompt("video"), **_STEPS_GUIDANCE},
        10,
        150,
    ),
    _video(
        "cogent-video-5b-t2v",
        "Cogent Video 5B",
        "Lightweight 6-second clips for quick ideation.",
        "Text to video",
        ["prompt"],
        {"prompt": _prompt("video"), **_STEPS_GUIDANCE},
        6,
        120,
    ),
    _video(
        "vela-3-1-t2v",
        "Vela 3.1 Text to Video",
        "Richer sound and better prompt adherence, with up to three reference images.",
        "Text to video",
        ["prompt"],
        {
            "prompt": _prompt("video"),
            "reference_images": _media_list("image", "Optional images of subjects to include.", 3),
            **_VELA3,
        },
        _per_second(8, generate_audio={False: 1, True: 1.5}),
        200,
        12,
    ),
    _video_edit(
        "koral-o1-edit",
        "Koral O1 Video Edit",
        "Edits a clip from an instruction: swap objects, restyle, change the weather.",
        _per_media("video", 3),
        120,
        15,
        prompt=_string("The edit to make, as an instruction."),
        input_images=_media_list("image", "Optional reference images for the edit.", 4),
        keep_original_sound=_boolean("Keep the clip's sound.", True),
    ),
    _video_edit(
        "runa-aleph-v2v",
        "Runa Aleph",
        "Adds, removes and transforms elements in an existing video.",
        _per_media("video", 4),
        150,
        12,
        prompt=_string("What to change."),
        image=_media("image", "Optional public https URL of a reference image."),
        seed=_seed(),
    ),
    _video_edit(
        "lumo-modify-v2v",
        "Lumo Modify",
        "Re-renders a video in a new look while keeping its motion.",
        _per_media("video", 2.5),
        120,
        10,
        prompt=_string("The new look."),
        mode=_enum(
            "How far the result may stray from the source.",
            ("adhere_1", "adhere_2", "flex_1", "flex_2", "reimagine_1", "reimagine_2"),
            "flex_1",
        ),
    ),
    _video_edit(
        "wavi-2-2-animate-replace",
        "Wavi 2.2 Animate Replace",
        "Replaces the person in a video with the character in an image.",
        _per_media("video", 1, resolution={"480p": 1, "720p": 2}),
        150,
        12,
        **_ANIMATE,
    ),
    _video_edit(
        "wavi-2-2-animate-move",
        "Wavi 2.2 Animate Move",
        "Makes the character in an image copy the motion of a video.",
        _per_media("video", 1, resolution={"480p": 1, "720p": 2}),
        150,
        12,
        **_ANIMATE,
    ),
    _video_edit(
        "frame-interp-2",
        "Frame Interp 2",
        "Smooths a clip to twice or four times its frame rate.",
        _per_media("video", 0.5, factor={2: 1, 4: 2}),
        60,
        3,
        factor=_enum("Frame-rate multiplier.", (2, 4), 2),
    ),
    _video_edit(
        "video-bg-remover",
        "Video BG Remover",
        "Removes the background of a clip.",
        _per_media("video", 0.3),
        60,
        4,
        background=_enum("What replaces the background.", ("transparent", "green", "white"), "transparent"),
    ),
    _video_edit(
        "restyle-v2v",
        "Restyle",
        "Turns footage into anime, clay or painted styles.",
        _per_media("video", 1.5),
        90,
        8,
        style=_enum("Target style.", ("anime", "clay", "watercolor", "oil_painting", "pixel_art"), "anime"),
        strength=_number("How strongly to restyle.", 0.0, 1.0, 0.6),
        prompt=_string("Optional extra description.", default=""),
    ),
    _video_edit(
        "tessera-video-upscale",
        "Tessera Video Upscale",
        "Upscales footage to 1080p or 4K with denoising.",
        _per_media("video", 1, target_resolution={"1080p": 1, "4k": 2.5}),
        90,
        8,
        group="Upscale",
        target_resolution=_resolution(("1080p", "4k"), "1080p"),
        target_fps=_enum("Output frame rate.", (24, 30, 60), 30),
    ),
    _video_edit(
        "clearframe-2",
        "ClearFrame 2",
        "One-step diffusion upscaler that restores compressed video.",
        _per_media("video", 0.8),
        80,
        6,
        group="Upscale",
        upscale_factor=_integer("Upscale factor.", 1, 4, 2),
        seed=_seed(),
    ),
    _talking(
        "dubsync-2",
        "DubSync 2",
        "Re-syncs the lips of a filmed speaker to a new audio track.",
        "video",
        _per_media("video", 1.5),
        80,
        6,
        sync_mode=_enum(
            "What to do when audio and video lengths differ.",
            ("cut_off", "loop", "bounce", "silence"),
            "cut_off",
        ),
    ),
    _talking(
        "latent-sync-1.6",
        "LatentSync 1.6",
        "Open lip-sync model for dubbed talking-head video.",
        "video",
        _per_media("audio", 0.6),
        70,
        5,
        guidance_scale=_number("Lip-sync strength.", 1.0, 3.0, 1.5),
        seed=_seed(),
    ),
    _talking(
        "omni-avatar-1",
        "Omni Avatar 1",
        "Full-body talking avatar from a photo and a voice track.",
        "image",
        _per_media("audio", 1.5, resolution={"480p": 1, "720p": 2}),
        120,
        12,
        prompt=_string("Optional description of gestures and setting.", default=""),
        resolution=_resolution(("480p", "720p"), "480p"),
    ),
)


# --- Audio ---------------------------------------------------------------------------------------


def _speech(
    id: str,
    name: str,
    description: str,
    text: Schema,
    voice: Mapping[str, Schema],
    rule: PriceRule | int,
    runtime_s: float,
    required: Sequence[str] = ("text",),
    example: dict[str, Any] | None = None,
) -> ModelSpec:
    """A text-to-speech model: ``text`` plus its voice options. Output runs ~15 characters a second."""
    schema = _schema(required, {"text": text, **voice})
    return _model(id, name, description, "audio", "Speech", schema, rule, runtime_s, 0.2, example)


def _speech_text(max_length: int) -> Schema:
    if max_length >= 1000:
        return _text(f"The text to speak, up to {max_length:,} characters.", max_length)
    return _string(f"The text to speak, up to {max_length} characters.", max_length=max_length)


def _voices(description: str, options: Sequence[str]) -> Schema:
    return _enum(description, options, options[0])


_SPEECH_02 = {
    "voice_id": _voices(
        "Preset voice.",
        ("Wise_Woman", "Friendly_Person", "Deep_Voice_Man", "Calm_Woman", "Casual_Guy", "Lively_Girl"),
    ),
    "emotion": _voices(
        "Emotion of the delivery.",
        ("auto", "neutral", "happy", "sad", "angry", "fearful", "disgusted", "surprised"),
    ),
    "speed": _number("Speaking speed; 1 is normal.", 0.5, 2.0, 1.0),
    "pitch": _integer("Pitch shift in semitones.", -12, 12, 0),
}


def _music(
    id: str,
    name: str,
    description: str,
    props: Mapping[str, Schema],
    rule: PriceRule | int,
    runtime_s: float,
    per_s: float,
    group: str = "Music",
    required: Sequence[str] = ("prompt",),
    example: dict[str, Any] | None = None,
) -> ModelSpec:
    """A music or sound model driven by a ``prompt``."""
    schema = _schema(required, {"prompt": _string("Style, mood and instruments to make."), **props})
    return _model(id, name, description, "audio", group, schema, rule, runtime_s, per_s, example)


def _seconds(minimum: float, maximum: float, default: float) -> Schema:
    return _number("Length of the audio in seconds.", minimum, maximum, default)


AUDIO: tuple[ModelSpec, ...] = (
    _model(
        "zonos2",
        "Zonos 2",
        "Speaks a script in the voice of a short sample; billed by the sample's length, not the text's.",
        "audio",
        "Voice cloning",
        _schema(
            ["text", "audio"],
            {
                "text": _text("The script to speak.", 5000),
                "audio": _media("audio", "Public https .mp3 or .wav sample of the voice to clone."),
                "clean_speaker_background": _boolean("Remove noise from the sample first.", False),
            },
        ),
        _per_media("audio", 0.5),
        10,
        0.5,
        _example("audio", "voice.wav", text="Welcome back to the channel!", audio=VOICE),
    ),
    replace(
        _speech(
            "chatterbox-turbo",
            "Chatterbox Turbo",
            "Expressive speech from a preset voice or a clone of reference audio longer than 5 seconds.",
            _speech_text(500),
            {
                "voice": _voices(
                    "Preset voice, used when no reference audio is given.", ("Aurora", "Blade", "Carl")
                ),
                "reference_audio": _media(
                    "audio", "Public https URL of a voice to clone, longer than 5 seconds."
                ),
            },
            5,
            6,
            example=_example("audio", "voice.wav", text="Hi there, thanks for watching.", voice="Aurora"),
        ),
        min_media_seconds=(("reference_audio", 5.0),),
    ),
    _speech(
        "xtts-v2",
        "XTTS v2",
        "Multilingual voice cloning from a few seconds of a speaker sample.",
        _speech_text(2000),
        {
            "speaker": _media("audio", "Public https URL of a sample of the speaker's voice."),
            "language": _voices(
                "Language of the text.",
                ("en", "es", "fr", "de", "it", "pt", "pl", "tr", "ru", "nl", "ja", "zh-cn"),
            ),
        },
        10,
        12,
        required=("text", "speaker"),
    ),
    _speech(
        "speech-02-hd",
        "Speech-02 HD",
        "Studio-quality narration for long texts with emotion, speed and pitch control.",
        _speech_text(10_000),
        _SPEECH_02,
        5,
        10,
        example=_example("audio", "voice.wav", text="Here is today's news.", voice_id="Wise_Woman"),
    ),
    _speech(
        "speech-02-turbo",
        "Speech-02 Turbo",
        "Low-latency Speech-02 with the same voices and controls.",
        _speech_text(10_000),
        _SPEECH_02,
        5,
        5,
    ),
    _speech(
        "gemini-tts",
        "Gemini TTS",
        "Controllable speech steered by plain-language style instructions; priced by text length.",
        _speech_text(5000),
        {
            "voice": _voices(
                "Preset voice.", ("Kore", "Puck", "Charon", "Fenrir", "Aoede", "Leda", "Zephyr")
            ),
            "style_instructions": _string("How to say it, e.g. 'cheerfully, with a whisper'.", default=""),
        },
        PerTextLength(field="text", chars=100, credits=1),
        8,
    ),
    _speech(
        "qwen3-tts-flash",
        "Qwen3 TTS Flash",
        "Fast multilingual speech with natural prosody.",
        _speech_text(2000),
        {
            "voice": _voices("Preset voice.", ("Cherry", "Ethan", "Jennifer", "Ryan", "Katerina", "Elias")),
            "language_type": _voices(
                "Language of the text; Auto detects it.",
                ("Auto", "Chinese", "English", "German", "French", "Spanish", "Japanese", "Korean"),
            ),
        },
        2,
        5,
    ),
    _speech(
        "seed-speech-tts-2",
        "Seed Speech TTS 2",
        "Natural conversational speech whose delivery follows a written instruction.",
        _speech_text(5000),
        {
            "voice": _voices("Preset voice.", ("Vivi", "Adam", "Mia", "Leo", "Sophie", "Kai")),
            "voice_instruction": _string("How the voice should sound, e.g. 'calm and warm'.", default=""),
        },
        3,
        7,
    ),
    _music(
        "melodia-v4",
        "Melodia V4",
        "Full songs with vocals from a style prompt and your lyrics.",
        {
            "lyrics": _text("Lyrics with [verse] and [chorus] tags; empty makes up lyrics.", 3000),
            "instrumental": _boolean("Leave out vocals.", False),
            "duration": _seconds(10, 240, 120),
        },
        _per_second(0.1),
        20,
        0.05,
        example=_example("audio", "music.mp3", prompt="Upbeat synth-pop with female vocals"),
    ),
    _music(
        "soundforge-music-1.5",
        "Soundforge Music 1.5",
        "Vocal tracks up to four minutes, optionally styled after a reference song.",
        {
            "lyrics": _text("Lyrics of the song.", 3500),
            "reference_audio": _media("audio", "Optional public https URL of a song whose style to follow."),
            "duration": _seconds(30, 240, 60),
        },
        8,
        20,
        0.1,
        required=("prompt", "lyrics"),
    ),
    _music(
        "stable-tune-2",
        "Stable Tune 2",
        "Instrumental music and loops up to three minutes.",
        {
            "negative_prompt": _negative(),
            "duration": _seconds(1, 190, 30),
            "num_inference_steps": _integer("Denoising steps.", 4, 8, 8),
            "guidance_scale": _number("How strictly the music follows the prompt.", 1.0, 25.0, 7.0),
            "seed": _seed(),
        },
        _per_second(0.2),
        10,
        0.2,
        example=_example("audio", "music.mp3", prompt="Lo-fi hip hop beat, mellow piano"),
    ),
    _music(
        "lyra-2",
        "Lyra 2",
        "High-fidelity instrumental clips up to 30 seconds.",
        {"negative_prompt": _negative(), "duration": _seconds(5, 30, 30), "seed": _seed()},
        4,
        15,
        0.0,
    ),
    _music(
        "sonic-fx-2",
        "Sonic FX 2",
        "Sound effects from a description, up to 22 seconds.",
        {
            "duration": _seconds(0.5, 22, 5),
            "prompt_influence": _number("How literally to follow the prompt.", 0.0, 1.0, 0.3),
            "loop": _boolean("Make the sound loop seamlessly.", False),
        },
        _per_second(0.4),
        6,
        0.3,
        group="Sound effects",
    ),
    _music(
        "ambience-1",
        "Ambience 1",
        "Long ambient beds and room tones for video backgrounds.",
        {"duration": _seconds(5, 60, 20), "seed": _seed()},
        2,
        12,
        0.1,
        group="Sound effects",
    ),
    _model(
        "foley-gen-1",
        "Foley Gen 1",
        "Generates synchronized sound effects for a silent video.",
        "audio",
        "Sound effects",
        _schema(
            ["video"],
            {
                "video": _media("video", "Public https URL of the .mp4 to score."),
                "prompt": _string("Optional description of the sounds.", default=""),
                "negative_prompt": _negative(),
                "num_inference_steps": _integer("Denoising steps.", 10, 50, 25),
            },
        ),
        _per_media("video", 0.3),
        15,
        0.5,
        _example("audio", "music.mp3", video=_sample("clip.mp4"), prompt="footsteps on gravel"),
    ),
    _model(
        "voice-morph-sts",
        "Voice Morph",
        "Re-voices a recording in another voice, keeping its timing and emotion.",
        "audio",
        "Voice cloning",
        _schema(
            ["audio"],
            {
                "audio": _media("audio", "Public https .mp3 or .wav of the speech to re-voice."),
                "voice": _voices("Target voice.", ("Rachel", "Adam", "Bella", "Josh")),
                "remove_background_noise": _boolean("Clean the recording first.", False),
            },
        ),
        _per_media("audio", 0.3),
        8,
        0.3,
    ),
    _model(
        "vocal-isolate-2",
        "Vocal Isolate 2",
        "Extracts one stem (vocals, drums, bass or the rest) from a mixed track.",
        "audio",
        "Audio editing",
        _schema(
            ["audio"],
            {
                "audio": _media("audio", "Public https .mp3 or .wav of the mixed track."),
                "stem": _voices("Stem to keep.", ("vocals", "drums", "bass", "other")),
            },
        ),
        _per_media("audio", 0.2),
        10,
        0.2,
    ),
)

MODELS: tuple[ModelSpec, ...] = IMAGES + VIDEOS + AUDIO
BY_ID: dict[str, ModelSpec] = {model.id: model for model in MODELS}
