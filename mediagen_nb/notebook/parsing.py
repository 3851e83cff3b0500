"""Reading a magic's fields against a model's schema, and ``{{name}}`` interpolation.

Only the option line is parsed (with shell quoting; the magic's own options are argparse's, in
:mod:`.options`); a cell body is passed as plain text, so
apostrophes, quotes, JSON and single braces are never touched. ``{{name}}`` and ``{{obj.attr}}``
are the one interpolation syntax, expanded exactly once; an unknown name is an error.
"""

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from mediagen_nb.protocol.messages import did_you_mean

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\}\}")
TRUE = {"true", "yes", "on", "1"}
FALSE = {"false", "no", "off", "0"}


class OptionError(ValueError):
    """A magic's options cannot be read; the message says which and how to fix it."""


def lookup(path: str, namespace: Mapping[str, Any]) -> Any:
    """The value of ``name`` or ``name.attr.attr`` in ``namespace`` (attributes only, no calls)."""
    name, *attrs = path.split(".")
    if name not in namespace:
        values = [n for n, value in namespace.items() if _a_value(n, value)]
        hint = did_you_mean(name, values, "{{{{{}}}}}")
        raise OptionError(f"{{{{{path}}}}}: there is no variable named {name!r}{hint}")
    value = namespace[name]
    for attr in attrs:
        if not hasattr(value, attr):
            raise OptionError(f"{{{{{path}}}}}: {type(value).__name__} has no attribute {attr!r}")
        value = getattr(value, attr)
    return value


def _a_value(name: str, value: Any) -> bool:
    """A name worth suggesting for ``{{name}}``: a value of the user's, not a module, a function or
    one of IPython's own helpers (``open``, ``exit``, ``get_ipython``): ``{{nope}}`` is no ``{{open}}``."""
    return not name.startswith("_") and not callable(value) and not isinstance(value, ModuleType)


def _text(value: Any) -> str:
    url = getattr(value, "url", None)  # a Generation or a job stands for its main result
    return str(url if isinstance(url, str) else value)


def interpolate(text: str, namespace: Mapping[str, Any]) -> str:
    """Replace every ``{{name}}`` once; the replacement text is not scanned again."""
    return PLACEHOLDER.sub(lambda m: _text(lookup(m.group(1), namespace)), text)


def interpolate_value(token: str, namespace: Mapping[str, Any]) -> Any:
    """A token that is exactly one ``{{name}}`` keeps its Python value; otherwise text interpolation."""
    whole = PLACEHOLDER.fullmatch(token.strip())
    if whole:
        value = lookup(whole.group(1), namespace)
        url = getattr(value, "url", None)
        return url if isinstance(url, str) else value
    return interpolate(token, namespace)


def split(line: str) -> list[str]:
    """Shell-style words of an option line, with a clear error for an unclosed quote."""
    try:
        return shlex.split(line, posix=True)
    except ValueError as exc:
        raise OptionError(
            f"could not read the options ({exc}): quote values that hold spaces or quotes, "
            'e.g. --negative_prompt "don\'t blur", or put long text in the cell body'
        ) from None


def coerce(name: str, prop: Mapping[str, Any], value: Any) -> Any:
    """A text option as the schema's type (the service's own checks then judge the value)."""
    if not isinstance(value, str):
        return value
    kind = prop.get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        raise OptionError(
            f"--{name}: {value!r} is not a {'whole number' if kind == 'integer' else 'number'}"
        ) from None
    if kind == "boolean":
        if value.lower() in TRUE:
            return True
        if value.lower() in FALSE:
            return False
        raise OptionError(f"--{name}: use true or false, not {value!r}")
    if kind == "array":
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _unknown(option: str, fields: Iterable[str], extra: Iterable[str], model_id: str) -> OptionError:
    names = [f"--{f}" for f in fields]
    return OptionError(
        f"unknown option {option} for {model_id}{did_you_mean(option, [*names, *extra])}\n"
        f"  fields: {' '.join(names) or '(none)'}\n  options: {' '.join(extra)}"
    )


def _unknown_pair(name: str, fields: Iterable[str], model_id: str) -> OptionError:
    """An unknown ``field=value`` name, in one line: the closest input and every input."""
    names = list(fields)
    hint = did_you_mean(name, names, "{}=")
    return OptionError(f"unknown input {name} for {model_id}{hint} (inputs: {', '.join(names) or 'none'})")


@dataclass
class Fields:
    """What an option line asked of the model: its inputs, typed by the schema."""

    inputs: dict[str, Any] = field(default_factory=dict)


def parse_fields(
    words: list[str],
    model_id: str,
    properties: Mapping[str, Any],
    options: Iterable[str],
    namespace: Mapping[str, Any],
    *,
    pairs: bool = False,
    extra_inputs: bool = False,
) -> Fields:
    """Read ``--field value`` (or ``field=value`` when ``pairs``): the words a magic's own ``options``
    (named in messages) left over.

    A name the schema does not have is refused unless ``extra_inputs`` (``--extra-inputs``): then it
    is kept as text.
    """
    out = Fields()
    extra = sorted(options)
    i = 0
    while i < len(words):
        word = words[i]
        if pairs and "=" in word and not word.startswith("-"):
            name, _, raw = word.partition("=")
            value: Any = interpolate_value(raw, namespace)
            i += 1
        elif word.startswith("--"):
            name, eq, raw = word[2:].partition("=")
            if eq:
                value = interpolate_value(raw, namespace)
                i += 1
            elif i + 1 < len(words) and not words[i + 1].startswith("--"):
                value = interpolate_value(words[i + 1], namespace)
                i += 2
            else:
                value, i = True, i + 1  # a bare --flag
        else:
            form = "field=value" if pairs else "--field value"
            raise OptionError(f"unexpected {word!r}: write inputs as {form}")
        field_name = name.replace("-", "_")
        if field_name not in properties and extra_inputs:
            field_name = name  # sent as written: the schema cannot say how it is spelt
        elif field_name not in properties:
            if pairs and not word.startswith("--"):
                raise _unknown_pair(name, properties, model_id)
            raise _unknown(f"--{name}", properties, extra, model_id)
        prop = properties.get(field_name, {})
        if value is True and prop.get("type") != "boolean":
            raise OptionError(f"--{field_name} needs a value")
        value = coerce(field_name, prop, value)
        if prop.get("type") == "array" and field_name in out.inputs:
            value = [*out.inputs[field_name], *value]
        out.inputs[field_name] = value
    return out


def main_text_field(properties: Mapping[str, Any], required: Iterable[str]) -> str | None:
    """The input a cell body fills: ``prompt``, else ``text``, else the first required string field."""
    for name in ("prompt", "text"):
        if properties.get(name, {}).get("type") == "string":
            return name
    for name in required:
        prop = properties.get(name, {})
        if prop.get("type") == "string" and "contentMediaType" not in prop and prop.get("format") != "uri":
            return name
    return None
