"""What a form or a catalog card says a run costs: only figures that are true of what is shown.

The catalog gives each model its listed credits and, for a model whose price depends on the input,
``pricing.varies_by`` (the spec: the inputs that change the price). So a flat model costs its listed
credits; a priced model costs the service's estimate of the inputs in ``varies_by``, whatever the
others hold (a form fills the empty ones with stand-ins just for that estimate). A model billed by a
file's length has no price before the file is chosen, and a listed figure is never shown as a
minimum ("from N"): the catalog does not say it is one.
"""

from collections.abc import Mapping
from typing import Any

from mediagen_nb.client import Model
from mediagen_nb.protocol.schema import media_kind


def price_inputs(model: Model) -> list[str]:
    """The inputs a run's price depends on: ``varies_by``, with the file whose length is billed."""
    names = dict.fromkeys([*model.varies_by, model.length_billed_field])
    return [name for name in names if name]


def billed(model: Model) -> str:
    """`` (billed per option)``: the pricing type in words, or nothing."""
    kind = model.pricing.type if model.pricing is not None else None
    return f" (billed {kind.replace('_', ' ')})" if kind else ""


def listed_price(model: Model) -> str:
    """The catalog's price, with no request: ``N credits per run``, else what the price depends on.

    A length-billed model says it is priced by its file's length (its listed figure is the price of
    some length the catalog does not name); another priced model shows its figure as the listing.
    """
    if model.pricing is None:
        return f"{model.credits} credits per run"
    media = model.length_billed_field
    others = [name for name in model.varies_by if name != media]
    if media is not None:
        kind = media_kind(model.properties.get(media, {})) or "media"
        named = "" if kind == media else f" ({media})"
        rest = f" and {', '.join(others)}" if others else ""
        return f"priced by the {kind}'s length{named}{rest}{billed(model)}"
    varies = ", ".join(others) or "input"
    return f"varies by {varies}{billed(model)}; listed at {model.credits} credits"


def quote(model: Model, credits: int) -> str:
    """The price of one input: ``16 credits (billed per media second)``."""
    return f"{credits} credits{billed(model)}"


def stand_in(prop: Any) -> Any:
    """A value the schema accepts, for a field the price does not depend on; None when there is none.

    Media and lists have none: a made-up URL would be sent to the service.
    """
    if not isinstance(prop, Mapping) or media_kind(prop) or prop.get("format") == "uri":
        return None
    if "default" in prop:
        return prop["default"]
    options = prop.get("enum")
    if isinstance(options, list) and options:
        return options[0]
    kind = prop.get("type")
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        low, high = prop.get("minimum"), prop.get("maximum")
        return low if low is not None else (high if high is not None and high < 0 else 0)
    if kind == "string":
        return "x" * max(1, int(prop.get("minLength") or 1))
    return None
