"""``mediagen_nb.usage()``: this month's runs and credits from the ledger, by model and by path.

The REST API has no balance endpoint; the ledger holds every paid start of every path and process
(magic, form, call, sweep, CLI, replication, topic-to-video) with what the service said it charged.
Like the agent tool ``check_usage``, the figures cover the current calendar month (UTC) and leave out
failed runs. Two kinds of row are listed apart and kept out of the total's credits, which are
charges only: starts whose answer never came (possibly charged, up to their price), and starts whose
charge the service does not report (a replica render on the service, a video still running: their
row is the start's estimate and says so; a sandbox reports a replica's charge once it ends).
"""

from datetime import datetime, timezone

import pandas as pd

from mediagen_nb.client import BaseClient, Ledger
from mediagen_nb.client.assemble import as_ledger
from mediagen_nb.client.connection import current

COLUMNS = ["model", "via", "runs", "credits", "note"]
POSSIBLY = "possibly charged"
ESTIMATED = "estimate, not a charge: the service does not report it"


def month_start(now: datetime | None = None) -> datetime:
    """The first instant of ``now``'s calendar month, in UTC."""
    now = now or datetime.now(timezone.utc)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def usage(
    client: BaseClient | None = None, *, ledger: Ledger | str | None = None, since: datetime | None = None
) -> pd.DataFrame:
    """Runs and credits this month on the current service (or ``client``'s), by model and path.

    ``attrs["month"]`` names the month, ``attrs["service"]`` the service; a ``total`` row ends it.
    """
    client = client or current()
    start = since or month_start()
    service = client.settings.where.service
    rows = as_ledger(ledger).usage(start.timestamp(), service)
    records = [
        {
            "model": row["model"],
            "via": row["via"],
            "runs": row["runs"],
            "credits": row["credits"],
            "note": _note(row),
        }
        for row in rows
    ]
    frame: pd.DataFrame = pd.DataFrame(records, columns=COLUMNS)
    possibly = frame["note"] == POSSIBLY
    estimated = frame["note"] == ESTIMATED
    charged = frame[~possibly & ~estimated]
    apart = [
        f"{word} {int(frame[rows]['credits'].sum())} credits {what}"
        for rows, word, what in ((estimated, "about", "estimated"), (possibly, "up to", "possibly charged"))
        if rows.any()
    ]
    total = {
        "model": "total",
        "via": "",
        "runs": int(charged["runs"].sum()),
        "credits": int(charged["credits"].sum()),
        "note": "charges only; apart: " + ", ".join(apart) if apart else "",
    }
    frame = pd.concat([frame, pd.DataFrame([total], columns=COLUMNS)], ignore_index=True)
    frame.attrs["month"] = start.strftime("%B %Y")
    frame.attrs["service"] = client.settings.service_name
    return frame


def _note(row: dict[str, object]) -> str:
    if row["possibly"]:
        return POSSIBLY
    if not row["credits_known"]:
        return ESTIMATED
    return ""
