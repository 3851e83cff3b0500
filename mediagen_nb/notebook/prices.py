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

from mediagen_nb.client import Estimate, Model
from mediagen_nb.client.resources.generation import billed, listed_price
from mediagen_nb.protocol import messages
from mediagen_nb.protocol.schema import media_kind

__all__ = ["billed", "listed_price", "price_inputs", "quote", "stand_in"]


def price_inputs(model: Model) -> list[str]:
    """The inputs a run's price depends on: ``varies_by``, with the file whose length is billed."""
    names = dict.fromkeys([*model.varies_by, model.length_billed_field])
    return [name for name in names if name]


def quote(model: Model, estimate: Estimate) -> str:
    """The price of one input and the service's words on how it is billed, which name the inputs
    that set it: ``16 credits: 2 credits per second of input audio at resolution 480p, for 8 s measured``."""
    if estimate.billing:
        return f"{messages.credits(estimate.credits)}: {estimate.billing}"
    return f"{messages.credits(estimate.credits)}{billed(model)}"


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
