"""How the sandbox shapes its answers beyond names (a names file's ``[serve]``, :class:`wire.Serve`).

A service may page its models list, send a figure the spec makes an integer as a string, an output
kind or a status in capitals, or carry other numbers beside an estimate's price. The sandbox can do
each of these, so the client's handling of every shape is tested against a server that has it. Names
themselves (dotted paths included) are :mod:`mediagen_nb.protocol.wire`'s.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from mediagen_nb.protocol import wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox.responses import bad_request


def number(names: wire.Names, value: Any) -> Any:
    """A credit figure as this sandbox sends it (``3``, ``"3"`` or ``3.0``)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return value
    kind = names.serve.numbers
    return str(value) if kind == "string" else float(value) if kind == "float" else value


def word(names: wire.Names, value: Any) -> Any:
    """An output kind or a status as this sandbox sends it (``image``, ``IMAGE`` or ``Image``)."""
    if not isinstance(value, str):
        return value
    case = names.serve.case
    return value.upper() if case == "upper" else value.title() if case == "title" else value


def page(
    names: wire.Names, records: Sequence[Mapping[str, Any]], query: Mapping[str, str], base_url: str
) -> dict[str, Any]:
    """The models answer: every record, or one page of them and how to ask for the next."""
    serve = names.serve
    answer: dict[str, Any] = {}
    if serve.page_size <= 0:
        wire.put(answer, names.models_list, list(records))
        return answer
    size, total = serve.page_size, len(records)
    param = names.models_next_param
    raw = query.get(
        param if serve.paging in ("cursor", "link") else serve.paging, "0" if serve.paging != "page" else "1"
    )
    start = _position(serve.paging, raw, size, total)
    end = min(total, start + size)
    wire.put(answer, names.models_list, list(records[start:end]))
    more = end < total
    if serve.paging == "cursor":
        answer[names.models_next] = _cursor(end) if more else None
        answer["total"] = total
    elif serve.paging == "page":
        answer.update(page=start // size + 1, pages=-(-total // size), total=total)
    elif serve.paging == "offset":
        answer.update(offset=start, limit=size, total=total)
    else:
        link = f"{base_url.rstrip('/')}{path('models')}?{param}={_cursor(end)}"
        answer[names.models_next] = link if more else None
    return answer


def _cursor(position: int) -> str:
    """An opaque cursor of a position in the list (a client must send it back as it is)."""
    return f"c{position * 7 + 3:x}"


def _position(paging: str, raw: str, size: int, total: int) -> int:
    """Where a page starts, from the query parameter its paging style reads; a 400 when unreadable."""
    try:
        if paging in ("cursor", "link"):
            value = int(raw[1:], 16) if raw.startswith("c") else int(raw)
            if raw.startswith("c"):
                value, rest = divmod(value - 3, 7)
                if rest:
                    raise ValueError(raw)
        elif paging == "page":
            value = (int(raw) - 1) * size
        else:
            value = int(raw)
    except ValueError:
        raise bad_request(f"{paging} {raw!r} is not one this list handed out") from None
    if not 0 <= value <= total:
        raise bad_request(f"{paging} {raw!r} is past the end of the list")
    return value


def extra_numbers(names: wire.Names, listed: int, balance: int, price: int) -> dict[str, Any]:
    """The other numbers an estimate carries (``[serve] estimate_extra``), by member name."""
    figures = {"balance": balance, "balance_after": balance - price, "listed": listed}
    return {
        member: figures[kind] if isinstance(kind, str) else kind
        for member, kind in names.serve.estimate_extra.items()
    }
