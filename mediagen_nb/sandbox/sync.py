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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from mediagen_nb.protocol import paging, tls, wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox.catalog import BUNDLED, Catalog
from mediagen_nb.sandbox.catalog import snapshot as snapshots
from mediagen_nb.sandbox.catalog.drift import Drift, drift

TIMEOUT = 30.0  # seconds for each answer
MAX_ANSWER_BYTES = 32 * 2**20  # the client's own cap on a body


class SyncError(Exception):
    """The catalog could not be read or kept; the message names the address or file and the fix."""


def _answer(
    http: httpx.Client, url: str, *, text: bool = False, params: Mapping[str, str] | None = None
) -> Any:
    """One catalog answer: ``data`` of the envelope (the whole document for openapi.json, the text of
    llms.txt), read within the size cap."""
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
    if text:
        return raw.decode("utf-8", "replace")
    try:
        document = json.loads(raw)
    except ValueError:
        raise SyncError(f"GET {url}: the answer is not JSON") from None
    if url.endswith(".json"):
        return document
    if not isinstance(document, dict) or "data" not in document:
        raise SyncError(f"GET {url}: the answer has no data, unlike the service's")
    return document["data"]


def fetch(base_url: str, names: wire.Names, http: httpx.Client) -> dict[str, Any]:
    """Every catalog answer of the service at ``base_url``: ``list`` (every page of it, as one list),
    ``details`` by id, ``openapi``, ``llms`` (no key is sent: the client has none)."""
    base = base_url.rstrip("/")
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
    return {
        "list": whole,
        "details": {model_id: _answer(http, base + path("model", id=model_id)) for model_id in ids},
        "openapi": _answer(http, base + path("openapi")),
        "llms": _answer(http, base + path("llms_txt"), text=True),
    }


def sync(
    base_url: str,
    out: Path,
    names: wire.Names = wire.DEFAULT,
    *,
    against: Catalog = BUNDLED,
    transport: httpx.BaseTransport | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> tuple[Catalog, Drift]:
    """Read the catalog at ``base_url`` into a snapshot at ``out``; the catalog as the sandbox would
    serve it, and how it differs from ``against`` (the bundled catalog)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SyncError(f"{base_url!r} is not an http(s) address such as https://api.example.com")
    with httpx.Client(
        timeout=TIMEOUT, transport=transport, follow_redirects=True, verify=tls.context()
    ) as http:
        answers = fetch(base_url, names, http)
    taken = now()
    meta = {
        "source": base_url.rstrip("/"),
        "taken": taken.isoformat(timespec="seconds"),
        "date": taken.date().isoformat(),
        "models": len(answers["details"]),
        "wire": wire.tables(names),
    }
    try:
        snapshots.write(out, meta, answers["list"], answers["details"], answers["openapi"], answers["llms"])
        served = snapshots.read(out)
    except (snapshots.SnapshotError, OSError) as exc:
        raise SyncError(str(exc)) from None
    return served, drift(against, served)


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
        served, report = sync(args.url, out, names)
    except (SyncError, wire.WireError) as exc:
        print(f"mediagen sandbox sync: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"snapshot": str(out), "models": len(served.models), **report.to_json()}, indent=1))
        return 0
    print(f"mediagen sandbox sync: {len(served.models)} models from {args.url} kept in {out} ({served.date})")
    print("\n".join(report.lines()))
    print(f"serve it: mediagen sandbox --catalog {out}")
    return 0
