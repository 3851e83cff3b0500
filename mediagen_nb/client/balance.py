"""``mediagen_nb.balance()``: what the account has left, from the service, beside what this machine's ledger
says it started this month, and why the two differ.

The REST API has no balance endpoint; the agent server's ``check_usage`` is the only place the service
tells what is left and what the month cost (``agent.py`` calls it). The ledger knows what this machine
started; the account also counts what other machines and ledgers, agents and the web app started, so
the difference is shown and explained rather than hidden. Both leave failed runs out.

The ledger's month is this machine's calendar month; a sandbox counts its month on its own simulated
clock (faster than real time), so on a sandbox whose month is another the figures are not compared.
"""

import html
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import urlsplit

import httpx

from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.agent import Usage, check_usage
from mediagen_nb.client.clients import BaseClient
from mediagen_nb.client.connection import current
from mediagen_nb.protocol import tls
from mediagen_nb.protocol.paths import path

MONTH = re.compile(r"\d{4}-\d{2}")


def _runs(count: int) -> str:
    return f"{count} run" if count in (1, -1) else f"{count} runs"


@dataclass(frozen=True, repr=False)
class Balance:
    """The account's figures (``usage``) and this machine's ledger for the same calendar month."""

    usage: Usage
    service: str
    month: str  # "November 2026"
    ledger_runs: int
    ledger_credits: int
    possibly_charged: int  # credits of starts never answered (apart: they may or may not be charged)
    estimated: int  # credits the service does not report per start (replica renders): estimates
    ledger_month: str = ""  # "2026-11": the month the ledger was read for, on this machine's clock
    account_month: str | None = None  # a sandbox's simulated month, where it is not ``ledger_month``

    @property
    def remaining(self) -> int:
        """Credits left on the account, as the service says."""
        return self.usage.remaining_credits

    @property
    def other_runs(self) -> int:
        return self.usage.month_runs - self.ledger_runs

    @property
    def other_credits(self) -> int:
        return self.usage.month_credits - self.ledger_credits

    def explained(self) -> list[str]:
        """Why the account's month and this machine's ledger differ, in a line or two."""
        u = self.usage
        without_key = u.month_runs - u.month_api_runs
        lines = []
        if self.account_month is not None:
            lines.append(
                f"the sandbox's clock runs faster than this machine's: its month is {self.account_month}, "
                f"the ledger's {self.ledger_month}, so the two are not compared"
            )
        elif self.other_runs > 0 or self.other_credits > 0:
            lines.append(
                f"{self.other_credits:,} credits and {_runs(self.other_runs)} on the account were not "
                "started from this machine's ledger: other machines or kernels with another ledger, "
                f"agents, or the web app ({without_key} of the month's runs were started without an API "
                "key: the web app or agents signed in with OAuth)"
            )
        elif self.other_runs < 0 or self.other_credits < 0:
            lines.append(
                f"this ledger holds {-self.other_credits:,} credits and {_runs(-self.other_runs)} the "
                "account does not count: runs that failed or were refunded after this machine last read "
                "them, or starts on another account or before a sandbox reset"
            )
        else:
            lines.append(
                "the account and this machine's ledger agree: this month's runs were all started here"
            )
        if self.possibly_charged:
            lines.append(f"not counted above: {self.possibly_charged:,} credits of starts never answered")
        if self.estimated:
            lines.append(
                f"the ledger's figure includes {self.estimated:,} credits of estimates (replica renders)"
            )
        return lines

    def __str__(self) -> str:
        u = self.usage
        return "\n".join(
            [
                f"{u.remaining_credits:,} credits left on {self.service} (top up: {u.top_up_url})",
                f"{self.account_month or self.month} on the account: {u.month_credits:,} credits, "
                f"{_runs(u.month_runs)} "
                f"({u.month_api_runs} started with an API key); failed runs left out",
                f"{self.month} in this machine's ledger: {self.ledger_credits:,} credits, "
                f"{_runs(self.ledger_runs)}",
                *self.explained(),
            ]
        )

    __repr__ = __str__

    def _repr_html_(self) -> str:
        u, e = self.usage, html.escape
        rows = [
            (
                "credits left",
                f"{u.remaining_credits:,}",
                "the account's balance, shared by every key and the web app",
            ),
            (
                "this month, account",
                f"{u.month_credits:,} credits, {u.month_runs} runs",
                "failed runs left out",
            ),
            (
                "this month, this machine",
                f"{self.ledger_credits:,} credits, {self.ledger_runs} runs",
                "the ledger",
            ),
        ]
        cells = "".join(f"<tr><th>{e(a)}</th><td>{e(b)}</td><td>{e(c)}</td></tr>" for a, b, c in rows)
        notes = "".join(f"<li>{e(line)}</li>" for line in self.explained())
        link = e(u.top_up_url)  # a link only to a web address: the server's text may be anything
        if urlsplit(u.top_up_url).scheme in ("https", "http"):
            link = f'<a href="{link}" target="_blank" rel="noopener">top up</a>'
        return f"<b>{e(self.service)}, {e(self.month)}</b> ({link})<table>{cells}</table><ul>{notes}</ul>"


def balance(client: BaseClient | None = None, *, ledger: "ledgers.Ledger | str | None" = None) -> Balance:
    """What the account of the current service (or ``client``'s) has left and spent this month, from its
    agent server's ``check_usage``, beside this machine's ledger for the month."""
    chosen = client or current()
    usage = check_usage(chosen._engine.core)
    now = datetime.now(timezone.utc)
    since = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    where = chosen.settings.where
    instance = where.instance if chosen.settings.embedded is not None else None
    rows = ledgers.as_ledger(ledger).usage(since.timestamp(), where.service, instance)
    charged = [r for r in rows if not r["possibly"]]
    sandbox = chosen._engine.core.sandbox_url()
    account_month = _sandbox_month(sandbox, chosen.settings.auth(None)) if sandbox is not None else None
    return Balance(
        usage=usage,
        service=chosen.settings.service_name,
        month=now.strftime("%B %Y"),
        ledger_runs=sum(r["runs"] for r in charged),
        ledger_credits=sum(r["credits"] for r in charged),
        possibly_charged=sum(r["credits"] for r in rows if r["possibly"]),
        estimated=sum(r["credits"] for r in charged if not r["credits_known"]),
        ledger_month=now.strftime("%Y-%m"),
        account_month=account_month if account_month != now.strftime("%Y-%m") else None,
    )


def _sandbox_month(base_url: str, auth: httpx.Auth | None) -> str | None:
    """The calendar month of a sandbox's simulated clock (its ``/_sandbox/info``); None if it says none."""
    try:
        now = httpx.get(
            base_url + path("sandbox_info"),
            timeout=10,
            follow_redirects=False,
            verify=tls.context(),
            auth=auth,
        ).json()
        month = now["data"]["now"][:7]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None
    return month if isinstance(month, str) and MONTH.fullmatch(month) else None
