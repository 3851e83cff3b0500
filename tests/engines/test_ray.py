"""Ray Data runs rows through the sweep engine: charged once, never twice, under one limiter and one budget.

Local Ray (two CPUs, no dashboard), started once for the module; its actors are real processes that
reach the module's sandbox through their environment. Each test gives its rows a run name of its own,
so its keys are new, and reads what the sandbox charged meanwhile on the sandbox's own ledger.
"""

import asyncio
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _engines import MODEL, SKIP, Service, docs_example

from mediagen_nb.client import BudgetExceeded

ray = pytest.importorskip("ray", reason=SKIP.format(extra="ray"))
mgray = pytest.importorskip("mediagen_nb.ray")
# Ray's processes on real time; the first test also waits for Ray to start (each pipeline for its actors),
# which on a machine loaded several times over took minutes: a bound for that, not a speed claim.
pytestmark = [pytest.mark.realtime, pytest.mark.usefixtures("ray_cluster"), pytest.mark.timeout(900)]


def dataset(rows: int, blocks: int = 2, **columns: list[Any]) -> Any:
    """``rows`` prompts (and any other columns) as a Ray dataset of ``blocks`` blocks: a batch each."""
    frame = pd.DataFrame({"prompt": [f"a lighthouse at dusk, take {i}" for i in range(rows)], **columns})
    size = -(-rows // blocks)
    return ray.data.from_pandas([frame[start : start + size] for start in range(0, rows, size)])


def run(ds: Any, udf: type, actors: int = 2) -> pd.DataFrame:
    """``ds`` through ``udf`` on a pool of ``actors``, each asking for half a CPU (they wait on the network;
    at a whole CPU each, two actors would leave Ray's own tasks none of the two)."""
    out: pd.DataFrame = ds.map_batches(
        udf, compute=ray.data.ActorPoolStrategy(size=actors), num_cpus=0.5, batch_format="pandas"
    ).to_pandas()
    return out


def test_six_rows_charge_six_and_running_them_again_charges_nothing(service: Service) -> None:
    before = service.charged()
    out = run(dataset(6), mgray.Generate(MODEL, run_name="six"), actors=1)
    assert sorted(out["status"]) == ["succeeded"] * 6, out["error"].tolist()
    assert list(out["credits"]) == [1] * 6 and out["output_url"].str.startswith("http").all()
    assert service.charged() - before == 6
    again = run(dataset(6), mgray.Generate(MODEL, run_name="six"), actors=1)
    assert sorted(again["generation_id"]) == sorted(out["generation_id"])  # the same generations, replayed
    assert service.charged() - before == 6


def test_an_actor_killed_after_its_starts_is_retried_by_ray_and_charges_nothing_twice(
    service: Service, tmp_path: Path
) -> None:
    """The actor dies (SIGKILL-like ``os._exit``) once the sandbox has charged its batch's starts; Ray
    restarts it and runs the batch again, whose rows replay their Idempotency-Keys."""
    died, again = tmp_path / "died", tmp_path / "again"
    url = service.base_url + "/_sandbox/ledger"
    base = mgray.Generate(MODEL, run_name="killed")
    # The reads are slow at first, so the batch is still in flight when its starts are all charged.
    service.control("sandbox_faults", {"script": ["slow"] * 6, "routes": ["generation"], "slowSeconds": 5})
    before = service.charged()

    class DiesOnce(base):  # type: ignore[misc, valid-type]
        async def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
            if died.exists():
                again.touch()  # the batch again, on the actor Ray restarted
            else:
                died.touch()
                asyncio.get_running_loop().create_task(self._die_once_charged(len(batch)))
            return await super().__call__(batch)

        async def _die_once_charged(self, rows: int) -> None:
            import httpx

            async with httpx.AsyncClient() as http:
                while True:
                    entries = (await http.get(url)).json()["data"]["entries"]
                    if sum(e["credits"] for e in entries if e["kind"] == "charge") - before >= rows:
                        os._exit(1)
                    await asyncio.sleep(0.05)

    try:
        out = run(dataset(6, blocks=1), DiesOnce, actors=1)
    finally:
        service.control("sandbox_faults", {})
    assert died.exists() and again.exists()
    assert sorted(out["status"]) == ["succeeded"] * 6, out["error"].tolist()
    assert service.charged() - before == 6


def test_two_actors_on_one_key_meet_no_429(service: Service) -> None:
    before = service.counts()
    out = run(dataset(60, blocks=4), mgray.Generate(MODEL, run_name="two actors"))
    assert (out["status"] == "succeeded").all(), out["error"].dropna().unique()
    after = service.counts()
    assert after["requests"] - before["requests"] >= 120  # both limits were in play: 2 windows of the key
    assert (after["requestsOverLimit"], after["startsOverLimit"]) == (
        before["requestsOverLimit"],
        before["startsOverLimit"],
    )


def test_the_estimate_of_two_models_equals_the_sum_of_the_rows_charges(service: Service) -> None:
    """Four rows on a list of two models (one priced by quality, one listed): every row runs on each, a
    row of the result per (row, model) with its ``model``, and the estimate is what they were charged."""
    ds = dataset(4, quality=["low", "high", "low", "medium"])
    models = ["gpt-image-2", "flare-1-dev"]
    requests = service.counts()["requests"]
    estimate = mgray.estimate(ds, models)
    assert (estimate.total, estimate.requests) == (3 + 25 + 3 + 8 + 4 * 3, 3)  # one request per price class
    assert {m: sub.credits for m, sub in estimate.by_model.items()} == {"gpt-image-2": 39, "flare-1-dev": 12}
    assert service.counts()["requests"] - requests == 3
    before = service.charged()
    out = run(ds, mgray.Generate(models, run_name="priced"), actors=1)
    assert (out["status"] == "succeeded").all(), out["error"].tolist()
    prompts = sorted(set(out["prompt"]))
    assert sorted(zip(out["prompt"], out["model"], strict=True)) == [
        (p, m) for p in prompts for m in sorted(models)
    ]
    assert len(prompts) == 4
    assert service.charged() - before == estimate.total == out["credits"].sum()


def test_a_budget_under_the_estimate_stops_the_run_before_any_start(service: Service) -> None:
    ds = dataset(6, blocks=1)
    starts = service.counts()["generations"]
    with pytest.raises(BudgetExceeded, match="max_credits=5"):
        mgray.estimate(ds, MODEL, max_credits=5)
    out = run(ds, mgray.Generate(MODEL, run_name="over budget", max_credits=5), actors=1)
    assert (out["status"] == "skipped").all() and out["error"].str.contains("max_credits=5").all()
    assert service.counts()["generations"] == starts


def test_max_credits_holds_across_the_actors_not_per_actor(service: Service) -> None:
    """Two batches of three rows on two actors with max_credits=4: each alone would fit, together not;
    exactly one batch runs."""
    before = service.charged()
    out = run(dataset(6, blocks=2), mgray.Generate(MODEL, run_name="shared budget", max_credits=4))
    assert sorted(out["status"]) == ["skipped"] * 3 + ["succeeded"] * 3, out["error"].tolist()
    assert service.charged() - before == 3


def test_the_docs_example_runs_as_written(service: Service, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/engines.md's Ray example, on the module's Ray (its ``ray.init`` finds it running)."""
    before = service.charged()
    exec(compile(docs_example("Ray Data"), "docs/engines.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "3 credits for 3 rows" in printed and printed.count("succeeded") == 3, printed
    assert service.charged() - before == 3
