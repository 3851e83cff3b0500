"""Pricing a whole frame with as few estimate requests as the pricing allows.

A model with ``pricing: null`` costs its listed price: no request at all. Otherwise the price
depends only on the inputs named in ``varies_by``, so one estimate per distinct combination of
those inputs prices every row (one per distinct media URL for a length-billed model).
"""

import asyncio
import json
from dataclasses import dataclass

from mediagen_nb.batch.plan import Row
from mediagen_nb.client import AsyncClient, MediagenError, Model


@dataclass(frozen=True)
class Price:
    """One row's price, or why it has none."""

    credits: int | None
    billing: str | None
    error: str | None = None


def combination(model: Model, row: Row) -> str:
    """The row's values of the inputs its model's price varies by (an absent one at its schema default)."""
    values = row.input or {}
    return json.dumps(
        [values.get(name, model.properties.get(name, {}).get("default")) for name in model.varies_by],
        sort_keys=True,
        default=str,
    )


async def price_rows(client: AsyncClient, model: Model, rows: list[Row]) -> tuple[dict[int, Price], int]:
    """Prices by row position, and the number of estimate requests it took."""
    valid = [row for row in rows if row.input is not None]
    if model.pricing is None:
        listed = Price(model.credits or 0, f"{model.credits} credits per run (listed price)")
        return {row.position: listed for row in valid}, 0
    groups: dict[str, list[Row]] = {}
    for row in valid:
        groups.setdefault(combination(model, row), []).append(row)

    async def one(members: list[Row]) -> Price:
        try:
            estimate = await client.estimate(model.id, members[0].input or {}, validate=False)
        except MediagenError as exc:
            return Price(None, None, str(exc))
        return Price(estimate.credits, estimate.billing)

    prices = await asyncio.gather(*(one(members) for members in groups.values()))
    by_row = {
        row.position: price for members, price in zip(groups.values(), prices, strict=True) for row in members
    }
    return by_row, len(groups)
