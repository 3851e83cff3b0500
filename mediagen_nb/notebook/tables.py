"""Small result tables of the magics: HTML in a notebook, aligned text in a terminal."""

from collections.abc import Callable
from html import escape
from typing import Any


class _Table:
    """A small result table: HTML in a notebook, aligned text in a terminal."""

    headers: tuple[str, ...] = ()

    def rows(self) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def cell_html(self, index: int, value: Any) -> str:
        return escape("" if value is None else str(value))

    def __repr__(self) -> str:
        rows = [tuple("" if v is None else str(v) for v in row) for row in self.rows()]
        widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(self.headers)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(self.headers, widths, strict=True))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{escape(h)}</th>" for h in self.headers)
        body = "".join(
            "<tr>" + "".join(f"<td>{self.cell_html(i, v)}</td>" for i, v in enumerate(row)) + "</tr>"
            for row in self.rows()
        )
        return f'<table style="font-size:12px"><tr>{head}</tr>{body}</table>'


class ModelTable(_Table):
    """``%mediagen models``: previews, ids, kinds, groups and prices."""

    headers = ("preview", "id", "name", "kind", "group", "price")

    def __init__(self, models: list[Any]) -> None:
        self.models = models

    def rows(self) -> list[tuple[Any, ...]]:
        from mediagen_nb.notebook.prices import listed_price

        return [
            (
                m.preview_url,
                m.id,
                m.name,
                m.output_type,
                m.group,
                listed_price(m),
            )
            for m in self.models
        ]

    def cell_html(self, index: int, value: Any) -> str:
        if index == 0:
            from mediagen_nb.client import html

            return html.media(value, "image", width=96)
        return super().cell_html(index, value)


class UsageTable(_Table):
    """``%mediagen usage``: this month's runs and credits by model and path, from the ledger."""

    headers = ("model", "via", "runs", "credits", "note")

    def __init__(self, frame: Any) -> None:
        self.frame = frame
        self.month = frame.attrs.get("month", "")
        self.service = frame.attrs.get("service", "")

    def rows(self) -> list[tuple[Any, ...]]:
        rows = [tuple(record) for record in self.frame.itertuples(index=False)]
        if rows:
            rows[-1] = (f"total {self.month} on {self.service}", *rows[-1][1:])
        return rows


class HistoryTable(_Table):
    """``%mediagen history``: this kernel's results, newest last, each with what it was charged."""

    headers = ("#", "kind", "id", "status", "credits", "result")

    def __init__(self, items: list[Any], charged: Callable[[Any], Any] | None = None) -> None:
        self.items = items
        self.charged = charged or _said_credits

    def rows(self) -> list[tuple[Any, ...]]:
        return [
            (
                i,
                getattr(item, "model_id", None) or type(item).__name__,
                item.id,
                item.status,
                self.charged(item),
                getattr(item, "url", None)
                or getattr(item, "video_url", None)
                or getattr(item, "output_video_url", None),
            )
            for i, item in enumerate(self.items)
        ]

    def cell_html(self, index: int, value: Any) -> str:
        if index == 5 and value:
            from mediagen_nb.client import html

            return html.link(value)
        return super().cell_html(index, value)


def _said_credits(item: Any) -> Any:
    """The credits a result's own fields say (a generation's ``creditsSpent``, a job's credits used)."""
    if getattr(item, "reused", False):
        return "0 (reused)"
    for name in ("credits_spent", "credits_used"):
        if getattr(item, name, None) is not None:
            return getattr(item, name)
    return None


def charged_by(ledger: Any, where: Any) -> Callable[[Any], Any]:
    """What each result was charged: its own fields, else the ledger's row of its start (an analysis read
    again, a replica render, whose run resource has no credits): the charge, or ``about N`` where the
    figure is the start's estimate (a render on the service, which does not report it)."""

    def charged(item: Any) -> Any:
        said = _said_credits(item)
        if said is not None:
            return said
        entry = ledger.of_resource(str(item.id), where)
        if entry is None:
            return None
        return entry.credits if entry.credits_known else f"about {entry.credits}"

    return charged
