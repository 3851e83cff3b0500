"""``python -m mediagen_nb.sandbox``: serve the sandbox on loopback and print how to reach it; ``status``,
``stop`` and ``reset`` manage the user's kept sandbox (``kept.py``); ``sync`` keeps a snapshot of a
service's catalog (``sync.py``) that ``--catalog`` serves."""

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from mediagen_nb.protocol.environment import ENV_KEY, ENV_SANDBOX_HOSTS, ENV_TIME_SCALE, ENV_WIRE


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mediagen sandbox",
        description="Serve a local emulator of the media-generation service (no key, no credits spent). "
        "`mediagen sandbox status|stop|reset [--data-dir DIR] [--json]` manage the kept sandbox that "
        "clients with no key use; `mediagen sandbox sync URL --out DIR` keeps a service's catalog.",
        epilog="; ".join(f"{name}: {text}" for name, text in KEPT_COMMANDS.items()),
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--allow-host",
        action="append",
        default=None,
        metavar="NAME",
        help="a name it answers to in Host besides 127.0.0.1, localhost and [::1] at its port: a proxy's "
        "(NAME or NAME:PORT; * for any, only where no browser can reach its port, as in a Binder "
        f"container); default ${ENV_SANDBOX_HOSTS}",
    )
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="simulated seconds per real second (default 1: real time, as the service runs, an image in "
        "about half a minute; 60 runs it sixty times faster)",
    )
    p.add_argument(
        "--clock",
        choices=("scaled", "manual"),
        default="scaled",
        help="scaled: real time x --time-scale; manual: time stands still until POST /_sandbox/clock "
        '{"advance": seconds} moves it (tests on virtual time)',
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="replay ids, run times, media and random faults from this seed (default: a new random seed)",
    )
    p.add_argument(
        "--allow-private-webhooks",
        action="store_true",
        help="accept and deliver webhooks to loopback receivers",
    )
    p.add_argument(
        "--deliver-public-webhooks", action="store_true", help="really POST webhooks to public hosts"
    )
    p.add_argument(
        "--agent-tokens-only",
        action="store_true",
        help="the agent server (/mcp) refuses API keys and takes only OAuth access tokens (sign-in)",
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep its state (accounts, generations, ledger, clock ...), uploads and media in this folder, "
        "and go on from the state saved there (default: in memory)",
    )
    p.add_argument(
        "--wire",
        type=Path,
        default=None,
        metavar="NAMES.toml",
        help="spell the names the spec does not show as this names file says (the format MEDIAGEN_WIRE "
        "reads; default: ours); its [serve] table shapes the answers too (pages of the models list, "
        "credits as strings, kinds and statuses in capitals, other numbers beside an estimate's price)",
    )
    p.add_argument(
        "--catalog",
        type=Path,
        default=None,
        metavar="DIR",
        help="serve this snapshot of a service's catalog (`mediagen sandbox sync`; default: the bundled one)",
    )
    return p


KEPT_COMMANDS = {
    "status": "where the kept sandbox runs, its clock, folder, counts and balance",
    "stop": "end the kept sandbox (its state is kept; the next command that needs it starts it again)",
    "reset": "start over with a fresh demo account (uploads and rendered media stay)",
}


def kept_parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"mediagen sandbox {command}", description=KEPT_COMMANDS[command])
    p.add_argument("--data-dir", type=Path, default=None, help="the kept sandbox of this folder")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def kept_main(command: str, argv: list[str]) -> int:
    """``mediagen sandbox status|stop|reset``: manage the user's kept sandbox."""
    from mediagen_nb.sandbox import kept

    args = kept_parser(command).parse_args(argv)
    where = (args.data_dir or kept.folder()).resolve()
    try:
        if command == "status":
            shown = kept.status(where)
            text = _status_text(shown)
        elif command == "stop":
            ended = kept.stop(where)
            shown = {"stopped": ended is not None, "dataDir": str(where)}
            text = (
                f"stopped the kept sandbox at {ended.base_url} (pid {ended.pid}); its state stays in {where}"
                if ended is not None
                else f"the kept sandbox is not running (its state is in {where})"
            )
        else:
            running = kept.reset(where)
            shown = {"reset": True, "running": running is not None, "dataDir": str(where)}
            text = "reset: a fresh demo account, no generations or runs; uploads and rendered media kept"
    except kept.KeptSandboxError as exc:
        print(f"mediagen sandbox {command}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(shown, indent=1) if args.json else f"mediagen sandbox: {text}")
    return 0


def _status_text(shown: dict[str, Any]) -> str:
    where = shown["dataDir"]
    if not shown["running"]:
        return f"not running; its state is kept in {where}, and the next command that needs it starts it"
    counts = shown["counts"]
    made = ", ".join(
        f"{counts[name]} {label}"
        for name, label in (
            ("generations", "generations"),
            ("analyses", "analyses"),
            ("replicationRuns", "replication runs"),
            ("jobs", "jobs"),
            ("uploads", "uploads"),
        )
    )
    return "\n".join(
        [
            f"running at {shown['baseUrl']} (pid {shown['pid']}, time x{shown['timeScale']:g})",
            f"  data folder: {where} (state, uploads, media, sandbox.log)",
            f"  balance: {shown['balance']:,} credits ({shown['plan']} plan, demo account)",
            f"  {made}",
            "  `mediagen sandbox stop` ends it; `mediagen sandbox reset` starts over",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in KEPT_COMMANDS:
        return kept_main(argv[0], argv[1:])
    if argv and argv[0] == "sync":
        from mediagen_nb.sandbox.sync import main as sync

        return sync(argv[1:])
    args = parser().parse_args(argv)
    if args.time_scale <= 0:
        parser().error("--time-scale must be positive")
    from mediagen_nb.protocol.wire import WireError
    from mediagen_nb.runtime import mcp_sdk
    from mediagen_nb.sandbox import Sandbox
    from mediagen_nb.sandbox.catalog.snapshot import SnapshotError
    from mediagen_nb.sandbox.guard import Hosts
    from mediagen_nb.sandbox.state import StateError

    mcp_sdk.own_process()

    try:
        sandbox = Sandbox(
            time_scale=args.time_scale,
            clock=args.clock,
            seed=args.seed,
            allow_private_webhooks=args.allow_private_webhooks,
            deliver_public_webhooks=args.deliver_public_webhooks,
            data_dir=args.data_dir,
            wire=args.wire,
            catalog=args.catalog,
            agent_keys=not args.agent_tokens_only,
            hosts=tuple(args.allow_host or Hosts.parse(os.environ.get(ENV_SANDBOX_HOSTS))),
        )
    except (StateError, WireError, SnapshotError) as exc:
        print(f"mediagen sandbox: {exc}", file=sys.stderr)
        return 1
    sandbox.start(port=args.port, host=args.host)
    seed = sandbox.world.seed
    clock = "a manual clock" if args.clock == "manual" else f"time scale {args.time_scale:g}"
    if args.clock != "manual" and args.time_scale == 1:
        clock += ": real time, as the service runs (--time-scale 60 runs it sixty times faster)"
    print(
        f"mediagen sandbox running at {sandbox.base_url} ({clock}, seed {seed}; replay it with --seed {seed})"
    )
    if args.data_dir is not None:
        print(f"  its state is kept in {args.data_dir.resolve()} (started again, it goes on from there)")
    served = sandbox.world.catalog
    if args.catalog is not None:
        print(f"  serving the catalog of {served.date} in {served.source} ({len(served.models)} models)")
        for model_id, why in served.flagged.items():
            print(f"  ! {model_id}: {why}")
    notes = {
        ENV_KEY: "the sandbox's demo key, 3,000 credits",
        ENV_TIME_SCALE: "so clients pace themselves to this clock",
        ENV_WIRE: "the names this sandbox spells as the file says",
    }
    for name, value in sandbox.client_env().items():
        print(f"  export {name}={value}" + (f"   # {notes[name]}" if name in notes else ""))
    from mediagen_nb.sandbox.agent import available

    if available():
        print(f"  agent (MCP) server at {sandbox.base_url}/mcp (`mediagen mcp-config` for Jupyter AI)")
    else:
        print("  no agent (MCP) server at /mcp: pip install 'mediagen-nb[agent]' to enable it")
    print("Press Ctrl-C to stop.", flush=True)
    try:
        sandbox.wait()
    except KeyboardInterrupt:
        print("stopping", file=sys.stderr)
    finally:
        sandbox.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
