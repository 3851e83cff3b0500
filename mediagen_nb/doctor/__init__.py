"""``mediagen doctor``: first contact with a service, with calls that cost nothing.

It checks the configured service (``MEDIAGEN_BASE_URL`` and ``MEDIAGEN_API_KEY``, else the embedded
sandbox) the way the client will use it: the catalog endpoints and their shapes, ``openapi.json`` and
``llms.txt``, one estimate per pricing type, the topic-to-video options and the free refusals
(``checks.py``), comparing status codes, message starts and shapes with what the client expects. It
prints a table, each check passed or failed with what differed and the setting that fixes it, and
exits 0 when every check passed, 1 otherwise (2 for a mistake in the command). ``--paid N
--max-credits C`` also spends credits (``paid.py``); ``--record DIR`` saves every exchange, keys
scrubbed and no media bytes, to become replay tests; ``--json`` prints one document for scripts.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from mediagen_nb.client.errors import ConfigurationError, MediagenError
from mediagen_nb.doctor import checks
from mediagen_nb.doctor.checks import Found, Result
from mediagen_nb.doctor.paid import PaidRefused, paid, plan
from mediagen_nb.doctor.probe import Probe
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_WIRE

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
    spelling = settings.spelling
    found = Found([], {})
    results = checks.catalog(probe, spelling, found)
    if found.models:
        results += checks.model_detail(probe, spelling, found)
        results += checks.documents(probe, found)
        results += checks.estimates(probe, spelling, found)
        results += checks.refusals(probe, found)
        results += checks.video_options(probe, spelling)
    if runs is not None and max_credits is not None:
        model, _ = plan(found.models, runs, max_credits)
        with tempfile.TemporaryDirectory(prefix="mediagen-doctor-") as scratch:
            results += paid(settings, probe, model, runs, Path(scratch))
    return results, found


def names_file(settings: Any, found: Found) -> str | None:
    """The lines of a names file that would settle every name the service spells otherwise."""
    if not found.learned:
        return None
    return wire.dump(settings.spelling.names, frozenset(found.learned))


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
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from mediagen_nb.client.config import resolve

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
