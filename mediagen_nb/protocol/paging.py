"""How a page of the models list names the next one: the spec shows no paging, so a service may page it
any way. One place reads every common form, for the client and ``mediagen sandbox sync`` alike.

A page (the models answer's ``data`` object beside the list) may carry a cursor (``nextCursor``,
``next_page_token``, ``cursor`` with ``hasMore``), a link (``next``: the next page's URL), a page
number (``page`` with ``pages`` or ``totalPages``) or an offset (``offset`` with ``total``), and a
total count. :func:`follow` says what to ask for next, or that the list has ended; :func:`total` the
count a page announces. The names-file setting ``[catalog] next`` (the member) and ``next_param``
(its query parameter) names a form these rules do not read.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from mediagen_nb.protocol import wire

MAX_PAGES = 500  # a catalog of a few hundred models in pages of one: more is a loop
TOTALS = ("total", "totalCount", "total_count", "count", "totalItems", "total_items")
_NEXT = re.compile(r"^next[_-]?(.*)$", re.IGNORECASE)
_MORE = ("hasMore", "has_more", "more", "hasNext", "has_next")
_CURSORS = ("cursor", "after", "token", "continuation", "pageToken", "page_token")
_PAGES = ("pages", "totalPages", "total_pages", "pageCount", "page_count", "lastPage", "last_page")


@dataclass(frozen=True)
class Next:
    """The next page: query parameters to send with the list's own address, or a link to follow."""

    member: str  # the member of the page that said so (for messages)
    params: Mapping[str, str]
    link: str | None = None
    as_is: bool = True  # the member's value is sent back as it is (not a page number or offset counted on)


def total(page: Mapping[str, Any]) -> int | None:
    """The number of models a page says the whole list holds, or None."""
    for name in TOTALS:
        value = page.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _param(member: str) -> str:
    """The query parameter a ``next…`` member is sent back as: ``nextCursor`` -> ``cursor``."""
    rest = _NEXT.match(member)
    word = rest.group(1) if rest and rest.group(1) else "cursor"
    return word[:1].lower() + word[1:]


def _link(value: str, list_url: str) -> str | None:
    """``value`` when it is a link to the list's own address (same scheme, host, port and path)."""
    parts, own = urlsplit(value), urlsplit(list_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    same = (parts.scheme, parts.netloc.lower(), parts.path.rstrip("/")) == (
        own.scheme,
        own.netloc.lower(),
        own.path.rstrip("/"),
    )
    return value if same else None


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def follow(page: Mapping[str, Any], names: wire.Names, list_url: str, count: int) -> Next | None:
    """What to ask for after ``page`` (a models answer holding ``count`` records), or None at the end.

    A link elsewhere than the list's own address is not followed (nothing from an answer becomes a URL
    unchecked): :class:`PagingError` names it.
    """
    named = wire.get(page, names.models_next)
    candidates: list[tuple[str, Any, str]] = []
    if named not in (None, "", False):
        candidates.append((names.models_next, named, names.models_next_param))
    for member, value in page.items():
        if member != names.models_next and _NEXT.match(member) and value not in (None, "", False, True):
            candidates.append((member, value, _param(member)))
    more = any(page.get(flag) is True for flag in _MORE)
    if more:
        candidates += [(m, page[m], m) for m in _CURSORS if page.get(m) not in (None, "")]
    for member, value, param in candidates:
        if isinstance(value, Mapping):  # {"next": {"cursor": ...}} or {"links": {"next": ...}}
            inner = follow(value, names, list_url, count)
            if inner is not None:
                return Next(f"{member}.{inner.member}", inner.params, inner.link)
            continue
        if isinstance(value, str) and "://" in value:
            link = _link(value, list_url)
            if link is None:
                raise PagingError(f"the list's {member} links to {value[:80]!r}, not the list's own address")
            return Next(member, dict(parse_qsl(urlsplit(link).query)), link)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return Next(member, {param: str(value)})
    for member, value in page.items():  # a link to the list itself, under any name, is its next page
        if isinstance(value, str) and "://" in value and _link(value, list_url) and value != list_url:
            return Next(member, dict(parse_qsl(urlsplit(value).query)), value)
    links = page.get("links") or page.get("_links")
    if isinstance(links, Mapping) and links.get("next") not in (None, ""):
        inner = follow({"next": links["next"]}, names, list_url, count)
        if inner is not None:
            return Next("links.next", inner.params, inner.link)
    number = page.get("page")
    last = next((page[name] for name in _PAGES if _is_whole(page.get(name))), None)
    whole = total(page)
    if isinstance(number, int) and not isinstance(number, bool):
        if (last is not None and number < last) or (last is None and (more or _ahead(whole, number, count))):
            return Next("page", {"page": str(number + 1)}, as_is=False)
        return None
    offset = page.get("offset", page.get("skip"))
    if (
        isinstance(offset, int)
        and not isinstance(offset, bool)
        and count
        and (more or (whole is not None and offset + count < whole))
    ):
        name = "offset" if "offset" in page else "skip"
        return Next(name, {name: str(offset + count)}, as_is=False)
    return None


PARAMS = ("cursor", "after", "page", "offset", "token", "pageToken", "page_token", "start", "from")


def guesses(page: Mapping[str, Any], names: wire.Names) -> list[Next]:
    """Further ways ``page`` may name its next page, to try when :func:`follow` finds none and the list is
    short of what the service's documents list: each scalar member but the list and a total, sent back
    as itself under its own name and each common query parameter (what ``[catalog] next`` and
    ``next_param`` can say)."""
    found: list[Next] = []
    for member, value in page.items():
        if member == wire.top(names.models_list) or member in TOTALS or isinstance(value, bool):
            continue
        if not isinstance(value, (str, int)) or value in ("", None) or "://" in str(value):
            continue
        for param in dict.fromkeys((member, *PARAMS)):
            found.append(Next(member, {param: str(value)}))
    return found


def _ahead(whole: int | None, number: int, count: int) -> bool:
    """A page number with a total: pages of ``count`` models end before the total."""
    return whole is not None and count > 0 and number * count < whole


class PagingError(ValueError):
    """A page names its next page in a way that cannot be followed safely."""
