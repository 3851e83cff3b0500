"""Check 6 of a start: an input against its model's ``input_schema``, with the spec's messages.

Returns the input as the model sees it: a single URL sent to a list field becomes a one-item
list, and schema defaults fill absent fields. Fields the schema does not name are kept and ignored.
"""

from typing import Any

from mediagen_nb.sandbox.errors import bad_request
from mediagen_nb.spec import messages

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


def _is_type(value: Any, kind: str | None) -> bool:
    if kind is None:
        return True
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(
        value, {"string": str, "boolean": bool, "array": list, "object": dict}.get(kind, object)
    )


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _check(name: str, prop: dict[str, Any], value: Any) -> Any:
    if prop.get("type") == "array" and isinstance(value, str):
        value = [value]
    if "enum" in prop and value not in prop["enum"]:
        raise bad_request(messages.not_one_of(name, prop["enum"]))
    kind = prop.get("type")
    if not _is_type(value, kind):
        raise bad_request(messages.wrong_type(name, _TYPE_WORDS.get(kind, kind)))
    if kind == "integer" and isinstance(value, float):
        value = int(value)
    low, high = prop.get("minimum"), prop.get("maximum")
    if kind in ("integer", "number") and (
        (low is not None and value < low) or (high is not None and value > high)
    ):
        raise bad_request(messages.out_of_range(name, low, high))
    if kind == "string" and "maxLength" in prop and len(value) > prop["maxLength"]:
        raise bad_request(messages.too_long(name, prop["maxLength"]))
    if kind == "array":
        if "maxItems" in prop and len(value) > prop["maxItems"]:
            raise bad_request(messages.too_many_items(name, prop["maxItems"]))
        items = prop.get("items", {})
        value = [_check(f"{name}[{i}]", items, item) for i, item in enumerate(value)]
    return value


def normalize(schema: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The validated input with defaults applied; raises a 400 ServiceError naming the field."""
    props: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if _missing(values.get(name)):
            raise bad_request(messages.missing_field(name))
    result = dict(values)
    for name, prop in props.items():
        if name in values and values[name] is not None:
            result[name] = _check(name, prop, values[name])
        elif "default" in prop:
            result[name] = prop["default"]
    return result
