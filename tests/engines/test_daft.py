"""Daft (native runner) runs rows through the sweep engine: one struct per row, charged once, priced first.

Daft runs the UDF in this process or in one of its own; either way its client finds the module's
sandbox through the environment, as a user's would.
"""

from typing import Any

import pytest
from _engines import MODEL, SKIP, Service, docs_example

from mediagen_nb.batch.template import template
from mediagen_nb.client import BudgetExceeded, ValidationError

daft = pytest.importorskip("daft", reason=SKIP.format(extra="daft"))
mgdaft = pytest.importorskip("mediagen_nb.daft")
pytestmark = pytest.mark.realtime  # a served sandbox, and Daft's own processes


def frame(rows: int, **columns: list[Any]) -> Any:
    return daft.from_pydict({"subject": [f"a lighthouse, take {i}" for i in range(rows)], **columns})


def results(df: Any) -> list[dict[str, Any]]:
    return [row["result"] for row in df.collect().to_pylist()]


def test_six_rows_charge_six_and_running_them_again_charges_nothing(service: Service) -> None:
    before = service.charged()

    def udf() -> Any:
        return mgdaft.generate(MODEL, prompt=template("{subject} at dusk"), run_name="six")

    done = results(frame(6).with_column("result", udf()))
    assert [r["status"] for r in done] == ["succeeded"] * 6, [r["error"] for r in done]
    assert [r["credits"] for r in done] == [1] * 6 and all(r["output_urls"] for r in done)
    assert service.charged() - before == 6
    again = results(frame(6).with_column("result", udf()))
    assert sorted(r["generation_id"] for r in again) == sorted(r["generation_id"] for r in done)
    assert service.charged() - before == 6


def test_the_estimate_of_two_models_equals_the_sum_of_the_rows_charges(service: Service) -> None:
    """Four rows on a list of two models: each row's value is a list of a struct per model, exploded here
    into a row each, and the estimate is what they were charged."""
    df = frame(4, quality=["low", "high", "low", "medium"])
    models = ["gpt-image-2", "flare-1-dev"]
    inputs = {"prompt": daft.col("subject"), "quality": daft.col("quality")}
    estimate = mgdaft.estimate(df, models, **inputs)
    assert (estimate.total, estimate.requests) == (3 + 25 + 3 + 8 + 4 * 3, 3)  # one request per price class
    before = service.charged()
    udf = mgdaft.generate(models, run_name="priced", batch_size=2, **inputs)  # Daft's own option
    rows = df.with_column("result", udf).explode("result").collect().to_pylist()
    done = [row["result"] for row in rows]
    assert [r["status"] for r in done] == ["succeeded"] * 8, [r["error"] for r in done]
    assert sorted((row["subject"], row["result"]["model"]) for row in rows) == sorted(
        (f"a lighthouse, take {i}", m) for i in range(4) for m in models
    )
    assert service.charged() - before == estimate.total == sum(r["credits"] for r in done)


def test_a_budget_under_the_estimate_stops_the_run_before_any_start(service: Service) -> None:
    df = frame(6)
    starts = service.counts()["generations"]
    with pytest.raises(BudgetExceeded, match="max_credits=5"):
        mgdaft.estimate(df, MODEL, prompt=daft.col("subject"), max_credits=5)
    udf = mgdaft.generate(MODEL, prompt=daft.col("subject"), run_name="over budget", max_credits=5)
    done = results(df.with_column("result", udf))
    assert {r["status"] for r in done} == {"skipped"} and all("max_credits=5" in r["error"] for r in done)
    assert service.counts()["generations"] == starts


def test_the_docs_example_runs_as_written(service: Service, capsys: pytest.CaptureFixture[str]) -> None:
    before = service.charged()
    exec(compile(docs_example("Daft"), "docs/engines.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "3 credits for 3 rows" in printed and printed.count("succeeded") == 3, printed
    assert service.charged() - before == 3


def test_a_start_whose_answer_was_lost_comes_back_uncertain_and_a_rerun_resumes_it_free(
    service: Service,
) -> None:
    """Every try of one start loses its answer (the sandbox runs it, then drops the connection): the row
    says it may have been charged, and running the frame again resumes it with its key, charged once."""
    df, before = frame(2), service.charged()

    def udf() -> Any:
        return mgdaft.generate(MODEL, prompt=daft.col("subject"), run_name="lost answer")

    service.control("sandbox_faults", {"script": ["ok"] + ["drop"] * 6, "routes": ["run"]})
    try:
        done = results(df.with_column("result", udf()))
    finally:
        service.control("sandbox_faults", {})
    assert sorted(r["status"] for r in done) == ["succeeded", "uncertain"], done
    lost = next(r for r in done if r["status"] == "uncertain")
    assert "may have started it" in lost["error"] and "at no cost" in lost["error"]
    again = results(df.with_column("result", udf()))
    assert [r["status"] for r in again] == ["succeeded"] * 2
    assert service.charged() - before == 2


def test_the_columns_read_include_each_model_s_own_and_a_model_is_needed() -> None:
    """A Daft function is handed only the columns it names: a model's own mapping names its columns too.
    With no model (the accessor's "each row on its model column"), the column would not be read: refused."""
    read, constants = mgdaft._arguments({"gpt-image-2": {"Prompt": "prompt"}, "Style": "style"}, {"n": 1})
    assert list(read) == ["Prompt", "Style"] and constants == {"n": 1}
    with pytest.raises(ValidationError, match="give a model id or a list"):
        mgdaft.generate(None, prompt=daft.col("subject"))
