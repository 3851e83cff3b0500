"""``mediagen doctor``: first contact with a service, with calls that cost nothing.

It checks the configured service (``MEDIAGEN_BASE_URL`` and ``MEDIAGEN_API_KEY``, else the embedded
sandbox) the way the client will use it: the models list (every page) against ``llms.txt`` and
``openapi.json``, one estimate per pricing type (each option of a per-option model), the topic-to-video
options and the start body's names (the agent server's ``make_video`` schema), run through the client
itself (``shapes.py``), and the catalog's single-model answer and the free refusals on the wire
(``checks.py``). It prints a table, each check passed or failed with what differed and the fix, the
names-file lines of every name the service spells otherwise, and exits 0 when every check passed, 1
otherwise (2 for a mistake in the command). ``--paid N --max-credits C`` also spends credits
(``paid.py``); ``--record DIR`` saves every exchange, keys scrubbed and no media bytes, to become
replay tests; ``--json`` prints one document for scripts.
"""

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from mediagen_nb.client import Client
from mediagen_nb.client.errors import ConfigurationError, MediagenError
from mediagen_nb.doctor import checks, shapes
from mediagen_nb.doctor.checks import Found, Result
from mediagen_nb.doctor.paid import PaidRefused, paid, plan, recording
from mediagen_nb.doctor.probe import Probe
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_WIRE
from mediagen_nb.runtime import tls

OK, FAILED, REFUSED = 0, 1, 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mediagen doctor",
        description="Check the configured service (MEDIAGEN_BASE_URL, MEDIAGEN_API_KEY; else the embedded "
        "sandbox) with calls that cost nothing, against what the client expects.",
        epilog="exit status: 0 every check passed; 1 a check failed; 2 a mistake in the command (none spent)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document, for scripts")
    p.add_argument("--record", type=Path, metavar="DIR", help="save every exchange here (keys scrubbed)")
    p.add_argument("--wire", metavar="NAMES.toml", help=f"the service's names (default: {ENV_WIRE})")
    p.add_argument(
        "--paid", type=int, metavar="N", help="also run the cheapest model N times (spends credits)"
    )
    p.add_argument(
        "--max-credits", type=int, metavar="C", help="the most --paid may spend (required with it)"
    )
    return p


def examine(
    probe: Probe, settings: Any, runs: int | None, max_credits: int | None
) -> tuple[list[Result], Found]:
    """Every check, in order; the paid one last, and only when asked."""
    found = Found([], {})
    check = ["catalog: models"]
    with (
        httpx.Client(event_hooks=recording(probe, check), verify=tls.context()) as http,
        Client(settings=settings, http_client=http) as client,
    ):
        results = shapes.catalog(client, found)
        if found.models:
            results += checks.model_detail(probe, settings.spelling, found)
            check[0] = "documents"
            results += shapes.document_checks(client, found)
            check[0] = "estimates"
            results += shapes.estimates(client, found)
            results += checks.refusals(probe, found)
            check[0] = "topic-to-video"
            results += shapes.video_options(client, found)
            results += shapes.job_body(client, found)
    if runs is not None and max_credits is not None:
        model, _ = plan(found.models, runs, max_credits)
        with tempfile.TemporaryDirectory(prefix="mediagen-doctor-") as scratch:
            results += paid(settings, probe, model, runs, max_credits, found, Path(scratch))
    return results, found


def names_file(settings: Any, found: Found) -> str | None:
    """The lines of a names file that would settle every name the service spells otherwise (and pin how
    its models list pages)."""
    if not found.learned and not found.pinned:
        return None
    names = replace(settings.spelling.names, **found.pinned)
    return wire.dump(names, frozenset(found.learned) | frozenset(found.pinned))


def table(service: str, names: str, results: list[Result], suggested: str | None) -> str:
    width = max((len(r.check) for r in results), default=10)
    lines = [f"mediagen doctor: {service} (names: {names})"]
    for result in results:
        lines.append(f"  {'✓' if result.ok else '✗'} {result.check:<{width}}  {result.detail}")
        if not result.ok and result.fix:
            lines.append(f"    {'':<{width}}  fix: {result.fix}")
    passed = sum(r.ok for r in results)
    lines.append(f"{len(results)} checks: {passed} passed, {len(results) - passed} failed")
    if suggested:
        lines += [f"Put these lines in names.toml and set {ENV_WIRE}=names.toml:", suggested.rstrip()]
    elif any(not r.ok and r.fix.startswith(shapes.NAMES_FIX) for r in results):
        lines.append("(no names-file line can be printed: see each fix above)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from mediagen_nb.client.assemble import resolve

    args = parser().parse_args(argv)
    if (args.paid is None) != (args.max_credits is None):
        print("mediagen doctor: --paid N needs --max-credits C (and the other way round)", file=sys.stderr)
        return REFUSED
    try:
        settings = resolve(None, None, wire=args.wire)
    except ConfigurationError as exc:
        print(f"mediagen doctor: {exc}", file=sys.stderr)
        return REFUSED
    probe = Probe(settings.base_url, settings.keys[0], record=args.record, owner=settings.owner_token)
    try:
        results, found = examine(probe, settings, args.paid, args.max_credits)
    except PaidRefused as exc:
        print(f"mediagen doctor: {exc}", file=sys.stderr)
        return REFUSED
    except MediagenError as exc:
        print(f"mediagen doctor: {type(exc).__name__}: {exc}", file=sys.stderr)
        return FAILED
    finally:
        probe.close()
    suggested = names_file(settings, found)
    names = settings.spelling.source or "ours"
    ok = all(r.ok for r in results)
    if args.json:
        document = {
            "ok": ok,
            "service": settings.base_url,
            "names": settings.spelling.source,
            "checks": [  # a passed check needs no fix: null, as the table shows none
                {"check": r.check, "ok": r.ok, "detail": r.detail, "fix": None if r.ok else r.fix or None}
                for r in results
            ],
            "namesFile": suggested,
        }
        print(json.dumps(document, indent=1, ensure_ascii=False))
    else:
        print(table(settings.service_name, names, results, suggested))
    return OK if ok else FAILED
