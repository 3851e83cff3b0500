"""Typed fields of the JSON bodies of starts, refused with the service's messages."""

from collections.abc import Mapping
from typing import Any

from mediagen_nb.protocol import messages
from mediagen_nb.sandbox.responses import bad_request


def choice(body: Mapping[str, Any], name: str, options: tuple[str, ...], default: str) -> str:
    """An enum field, its default when absent; the spec's ``<field> must be one of`` otherwise."""
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or value not in options:
        raise bad_request(messages.not_one_of(name, options))
    return value


def flag(body: Mapping[str, Any], name: str, default: bool) -> bool:
    """A boolean field, its default when absent."""
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_request(messages.wrong_type(name, "true or false"))
    return value
