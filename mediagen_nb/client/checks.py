"""Checks on what goes out: ids safe to put in a path, values JSON can carry as UTF-8."""

import json
import re
from collections.abc import Mapping
from typing import Any

from mediagen_nb.client import errors
from mediagen_nb.protocol import headers, messages

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
ID_KINDS = {"generation": True, "analysis": True, "run": False, "job": False}  # kind -> must be a UUID


def is_id(value: object, kind: str) -> bool:
    """Whether ``value`` is an id of ``kind`` safe to put in a path or a file name (see checked_id)."""
    pattern = _UUID if ID_KINDS[kind] else _TOKEN
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def checked_id(value: object, kind: str) -> str:
    """An id from a caller, a webhook or a response, safe to put in a path; else ValidationError.

    Generation and analysis ids are UUIDs (the spec); run and job ids are not shown, so they may be
    any short token of letters, digits, ``-`` and ``_``. Nothing else ever reaches a URL.
    """
    text = getattr(value, "id", value)
    if not isinstance(text, str):
        raise errors.ValidationError(
            f"{kind} id must be a string, not {type(text).__name__}", field="id", sent=False
        )
    if ID_KINDS[kind] and not is_id(text, kind):
        prefix = messages.INVALID_GENERATION_ID if kind == "generation" else f"Invalid {kind} id"
        raise errors.ValidationError(
            f"{prefix}: {text[:80]!r} is not a UUID (use the id its start returned)", field="id", sent=False
        )
    if not is_id(text, kind):
        raise errors.ValidationError(
            f"Invalid {kind} id: {text[:80]!r} (use the id its start returned)", field="id", sent=False
        )
    return text


def sendable(values: Mapping[str, Any]) -> None:
    """Refuse a value JSON cannot carry as UTF-8 (a lone surrogate such as ``"caf\\udce9"``), naming it."""
    for name, value in values.items():
        try:
            json.dumps(value, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else "?"
            raise errors.ValidationError(
                f"{name} holds a character that cannot be sent ({bad!r}, not valid Unicode text); "
                "fix or re-type that text",
                field=name,
                sent=False,
            ) from None
        except ValueError:
            raise errors.ValidationError(
                f"{name} must be a finite number (NaN and infinity cannot be sent)", field=name, sent=False
            ) from None


def header_value(name: str, value: str) -> str:
    """``value`` as an HTTP header can carry it (``protocol.headers``), else ValidationError.

    Checked before httpx sees it: httpx's own UnicodeEncodeError would carry the request's headers in
    its traceback's locals.
    """
    found = headers.problem(value)
    if found is not None:
        raise errors.ValidationError(messages.not_a_header_value(name, found), field=name, sent=False)
    return value
