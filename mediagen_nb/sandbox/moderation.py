"""The sandbox's content moderation: a documented, deterministic rule (the real one is not shown).

A text input is rejected when it contains one of ``BLOCKED_WORDS`` as a whole word (any case),
except inputs named ``negative_prompt`` (they list what to keep out); an image input is rejected
when its URL contains ``IMAGE_MARKER`` (any case).
"""

import re
from typing import Any

from mediagen_nb.protocol import messages
from mediagen_nb.sandbox.responses import bad_request

BLOCKED_WORDS = frozenset({"gore", "nsfw", "nude", "beheading", "bloodbath"})
IMAGE_MARKER = "nsfw"
NEGATIVE = "negative_prompt"
_WORD = re.compile(r"[a-z]+")


def _is_media(prop: dict[str, Any]) -> bool:
    return prop.get("format") == "uri" or "contentMediaType" in prop


def _image_urls(prop: dict[str, Any], value: Any) -> list[str]:
    if prop.get("type") == "array":
        prop, values = prop.get("items", {}), value if isinstance(value, list) else []
    else:
        values = [value]
    if not str(prop.get("contentMediaType", "")).startswith("image/"):
        return []
    return [v for v in values if isinstance(v, str)]


def check(schema: dict[str, Any], values: dict[str, Any]) -> None:
    """Raise the spec's 400 moderation error for a blocked prompt or image; nothing is charged."""
    props = schema.get("properties", {})
    for name, value in values.items():
        prop = props.get(name, {})
        if name == NEGATIVE or not isinstance(value, str) or _is_media(prop):
            continue
        if BLOCKED_WORDS & set(_WORD.findall(value.lower())):
            raise bad_request(messages.PROMPT_MODERATED)
    for name, value in values.items():
        if any(IMAGE_MARKER in url.lower() for url in _image_urls(props.get(name, {}), value)):
            raise bad_request(messages.IMAGE_MODERATED)
