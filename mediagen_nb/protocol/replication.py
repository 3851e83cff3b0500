"""The replicate body's rules (the spec's table for ``POST .../replicate``), checked by both sides.

The client checks a body before it pays for anything (even before the analysis it needs), the
sandbox checks it as the service would; both refuse with the same messages.
"""

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mediagen_nb.protocol import messages
from mediagen_nb.protocol.schema import InputError

# The spec's known replication models, the default first; another value gives 400 with the list.
MODELS = (
    "seedance-2-fast-i2v",
    "kling-v2-6-std-motion-control",
    "seedance-v1-5-pro-i2v",
    "p-video",
    "seedance-2-fast-t2v",
)
QUALITIES = ("low", "medium", "high")
ACCURACIES = ("fast", "balanced", "exact")
AUDIO_MODES = ("chunks", "original", "upload")
MARKETING_ASPECTS = ("9:16", "16:9")
DEFAULTS = {"modelId": MODELS[0], "quality": "medium", "accuracy": "fast", "marketingAspect": "9:16"}


def is_https(value: Any) -> bool:
    """An https URL with a host."""
    if not isinstance(value, str):
        return False
    try:
        parts = urlsplit(value.strip())
        return parts.scheme.lower() == "https" and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False


def _choice(body: Mapping[str, Any], name: str, options: tuple[str, ...]) -> None:
    value = body.get(name)
    if value is not None and (not isinstance(value, str) or value not in options):
        raise InputError(name, messages.not_one_of(name, options))


def check_run_body(body: Mapping[str, Any]) -> None:
    """Refuse what the service would refuse in a replicate body (all but the clip range and webhook)."""
    model_id = body.get("modelId")
    if model_id is not None and (not isinstance(model_id, str) or model_id not in MODELS):
        raise InputError("modelId", messages.unknown_replication_model(MODELS))
    _choice(body, "quality", QUALITIES)
    _choice(body, "accuracy", ACCURACIES)
    _choice(body, "marketingAspect", MARKETING_ASPECTS)
    clips = body.get("clips")
    if clips is not None and not (
        isinstance(clips, list)
        and clips
        and all(isinstance(c, int) and not isinstance(c, bool) for c in clips)
    ):
        raise InputError("clips", messages.wrong_type("clips", "a non-empty list of clip indexes"))
    if body.get("characterImage") is not None and not is_https(body["characterImage"]):
        raise InputError("characterImage", messages.wrong_type("characterImage", "an https URL of an image"))
    if not isinstance(body.get("captions", False), bool):
        raise InputError("captions", messages.wrong_type("captions", "true or false"))
    audio = body.get("audio")
    if audio is not None:
        if not isinstance(audio, Mapping):
            raise InputError("audio", messages.wrong_type("audio", 'an object such as {"mode": "chunks"}'))
        if audio.get("mode") not in AUDIO_MODES:
            raise InputError("audio.mode", messages.not_one_of("audio.mode", AUDIO_MODES))
        if audio["mode"] == "upload" and not is_https(audio.get("url")):
            raise InputError(
                "audio.url", messages.wrong_type("audio.url", "an https URL of an .mp3, .wav or .mp4 file")
            )
