"""What the agent tools ``create_avatar`` and ``avatar_say`` mean: written here, once.

The spec names the two tools and shows neither; we give them the obvious meaning on top of the
catalog, so that every credit they spend is a catalog run with its own price, charged, refunded,
limited and webhooked like any generation (they run through the generation backend):

* ``create_avatar`` makes a presenter portrait: one ``gpt-image-2`` generation (the spec's face
  model) whose prompt is written from a description, a gender and a look (the topic-to-video
  pipeline's own ``creator``, ``newscaster``, ``pixar``), head and shoulders, facing the camera.
* ``avatar_say`` makes that portrait speak a text: a speech generation, then a lip-sync of the
  portrait to it (the spec's chain, steps 2 and 3). The voice is a preset of ``qwen3-tts-flash``
  (``voice``), or a sample URL cloned by ``zonos2`` (``voiceSample``); the lip-sync is
  ``infinitetalk-fast`` at ``480p`` or ``infinitetalk`` at ``720p``. The speech must end before the
  lip-sync can start (it needs the audio's URL), so the tool holds until it does; a failed speech
  stops there (its credits refunded) and no lip-sync is started.
"""

from typing import Any

from mediagen_nb.sandbox import catalog

PORTRAIT_MODEL = "gpt-image-2"
PRESET_SPEECH_MODEL = "qwen3-tts-flash"
CLONED_SPEECH_MODEL = "zonos2"
LIPSYNC_MODELS = {"480p": "infinitetalk-fast", "720p": "infinitetalk"}
GENDERS = ("woman", "man")
LOOKS = {
    "creator": "a friendly online creator in a bright home studio",
    "newscaster": "a news presenter at a studio desk, formal clothes",
    "pixar": "an animated 3D character in a warm, family-film style",
}


def voices() -> list[str]:
    """The preset voices ``avatar_say`` takes: the speech model's own."""
    return list(catalog.BY_ID[PRESET_SPEECH_MODEL].input_schema["properties"]["voice"]["enum"])


def portrait_input(args: dict[str, Any]) -> dict[str, Any]:
    """``create_avatar``'s arguments as the input of its ``gpt-image-2`` run."""
    gender = args.get("gender") or GENDERS[0]
    look = LOOKS[args.get("look") or "creator"]
    who = (args.get("description") or "").strip()
    prompt = f"Head-and-shoulders portrait of a {gender} presenter, {look}, facing the camera, soft light"
    values: dict[str, Any] = {"prompt": f"{prompt}. {who}" if who else prompt}
    for name, field in (("quality", "quality"), ("aspectRatio", "aspect_ratio")):
        if args.get(name) is not None:
            values[field] = args[name]
    return values


def speech_run(args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``avatar_say``'s speech: the model and its input (a cloned sample, else a preset voice)."""
    if args.get("voiceSample"):
        return CLONED_SPEECH_MODEL, {"text": args["text"], "audio": args["voiceSample"]}
    values = {"text": args["text"]}
    if args.get("voice"):
        values["voice"] = args["voice"]
    return PRESET_SPEECH_MODEL, values


def lipsync_run(args: dict[str, Any], audio_url: str) -> tuple[str, dict[str, Any]]:
    """``avatar_say``'s lip-sync of the portrait to the speech at ``audio_url``."""
    resolution = args.get("resolution") or "480p"
    values: dict[str, Any] = {"image": args["image"], "audio": audio_url}
    if resolution == "720p":
        values["resolution"] = resolution
    return LIPSYNC_MODELS[resolution], values
