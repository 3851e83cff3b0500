"""``retry_failed=True`` / ``mediagen sweep --retry-failed``: exactly the failed rows start again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from mediagen_nb.batch.cli import main

if TYPE_CHECKING:
    from conftest import Service

MODEL = "flare-1-swift"


def prompts(n: int) -> pd.DataFrame:
    return pd.DataFrame({"prompt": [f"a kite over the dunes, take {i}" for i in range(n)]})


def sweep(service: Service, df: pd.DataFrame, ledger: Path, **options: object) -> pd.DataFrame:
    return df.mediagen.run(MODEL, client=service.client, ledger=ledger, progress=False, **options)


def test_only_failed_rows_get_new_generations(
    service: Service, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    df, ledger = prompts(8), tmp_path / "l.sqlite"
    service.faults(modelScript=["ok", "fail", "ok", "fail", "ok", "ok", "ok", "ok"])
    first = sweep(service, df, ledger)
    failed = first.index[first["status"] == "failed"].tolist()
    assert len(failed) == 2 and service.net_spent() == 6  # the failed ones were refunded
    again = sweep(service, df, ledger)  # a plain re-run keeps the failures: nothing new, nothing charged
    assert again["status"].tolist() == first["status"].tolist() and service.net_spent() == 6
    capsys.readouterr()
    retried = sweep(service, df, ledger, retry_failed=True)
    assert (retried["status"] == "succeeded").all()
    kept = first["status"] == "succeeded"
    assert retried.loc[kept, "generation_id"].tolist() == first.loc[kept, "generation_id"].tolist()
    assert set(retried.loc[failed, "generation_id"]).isdisjoint(first.loc[failed, "generation_id"])
    assert service.net_spent() == 8
    assert "2 failed rows retried (2 credits)" in capsys.readouterr().out
    once_more = sweep(service, df, ledger, retry_failed=True)  # nothing failed any more: nothing new
    assert once_more["generation_id"].tolist() == retried["generation_id"].tolist()
    assert service.net_spent() == 8


def test_the_cli_retries_failed_rows(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEDIAGEN_BASE_URL", service.base_url)
    monkeypatch.setenv("MEDIAGEN_API_KEY", service.sandbox.demo_key)
    monkeypatch.setenv("MEDIAGEN_TIME_SCALE", str(service.sandbox.config.time_scale))
    sheet = tmp_path / "sheet.csv"
    prompts(3).to_csv(sheet, index=False)
    argv = [str(sheet), f"--model={MODEL}", f"--ledger={tmp_path / 'l.sqlite'}"]
    service.faults(modelScript=["fail", "ok", "ok"])
    assert main(argv) == 1 and "1 failed:" in capsys.readouterr().err
    assert main([*argv, "--retry-failed"]) == 0
    assert "1 failed rows retried (1 credits)" in capsys.readouterr().out
    assert service.net_spent() == 3
