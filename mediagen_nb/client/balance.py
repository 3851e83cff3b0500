"""``mediagen_nb.balance()``: what the account has left, from the service, beside what this machine's ledger
says it started this month, and why the two differ.

The REST API has no balance endpoint; the agent server's ``check_usage`` is the only place the service
tells what is left and what the month cost (``agent.py`` calls it). The ledger knows what this machine
started; the account also counts what other machines and ledgers, agents and the web app started, so
the difference is shown and explained rather than hidden. Both leave failed runs out. The ledger's side
is this account's starts on this service however its address was spelt (the kept sandbox as the
embedded one or by its URL); work in flight that the service charges as it runs (a replica render) is
said apart, and every figure shown is a count, never a negative one.

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
from mediagen_nb.client import settings
from mediagen_nb.client.agent import Usage, check_usage
from mediagen_nb.client.assemble import as_ledger, current, session_budget
from mediagen_nb.client.clients import BaseClient
from mediagen_nb.client.spending import BudgetStatus
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime import tls

MONTH = re.compile(r"\d{4}-\d{2}")


def _runs(count: int) -> str:
    return f"{count} run" if count in (1, -1) else f"{count} runs"


def _amount(credits: int, runs: int) -> str:
    """``12 credits and 2 runs``, leaving out a part that is 0 (both are counts: never negative)."""
    parts = [f"{credits:,} credit" + "s" * (credits != 1)] * (credits > 0) + [_runs(runs)] * (runs > 0)
    return " and ".join(parts)


def _were(amount: str) -> str:
    """The verb of an amount of :func:`_amount`: ``1 run was``, ``3 credits were``."""
    return "was" if amount in ("1 run", "1 credit") else "were"


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
    in_flight_runs: int = 0  # work the service charges as it runs, not ended (replica renders, videos)
    in_flight_credits: int = 0  # ...their starts' estimates: the account has charged part of them so far
    running: int = 0  # of the ledger's runs, those not ended yet (charged; a failure is refunded)
    other_keys: tuple[int, int] = (0, 0)  # runs and credits this ledger holds on this service as another
    # account (other keys: an earlier key of this account, or another account's), not compared

    @property
    def remaining(self) -> int:
        """Credits left on the account, as the service says."""
        return self.usage.remaining_credits

    @property
    def other_runs(self) -> int:
        """Runs the account counts beyond the ledger's (negative: the ledger holds more)."""
        return self.usage.month_runs - self.ledger_runs

    @property
    def other_credits(self) -> int:
        """Credits the account counts beyond the ledger's (negative: the ledger holds more)."""
        return self.usage.month_credits - self.ledger_credits

    def explained(self) -> list[str]:
        """Why the account's month and this machine's ledger differ, in a line or two; every figure in
        them is a count (what is more on one side is said as such, never as a negative)."""
        u = self.usage
        without_key = u.month_runs - u.month_api_runs
        lines = []
        if self.in_flight_runs:
            lines.append(
                f"in flight here: {_runs(self.in_flight_runs)} the service charges as it renders (replica "
                f"renders or videos), estimated at {self.in_flight_credits:,} credits in all"
            )
        extra_credits, extra_runs = max(0, self.other_credits), max(0, self.other_runs)
        more = _amount(extra_credits, extra_runs)
        fewer = _amount(max(0, -self.other_credits), max(0, -self.other_runs))
        elsewhere = (
            "other machines or kernels with another ledger, agents, or the web app "
            f"({without_key} of the month's runs were started without an API key: the web app or agents "
            "signed in with OAuth)"
        )
        if self.account_month is not None:
            lines.append(
                f"the sandbox's clock runs faster than this machine's: its month is {self.account_month}, "
                f"the ledger's {self.ledger_month}, so the two are not compared"
            )
        else:
            if more and self.in_flight_runs:
                share = _amount(
                    min(extra_credits, self.in_flight_credits), min(extra_runs, self.in_flight_runs)
                )
                beyond = _amount(
                    max(0, extra_credits - self.in_flight_credits), max(0, extra_runs - self.in_flight_runs)
                )
                rest = (
                    f"and at least {beyond} {_were(beyond)} started"
                    if beyond
                    else "and the rest, if any, was started"
                )
                lines.append(
                    f"{more} on the account are not among this machine's charged runs: up to {share} of "
                    f"them are what the work in flight here has charged so far, {rest} elsewhere: {elsewhere}"
                )
            elif more:
                lines.append(
                    f"{more} on the account {_were(more)} not started from this machine's ledger: {elsewhere}"
                )
            if fewer:
                lines.append(
                    f"this ledger holds {fewer} the account does not count: runs that failed or were "
                    "refunded after this machine last read them, or starts on another account or before "
                    "a sandbox reset"
                )
            if not more and not fewer:
                lines.append(
                    "the account and this machine's ledger agree: this month's runs were all started here"
                )
        if any(self.other_keys):
            runs, credits = self.other_keys
            lines.append(
                f"not counted above: {_amount(credits, runs) or '0 credits'} this ledger holds on this "
                "service started with other keys (an earlier key of this account, or another account's; "
                "MEDIAGEN_ACCOUNT names keys of one account)"
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
                f"{_runs(self.ledger_runs)}" + (f" ({self.running} still running)" if self.running else ""),
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
    settings = chosen.settings
    figures = as_ledger(ledger).account_usage(since.timestamp(), settings.where.account, settings.places())
    sandbox = chosen._engine.core.sandbox_url()
    account_month = _sandbox_month(sandbox, chosen.settings.auth(None)) if sandbox is not None else None
    return Balance(
        usage=usage,
        service=settings.service_name,
        month=now.strftime("%B %Y"),
        ledger_runs=figures["charged"][0],
        ledger_credits=figures["charged"][1],
        possibly_charged=figures["possibly"][1],
        estimated=figures["estimated"][1],
        ledger_month=now.strftime("%Y-%m"),
        account_month=account_month if account_month != now.strftime("%Y-%m") else None,
        in_flight_runs=figures["in_flight"][0],
        in_flight_credits=figures["in_flight"][1],
        running=figures["running"][0],
        other_keys=figures["other_keys"],
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


class _Keep:
    """The default of :func:`budget`: read the budget, change nothing."""


KEEP = _Keep()
BALANCE = "balance"
OFF = "off"


def budget(limit: "int | str | _Keep | None" = KEEP) -> BudgetStatus:
    """Set the session budget (``budget(500)``), remove it (``budget("off")`` or ``budget(None)``), or
    read it (``budget()``): the words of ``%mediagen budget``.

    ``budget("balance")`` sets it to what the account has left now (the agent server's ``check_usage``):
    this process may then spend no more than that, whatever else spends from the account meanwhile.
    """
    current_budget = session_budget()
    if isinstance(limit, str) and limit.strip().lower() == OFF:
        limit = None
    if limit == BALANCE:
        left = balance().remaining
        current_budget.limit = current_budget.status().spent + left
    elif not isinstance(limit, _Keep):
        current_budget.limit = None if limit is None else settings.credits(limit, "budget")
    return current_budget.status()
