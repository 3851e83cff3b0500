"""The engines' worker (mediagen_nb/batch/engines.py) without an engine: a batch in, its result fields out.

What a Ray actor or a Daft UDF instance does with a batch, driven here on the batch loop against a served
sandbox, so each money rule of the shared budget has its test where it is kept (Ray and Daft themselves
run in tests/engines): a batch's holds follow its rows' answers, and a batch that cannot be priced
starts nothing. A list of models is planned by the accessor's plan: the workers' rows are the
accessor's (the same keys, so either replays the other), and a dataset's estimate is the accessor's.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

import pandas as pd
import pytest

from mediagen_nb.batch import engines, loop
from mediagen_nb.batch.frames import table
from mediagen_nb.batch.plan import Plan
from mediagen_nb.client import ValidationError, settings
from mediagen_nb.client.shared_budget import SharedBudget

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Service

MODEL = "flare-1-swift"  # 1 credit, flat


@pytest.fixture
def worker_env(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's environment: its client reaches the test's sandbox."""
    for name, value in service.sandbox.client_env().items():
        monkeypatch.setenv(name, value)


PAIR = ["flare-1-swift", "flare-1-dev"]  # 1 and 3 credits a run, listed prices


def prompts(n: int, stem: str, **columns: list[Any]) -> pd.DataFrame:
    return pd.DataFrame({"prompt": [f"{stem}, take {i}" for i in range(n)], **columns})


def run_batch(worker: engines.Worker, df: pd.DataFrame) -> tuple[Plan, list[dict[str, Any]]]:
    return loop.result(loop.submit(worker.run(table(df))))


def batch(worker: engines.Worker, n: int, stem: str) -> list[dict[str, Any]]:
    return run_batch(worker, prompts(n, stem))[1]


def test_a_job_travels_without_a_client_or_a_key(worker_env: None) -> None:
    """A Job is what Ray and Daft pickle to every worker: the model, the mapping, the options, no key."""
    job = engines.Job.of(MODEL, max_credits=5, run_name="r", prompt="a fox")
    again = pickle.loads(pickle.dumps(job))
    assert again == job and settings.api_key() not in repr(pickle.dumps(job))
    with pytest.raises(ValidationError, match="max_credits must be a whole number"):
        engines.Job.of(MODEL, max_credits=-1)


def test_holds_follow_the_answers_a_refund_frees_its_hold_a_lost_answer_keeps_it(
    service: Service, worker_env: None
) -> None:
    """Three rows under max_credits=3: one succeeds (1 held), one fails and is refunded (freed), one
    loses every answer to its start (kept: it may have been charged). Then one more row fits; a second
    does not, and is not started."""
    job = engines.Job.of(MODEL, max_credits=3, run_name="holds")
    worker = engines.Worker(job)
    service.faults(script=["ok", "ok"] + ["drop"] * 6, routes=["run"], modelScript=["ok", "fail"])
    rows = batch(worker, 3, "a harbour")
    service.faults()
    assert sorted(r["status"] for r in rows) == ["failed", "succeeded", "uncertain"], rows
    assert SharedBudget(job.budget, 3).held() == 2
    assert [r["status"] for r in batch(worker, 1, "a lighthouse")] == ["succeeded"]
    starts = service.count("run")
    refused = batch(worker, 1, "a teapot")
    assert refused[0]["status"] == "skipped" and "only 0 of max_credits=3 are left" in refused[0]["error"]
    assert service.count("run") == starts and service.net_spent() == 3  # the uncertain start was charged


def test_a_batch_whose_rows_cannot_be_priced_starts_nothing(service: Service, worker_env: None) -> None:
    job = engines.Job.of("gpt-image-2", max_credits=100, run_name="unpriced", quality="low")
    service.faults(rates={"500": 1.0}, routes=["estimate"])
    rows = batch(engines.Worker(job), 2, "a fox")
    assert {r["status"] for r in rows} == {"skipped"} and "could not be priced" in rows[0]["error"]
    assert service.count("run") == 0


def test_a_list_of_models_runs_each_row_on_each_with_the_accessor_s_keys(
    service: Service, worker_env: None, tmp_path: Path
) -> None:
    """Two rows on two models: four generations, a row per (row, model) in the accessor's order, charged
    1 + 3 each; the accessor on the same rows and run name then replays all four at no charge."""
    df = prompts(2, "a lantern")
    found, done = run_batch(engines.Worker(engines.Job.of(PAIR, run_name="compare")), df)
    assert found.tidy and [(r.source, r.model) for r in found.rows] == [(0, m) for m in PAIR] + [
        (1, m) for m in PAIR
    ]
    assert [d["status"] for d in done] == ["succeeded"] * 4 and [d["credits"] for d in done] == [1, 3] * 2
    assert service.net_spent() == 8
    again = df.mediagen.run(
        PAIR, run_name="compare", client=service.client, ledger=tmp_path / "l.sqlite", progress=False
    )
    assert again["generation_id"].tolist() == [d["generation_id"] for d in done]
    assert service.net_spent() == 8


def test_no_model_runs_each_row_on_the_model_its_column_names(service: Service, worker_env: None) -> None:
    found, done = run_batch(
        engines.Worker(engines.Job.of(None, run_name="by column")), prompts(2, "a kite", model=PAIR)
    )
    assert not found.tidy and found.model_column == "model" and [r.model for r in found.rows] == PAIR
    assert [d["credits"] for d in done] == [1, 3] and service.net_spent() == 4


def test_a_dataset_s_estimate_of_several_models_is_the_accessor_s(service: Service, worker_env: None) -> None:
    """Three rows in two batches on two models, one with prices by quality: the same total, subtotals and
    requests as df.mediagen.estimate of the whole frame; nothing started."""
    df = prompts(3, "a fox", quality=["low", "high", "low"])
    models = ["gpt-image-2", "flare-1-dev"]
    summary = engines.estimate([table(df[:2]), table(df[2:])], models, client=service.client)
    with pytest.warns(UserWarning, match="flare-1-dev has no input quality"):
        frame = df.mediagen.estimate(models, client=service.client, show=False)
    accessor = frame.attrs["mediagen_estimate"]
    assert (summary.total, summary.requests) == (accessor.total, accessor.requests) == (3 + 25 + 3 + 3 * 3, 2)
    assert {m: s.credits for m, s in summary.by_model.items()} == {"gpt-image-2": 31, "flare-1-dev": 9}
    assert summary.notes == accessor.notes and service.count("run") == 0
