"""The ``mediagen`` command. Subcommands import what they need, so ``mediagen --help`` is instant."""

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    top = argparse.ArgumentParser(prog="mediagen", description="mediagen_nb command line")
    top.add_argument(
        "command",
        choices=["sandbox", "demo", "sweep"],
        help="sandbox: serve the emulator; demo: a sweep and the three-step chain; sweep: run a spreadsheet",
    )
    args = top.parse_args(argv[:1])
    if args.command == "sandbox":
        from mediagen_nb.sandbox.__main__ import main as command
    elif args.command == "sweep":
        from mediagen_nb.batch.cli import main as command
    else:
        from mediagen_nb.demo import main as command
    return command(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
