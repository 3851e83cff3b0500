"""An input checked against a model's ``input_schema``, with the service's messages.

One implementation for both sides: the sandbox refuses with it (check 6 of a start) and the
client refuses with it before any request is sent. It returns the input as the model sees it:
a single URL sent to a list field becomes a one-item list, and schema defaults fill absent
fields. Fields the schema does not name are kept (the service ignores them).
"""

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from mediagen_nb.protocol import limits, messages

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}
_PYTHON_TYPES: dict[str, type] = {"string": str, "boolean": bool, "array": list, "object": dict}


class InputError(ValueError):
    """An input the service would refuse with a 400; ``field`` names the input at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _is_type(value: Any, kind: str | None) -> bool:
    if kind is None:
        return True
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _PYTHON_TYPES.get(kind, object))


# Inputs the spec says a model ignores, though its schema does not list them: sent to it, they change
# nothing, so the client drops them with a note rather than refusing a call the service would run.
IGNORED_INPUTS: dict[str, dict[str, str]] = {
    "infinitetalk-fast": {"resolution": "infinitetalk-fast renders 480p only and ignores resolution"},
}


def is_missing(value: Any) -> bool:
    """Absent for the service: None, or a blank string."""
    return value is None or (isinstance(value, str) and not value.strip())


def _check(name: str, prop: Mapping[str, Any], value: Any) -> Any:
    if prop.get("type") == "array" and isinstance(value, str):
        value = [value]
    if "enum" in prop and value not in prop["enum"]:
        raise InputError(name, messages.not_one_of(name, prop["enum"]))
    kind = prop.get("type")
    if not _is_type(value, kind):
        raise InputError(name, messages.wrong_type(name, _TYPE_WORDS.get(str(kind), str(kind))))
    if kind == "integer" and isinstance(value, float):
        value = int(value)
    low, high = prop.get("minimum"), prop.get("maximum")
    if kind in ("integer", "number") and (
        (low is not None and value < low) or (high is not None and value > high)
    ):
        raise InputError(name, messages.out_of_range(name, low, high))
    if kind == "string" and "maxLength" in prop and len(value) > prop["maxLength"]:
        raise InputError(name, messages.too_long(name, prop["maxLength"]))
    if kind == "array":
        if "maxItems" in prop and len(value) > prop["maxItems"]:
            raise InputError(name, messages.too_many_items(name, prop["maxItems"]))
        if "minItems" in prop and len(value) < prop["minItems"]:
            raise InputError(name, messages.too_few_items(name, prop["minItems"]))
        items = prop.get("items", {})
        value = [_check(f"{name}[{i}]", items, item) for i, item in enumerate(value)]
    return value


def normalize(schema: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The validated input with defaults applied; raises :class:`InputError` naming the field."""
    props: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if is_missing(values.get(name)):
            raise InputError(name, messages.missing_field(name))
    result = dict(values)
    for name, prop in props.items():
        if name in values and values[name] is not None:
            result[name] = _check(name, prop, values[name])
        elif "default" in prop:
            result[name] = prop["default"]
    return result


def media_kind(prop: Mapping[str, Any]) -> str | None:
    """``image``, ``audio`` or ``video`` for a media URL property (or a list of them), else None."""
    if prop.get("type") == "array":
        prop = prop.get("items", {})
    kind = str(prop.get("contentMediaType", "")).split("/", 1)[0]
    return kind if kind in ("image", "audio", "video") else None


def length_billed_field(schema: Mapping[str, Any], pricing: Mapping[str, Any] | None) -> str | None:
    """The audio or video input whose file length sets the price, read from ``pricing.varies_by``."""
    props = schema.get("properties", {})
    for name in (pricing or {}).get("varies_by", []):
        if media_kind(props.get(name, {})) in ("audio", "video"):
            return str(name)
    return None


def url_extension(url: str) -> str:
    """Lower-case extension of the URL's path, with the dot (``.mp3``), or ``""`` (also for a URL that
    cannot be parsed, such as one with an unclosed IPv6 bracket)."""
    try:
        url_path = urlsplit(url).path
    except ValueError:
        return ""
    name = unquote(url_path).rsplit("/", 1)[-1]
    return "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""


def check_media_extension(field: str, url: Any) -> None:
    """The rule of length-billed models: the media URL must be ``.mp3``, ``.wav`` or ``.mp4``."""
    if not isinstance(url, str) or url_extension(url) not in limits.LENGTH_BILLED_EXTENSIONS:
        raise InputError(field, messages.unsupported_media_format(field))
