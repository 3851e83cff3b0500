"""The ledger's one table, and the import of older sweep ledgers into it.

Kept apart from :mod:`mediagen_nb.client.ledger` so that the file format (what a ledger file holds,
and how a file of an earlier version is brought forward without losing a paid start) is in one place.
"""

import sqlite3

from mediagen_nb.client.config import normalize_url

# The kinds of paid start.
GENERATION, ANALYSIS, REPLICATION, JOB = "generation", "analysis", "replication", "job"

SCHEMA = """
CREATE TABLE IF NOT EXISTS starts (
    key TEXT NOT NULL,
    instance TEXT NOT NULL,
    service TEXT NOT NULL,
    account TEXT NOT NULL,
    kind TEXT NOT NULL,
    via TEXT NOT NULL,
    model_id TEXT,
    ask TEXT,
    variation INTEGER NOT NULL DEFAULT 1,
    input TEXT,
    resource_id TEXT,
    status TEXT NOT NULL,
    credits INTEGER NOT NULL DEFAULT 0,
    credits_known INTEGER NOT NULL DEFAULT 1,
    urls TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    elapsed_s REAL,
    resource TEXT,
    started_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    owner TEXT,
    PRIMARY KEY (key, instance)
);
CREATE INDEX IF NOT EXISTS starts_by_key ON starts (key, service);
CREATE INDEX IF NOT EXISTS starts_by_ask ON starts (ask, service);
CREATE INDEX IF NOT EXISTS starts_by_resource ON starts (resource_id, instance);
CREATE INDEX IF NOT EXISTS starts_by_month ON starts (service, started_at);
"""
COLUMNS = (
    "key, instance, service, account, kind, via, model_id, ask, variation, input, resource_id, status, "
    "credits, credits_known, urls, error, elapsed_s, resource, started_at, updated_at, owner"
)
ADDED = {"owner": "TEXT"}  # columns a file of an earlier version lacks: added on open, NULL in its rows


def add_columns(db: sqlite3.Connection) -> None:
    """Give a ledger of an earlier version the columns it lacks (each row of it keeps what it had)."""
    have = {row[1] for row in db.execute("PRAGMA table_info(starts)")}
    for name, kind in ADDED.items():
        if name not in have:
            try:
                db.execute(f"ALTER TABLE starts ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc):  # another process added it a moment ago
                    raise


def import_sweep_rows(db: sqlite3.Connection) -> None:
    """Bring the rows of an older sweep ledger (table ``rows``) into ``starts`` once, losing no paid work."""
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "rows" not in tables:
        return
    old = db.execute(
        "SELECT key, base_url, model_id, input, generation_id, status, credits, urls, error, elapsed_s, "
        "started_at, updated_at FROM rows"
    ).fetchall()
    for key, base_url, model_id, *outcome in old:  # outcome: input ... updated_at, in the VALUES' order
        instance = normalize_url(base_url)
        db.execute(
            f"INSERT OR IGNORE INTO starts ({COLUMNS}) VALUES "
            "(?, ?, ?, '', ?, 'sweep', ?, NULL, 1, ?, ?, ?, ?, 1, ?, ?, ?, NULL, ?, ?, NULL)",
            (key, instance, instance, GENERATION, model_id, *outcome),
        )
    db.execute("ALTER TABLE rows RENAME TO rows_imported")
