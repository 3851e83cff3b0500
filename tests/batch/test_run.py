"""Running frames against a served sandbox: faults, budgets, money running out, chains, submit and cancel.

Every charge is checked in the sandbox's own ledger (``GET /_sandbox/ledger``), never in the client's.
"""

from __future__ import annotations

import copy
import sqlite3
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pytest
from _wait import wait_until

from mediagen_nb import template
from mediagen_nb.batch import estimates, runner, scheduler
from mediagen_nb.batch.plan import Row
from mediagen_nb.client import AsyncClient, Model, ValidationError

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Service, ServiceFactory

RESULT_COLUMNS = [
    "generation_id",
    "status",
    "output_url",
    "output_urls",
    "credits",
    "error",
    "elapsed_s",
    "input",
]


def run(service: Service, df: pd.DataFrame, model: str, ledger: Path, **options: Any) -> pd.DataFrame:
    """``df.mediagen.run`` with the service's client, a temp ledger and no progress bar."""
    return df.mediagen.run(model, client=service.client, ledger=ledger, progress=False, **options)


def prompts(n: int, stem: str = "a lighthouse at dusk") -> pd.DataFrame:
    return pd.DataFrame({"prompt": [f"{stem}, take {i}" for i in range(n)]})


@pytest.mark.spellings
def test_run_adds_result_columns_and_charges_each_row_once(service: Service, tmp_path: Path) -> None:
    df = prompts(6)
    out = run(service, df, "gpt-image-2", tmp_path / "l.sqlite", quality="low")
    assert list(out.columns) == ["prompt", *RESULT_COLUMNS]
    assert (out["status"] == "succeeded").all()
    assert out["output_url"].str.endswith(".png").all()
    assert out["credits"].tolist() == [3] * 6
    assert [urls[0] for urls in out["output_urls"]] == out["output_url"].tolist()
    assert (out["elapsed_s"] > 0).all()
    ids = out["generation_id"].tolist()
    assert len(set(ids)) == 6 and set(ids) == service.generation_ids()
    assert service.charges() == dict.fromkeys(ids, 1)
    assert service.net_spent() == 18
    assert service.count("run") == 6  # one start per row, no faults: no retries
    assert all(service.generation_input(g)["quality"] == "low" for g in ids)


def test_300_rows_under_http_faults_and_model_failures_lose_nothing_and_charge_once(
    service: Service, tmp_path: Path
) -> None:
    service.set_balance(100_000)
    service.faults(rates={"429": 0.03, "500": 0.03, "503": 0.03, "drop": 0.02, "fail": 0.1}, seed=5)
    df = prompts(300, "a paper boat")
    out = run(service, df, "flare-1-swift", tmp_path / "l.sqlite")

    injected = service.control("sandbox_faults")["injected"]
    assert all(injected.get(kind, 0) > 0 for kind in ("429", "500", "503", "drop", "fail")), injected
    assert len(out) == 300 and set(out["status"]) <= {"succeeded", "failed"}, out["status"].value_counts()
    failed = out[out["status"] == "failed"]
    assert len(failed) == injected["fail"]
    assert failed["error"].str.startswith("Model failed").all() and (failed["credits"] == 0).all()
    succeeded = out[out["status"] == "succeeded"]
    assert succeeded["output_url"].notna().all() and (succeeded["credits"] == 1).all()

    ids = out["generation_id"].tolist()
    assert len(set(ids)) == 300 and set(ids) == service.generation_ids()  # no row shares a generation
    charges, refunds = service.charges(), service.refunds()
    assert all(charges[g] == 1 for g in ids)  # exactly one charge per started generation
    assert {g for g in ids if refunds[g]} == set(failed["generation_id"])  # a refund for every failed one
    assert all(refunds[g] == 1 for g in failed["generation_id"])
    # the other charges are starts refused with a 503 after the charge: refunded in the same request
    at_capacity = set(charges) - set(ids)
    assert all(charges[r] == 1 and refunds[r] == 1 for r in at_capacity)
    assert service.net_spent() == int(out["credits"].sum()) == len(succeeded)


def test_bad_rows_are_invalid_never_sent_never_charged_and_the_frame_is_unchanged(
    service: Service, tmp_path: Path
) -> None:
    df = pd.DataFrame(
        {
            "prompt": ["a red kite", None, np.nan, "a blue kite", "a green kite"],
            "quality": ["low", "low", "low", "ultra", "low"],
            "seed": pd.array([1, 2, None, 4, 5], dtype="Int64"),
        }
    )
    before = copy.deepcopy(df)
    out = run(service, df, "gpt-image-2", tmp_path / "l.sqlite", columns=["prompt", "quality"])
    assert out["status"].tolist() == ["succeeded", "invalid", "invalid", "invalid", "succeeded"]
    assert out["error"].tolist()[1:4] == [
        "Missing required field: prompt",
        "Missing required field: prompt",
        "quality must be one of: low, medium, high",
    ]
    invalid = out[out["status"] == "invalid"]
    assert invalid["generation_id"].isna().all() and (invalid["credits"] == 0).all()
    assert [b["input"]["prompt"] for b in service.bodies("run")] in (
        ["a red kite", "a green kite"],
        ["a green kite", "a red kite"],
    )
    assert sum(service.charges().values()) == 2
    assert (
        df.equals(before) and (df.dtypes == before.dtypes).all() and list(df.columns) == list(before.columns)
    )


def test_template_rows_run_with_the_filled_text_and_empty_ones_are_never_sent(
    service: Service, tmp_path: Path
) -> None:
    df = pd.DataFrame({"style": ["noir", "pastel", "retro"], "subject": ["a cat", None, "a van"]})
    out = run(
        service, df, "flare-1-swift", tmp_path / "l.sqlite", prompt=template("A {style} photo of {subject}")
    )
    assert out["status"].tolist() == ["succeeded", "invalid", "succeeded"]
    assert out["error"][1] == "prompt: column 'subject' is empty in this row"
    prompts_sent = {service.generation_input(g)["prompt"] for g in out["generation_id"].dropna()}
    assert prompts_sent == {"A noir photo of a cat", "A retro photo of a van"}
    assert sum(service.charges().values()) == 2 and service.count("run") == 2


def test_identical_rows_are_separate_generations_and_a_rerun_reuses_them(
    service: Service, tmp_path: Path
) -> None:
    df = pd.DataFrame({"prompt": ["same prompt", "same prompt", "other prompt"]})
    first = run(service, df, "flare-1-swift", tmp_path / "l.sqlite")
    assert first["generation_id"].nunique() == 3
    again = run(service, df, "flare-1-swift", tmp_path / "l.sqlite")
    assert again["generation_id"].tolist() == first["generation_id"].tolist()
    assert again["status"].tolist() == ["succeeded"] * 3
    assert service.count("run") == 3  # the re-run read everything from the ledger
    assert sum(service.charges().values()) == 3


def test_fresh_or_a_new_run_name_makes_new_generations_on_purpose(service: Service, tmp_path: Path) -> None:
    df = prompts(3)
    ledger = tmp_path / "l.sqlite"
    base = run(service, df, "flare-1-swift", ledger)
    same = run(service, df, "flare-1-swift", ledger)
    fresh = run(service, df, "flare-1-swift", ledger, fresh=True)
    named = run(service, df, "flare-1-swift", ledger, run_name="variant-b")
    named_again = run(service, df, "flare-1-swift", ledger, run_name="variant-b")

    def ids(frame: pd.DataFrame) -> set[str]:
        return set(frame["generation_id"])

    assert ids(same) == ids(base)
    assert ids(named_again) == ids(named)
    assert len(ids(base) | ids(fresh) | ids(named)) == 9  # three sets of three, all distinct
    assert all(frame["status"].eq("succeeded").all() for frame in (base, fresh, named))
    charges = service.charges()
    assert sum(charges.values()) == 9 and set(charges.values()) == {1}


def test_prefix_keeps_chained_runs_apart(service: Service, tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    faces = pd.DataFrame({"prompt": ["a smiling presenter", "a serious presenter"]})
    images = run(service, faces, "gpt-image-2", ledger, prefix="img_", quality="low", aspect_ratio="2:3")
    assert (images["img_status"] == "succeeded").all()
    talks = run(
        service,
        images,
        "infinitetalk-fast",
        ledger,
        columns={"img_output_url": "image"},
        prefix="talk_",
        audio=service.sample("short-voice.wav"),
    )
    assert list(talks.columns) == [
        "prompt",
        *(f"img_{c}" for c in RESULT_COLUMNS),
        *(f"talk_{c}" for c in RESULT_COLUMNS),
    ]
    assert talks[images.columns].equals(images)  # the first run's columns are kept as they were
    assert (talks["talk_status"] == "succeeded").all()
    assert talks["talk_output_url"].str.endswith(".mp4").all()
    for image_url, talk_id in zip(talks["img_output_url"], talks["talk_generation_id"], strict=True):
        assert service.generation_input(talk_id)["image"] == image_url
    assert set(talks["talk_generation_id"]).isdisjoint(talks["img_generation_id"])


def test_max_credits_refuses_before_starting_when_the_estimate_exceeds_it(
    service: Service, tmp_path: Path
) -> None:
    df = prompts(5)
    with pytest.raises(ValidationError) as caught:
        run(service, df, "gpt-image-2", tmp_path / "l.sqlite", quality="high", max_credits=100)
    assert caught.value.field == "max_credits" and caught.value.sent is False
    assert "125 credits" in caught.value.message and "max_credits=100" in caught.value.message
    assert service.count("run") == 0 and service.ledger() == []
    out = run(service, df, "gpt-image-2", tmp_path / "l.sqlite", quality="high", max_credits=125)
    assert (out["status"] == "succeeded").all() and service.net_spent() == 125


def test_max_credits_refuses_when_rows_cannot_be_priced(service: Service, tmp_path: Path) -> None:
    service.faults(rates={"500": 1.0}, routes=["estimate"])
    with pytest.raises(ValidationError) as caught:
        run(service, prompts(4), "gpt-image-2", tmp_path / "l.sqlite", quality="high", max_credits=30)
    assert caught.value.field == "max_credits" and "could not be priced" in caught.value.message
    assert service.count("run") == 0 and service.ledger() == []


def test_max_credits_stops_starting_rows_when_spending_would_exceed_it(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estimate passes the budget but the charges turn out higher: the sweep stops starting.

    The estimate is shaded to 1 credit a row (real estimates are sent, then under-reported) and
    starts go one at a time, so exactly four 3-credit rows fit under max_credits=12.
    """

    async def low_prices(
        client: AsyncClient, model: Model, rows: list[Row]
    ) -> tuple[dict[int, estimates.Price], int]:
        prices, requests = await estimates.price_rows(client, model, rows)
        return {pos: estimates.Price(1, price.billing) for pos, price in prices.items()}, requests

    monkeypatch.setattr(runner, "price_rows", low_prices)
    monkeypatch.setattr(scheduler, "STARTS_IN_FLIGHT", 1)
    out = run(service, prompts(12), "gpt-image-2", tmp_path / "l.sqlite", quality="low", max_credits=12)
    assert out["status"].tolist() == ["succeeded"] * 4 + ["skipped"] * 8
    assert (out["error"][4:] == "not started: max_credits=12 would be exceeded").all()
    assert out["generation_id"][4:].isna().all()
    assert service.count("run") == 4 and service.net_spent() == 12


def test_running_out_of_credits_stops_starting_and_loses_nothing(service: Service, tmp_path: Path) -> None:
    service.set_balance(10)
    df = prompts(30)
    ledger = tmp_path / "l.sqlite"
    out = run(service, df, "flare-1-swift", ledger)
    counts = out["status"].value_counts().to_dict()
    assert set(counts) <= {"succeeded", "error", "skipped"}, counts
    assert counts["succeeded"] == 10  # every started row is read to the end, none left processing
    assert counts.get("error", 0) >= 1 and counts.get("skipped", 0) >= 1
    errors = out[out["status"] == "error"]["error"]
    assert errors.str.startswith("400 Not enough credits").all()
    skipped = out[out["status"] == "skipped"]["error"]
    assert skipped.str.startswith("not started: 400 Not enough credits").all()
    started = out[out["status"] == "succeeded"]
    assert set(started["generation_id"]) == service.generation_ids()
    assert service.charges() == dict.fromkeys(started["generation_id"], 1)
    assert service.count("run") <= 10 + scheduler.STARTS_IN_FLIGHT  # stopped soon after the first refusal

    service.set_balance(1000)  # topped up: the same call finishes the rest at no extra cost
    again = run(service, df, "flare-1-swift", ledger)
    assert (again["status"] == "succeeded").all()
    assert again.loc[started.index, "generation_id"].tolist() == started["generation_id"].tolist()
    charges = service.charges()
    assert sum(charges.values()) == 30 and set(charges.values()) == {1}


def test_submit_returns_at_once_counts_progress_and_cancel_keeps_what_finished(
    make_service: ServiceFactory, tmp_path: Path
) -> None:
    service = make_service(time_scale=120.0)  # 60 requests a simulated minute: about 80 a real second
    df = prompts(120)
    ledger = tmp_path / "l.sqlite"
    handle = df.mediagen.submit("flare-1-swift", client=service.client, ledger=ledger, progress=False)
    assert not handle.done()  # it returned with the rows still to run
    assert handle.progress["total"] == 120
    wait_until(lambda: handle.progress["done"] >= 15, 30, "15 rows done")
    seen = handle.progress
    # every started row shows its charge (1 credit each), finished or in flight
    assert 15 <= seen["done"] < 120 and seen["spent"] == seen["done"] + seen["running"]
    handle.cancel()
    out = handle.result(timeout=30)
    assert handle.done() and handle.result() is out
    counts = out["status"].value_counts().to_dict()
    assert set(counts) <= {"succeeded", "processing", "skipped"}, counts
    assert counts["succeeded"] >= seen["done"] and counts["skipped"] > 0
    assert handle.progress["done"] == counts["succeeded"]
    skipped = out[out["status"] == "skipped"]
    assert skipped["generation_id"].isna().all() and skipped["error"].str.startswith("not started").all()
    kept = out[out["status"] != "skipped"]
    assert kept["generation_id"].notna().all()
    assert out[out["status"] == "succeeded"]["output_url"].notna().all()
    assert set(kept["generation_id"]) <= service.generation_ids()

    # the same call resumes: nothing lost, nothing charged twice, started rows keep their generation
    again = run(service, df, "flare-1-swift", ledger)
    assert (again["status"] == "succeeded").all()
    assert again.loc[kept.index, "generation_id"].tolist() == kept["generation_id"].tolist()
    charges = service.charges()
    assert sum(charges.values()) == 120 and set(charges.values()) == {1}


def test_ledger_is_sqlite_in_wal_mode_with_every_started_row(service: Service, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger" / "l.sqlite"
    out = run(service, prompts(4), "flare-1-swift", ledger)
    with sqlite3.connect(ledger) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = db.execute("SELECT resource_id, status, credits FROM starts").fetchall()
    assert sorted(rows) == sorted((g, "succeeded", 1) for g in out["generation_id"])
