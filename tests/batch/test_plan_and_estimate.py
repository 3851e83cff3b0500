"""Planning and pricing a frame: mapping errors, per-row checks, templates and the estimate request count.

Every test talks to a served sandbox over real HTTP; requests are counted with an httpx event hook on
the client's own http_client, so retries and catalog reads are seen exactly as sent.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest

import mediagen_nb
from mediagen_nb.batch import MappingError
from mediagen_nb.batch.plan import Columns
from mediagen_nb.client import ValidationError

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Service

GPT_PRICES = {"low": 3, "medium": 8, "high": 25}  # gpt-image-2 per image, as the catalog's billing text says


def estimate(
    service: Service, df: pd.DataFrame, model: str, columns: Columns = None, **options: object
) -> pd.DataFrame:
    """``df.mediagen.estimate`` with the service's client, no display."""
    return df.mediagen.estimate(model, columns, client=service.client, show=False, **options)


@pytest.mark.spellings
def test_flat_priced_model_costs_its_listed_price_without_an_estimate_request(service: Service) -> None:
    df = pd.DataFrame({"prompt": [f"a lighthouse {i}" for i in range(25)]})
    out = estimate(service, df, "flare-1-swift")
    assert service.count("estimate") == 0
    assert service.keyed() == []  # only the free catalog read was sent
    assert out["credits"].tolist() == [1] * 25  # flare-1-swift: pricing null, listed 1 credit
    assert out["billing"].str.contains("listed price").all()
    summary = out.attrs["mediagen_estimate"]
    assert (summary.total, summary.requests, summary.invalid) == (25, 0, 0)


@pytest.mark.spellings
def test_one_estimate_per_distinct_combination_of_varies_by_inputs(service: Service) -> None:
    qualities = ["low", "high", "medium", "low", "high", "medium", None, "low", "high", "low", None, "high"]
    df = pd.DataFrame(
        {
            "prompt": [f"portrait {i}" for i in range(12)],
            "quality": qualities,
            "aspect_ratio": ["1:1", "3:2", "2:3"] * 4,  # not in varies_by: never a separate estimate
        }
    )
    out = estimate(service, df, "gpt-image-2")
    assert service.count("estimate") == 3  # low, medium (absent = the schema default), high
    expected = [GPT_PRICES[q or "medium"] for q in qualities]
    assert out["credits"].tolist() == expected
    assert out.attrs["mediagen_estimate"].total == sum(expected)
    sent = {body["input"].get("quality", "medium") for body in service.bodies("estimate")}
    assert sent == {"low", "medium", "high"}


def test_absent_option_and_its_default_share_one_estimate(service: Service) -> None:
    df = pd.DataFrame({"prompt": ["a", "b", "c"], "quality": ["medium", None, np.nan]})
    out = estimate(service, df, "gpt-image-2")
    assert service.count("estimate") == 1
    assert out["credits"].tolist() == [8, 8, 8]


def test_length_billed_model_takes_one_estimate_per_distinct_media_url(service: Service) -> None:
    urls = [service.sample("voice.wav"), service.sample("short-voice.wav"), service.sample("voice.mp3")]
    df = pd.DataFrame(
        {
            "text": [f"line number {i}" for i in range(12)],  # text does not change zonos2's price
            "audio": [urls[i % 3] for i in range(12)],
            "clean_speaker_background": [i % 2 == 0 for i in range(12)],
        }
    )
    out = estimate(service, df, "zonos2")
    assert service.count("estimate") == 3
    by_url = out.groupby("audio")["credits"].unique()
    assert all(len(prices) == 1 for prices in by_url)  # every row of one file has that file's price
    assert by_url[service.sample("voice.wav")][0] > by_url[service.sample("short-voice.wav")][0]  # 8 s > 3 s
    assert out["billing"].str.contains("per second").all()


def test_length_billed_model_with_a_multiplier_prices_each_url_and_resolution_once(service: Service) -> None:
    urls = [service.sample("voice.wav"), service.sample("short-voice.wav")]
    audio = [urls[i % 2] for i in range(8)]
    resolution = ["480p", "480p", "720p", "720p", None, None, "480p", "720p"]
    df = pd.DataFrame({"image": [service.sample("face.png")] * 8, "audio": audio, "resolution": resolution})
    out = estimate(service, df, "infinitetalk")
    assert service.count("estimate") == 4  # 2 files x 2 resolutions; absent resolution = 720p
    price = {}
    for url, res, credits in zip(audio, resolution, out["credits"], strict=True):
        assert price.setdefault((url, res or "720p"), credits) == credits
    for url in urls:
        assert price[(url, "720p")] == 2 * price[(url, "480p")]  # the spec: 720p costs twice 480p


def test_ten_thousand_rows_across_three_qualities_take_at_most_three_estimates(service: Service) -> None:
    qualities = np.array(["low", "medium", "high"])[np.arange(10_000) % 3]
    df = pd.DataFrame({"prompt": [f"product shot {i}" for i in range(10_000)], "quality": qualities})
    out = estimate(service, df, "gpt-image-2")
    assert service.count("estimate") <= 3
    assert len(service.keyed()) == service.count("estimate")  # nothing else that needs a key
    assert int(out["credits"].sum()) == sum(GPT_PRICES[str(q)] for q in qualities)
    assert out["credits"].notna().all()


def test_bad_rows_are_reported_per_row_with_the_service_wording_and_never_priced(service: Service) -> None:
    df = pd.DataFrame(
        {
            "prompt": ["ok one", None, np.nan, "ok two", "enum miss", "   "],
            "quality": ["low", "low", "high", "high", "ultra", "low"],
        }
    )
    out = estimate(service, df, "gpt-image-2")
    errors = out["error"].tolist()
    assert pd.isna(errors[0]) and pd.isna(errors[3])
    assert errors[1] == errors[2] == errors[5] == "Missing required field: prompt"
    assert errors[4] == "quality must be one of: low, medium, high"
    assert out["credits"].isna().tolist() == [False, True, True, False, True, True]
    assert out.attrs["mediagen_estimate"].invalid == 4
    # only valid rows were priced: one estimate for "low", one for "high", none for "ultra"
    assert service.count("estimate") == 2
    assert all(body["input"]["quality"] in ("low", "high") for body in service.bodies("estimate"))


def test_unsupported_media_format_is_a_row_error_before_any_request(service: Service) -> None:
    df = pd.DataFrame(
        {"text": ["hi", "there"], "audio": [service.sample("voice.wav"), service.sample("voice.ogg")]}
    )
    out = estimate(service, df, "zonos2")
    assert out["error"].tolist()[1].startswith("Unsupported media format")
    assert service.count("estimate") == 1


def test_estimate_leaves_the_input_frame_unchanged(service: Service) -> None:
    df = pd.DataFrame(
        {"prompt": ["a", None, "c"], "quality": ["low", "high", "bad"], "n": pd.array([1, None, 3], "Int64")}
    )
    before = copy.deepcopy(df)
    out = estimate(service, df, "gpt-image-2", columns={"prompt": "prompt", "quality": "quality"})
    assert df.equals(before) and (df.dtypes == before.dtypes).all()
    assert list(df.columns) == ["prompt", "quality", "n"] and out is not df


@pytest.mark.parametrize(
    ("model", "columns", "constants", "field", "hint"),
    [
        ("gpt-image2", None, {}, "model", "did you mean 'gpt-image-2'"),
        ("gpt-image-2", {"prompts": "prompt"}, {}, "prompts", "did you mean 'prompt'"),
        ("gpt-image-2", {"prompt": "promt"}, {}, "promt", "did you mean 'prompt'"),
        ("gpt-image-2", None, {"qualty": "low"}, "qualty", "did you mean 'quality'"),
        (
            "gpt-image-2",
            None,
            {"prompt": mediagen_nb.template("A {styel} shot")},
            "prompt",
            "did you mean 'style'",
        ),
    ],
    ids=["unknown-model", "unknown-column", "unknown-field", "unknown-constant", "template-column"],
)
def test_mapping_errors_raise_once_before_any_keyed_request(
    service: Service,
    tmp_path: Path,
    model: str,
    columns: Columns,
    constants: dict[str, object],
    field: str,
    hint: str,
) -> None:
    df = pd.DataFrame({"prompt": ["a cat", "a dog"], "style": ["noir", "pastel"]})
    calls = (
        lambda: df.mediagen.estimate(model, columns, client=service.client, show=False, **constants),
        lambda: df.mediagen.run(
            model, columns, client=service.client, ledger=tmp_path / "l.sqlite", progress=False, **constants
        ),
        lambda: df.mediagen.submit(
            model, columns, client=service.client, ledger=tmp_path / "l.sqlite", progress=False, **constants
        ),
    )
    for call in calls:
        with pytest.raises(ValidationError) as caught:
            call()
        assert caught.value.field == field
        assert hint in caught.value.message
        assert caught.value.sent is False
    if model != "gpt-image2":
        assert isinstance(caught.value, MappingError)
        assert field in caught.value.message
    else:
        assert caught.value.message.startswith("Unknown model 'gpt-image2'. Available models: ")
    assert service.keyed() == []  # nothing but the free catalog read was sent
    assert service.charges() == {}


def test_a_field_far_from_any_input_gets_no_guess_but_the_list_of_inputs(service: Service) -> None:
    df = pd.DataFrame({"prompt": ["a"], "zzz": [1]})
    with pytest.raises(MappingError) as caught:
        estimate(service, df, "gpt-image-2", columns={"prompt": "prompt", "zzz": "xylophone"})
    assert "did you mean" not in caught.value.message
    assert "inputs: prompt, quality, aspect_ratio" in caught.value.message


def test_template_fills_a_text_input_from_columns(service: Service) -> None:
    df = pd.DataFrame(
        {"style": ["noir", "pastel", None, "retro", "neon"], "subject": ["cat", "dog", "fox", np.nan, ""]}
    )
    out = estimate(
        service, df, "gpt-image-2", prompt=mediagen_nb.template("A {style} photo of {subject}, {{4k}}")
    )
    assert out["credits"].tolist()[:2] == [8, 8]
    assert out["error"].tolist()[2] == "prompt: column 'style' is empty in this row"
    assert out["error"].tolist()[3] == "prompt: column 'subject' is empty in this row"
    assert out["error"].tolist()[4] == "prompt: column 'subject' is empty in this row"
    assert [b["input"]["prompt"] for b in service.bodies("estimate")] == ["A noir photo of cat, {4k}"]


def test_template_rejects_format_specs() -> None:
    with pytest.raises(ValueError, match="plain"):
        mediagen_nb.template("A {style!r} photo")
    assert mediagen_nb.template("{a} and {b} and {a}").columns == ("a", "b")
