"""The ledger file format: a ledger of an earlier version (a `rows` table of sweep rows) loses no start."""

import sqlite3
from pathlib import Path

from mediagen_nb.client.config import Where
from mediagen_nb.client.ledger import Ledger

OLD_ROWS = """
CREATE TABLE rows (
    key TEXT PRIMARY KEY, base_url TEXT, model_id TEXT, input TEXT, generation_id TEXT, status TEXT,
    credits INTEGER, urls TEXT, error TEXT, elapsed_s REAL, started_at REAL, updated_at REAL
)
"""


def test_rows_of_an_older_sweep_ledger_are_brought_forward_once(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(OLD_ROWS)
        db.execute(
            "INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                "k-1",
                "http://LOCALHOST:8765/",
                "gpt-image-2",
                '{"prompt": "a fox"}',
                "0b7e6a3c-2f4e-4b8a-9c1d-5e6f7a8b9c0d",
                "succeeded",
                8,
                '["http://localhost:8765/_sandbox/media/a.png"]',
                None,
                4.5,
                1000.0,
                1004.5,
            ),
        )
    where = Where("http://localhost:8765", "http://localhost:8765", "acct")
    for _ in range(2):  # opening twice imports once: the old table is renamed, not read again
        ledger = Ledger(path)
        entry = ledger.lookup("k-1", where)
        ledger.close()
        assert entry is not None
        assert (entry.kind, entry.via, entry.model_id) == ("generation", "sweep", "gpt-image-2")
        assert (entry.resource_id, entry.status, entry.credits) == (
            "0b7e6a3c-2f4e-4b8a-9c1d-5e6f7a8b9c0d",
            "succeeded",
            8,
        )
        assert entry.urls == ("http://localhost:8765/_sandbox/media/a.png",) and entry.final
    with sqlite3.connect(path) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"starts", "rows_imported"} <= tables and "rows" not in tables
        assert db.execute("SELECT count(*) FROM starts").fetchone() == (1,)
