"""Columns to inputs, one direction (column -> input field, like ``DataFrame.rename``), with no surprises.

Each case of issue 10's "Column mapping" and "Your columns overwritten", reproduced on a served sandbox:
refusals name the fix, send nothing and charge nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pytest

from mediagen_nb.batch import MappingError
from mediagen_nb.batch.plan import MappingWarning
from mediagen_nb.client import ValidationError

if TYPE_CHECKING:
    from conftest import Service


def estimate(service: Service, df: pd.DataFrame, **options: Any) -> pd.DataFrame:
    return df.mediagen.estimate("gpt-image-2", client=service.client, show=False, **options)


def test_an_explicit_mapping_adds_to_name_matching(service: Service) -> None:
    """``columns={"Prompt": "prompt"}`` maps one column and the sheet's own ``quality`` still counts:
    priced at quality=high (25), and a row with ``ultra`` is reported invalid, not priced."""
    df = pd.DataFrame({"Prompt": ["a fox", "a hare"], "quality": ["high", "ultra"]})
    out = estimate(service, df, columns={"Prompt": "prompt"})
    assert out["credits"].tolist()[0] == 25
    assert pd.isna(out["credits"].tolist()[1])
    assert out["error"].tolist()[1] == "quality must be one of: low, medium, high"
    assert out["input"].tolist()[0] == {"prompt": "a fox", "quality": "high"}  # what is sent


def test_names_match_ignoring_case_spaces_dashes_and_underscores(service: Service) -> None:
    df = pd.DataFrame({"Prompt": ["a fox"], "Aspect Ratio": ["3:2"], "QUALITY": ["low"]})
    out = estimate(service, df)
    assert out["input"].tolist()[0] == {"prompt": "a fox", "aspect_ratio": "3:2", "quality": "low"}
    assert out["credits"].tolist() == [3]


def test_a_near_miss_is_a_warning_with_the_exact_fix(service: Service) -> None:
    df = pd.DataFrame({"prompt": ["a fox"], "aspect": ["3:2"]})
    with pytest.warns(MappingWarning) as caught:
        out = estimate(service, df)
    # the mapping's own: pytest.warns also catches any other warning raised meanwhile in this process
    # (seen once under xdist, left by a test run before it on the same worker)
    mapping = [str(w.message) for w in caught if issubclass(w.category, MappingWarning)]
    assert len(mapping) == 1, [(w.category.__name__, str(w.message)) for w in caught]
    assert mapping[0] == (
        "column 'aspect' is not used; if it is input 'aspect_ratio' of gpt-image-2, pass "
        "columns={'aspect': 'aspect_ratio'}"
    )
    assert "aspect_ratio" not in out["input"].tolist()[0]  # not sent: the service's default applies


def test_a_mapping_written_backwards_shows_the_swap(service: Service) -> None:
    df = pd.DataFrame({"Prompt": ["a fox"]})
    with pytest.raises(MappingError) as caught:
        estimate(service, df, columns={"prompt": "Prompt"})
    assert "the mapping goes column -> input field" in caught.value.message
    assert "write columns={'Prompt': 'prompt'}" in caught.value.message
    assert caught.value.status is None and service.keyed() == []


def test_two_columns_for_one_input_are_refused_with_the_fix(service: Service) -> None:
    df = pd.DataFrame({"prompt": ["a"], "Prompt": ["b"]})
    with pytest.raises(MappingError) as caught:
        estimate(service, df)
    assert "all match input 'prompt'" in caught.value.message and "columns={'prompt': 'prompt'}" in (
        caught.value.message
    )


@pytest.mark.parametrize("mine", ["status", "credits", "error"])
def test_the_users_own_columns_are_never_overwritten(service: Service, tmp_path: Path, mine: str) -> None:
    """A frame with its own ``status``/``credits``/``error`` is refused before anything is sent, naming
    ``prefix=``; with the prefix it runs and keeps the user's column."""
    df = pd.DataFrame({"prompt": ["a fox"], mine: ["the user's own"]})
    with pytest.raises(MappingError) as caught:
        df.mediagen.run("flare-1-swift", client=service.client, ledger=tmp_path / "l.sqlite", progress=False)
    assert f"already has its own '{mine}'" in caught.value.message and "prefix='mg_'" in caught.value.message
    assert service.keyed() == [] and service.charges() == {}
    out = df.mediagen.run(
        "flare-1-swift", client=service.client, ledger=tmp_path / "l.sqlite", progress=False, prefix="mg_"
    )
    assert out[mine].tolist() == ["the user's own"] and out["mg_status"].tolist() == ["succeeded"]


def test_our_own_columns_may_be_written_again(service: Service, tmp_path: Path) -> None:
    """An estimated frame (credits, error, input written by estimate) can be run as it is."""
    priced = estimate(service, pd.DataFrame({"prompt": ["a fox"]}))
    out = priced.mediagen.run(
        "gpt-image-2", client=service.client, ledger=tmp_path / "l.sqlite", progress=False
    )
    assert out["status"].tolist() == ["succeeded"] and out["credits"].tolist() == [8]


@pytest.mark.parametrize(
    ("options", "field", "message"),
    [
        (
            {"max_credits": "100"},
            "max_credits",
            "max_credits must be a whole number of credits, 0 or more, not '100'",
        ),
        (
            {"max_credits": -1},
            "max_credits",
            "max_credits must be a whole number of credits, 0 or more, not -1",
        ),
        ({"run_name": 3}, "run_name", "run_name must be a string, not 3"),
        ({"progress": "yes"}, "progress", "progress must be True or False, not 'yes'"),
        ({"ledger": 5}, "ledger", "ledger must be a path or a Ledger, not 5"),
    ],
)
def test_options_are_type_checked_before_anything_is_sent(
    service: Service, options: dict[str, Any], field: str, message: str
) -> None:
    df = pd.DataFrame({"prompt": ["a fox"]})
    options = {"progress": False, **options}
    with pytest.raises(ValidationError) as caught:
        df.mediagen.run("flare-1-swift", client=service.client, **options)
    error = caught.value
    assert (error.field, error.message, error.status, error.sent) == (field, message, None, False)
    assert str(error) == message  # no HTTP status: nothing was sent
    assert error._render_traceback_() == [f"ValidationError: {message}"]
    assert service.keyed() == []


def test_integer_column_labels_work(service: Service) -> None:
    df = pd.DataFrame({0: ["a fox"], 1: ["low"]})
    out = estimate(service, df, columns={0: "prompt", 1: "quality"})
    assert out["credits"].tolist() == [3]
