"""What the spec makes certain, checked on every answer that carries money.

The spec fixes some figures beyond doubt: credits are whole numbers and never negative; a model
without ``pricing`` costs its listed credits on every run, so its estimate is that price; an estimate
"runs the same pricing so the number equals the run's charge", so two inputs alike in every input the
price varies by (``varies_by``) cost the same, and a run's ``creditsSpent`` equals its estimate where
the price does not hang on a file's length. An answer that disagrees is one ServiceResponseError (or,
for a charge already made, one warning) naming the field and what was expected: a number read from
the wrong member is never shown as a price.
"""

import json
import threading
import warnings
from collections.abc import Mapping
from typing import Any

from mediagen_nb.client.errors import ServiceResponseError
from mediagen_nb.client.resources import Estimate, Generation, Model
from mediagen_nb.client.resources.fields import normal
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_WIRE


class ChargeDiffers(UserWarning):
    """A run was charged otherwise than the spec makes certain (its listed price, its estimate)."""


def price_members(data: Mapping[str, Any]) -> dict[str, int]:
    """The members of an estimate answer (one level deeper too) that hold a whole number of credits,
    in any type (``25``, ``"25"``, ``25.0``): where a price can be."""
    found: dict[str, int] = {}
    for member, value in data.items():
        values = value.items() if isinstance(value, Mapping) else [("", value)]
        for inner, item in values:
            if isinstance(item, bool):
                continue
            ok, read = normal("Estimate", member, item, "an integer")
            if ok and isinstance(read, int) and not isinstance(read, bool) and item is not None:
                found[f"{member}.{inner}" if inner else member] = read
    return found


def _shown(members: Mapping[str, int]) -> str:
    return ", ".join(f"{name} = {value}" for name, value in members.items()) or "none"


def key_of(model: Model, values: Mapping[str, Any]) -> str:
    """The class of an input: its model and the values of the inputs its price varies by (defaults
    filled), as one string."""
    props = model.properties
    chosen = {
        name: values.get(
            name, props.get(name, {}).get("default") if isinstance(props.get(name), Mapping) else None
        )
        for name in model.varies_by
    }
    return json.dumps([model.id, chosen], sort_keys=True, default=str)


class Prices:
    """The prices this client has seen, by class of input (see :func:`key_of`), from estimates and runs."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, str]] = {}  # class -> (credits, where they were seen)
        self._lock = threading.Lock()

    def seen(self, key: str) -> tuple[int, str] | None:
        with self._lock:
            return self._seen.get(key)

    def keep(self, key: str, credits: int, where: str) -> None:
        with self._lock:
            self._seen.setdefault(key, (credits, where))


def estimate(
    found: Estimate,
    data: Mapping[str, Any],
    model: Model | None,
    values: Mapping[str, Any],
    prices: Prices,
    names: wire.Names,
) -> None:
    """Refuse an estimate that disagrees with what the spec makes certain (see the module)."""
    credits = found.credits
    name = names.estimate_credits
    members = price_members(data)
    if credits < 0:
        raise ServiceResponseError(
            f"the service's estimate of {found.model_id} says {name} = {credits}: credits are never "
            f"negative, so this is no price (its numbers: {_shown(members)}){_fix(members, None, name)}",
            field=name,
        )
    if model is None:
        return
    if model.pricing is None and model.credits is not None and credits != model.credits:
        raise ServiceResponseError(
            f"the service's estimate of {model.id} says {name} = {credits}, but {model.id} has no pricing, "
            "so "
            f"every run costs its listed {model.credits} credits (its numbers: {_shown(members)})"
            f"{_fix(members, model.credits, name)}",
            field=name,
        )
    key = key_of(model, values)
    earlier = prices.seen(key)
    if earlier is not None and earlier[0] != credits and model.length_billed_field is None:
        raise ServiceResponseError(
            f"the service's estimate of {model.id} says {name} = {credits}, but the same "
            f"{', '.join(model.varies_by) or 'input'} cost {earlier[0]} credits ({earlier[1]}): "
            "a price is the "
            f"same for inputs alike in what it varies by (its numbers: {_shown(members)})"
            f"{_fix(members, earlier[0], name)}",
            field=name,
        )
    prices.keep(key, credits, "an earlier estimate")


def _fix(members: Mapping[str, int], expected: int | None, name: str) -> str:
    """The names-file line that reads the right member, when exactly one holds what was expected."""
    holding = [m for m, v in members.items() if v == expected and m != name] if expected is not None else []
    if len(holding) == 1:
        return f": set {wire.line('estimate_credits', holding[0])} in a names file ({ENV_WIRE})"
    return f": {wire.setting('estimate_credits')} names the member that is the price ({ENV_WIRE})"


def charge(generation: Generation, model: Model | None, values: Mapping[str, Any], prices: Prices) -> None:
    """Warn once when a new run was charged otherwise than certain: its listed price (no pricing), or
    its class's estimate (a price that does not hang on a file's length). The figure shown stays the
    service's ``creditsSpent``."""
    if model is None or generation.reused:
        return
    spent = generation.credits_spent
    if model.pricing is None and model.credits is not None and spent != model.credits:
        warnings.warn(
            f"mediagen_nb: {model.id} {generation.id} was charged {spent} credits (creditsSpent), but it has "
            f"no pricing and lists {model.credits}: the service's figure is shown",
            ChargeDiffers,
            stacklevel=3,
        )
        return
    if model.length_billed_field is not None:
        return
    key = key_of(model, values)
    earlier = prices.seen(key)
    if earlier is not None and earlier[0] != spent:
        warnings.warn(
            f"mediagen_nb: {model.id} {generation.id} was charged {spent} credits (creditsSpent), but "
            f"{earlier[1]} of the same {', '.join(model.varies_by) or 'input'} said {earlier[0]}: "
            "the service's "
            f"charge is shown; if the estimate read the wrong member, set {wire.setting('estimate_credits')} "
            f"in a names file ({ENV_WIRE})",
            ChargeDiffers,
            stacklevel=3,
        )
    prices.keep(key, spent, f"the charge of {generation.id}")
