"""Unit tests of the sandbox's catalog data and pricing: counts, schemas, spec-fixed models, price rules."""

import random
import re
from collections import Counter
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.limits import ESTIMATE_FALLBACK_SECONDS
from mediagen_nb.protocol.schema import media_kind
from mediagen_nb.sandbox.catalog import (
    BY_ID,
    MODELS,
    REPLICATION_MODELS,
    ModelSpec,
    example_record,
    loader,
    output_seconds,
    record,
)
from mediagen_nb.sandbox.catalog.loader import CatalogError
from mediagen_nb.sandbox.datafiles import load
from mediagen_nb.sandbox.pricing import Flat, billing_text, price

BASE = "http://127.0.0.1:8765"
SAMPLES = {"face.png", "voice.wav", "clip.mp4", "music.mp3"}
IDS = [m.id for m in MODELS]


def _props(model: ModelSpec) -> dict[str, Any]:
    return model.input_schema["properties"]


def _url(prop: dict[str, Any], n: int = 0) -> str:
    ext = {"image": "png", "audio": "wav", "video": "mp4"}.get(media_kind(prop) or "", "png")
    return f"https://cdn.example.com/file-{n}.{ext}"


def _alternatives(prop: dict[str, Any]) -> list[Any]:
    """Several valid values of one property, spanning its range."""
    if "enum" in prop:
        return list(prop["enum"])
    kind = prop["type"]
    if kind == "boolean":
        return [False, True]
    if kind in ("integer", "number"):
        low, high = prop["minimum"], prop["maximum"]
        middle = (low + high) // 2 if kind == "integer" else (low + high) / 2
        return [low, middle, high]
    if kind == "array":
        items = prop["items"]
        return [[_url(items, i) for i in range(count)] for count in sorted({1, prop.get("maxItems", 1)})]
    if prop.get("format") == "uri":
        return [_url(prop, 1), _url(prop, 2)]
    limit = prop.get("maxLength", 400)
    return ["Hi.", "A calm narrator reads the news. " * (min(limit, 400) // 32)]


def _base_input(model: ModelSpec) -> dict[str, Any]:
    """Schema defaults plus a valid value for every required field."""
    values = {name: prop["default"] for name, prop in _props(model).items() if "default" in prop}
    for name in model.input_schema["required"]:
        values.setdefault(name, _alternatives(_props(model)[name])[0])
    return values


def _validator(model: ModelSpec) -> Draft202012Validator:
    return Draft202012Validator(model.input_schema)


# --- Counts and ids ------------------------------------------------------------------------------


def test_counts_per_kind() -> None:
    assert len(MODELS) == 130
    assert Counter(m.kind for m in MODELS) == {"video": 72, "image": 41, "audio": 17}


def test_ids_unique_and_safe() -> None:
    assert len(set(IDS)) == len(IDS) == len(BY_ID)
    assert all(re.fullmatch(r"[a-z0-9.-]+", model_id) for model_id in IDS)
    assert all(BY_ID[m.id] is m for m in MODELS)


def test_every_model_has_name_description_and_group() -> None:
    for model in MODELS:
        assert model.name and model.description and model.group, model.id


def test_runtimes_in_range() -> None:
    ranges = {"image": (5, 40), "audio": (5, 30), "video": (60, 400)}
    for model in MODELS:
        low, high = ranges[model.kind]
        assert low <= model.runtime_s <= high, model.id
        assert model.runtime_per_second >= 0


# --- Schemas -------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_schema_is_valid_json_schema(model: ModelSpec) -> None:
    Draft202012Validator.check_schema(model.input_schema)
    schema = model.input_schema
    assert schema["type"] == "object"
    assert set(schema["required"]) <= set(schema["properties"])
    for name, prop in schema["properties"].items():
        assert prop.get("description"), f"{model.id}.{name} has no description"
        if "default" in prop:
            assert not list(Draft202012Validator(prop).iter_errors(prop["default"])), f"{model.id}.{name}"


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_alternatives_and_base_input_validate(model: ModelSpec) -> None:
    """The test's own generated inputs are valid, so the pricing property tests below mean something."""
    validator = _validator(model)
    base = _base_input(model)
    assert not list(validator.iter_errors(base))
    for name, prop in _props(model).items():
        for value in _alternatives(prop):
            assert not list(validator.iter_errors({**base, name: value})), f"{model.id}.{name}={value!r}"


def test_schema_features_are_all_used() -> None:
    props = [p for m in MODELS for p in _props(m).values()]
    types = {p["type"] for p in props}
    assert types == {"string", "integer", "number", "boolean", "array"}
    assert any(p.get("format") == "textarea" and p.get("maxLength", 0) >= 1000 for p in props)
    assert all(p.get("maxLength", 0) >= 1000 for p in props if p.get("format") == "textarea")
    for kind in ("integer", "number"):
        assert any(p["type"] == kind and "minimum" in p and "maximum" in p for p in props)
    assert any(p["type"] == "boolean" and "default" in p for p in props)
    assert any("enum" in p for p in props)
    assert sum("default" in p for p in props) > 100
    assert all(m.input_schema["required"] for m in MODELS)
    media = {p["contentMediaType"] for p in props if p.get("format") == "uri"}
    assert media == {"image/*", "audio/*", "video/*"}
    url_arrays = [p for p in props if p["type"] == "array"]
    assert url_arrays
    for prop in url_arrays:
        assert prop["items"]["format"] == "uri" and prop["items"]["contentMediaType"] == "image/*"
        assert prop["maxItems"] >= 1
    assert all(p.get("format") == "uri" for p in props if "contentMediaType" in p)


def test_list_fields_are_the_url_arrays() -> None:
    for model in MODELS:
        arrays = tuple(n for n, p in _props(model).items() if p["type"] == "array")
        assert model.list_fields == arrays, model.id
    assert BY_ID["seedbloom-4-edit"].list_fields == ("input_images",)
    assert BY_ID["seedbloom-4-edit"].input_schema["properties"]["input_images"]["maxItems"] == 10


def test_media_kind() -> None:
    assert media_kind({"type": "string", "format": "uri", "contentMediaType": "audio/*"}) == "audio"
    assert media_kind({"type": "string", "contentMediaType": "video/mp4"}) == "video"
    assert (
        media_kind({"type": "array", "items": {"type": "string", "contentMediaType": "image/*"}}) == "image"
    )
    assert media_kind({"type": "string"}) is None
    assert media_kind({"type": "string", "contentMediaType": "text/plain"}) is None


# --- Models the spec fixes -----------------------------------------------------------------------

# id: (property names, required, defaults)
SPEC_INPUTS: dict[str, tuple[set[str], set[str], dict[str, Any]]] = {
    "gpt-image-2": (
        {"prompt", "quality", "aspect_ratio"},
        {"prompt"},
        {"quality": "medium", "aspect_ratio": "1:1"},
    ),
    "zonos2": (
        {"text", "audio", "clean_speaker_background"},
        {"text", "audio"},
        {"clean_speaker_background": False},
    ),
    "infinitetalk-fast": ({"image", "audio", "seed"}, {"image", "audio"}, {"seed": -1}),
    "infinitetalk": (
        {"image", "audio", "seed", "resolution"},
        {"image", "audio"},
        {"seed": -1, "resolution": "720p"},
    ),
    "chatterbox-turbo": ({"text", "voice", "reference_audio"}, {"text"}, {}),
    "xtts-v2": ({"text", "speaker", "language"}, {"text", "speaker"}, {}),
    "speech-02-hd": ({"text", "voice_id", "emotion", "speed", "pitch"}, {"text"}, {"speed": 1.0, "pitch": 0}),
    "speech-02-turbo": (
        {"text", "voice_id", "emotion", "speed", "pitch"},
        {"text"},
        {"speed": 1.0, "pitch": 0},
    ),
    "gemini-tts": ({"text", "voice", "style_instructions"}, {"text"}, {}),
    "qwen3-tts-flash": ({"text", "voice", "language_type"}, {"text"}, {}),
    "seed-speech-tts-2": ({"text", "voice", "voice_instruction"}, {"text"}, {}),
}


@pytest.mark.parametrize("model_id", sorted(SPEC_INPUTS))
def test_spec_models_have_exactly_the_spec_inputs(model_id: str) -> None:
    names, required, defaults = SPEC_INPUTS[model_id]
    model = BY_ID[model_id]
    assert set(_props(model)) == names
    assert set(model.input_schema["required"]) == required
    for name, value in defaults.items():
        assert _props(model)[name]["default"] == value


def test_spec_model_details() -> None:
    gpt = _props(BY_ID["gpt-image-2"])
    assert gpt["quality"]["enum"] == ["low", "medium", "high"]
    assert gpt["aspect_ratio"]["enum"] == ["1:1", "3:2", "2:3"]
    assert BY_ID["gpt-image-2"].kind == "image"
    zonos = BY_ID["zonos2"]
    assert zonos.kind == "audio" and zonos.group == "Voice cloning"
    assert _props(zonos)["audio"]["format"] == "uri" and media_kind(_props(zonos)["audio"]) == "audio"
    assert _props(zonos)["clean_speaker_background"]["type"] == "boolean"
    for model_id in ("infinitetalk-fast", "infinitetalk"):
        talk = BY_ID[model_id]
        assert talk.kind == "video" and talk.group == "Lip-sync" and talk.media_field == "audio"
        assert media_kind(_props(talk)["image"]) == "image" and media_kind(_props(talk)["audio"]) == "audio"
        assert _props(talk)["seed"]["type"] == "integer"
    assert "resolution" not in _props(BY_ID["infinitetalk-fast"])
    assert _props(BY_ID["infinitetalk"])["resolution"]["enum"] == ["480p", "720p"]
    assert BY_ID["infinitetalk"].runtime_per_second > BY_ID["infinitetalk-fast"].runtime_per_second
    assert _props(BY_ID["chatterbox-turbo"])["text"]["maxLength"] == 500
    assert "5 seconds" in BY_ID["chatterbox-turbo"].description
    assert media_kind(_props(BY_ID["chatterbox-turbo"])["reference_audio"]) == "audio"
    assert media_kind(_props(BY_ID["xtts-v2"])["speaker"]) == "audio"
    speech = _props(BY_ID["speech-02-hd"])
    assert speech["text"]["maxLength"] == 10_000 and speech["text"]["format"] == "textarea"
    assert (speech["speed"]["minimum"], speech["speed"]["maximum"]) == (0.5, 2)
    assert (speech["pitch"]["minimum"], speech["pitch"]["maximum"]) == (-12, 12)
    assert _props(BY_ID["speech-02-turbo"]) == speech
    for name in ("voice_id", "emotion"):
        assert "enum" in speech[name]
    for model_id, name in [
        ("gemini-tts", "voice"),
        ("qwen3-tts-flash", "language_type"),
        ("xtts-v2", "language"),
    ]:
        assert "enum" in _props(BY_ID[model_id])[name]


def test_spec_model_pricing() -> None:
    expected = {
        "gpt-image-2": ["quality"],
        "zonos2": ["audio"],
        "infinitetalk-fast": ["audio"],
        "infinitetalk": ["audio", "resolution"],
        "gemini-tts": ["text"],
    }
    for model_id, varies_by in expected.items():
        assert BY_ID[model_id].pricing is not None
        assert BY_ID[model_id].pricing["varies_by"] == varies_by, model_id
    assert BY_ID["zonos2"].media_field == "audio"
    flat = {
        "chatterbox-turbo": 5,
        "xtts-v2": 10,
        "speech-02-hd": 5,
        "speech-02-turbo": 5,
        "qwen3-tts-flash": 2,
        "seed-speech-tts-2": 3,
    }
    for model_id, credits in flat.items():
        assert BY_ID[model_id].pricing is None and BY_ID[model_id].credits == credits, model_id
    speech = [m for m in MODELS if m.group == "Speech"]
    assert {m.id for m in speech} == {*flat, "gemini-tts"}


def test_audio_and_video_makeup() -> None:
    audio = [m.id for m in MODELS if m.kind == "audio"]
    assert "zonos2" in audio and len([m for m in audio if m in SPEC_INPUTS]) == 8
    video = {m.id for m in MODELS if m.kind == "video"}
    assert {"infinitetalk", "infinitetalk-fast", *REPLICATION_MODELS} <= video
    groups = {m.group for m in MODELS if m.kind == "audio"}
    assert {"Speech", "Voice cloning", "Music", "Sound effects"} <= groups


def test_replication_models() -> None:
    assert REPLICATION_MODELS == (
        "seedance-2-fast-i2v",
        "kling-v2-6-std-motion-control",
        "seedance-v1-5-pro-i2v",
        "p-video",
        "seedance-2-fast-t2v",
    )
    for model_id in REPLICATION_MODELS:
        model = BY_ID[model_id]
        assert model.kind == "video" and model.media_field is None, model_id
        assert 20 <= model.credits <= 60, model_id
    for model_id in ("seedance-2-fast-i2v", "seedance-v1-5-pro-i2v"):
        props = _props(BY_ID[model_id])
        assert {"image", "prompt"} <= set(BY_ID[model_id].input_schema["required"])
        assert media_kind(props["image"]) == "image"
    kling = _props(BY_ID["kling-v2-6-std-motion-control"])
    assert media_kind(kling["video"]) == "video" and media_kind(kling["image"]) == "image"
    t2v = BY_ID["seedance-2-fast-t2v"]
    assert t2v.input_schema["required"] == ["prompt"]
    assert not any(media_kind(p) for p in _props(t2v).values())


# --- Pricing -------------------------------------------------------------------------------------


def test_pricing_objects_match_rules() -> None:
    used = set()
    for model in MODELS:
        if isinstance(model.rule, Flat):
            assert model.pricing is None and model.media_field is None, model.id
            continue
        assert model.pricing is not None, model.id
        assert set(model.pricing) == {"type", "varies_by"}
        assert model.pricing["type"] in wire.PRICING_TYPES
        assert model.pricing["varies_by"] == list(model.rule.varies_by())
        assert set(model.pricing["varies_by"]) <= set(_props(model)), model.id
        used.add(model.pricing["type"])
        if model.pricing["type"] == "per_media_second":
            assert model.media_field in model.pricing["varies_by"]
            assert media_kind(_props(model)[model.media_field]) in ("audio", "video")
        else:
            assert model.media_field is None
    assert used == set(wire.PRICING_TYPES)


def test_pricing_varies_by_coverage() -> None:
    varies = [(m, set(m.pricing["varies_by"])) for m in MODELS if m.pricing]
    for name in ("quality", "resolution", "text", "duration"):
        assert len([m for m, v in varies if name in v]) >= (1 if name == "text" else 3), name
    media = [media_kind(_props(m)[m.media_field]) for m in MODELS if m.media_field]
    assert media.count("audio") >= 3 and media.count("video") >= 3


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_price_depends_only_on_varies_by(model: ModelSpec) -> None:
    """Changing any input outside ``varies_by`` (alone or many at once) never changes the price."""
    varies = set(model.pricing["varies_by"]) if model.pricing else set()
    base = _base_input(model)
    free = {n: _alternatives(p) for n, p in _props(model).items() if n not in varies}
    lengths = [1.0, 7.4, 10.0, 95.0] if model.media_field else [None, 3.0, 60.0]
    for seconds in lengths:
        expected = price(model, base, seconds)
        for name, values in free.items():
            for value in values:
                assert price(model, {**base, name: value}, seconds) == expected, f"{name}={value!r}"
        rng = random.Random(f"{model.id}-{seconds}")
        for _ in range(25):
            changed = {n: rng.choice(v) for n, v in free.items() if rng.random() < 0.6}
            assert price(model, {**base, **changed}, seconds) == expected, changed
    if model.media_field is None:
        assert len({price(model, base, s) for s in lengths}) == 1


@pytest.mark.parametrize("model", [m for m in MODELS if m.pricing], ids=[m.id for m in MODELS if m.pricing])
def test_each_varies_by_input_can_change_the_price(model: ModelSpec) -> None:
    base = _base_input(model)
    for name in model.pricing["varies_by"]:
        if name == model.media_field:
            prices = {price(model, base, s) for s in (5.0, 10.0, 100.0)}
        else:
            prices = {price(model, {**base, name: v}, 10.0) for v in _alternatives(_props(model)[name])}
        assert len(prices) > 1, name


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_prices_are_positive_integers(model: ModelSpec) -> None:
    base = _base_input(model)
    for name, prop in _props(model).items():
        for value in _alternatives(prop):
            for seconds in (0.2, 10.0, 300.0):
                credits = price(model, {**base, name: value}, seconds)
                assert isinstance(credits, int) and credits >= 1


def test_listed_credits_are_the_price_at_defaults() -> None:
    for model in MODELS:
        base = _base_input(model)
        if model.pricing and model.pricing["type"] == "per_text_length":
            base[model.rule.field] = "x" * 150  # the documented reference: about 10 s of speech
        assert price(model, base, 10.0) == model.credits, model.id


def test_flat_models_always_cost_their_credits() -> None:
    flat = [m for m in MODELS if m.pricing is None]
    assert len(flat) >= 40
    for model in flat:
        base = _base_input(model)
        for name, prop in _props(model).items():
            for value in _alternatives(prop):
                assert price(model, {**base, name: value}, None) == model.credits, model.id


def test_gpt_image_2_quality_prices() -> None:
    model = BY_ID["gpt-image-2"]
    prices = {
        q: price(model, {"prompt": "a face", "quality": q, "aspect_ratio": "1:1"}, None)
        for q in ("low", "medium", "high")
    }
    assert prices == {"low": 3, "medium": 8, "high": 25}
    assert model.credits == 8
    assert price(model, {"prompt": "a face"}, None) == 8  # defaults filled when absent


@pytest.mark.parametrize("seconds", [1.0, 4.2, 7.5, 10.0, 33.3, 61.0, 119.9])
def test_infinitetalk_720p_costs_twice_480p(seconds: float) -> None:
    model = BY_ID["infinitetalk"]
    low = price(
        model, {"image": "https://x/a.png", "audio": "https://x/a.mp3", "resolution": "480p"}, seconds
    )
    high = price(
        model, {"image": "https://x/a.png", "audio": "https://x/a.mp3", "resolution": "720p"}, seconds
    )
    assert high == 2 * low
    assert price(model, {"image": "https://x/a.png", "audio": "https://x/a.mp3"}, seconds) == high


def test_length_billed_prices_grow_with_length_and_fall_back_to_30_seconds() -> None:
    for model in (m for m in MODELS if m.media_field):
        base = _base_input(model)
        short, long = price(model, base, 5.0), price(model, base, 100.0)
        assert long > short, model.id
        assert price(model, base, None) == price(model, base, ESTIMATE_FALLBACK_SECONDS)
    zonos = BY_ID["zonos2"]
    sample = {"audio": "https://x/v.wav"}
    assert price(zonos, {**sample, "text": "Hi."}, 12.0) == price(
        zonos, {**sample, "text": "Hi. " * 500}, 12.0
    )
    assert price(zonos, {**sample, "text": "Hi."}, 12.0) < price(zonos, {**sample, "text": "Hi."}, 60.0)


def test_gemini_tts_priced_by_text_length() -> None:
    model = BY_ID["gemini-tts"]
    short = price(model, {"text": "Hello."}, None)
    long = price(model, {"text": "Hello. " * 400}, None)
    assert 1 <= short < long


def test_billing_text_names_the_inputs_that_set_the_price_with_their_values() -> None:
    for model in MODELS:
        text = billing_text(model, _base_input(model), 12.0 if model.media_field else None)
        assert text.strip() and "credit" in text, model.id
    gpt = BY_ID["gpt-image-2"]
    assert billing_text(gpt, {"prompt": "x"}) == "8 credits per image at quality medium (low 3, high 25)"
    assert (
        billing_text(gpt, {"prompt": "x", "quality": "low"})
        == "3 credits per image at quality low (medium 8, high 25)"
    )
    assert billing_text(BY_ID["chatterbox-turbo"], {"text": "x"}) == "5 credits per run"
    assert billing_text(BY_ID["flare-1-pro"], {"prompt": "x"}) == "5 credits per image"
    talk = {"image": "https://x/f.png", "audio": "https://x/v.wav", "resolution": "480p"}
    assert billing_text(BY_ID["infinitetalk"], talk, 11.2) == (
        "2 credits per second of input audio at resolution 480p, for 12 s measured; 720p costs twice 480p"
    )
    assumed = billing_text(BY_ID["zonos2"], {"text": "x", "audio": "https://x/v.wav"}, 30.0, assumed=True)
    assert assumed == (
        "0.5 credits per second of input audio, for 30 s assumed; "
        "the audio's length could not be read, so it was assumed; a run would refuse this file"
    )
    assert billing_text(BY_ID["gemini-tts"], {"text": "x" * 420}).endswith("for 420 characters")


# --- Records, examples and output length ---------------------------------------------------------


def test_record_fields() -> None:
    model = BY_ID["gpt-image-2"]
    rec = record(model, BASE + "/")
    assert rec[wire.MODEL_ID] == "gpt-image-2"
    assert rec[wire.MODEL_NAME] == model.name
    assert rec[wire.MODEL_DESCRIPTION] == model.description
    assert rec[wire.MODEL_OUTPUT_TYPE] == "image"
    assert rec[wire.MODEL_GROUP] == "Text to image"
    assert rec[wire.MODEL_CREDITS] == 8
    assert rec[wire.MODEL_PREVIEW] == f"{BASE}/_sandbox/media/preview-gpt-image-2.png"
    assert rec[wire.MODEL_LINKS] == {
        "run": f"{BASE}/v3/playground/v1/run",
        "poll": f"{BASE}/v3/playground/v1/generations/{{id}}",
    }
    assert rec["pricing"] == {"type": "per_option", "varies_by": ["quality"]}
    assert rec["input_schema"] == model.input_schema
    rec["input_schema"]["properties"].clear()
    assert model.input_schema["properties"], "a record is a copy"
    assert record(BY_ID["xtts-v2"], BASE)["pricing"] is None


def test_examples() -> None:
    with_example = [m for m in MODELS if m.example]
    assert len(with_example) >= 10
    for model in with_example:
        example = example_record(model, BASE)
        assert example is not None
        assert example["output"]["type"] == model.kind
        url = example["output"]["url"]
        assert url.startswith(f"{BASE}/_sandbox/samples/") and url.rsplit("/", 1)[1] in SAMPLES
        for value in example.get("input", {}).values():
            if isinstance(value, str) and "/_sandbox/" in value:
                assert value.startswith(f"{BASE}/_sandbox/samples/") and value.rsplit("/", 1)[1] in SAMPLES
        assert not list(_validator(model).iter_errors({**_base_input(model), **example["input"]})), model.id
    assert example_record(BY_ID["xtts-v2"], BASE) is None
    assert (
        example_record(BY_ID["infinitetalk"], BASE)["input"]["image"] == f"{BASE}/_sandbox/samples/face.png"
    )


def test_output_seconds() -> None:
    assert output_seconds(BY_ID["gpt-image-2"], {"prompt": "x"}, None) is None
    assert all(output_seconds(m, _base_input(m), None) is None for m in MODELS if m.kind == "image")
    assert output_seconds(BY_ID["infinitetalk"], {}, 12.5) == 12.5
    assert output_seconds(BY_ID["seedance-2-fast-i2v"], {"duration": 9}, None) == 9.0
    assert output_seconds(BY_ID["seedance-2-fast-i2v"], {}, None) == 5.0  # schema default
    assert output_seconds(BY_ID["p-video"], {}, None) == 5.0  # no duration input
    assert output_seconds(BY_ID["speech-02-hd"], {"text": "x" * 150}, None) == 10.0
    assert output_seconds(BY_ID["speech-02-hd"], {"text": "Hi"}, None) == 1.0
    assert output_seconds(BY_ID["zonos2"], {"text": "x" * 300}, 4.0) == 20.0
    assert output_seconds(BY_ID["melodia-v4"], {"duration": 42.5}, None) == 42.5
    assert output_seconds(BY_ID["sonic-fx-2"], {}, None) == 5.0
    for model in MODELS:
        if model.kind != "image":
            seconds = output_seconds(model, _base_input(model), 10.0)
            assert seconds is not None and seconds > 0, model.id


# --- Loading the data ----------------------------------------------------------------------------


def _entry(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "test-model",
        "name": "Test",
        "description": "A model for the loader's tests.",
        "kind": "image",
        "group": "Text to image",
        "price": {"per_option": "quality", "prices": {"low": 1, "high": 2}},
        "runtime": 5,
        "required": ["prompt"],
        "input": {
            "prompt": "image_prompt",
            "quality": {
                "use": "string",
                "description": "Quality.",
                "enum": ["low", "high"],
                "default": "low",
            },
        },
    }
    return {**entry, **changes}


def loader_data() -> dict[str, Any]:
    return load("mediagen_nb.sandbox.catalog", "models.toml")


def test_loader_expands_fragments_and_prices_from_the_data() -> None:
    data = loader_data()
    model = loader.model(_entry(), data)
    assert model.input_schema["properties"]["prompt"] == data["fragments"]["image_prompt"]
    assert model.pricing == {"type": "per_option", "varies_by": ["quality"]} and model.credits == 1
    assert price(model, {"prompt": "x", "quality": "high"}, None) == 2


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        (
            {"price": {"per_option": "quality", "prices": {"low": 1, "ultra": 2}}},
            "quality has no option 'ultra'",
        ),
        ({"price": {"per_option": "size", "prices": {}}}, "prices unknown input size"),
        ({"price": {"per_second": "duration"}}, "unknown billing method"),
        ({"required": ["prompt", "image"]}, "required image not a property"),
        ({"input": {"prompt": "no_such_fragment"}}, "unknown fragment 'no_such_fragment'"),
        ({"family": "no_such_family"}, "unknown family 'no_such_family'"),
        ({"runtime_s": 5}, "unknown fields ['runtime_s']"),
    ],
)
def test_loader_refuses_inconsistent_models(changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(CatalogError, match="catalog model test-model") as refused:
        loader.model(_entry(**changes), loader_data())
    assert problem in str(refused.value)
