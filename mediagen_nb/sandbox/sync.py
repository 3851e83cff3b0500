"""``mediagen sandbox sync URL --out DIR``: read a service's public catalog, keep it, say what changed.

The catalog endpoints need no key, so none is ever sent: the models list, each model (with its
``example``), ``openapi.json`` and ``llms.txt`` are read from ``URL`` (the service's ``{base_url}``,
or a sandbox's), written as a dated snapshot (``catalog/snapshot.py``) and compared with the bundled
catalog: models added and removed, listed prices, pricing types, ``varies_by`` and input schemas.
``mediagen sandbox --catalog DIR`` (``Sandbox(catalog=DIR)``) then serves the snapshot.
"""

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from mediagen_nb.protocol import paging, wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime import tls
from mediagen_nb.sandbox import nesting
from mediagen_nb.sandbox.catalog import BUNDLED, Catalog
from mediagen_nb.sandbox.catalog import snapshot as snapshots
from mediagen_nb.sandbox.catalog.drift import Comparison, Drift

TIMEOUT = 30.0  # seconds for each answer
MAX_ANSWER_BYTES = 32 * 2**20  # the client's own cap on a body


class SyncError(Exception):
    """The catalog could not be read or kept; the message names the address or file and the fix."""


@dataclass(frozen=True)
class Synced:
    """A sync's outcome: the snapshot's folder and day, the models the sandbox serves from it, why some
    are priced approximately or not served, and the drift against the bundled catalog."""

    folder: Path
    date: str
    served: tuple[str, ...]
    flagged: Mapping[str, str]
    drift: Drift


def _answer(
    http: httpx.Client, url: str, *, text: bool = False, params: Mapping[str, str] | None = None
) -> Any:
    """One catalog answer: ``data`` of the envelope (the whole document for openapi.json, the text of
    llms.txt), read within the size cap and the nesting bound."""
    try:
        with http.stream("GET", url, params=params) as response:
            if response.status_code != 200:
                raise SyncError(f"GET {url} answered {response.status_code}: is that the service's address?")
            body, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise SyncError(f"GET {url}: the answer is over {MAX_ANSWER_BYTES // 2**20} MB")
                body.append(chunk)
    except httpx.HTTPError as exc:
        raise SyncError(f"GET {url}: {exc or type(exc).__name__}; is the service at that address?") from None
    raw = b"".join(body)
    del body
    if text:
        return raw.decode("utf-8", "replace")
    try:
        document = nesting.loads(raw)
    except nesting.TooDeep as exc:
        raise SyncError(f"GET {url}: the answer is {exc}, deeper than the sandbox reads") from None
    except ValueError:
        raise SyncError(f"GET {url}: the answer is not JSON") from None
    if url.endswith(".json"):
        return document
    if not isinstance(document, dict) or "data" not in document:
        raise SyncError(f"GET {url}: the answer has no data, unlike the service's")
    return document["data"]


def _listing(
    http: httpx.Client, base: str, names: wire.Names
) -> tuple[dict[str, Any], list[tuple[Mapping[str, Any], str]]]:
    """The models list, every page of it, as one answer; and each record with its id, every id checked to
    name a file and a URL."""
    url = base + path("models")
    listed = _answer(http, url)
    try:
        found = list(snapshots.records(listed, names, f"GET {url}"))
        ids = [wire.get(record, names.model_id) for record in found]
        page = listed if isinstance(listed, dict) else {}
        for _ in range(paging.MAX_PAGES):
            nxt = paging.follow(page, names, url, len(snapshots.records(page, names, url)))
            if nxt is None:
                break
            page = _answer(http, url, params=nxt.params)
            fresh = [
                r
                for r in snapshots.records(page, names, f"GET {url}")
                if wire.get(r, names.model_id) not in ids
            ]
            if not fresh:
                raise SyncError(f"GET {url}: the page {nxt.member} names repeats the models already read")
            found += fresh
            ids += [wire.get(record, names.model_id) for record in fresh]
        for model_id in ids:
            snapshots.detail_file(Path("."), model_id)  # only ids that can name a file and a URL
    except (snapshots.SnapshotError, paging.PagingError) as exc:
        raise SyncError(str(exc)) from None
    whole: dict[str, Any] = {}
    wire.put(whole, names.models_list, found)
    return whole, list(zip(found, ids, strict=True))


def sync(
    base_url: str,
    out: Path,
    names: wire.Names = wire.DEFAULT,
    *,
    against: Catalog = BUNDLED,
    transport: httpx.BaseTransport | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> Synced:
    """Read the catalog at ``base_url`` into a snapshot at ``out`` and compare it with ``against`` (the
    bundled catalog). Each model's answer is written and compared as it arrives, so memory holds one at
    a time whatever the catalog's size; the snapshot already at ``out`` stays whole until the last
    answer is in. No key is sent: the client has none."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SyncError(f"{base_url!r} is not an http(s) address such as https://api.example.com")
    base = base_url.rstrip("/")
    with httpx.Client(
        timeout=TIMEOUT, transport=transport, follow_redirects=True, verify=tls.context()
    ) as http:
        listed, found = _listing(http, base, names)
        try:
            writer = snapshots.Writer(out)
        except (snapshots.SnapshotError, OSError) as exc:
            raise SyncError(str(exc)) from None
        try:
            comparison, served, flagged = Comparison(against), [], {}
            for record, model_id in found:
                detail = _answer(http, base + path("model", id=model_id))
                writer.detail(model_id, detail)
                spec, why = snapshots.model_of(record, detail, names)
                del detail
                if spec is not None:
                    comparison.add(spec)
                    served.append(model_id)
                if why is not None:
                    flagged[model_id] = why
            if not served:
                raise SyncError(f"{base}: no model of its catalog can be served; nothing was kept")
            openapi = _answer(http, base + path("openapi"))
            llms = _answer(http, base + path("llms_txt"), text=True)
            taken = now()
            date = taken.date().isoformat()
            meta = {
                "source": base,
                "taken": taken.isoformat(timespec="seconds"),
                "date": date,
                "models": len(found),
                "wire": wire.tables(names),
            }
            writer.finish(meta, listed, openapi, llms)
        except BaseException as exc:
            writer.abandon()
            if isinstance(exc, (snapshots.SnapshotError, OSError)):
                raise SyncError(str(exc)) from None
            raise
    return Synced(out, date, tuple(served), flagged, comparison.drift(f"{out} ({date})", flagged))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mediagen sandbox sync",
        description="Read a service's public catalog (no key), keep it as a dated snapshot, and print what "
        "changed against the bundled catalog; `mediagen sandbox --catalog DIR` serves the snapshot.",
        epilog="exit status: 0 the snapshot is written; 1 the catalog could not be read or kept; 2 a mistake "
        "in the command",
    )
    p.add_argument("url", help="the service's address, e.g. https://api.example.com (its {base_url})")
    p.add_argument("--out", type=Path, default=None, help="the snapshot folder (default: ./catalog-DATE)")
    p.add_argument(
        "--wire", type=Path, default=None, metavar="NAMES.toml", help="the service's names (a names file)"
    )
    p.add_argument("--json", action="store_true", help="print the drift report as JSON")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        names = wire.load(args.wire)[0] if args.wire is not None else wire.DEFAULT
        out = args.out or Path(f"catalog-{datetime.now(timezone.utc).date().isoformat()}")
        synced = sync(args.url, out, names)
    except (SyncError, wire.WireError) as exc:
        print(f"mediagen sandbox sync: {exc}", file=sys.stderr)
        return 1
    if args.json:
        report = {"snapshot": str(out), "models": len(synced.served), **synced.drift.to_json()}
        print(json.dumps(report, indent=1))
        return 0
    print(f"mediagen sandbox sync: {len(synced.served)} models from {args.url} kept in {out} ({synced.date})")
    print("\n".join(synced.drift.lines()))
    print(f"serve it: mediagen sandbox --catalog {out}")
    return 0
