"""``python -m mediagen_nb.sandbox``: serve the sandbox on loopback and print how to reach it."""

import argparse
import sys
from pathlib import Path

from mediagen_nb.protocol.environment import ENV_KEY, ENV_TIME_SCALE


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mediagen sandbox",
        description="Serve a local emulator of the media-generation service (no key, no credits spent).",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument(
        "--time-scale", type=float, default=1.0, help="simulated seconds per real second (e.g. 60)"
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
    p.add_argument("--data-dir", type=Path, default=None, help="cache rendered media files in this folder")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.time_scale <= 0:
        parser().error("--time-scale must be positive")
    from mediagen_nb.sandbox import Sandbox

    sandbox = Sandbox(
        time_scale=args.time_scale,
        seed=args.seed,
        allow_private_webhooks=args.allow_private_webhooks,
        deliver_public_webhooks=args.deliver_public_webhooks,
        data_dir=args.data_dir,
    )
    sandbox.start(port=args.port, host=args.host)
    seed = sandbox.world.seed
    print(
        f"mediagen sandbox running at {sandbox.base_url} "
        f"(time scale {args.time_scale:g}, seed {seed}; replay it with --seed {seed})"
    )
    notes = {
        ENV_KEY: "the sandbox's demo key, 3,000 credits",
        ENV_TIME_SCALE: "so clients pace themselves to this clock",
    }
    for name, value in sandbox.client_env().items():
        print(f"  export {name}={value}" + (f"   # {notes[name]}" if name in notes else ""))
    print("Press Ctrl-C to stop.", flush=True)
    try:
        sandbox.wait()
    except KeyboardInterrupt:
        print("stopping", file=sys.stderr)
    finally:
        sandbox.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
