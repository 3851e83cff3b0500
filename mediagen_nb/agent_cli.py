"""``mediagen balance`` and ``mediagen mcp-config``: the account through its agent (MCP) server.

``balance`` asks the agent server's ``check_usage`` what the account has left and spent this month, beside
this machine's ledger (``client/balance.py``); where the agent server wants an OAuth sign-in instead of
the key, it offers the sign-in on a terminal (a link, then the code pasted back). ``mcp-config`` prints
Jupyter AI's ``.jupyter/mcp_settings.json`` entry for the agent server of the current service, so an
agent in JupyterLab uses the same account; ``--write`` puts it in that file (merged with what is there).
Jupyter AI reads no environment variable in that file, so the entry holds the credential itself: printed,
a real key is shown masked; only ``--write`` puts it in a file, and says where.
"""

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

SETTINGS_FILE = Path(".jupyter") / "mcp_settings.json"  # at the root of the JupyterLab workspace
ENTRY_NAME = "mediagen"


def arguments(p: argparse.ArgumentParser, command: str) -> None:
    """The options of ``command`` (one of :data:`COMMANDS`)."""
    if command == "mcp-config":
        p.add_argument(
            "--write",
            action="store_true",
            help=f"put the entry in ./{SETTINGS_FILE}: in the current folder, so run it in the folder you "
            "start JupyterLab from (with the credential; merged with the servers there)",
        )
        p.add_argument(
            "--file",
            type=Path,
            default=SETTINGS_FILE,
            help=f"the settings file (default ./{SETTINGS_FILE}, under the current folder)",
        )


def balance(args: argparse.Namespace) -> int:
    from mediagen_nb.client import AuthenticationError, current
    from mediagen_nb.client.balance import balance as read
    from mediagen_nb.runtime import mcp_sdk

    mcp_sdk.own_process()

    try:
        found = read(current())
    except AuthenticationError:
        if not sys.stdin.isatty():
            raise
        from mediagen_nb.client.signin import sign_in

        print(sign_in(show=lambda line: print(line, file=sys.stderr)), file=sys.stderr)
        found = read(current())
    u = found.usage
    document = {
        "service": found.service,
        "month": found.month,
        "remainingCredits": u.remaining_credits,
        "monthCredits": u.month_credits,
        "monthRuns": u.month_runs,
        "monthApiRuns": u.month_api_runs,
        "topUpUrl": u.top_up_url,
        "ledger": {"credits": found.ledger_credits, "runs": found.ledger_runs},
        "inFlight": {  # the ledger's runs still running, and work charged as it renders (estimated)
            "running": found.running,
            "renders": found.in_flight_runs,
            "estimatedCredits": found.in_flight_credits,
        },
        "explained": found.explained(),
    }
    print(json.dumps(document, indent=1) if args.json else str(found), file=args.stdout)
    return 0


def _entry() -> tuple[dict[str, Any], str, bool]:
    """The entry for the current service's agent server, its address, and whether it holds a secret.

    Only the user's own sandbox, proven so just now (``kept.prove``: it holds the user's secret), has
    keys that spend nothing real; any other address, even plain http on this machine (a tunnel or a
    proxy to the service), may take a real key, which is then shown masked.
    """
    from mediagen_nb.client import current
    from mediagen_nb.client.agent import jupyter_ai_entry
    from mediagen_nb.client.assemble import agent_server, agent_token

    settings = current().settings
    url = agent_server()
    token = agent_token(url)
    credential = token if token is not None else settings.keys[0]
    embedded = settings.embedded
    own = embedded is not None and url == embedded.base_url + "/mcp"
    if embedded is not None and own:
        settings.check(now=True)  # proven now, at the address it answers (else it is started anew)
        own = url == embedded.base_url + "/mcp"
    owner = embedded.agent_token.reveal() if embedded is not None and own else None
    return jupyter_ai_entry(url, credential.reveal(), ENTRY_NAME, owner), url, not own


def mcp_config(args: argparse.Namespace) -> int:
    from mediagen_nb.client.errors import MASKED, ConfigurationError

    with contextlib.redirect_stdout(sys.stderr):  # the embedded sandbox's notice is not part of the entry
        entry, url, secret = _entry()
    if not args.write:
        shown = entry
        if secret:
            shown = {**entry, "headers": [{"name": "Authorization", "value": f"Bearer {MASKED}"}]}
        document = {"mcp_servers": [shown]}
        note = " (the key is masked: --write puts it in the file)" if secret else ""
        print(json.dumps(document, indent=2), file=args.stdout)
        print(
            f"mediagen mcp-config: the entry for {url}{note}; --write adds it to {args.file.resolve()} "
            "(Jupyter AI reads it in the folder JupyterLab starts from)",
            file=sys.stderr,
        )
        return 0
    path: Path = args.file
    settings: dict[str, Any] = {"mcp_servers": []}
    if path.exists():
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"{path} is not readable JSON ({exc}); fix or move it, then run again"
            ) from None
        if not isinstance(settings, dict) or not isinstance(settings.get("mcp_servers", []), list):
            raise ConfigurationError(f"{path} has no mcp_servers list; fix or move it, then run again")
    servers = [
        s
        for s in settings.get("mcp_servers", [])
        if not (isinstance(s, dict) and s.get("name") == ENTRY_NAME)
    ]
    settings["mcp_servers"] = [*servers, entry]
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it may hold the key
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        json.dump(settings, out, indent=2)
    os.chmod(path, 0o600)
    holds = "your credential: keep it out of git" if secret else "a sandbox's key, which spends nothing real"
    print(
        f"wrote the {ENTRY_NAME!r} agent server ({url}) to {path.resolve()}, readable by you only; it holds "
        f"{holds}. Restart JupyterLab for Jupyter AI to read it.",
        file=args.stdout,
    )
    return 0


COMMANDS = {
    "balance": (balance, "what the account has left and spent this month (the agent server's check_usage)"),
    "mcp-config": (
        mcp_config,
        "Jupyter AI's mcp_settings.json entry for the agent server (--write to add it)",
    ),
}
