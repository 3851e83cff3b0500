"""Comparing models in one sweep (issue 37): every row on each model, on the sandbox's own ledger.

A list of models runs every row on each, with one plan, one estimate, one budget and one schedule; the
result has a row per row and model (``row``, ``model``). Each model takes its inputs from its own
schema; a frame's own model column is used, or refused with a model given too, before anything is
sent. Models here are cheap and quick at x600 (flare-1-swift: 1 credit, flare-1-dev: 3).
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING, Any

import pandas as pd
import pytest

import mediagen_nb as mg
from mediagen_nb.batch import MappingError, scheduler
from mediagen_nb.batch.plan import NotSent
from mediagen_nb.batch.scheduler import StartOrder
from mediagen_nb.client import BudgetExceeded, ValidationError

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Service

PAIR = ["flare-1-swift", "flare-1-dev"]  # 1 and 3 credits a run, listed prices (no estimate request)


def prompts(n: int, stem: str = "a lantern") -> pd.DataFrame:
    return pd.DataFrame({"prompt": [f"{stem}, take {i}" for i in range(n)]})


def run(service: Service, df: pd.DataFrame, models: Any, tmp_path: Path, **options: Any) -> pd.DataFrame:
    ledger = tmp_path / "ledger.sqlite"
    return df.mediagen.run(models, client=service.client, ledger=ledger, progress=False, **options)


def estimate(service: Service, df: pd.DataFrame, models: Any, **options: Any) -> pd.DataFrame:
    return df.mediagen.estimate(models, client=service.client, show=False, **options)


def started_models(service: Service) -> list[str]:
    return [body["modelId"] for body in service.bodies("run")]


def test_three_rows_on_two_models_cost_six_starts_and_a_rerun_costs_nothing(
    service: Service, tmp_path: Path
) -> None:
    df = prompts(3)
    out = run(service, df, PAIR, tmp_path)
    assert len(out) == 6 and out["row"].tolist() == [0, 0, 1, 1, 2, 2]
    assert out["model"].tolist() == PAIR * 3
    assert out.index.tolist() == [0, 0, 1, 1, 2, 2]  # each result keeps its frame row's label
    assert (out["status"] == "succeeded").all()
    assert len(service.generation_ids()) == 6 and sorted(started_models(service)) == sorted(PAIR * 3)
    assert service.net_spent() == 3 * (1 + 3) == int(out["credits"].sum())
    for (_, row), sent in zip(out.iterrows(), out["input"], strict=True):  # the frame row's own prompt
        assert sent == {"prompt": df.loc[row["row"], "prompt"]}

    again = run(service, df, PAIR, tmp_path)
    assert again["generation_id"].tolist() == out["generation_id"].tolist()
    assert service.net_spent() == 12 and service.count("run") == 6  # nothing started again
    # the keys are those of a sweep of one model: its rows are found, at no charge
    alone = run(service, df, "flare-1-dev", tmp_path)
    assert alone["generation_id"].tolist() == out[out["model"] == "flare-1-dev"]["generation_id"].tolist()
    assert service.net_spent() == 12


def test_an_input_only_one_model_has_goes_to_it_alone_and_is_said_once_per_model(
    service: Service, tmp_path: Path
) -> None:
    """``quality`` is gpt-image-2's, ``negative_prompt`` flare-1-dev's: each is sent only to its model,
    and each model's missing input is one line; a value outside one model's enum is invalid for it alone."""
    df = prompts(2).assign(negative_prompt=["blur", "noise"], aspect_ratio=["16:9", "1:1"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run(service, df, ["gpt-image-2", "flare-1-dev"], tmp_path, quality="low")
    notes = sorted(str(w.message) for w in caught if issubclass(w.category, NotSent))
    assert notes == [
        "flare-1-dev has no input quality: not sent to it",
        "gpt-image-2 has no input negative_prompt: not sent to it",
    ]
    gpt = out[out["model"] == "gpt-image-2"]
    assert gpt["status"].tolist() == ["invalid", "succeeded"]  # 16:9 is not one of gpt-image-2's ratios
    assert gpt["error"].tolist()[0] == "aspect_ratio must be one of: 1:1, 3:2, 2:3"
    assert (out[out["model"] == "flare-1-dev"]["status"] == "succeeded").all()  # 16:9 is one of its own
    for body in service.bodies("run"):
        sent = set(body["input"])
        if body["modelId"] == "gpt-image-2":
            assert sent == {"prompt", "quality", "aspect_ratio"}
        else:
            assert sent == {"prompt", "negative_prompt", "aspect_ratio"}
    assert service.count("run") == 3 and service.net_spent() == 3 + 3 * 2


def test_a_required_input_one_model_lacks_makes_only_its_rows_invalid(
    service: Service, tmp_path: Path
) -> None:
    """flare-1-kontext-pro needs an image no column fills: its rows are invalid, said once, never sent."""
    with pytest.warns(NotSent, match="flare-1-kontext-pro needs input image, which no column or constant"):
        out = run(service, prompts(3), ["flare-1-swift", "flare-1-kontext-pro"], tmp_path)
    kontext = out[out["model"] == "flare-1-kontext-pro"]
    assert (kontext["status"] == "invalid").all() and (
        kontext["error"] == "Missing required field: image"
    ).all()
    assert kontext["generation_id"].isna().all() and (kontext["credits"] == 0).all()
    assert set(started_models(service)) == {"flare-1-swift"} and service.net_spent() == 3


def test_columns_map_per_model_where_names_differ(service: Service) -> None:
    """``columns=`` maps for all, and a model id's own mapping for that model: here the seed of one."""
    df = pd.DataFrame({"Prompt": ["a fox"], "Seed": [7], "Steps": [30]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotSent)  # flare-1-swift has num_inference_steps: no note
        out = estimate(
            service,
            df,
            ["flare-1-swift", "flare-1-dev"],
            columns={"Prompt": "prompt", "flare-1-dev": {"Seed": "seed", "Steps": "num_inference_steps"}},
        )
    assert out["input"].tolist() == [
        {"prompt": "a fox", "seed": 7},  # matched by name (Seed is seed); Steps is mapped for flare-1-dev
        {"prompt": "a fox", "seed": 7, "num_inference_steps": 30},
    ]
    with pytest.raises(MappingError, match="'flare-1-pro' maps columns for a model this call does not run"):
        estimate(service, df, ["flare-1-swift", "flare-1-dev"], columns={"flare-1-pro": {"Seed": "seed"}})
    with pytest.raises(
        MappingError, match=r"constants: 'qualty' is not an input of .*did you mean 'quality'"
    ):
        estimate(service, df, ["gpt-image-2", "flare-1-dev"], qualty="low")


def test_one_estimate_prices_every_model_with_a_subtotal_each(service: Service) -> None:
    """gpt-image-2 in three qualities (3 requests), flare-1-pro at its listed price (none): 4 price
    classes, 3 estimate requests; the total, a subtotal per model and per price class."""
    df = prompts(6).assign(quality=["low", "medium", "high"] * 2)
    with pytest.warns(NotSent, match="flare-1-pro has no input quality"):
        out = estimate(service, df, ["gpt-image-2", "flare-1-pro"])
    summary = out.attrs["mediagen_estimate"]
    assert service.count("estimate") == 3 == summary.requests and len(service.keyed()) == 3
    assert summary.total == 2 * (3 + 8 + 25) + 6 * 5 == int(out["credits"].sum())
    assert summary.by_model["gpt-image-2"].credits == 72 and summary.by_model["flare-1-pro"].credits == 30
    assert summary.by_model["flare-1-pro"].per_row == 5 and summary.by_model["gpt-image-2"].requests == 3
    assert summary.by_class == [
        (2, 3, "gpt-image-2: quality=low"),
        (2, 8, "gpt-image-2: quality=medium"),
        (2, 25, "gpt-image-2: quality=high"),
        (6, 5, "flare-1-pro: listed price"),
    ]
    text = str(summary)
    assert text.startswith("2 models on ") and "102 credits for 12 generations (6 rows x 2 models" in text
    assert "  flare-1-pro: 30 credits for 6 rows, 5 a row, 0 estimate requests" in text
    assert "note: flare-1-pro has no input quality: not sent to it" in text


def test_a_frames_model_column_is_used_and_refused_beside_a_model(service: Service, tmp_path: Path) -> None:
    df = prompts(3).assign(Model=["flare-1-swift", "flare-1-dev", "flare-1-swift"])
    with pytest.raises(MappingError) as refused:
        estimate(service, df, "flare-1-swift")
    message = refused.value.message
    assert "its own column 'Model'" in message and "leave the model out" in message
    assert "df.drop(columns=['Model'])" in message
    with pytest.raises(MappingError, match="its own column 'Model'"):
        run(service, df, PAIR, tmp_path)
    assert service.keyed() == [] and service.ledger() == []  # nothing sent but the free catalog

    out = run(service, df, None, tmp_path)
    assert len(out) == 3 and out["status"].tolist() == ["succeeded"] * 3  # one row each, on its own model
    assert sorted(started_models(service)) == sorted(df["Model"])
    assert out["input"].tolist() == [{"prompt": p} for p in df["prompt"]]  # the model column is no input
    assert service.net_spent() == 1 + 3 + 1 == int(out["credits"].sum())

    # a column of nothing but model ids, under any name, names models too
    with pytest.raises(MappingError, match="its own column 'engine'"):
        estimate(service, prompts(2).assign(engine=["flare-1-swift", "flare-1-dev"]), "flare-1-dev")
    # in a column named model, an id not in the catalog makes its row invalid, with the nearest id
    priced = estimate(service, prompts(2).assign(model=["flare-1-swift", "flare-1-sift"]), None)
    assert priced["credits"].tolist()[0] == 1
    assert priced["error"].tolist()[1] == (
        "model: 'flare-1-sift' (column 'model') is not a catalog model; did you mean 'flare-1-swift'?"
    )


def test_no_model_and_no_model_column_is_refused(service: Service) -> None:
    with pytest.raises(MappingError, match="give a model id, a list of them, or a table with a column"):
        estimate(service, prompts(1), None)
    with pytest.raises(ValidationError, match=r"one string; give several models as a list"):
        estimate(service, prompts(1), "flare-1-swift,flare-1-dev")
    with pytest.raises(ValidationError, match="'flare-1-dev' is listed twice"):
        estimate(service, prompts(1), ["flare-1-dev", "flare-1-dev"])
    assert service.keyed() == []


def test_the_budget_and_max_credits_hold_across_models_before_anything_is_sent(
    service: Service, tmp_path: Path
) -> None:
    df = prompts(3)
    with pytest.raises(ValidationError, match="max_credits: the estimate is 12 credits"):
        run(service, df, PAIR, tmp_path, max_credits=11)
    mg.budget(11)
    with pytest.raises(BudgetExceeded, match="this sweep would cost 12 credits"):
        run(service, df, PAIR, tmp_path)
    assert service.count("run") == 0 and service.ledger() == []
    mg.budget(12)
    assert (run(service, df, PAIR, tmp_path)["status"] == "succeeded").all() and service.net_spent() == 12


def test_as_completed_and_retry_failed_work_per_row_and_model(service: Service, tmp_path: Path) -> None:
    service.faults(modelScript=["ok", "ok", "fail"])  # the third start fails (refunded)
    handle = prompts(2).mediagen.submit(
        PAIR, client=service.client, ledger=tmp_path / "ledger.sqlite", progress=False
    )
    ended = list(handle.as_completed())
    assert sorted((r.label, r.model) for r in ended) == [(0, m) for m in sorted(PAIR)] + [
        (1, m) for m in sorted(PAIR)
    ]
    out = handle.result()
    failed = out[out["status"] == "failed"]
    assert len(failed) == 1
    retried = run(service, prompts(2), PAIR, tmp_path, retry_failed=True)  # same ledger: only that one again
    assert (retried["status"] == "succeeded").all()
    kept = out["status"] == "succeeded"
    assert (
        retried["generation_id"][kept.to_numpy()].tolist() == out["generation_id"][kept.to_numpy()].tolist()
    )
    assert service.count("run") == 5


def test_a_cancelled_comparison_resumes_without_paying_twice(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped after its first row (as a Ctrl-C stops it), a comparison keeps what started; the same call
    again starts only the rest: every (row, model) charged once."""
    monkeypatch.setattr(scheduler, "STARTS_IN_FLIGHT", 1)
    df = prompts(4)
    handle = df.mediagen.submit(
        PAIR, client=service.client, ledger=tmp_path / "ledger.sqlite", progress=False
    )
    for _ in handle.as_completed():
        handle.cancel()
        break
    first = handle.result()
    assert (first["status"] == "skipped").any() and (first["status"] == "succeeded").any()
    out = run(service, df, PAIR, tmp_path)
    assert (out["status"] == "succeeded").all()
    assert sorted(service.charges().values()) == [1] * 8  # one charge per (row, model), none twice
    assert service.net_spent() == 4 * (1 + 3)


def test_the_grid_is_rows_by_models_and_downloads_are_named_by_model(
    service: Service, tmp_path: Path
) -> None:
    service.faults(modelScript=["ok", "fail"])
    out = run(service, prompts(2), PAIR, tmp_path)
    page = out.mediagen.preview()._repr_html_()
    assert page.count("<tr>") == 3 and page.count("<img ") == 3  # a header and a row per frame row
    assert page.index(">flare-1-swift</th>") < page.index(">flare-1-dev</th>")
    assert "row \\ model" in page and "a lantern, take 0" in page  # each row's prompt heads it, once
    assert page.count("a lantern, take 0") == 1 and "failed" in page
    flat = out.mediagen.preview(rows="model", cols=None)._repr_html_()
    assert flat.count("<tr>") == 3
    paged = out.mediagen.preview(per_page=2)._repr_html_()  # pages hold whole rows of the grid
    assert "showing 1-2 of 4 (page 1 of 2" in paged and paged.count("<tr>") == 2
    saved = out.mediagen.download(tmp_path / "out", name="{model}-{row}", progress=False)
    names = sorted(p.name for p in (tmp_path / "out").iterdir() if p.suffix != ".json")
    assert len(names) == 3 and all(
        n.split(".")[0] in {f"{m}-{r}" for m in PAIR for r in (0, 1)} for n in names
    )
    sidecars = [p for p in (tmp_path / "out").iterdir() if p.suffix == ".json"]
    assert {pd.read_json(p, typ="series")["model"] for p in sidecars} <= set(PAIR)
    assert saved["local_path"].notna().sum() == 3


def test_polars_compares_models_too(service: Service, tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    out = pl.DataFrame({"prompt": ["a fox", "a hare"]}).mediagen.run(
        PAIR, client=service.client, ledger=tmp_path / "l.db", progress=False
    )
    assert out.height == 4 and out["row"].to_list() == [0, 0, 1, 1] and out["model"].to_list() == PAIR * 2
    assert out["prompt"].to_list() == ["a fox", "a fox", "a hare", "a hare"]
    assert service.net_spent() == 8


def rows_of(models: dict[str, int]) -> list[Any]:
    from mediagen_nb.batch.plan import Row

    rows = []
    for model, count in models.items():
        rows += [Row(len(rows), {}, model=model, source=i) for i in range(count)]
    return rows


def test_the_start_order_takes_turns_and_starts_a_slower_model_ahead() -> None:
    """Equal run times: the models take turns. A model whose runs take 30 s longer (at 1 start a
    second) gets its last start about 30 starts before the others' last."""
    order = StartOrder(rows_of({"a": 4, "b": 4, "c": 4}), rate=1.0)
    firsts = [order.next({}) for _ in range(6)]
    assert [r.model for r in firsts if r] == ["a", "b", "c", "a", "b", "c"]

    order = StartOrder(rows_of({"image": 100, "video": 50}), rate=1.0)
    picked = []
    while (row := order.next({"image": 5.0, "video": 35.0})) is not None:
        picked.append(row.model)
    last_video = max(i for i, m in enumerate(picked) if m == "video")
    assert 115 <= last_video <= 121 and picked.count("video") == 50
    assert picked[:6].count("image") >= 2  # the fast model's rows are not held back either


def test_mediagen_sweep_with_two_models_writes_a_row_per_row_and_model(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--model a --model b``: the estimate's subtotals, 2 x 3 result rows, a rows x models gallery; the
    reasons name the model; a sheet's own model column runs without ``--model``."""
    from mediagen_nb.batch.cli import main
    from mediagen_nb.client import settings

    monkeypatch.setenv(settings.ENV_BASE_URL, service.base_url)
    monkeypatch.setenv(settings.ENV_KEY, service.sandbox.demo_key)
    monkeypatch.setenv(settings.ENV_TIME_SCALE, str(service.sandbox.config.time_scale))
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("prompt,aspect_ratio\na cat,1:1\na dog,16:9\na fox,1:1\n")
    out, gallery = tmp_path / "results.csv", tmp_path / "site" / "compare.html"
    code = main([str(sheet), "--model=gpt-image-2", "--model=flare-1-swift", "--set=quality=low",
                 f"--out={out}", f"--gallery={gallery}"])  # fmt: skip
    printed, err = capsys.readouterr()
    assert code == 1  # gpt-image-2 has no 16:9
    assert "2 models on " in printed and "  flare-1-swift: 3 credits for 3 rows, 1 a row" in printed
    assert "note: flare-1-swift has no input quality: not sent to it" in printed
    assert "1 invalid on gpt-image-2: aspect_ratio must be one of: 1:1, 3:2, 2:3 (rows 3)" in err
    results = pd.read_csv(out)
    assert len(results) == 6 and results["model"].tolist() == ["gpt-image-2", "flare-1-swift"] * 3
    assert results["row"].tolist() == [2, 2, 3, 3, 4, 4]  # the sheet's own row numbers
    page = gallery.read_text()
    assert page.count("<tr>") == 4 and page.count("<img ") == 5
    assert service.net_spent() == 2 * 3 + 3 * 1

    sheet.write_text("prompt,model\na cat,flare-1-swift\na dog,flare-1-dev\n")
    assert main([str(sheet), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["rows"] == 2 and document["status"] == {"succeeded": 2}
    assert main([str(sheet), "--model=flare-1-dev"]) == 2  # a model column and --model: refused, CLI words
    said = capsys.readouterr().err
    assert "the sheet has its own column 'model'" in said and "--model flare-1-dev was given too" in said
    assert "leave --model out" in said and "df." not in said
