"""``pl_df.mediagen``: the same estimate, run, submit, preview and download, returning polars frames.

One engine with pandas (``mediagen_nb.batch.frames``): the same requests, the same ledger, the same
money. Skipped, with the reason, only when polars is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

pl = pytest.importorskip("polars", reason="polars is an optional extra: pip install 'mediagen-nb[polars]'")

import mediagen_nb  # noqa: E402  (registers pl_df.mediagen)

if TYPE_CHECKING:
    from conftest import Service


def frame() -> pl.DataFrame:
    return pl.DataFrame({"subject": ["a fox", "a hare", "a crow"], "Quality": ["low", "high", "ultra"]})


def test_estimate_prices_a_polars_frame_with_the_pandas_engine(service: Service) -> None:
    out = frame().mediagen.estimate(
        "gpt-image-2", prompt=mediagen_nb.template("{subject}"), client=service.client, show=False
    )
    assert isinstance(out, pl.DataFrame)
    assert out["credits"].to_list() == [3, 25, None]
    assert out["error"].to_list()[2] == "quality must be one of: low, medium, high"
    assert json.loads(out["input"][0]) == {"prompt": "a fox", "quality": "low"}
    assert service.count("estimate") == 2  # one per distinct quality, as with pandas


def test_run_and_submit_return_polars_frames_and_charge_each_row_once(
    service: Service, tmp_path: Path
) -> None:
    df = frame().head(2)
    out = df.mediagen.run(
        "gpt-image-2",
        prompt=mediagen_nb.template("{subject}"),
        client=service.client,
        ledger=tmp_path / "l.sqlite",
        progress=False,
    )
    assert isinstance(out, pl.DataFrame) and out["status"].to_list() == ["succeeded", "succeeded"]
    assert out["output_urls"].dtype == pl.List(pl.String)
    assert out["credits"].sum() == service.net_spent() == 28
    handle = df.mediagen.submit(
        "gpt-image-2",
        prompt=mediagen_nb.template("{subject}"),
        client=service.client,
        ledger=tmp_path / "l.sqlite",
        progress=False,
    )
    again = handle.result(timeout=30)
    assert again["generation_id"].to_list() == out["generation_id"].to_list() and service.net_spent() == 28


def test_a_lazy_frame_is_collected_first(service: Service) -> None:
    out = (
        frame()
        .lazy()
        .filter(pl.col("Quality") == "low")
        .mediagen.estimate(
            "gpt-image-2", prompt=mediagen_nb.template("{subject}"), client=service.client, show=False
        )
    )
    assert isinstance(out, pl.DataFrame) and out["credits"].to_list() == [3]


def test_preview_and_download_of_a_polars_result(service: Service, tmp_path: Path) -> None:
    out = (
        frame()
        .head(1)
        .mediagen.run(
            "gpt-image-2",
            prompt=mediagen_nb.template("{subject}"),
            client=service.client,
            ledger=tmp_path / "l.sqlite",
            progress=False,
        )
    )
    assert "<img" in out.mediagen.preview()._repr_html_()
    saved = out.mediagen.download(tmp_path / "media", progress=False)
    assert isinstance(saved, pl.DataFrame) and Path(saved["local_path"][0]).is_file()
