"""Issue 39: spreadsheets as people make them, from the CLI and from Python.

A column ``Prompt Text `` (a trailing space) could not be mapped from the CLI (``--map "Prompt Text
=prompt"`` lost the space and the error suggested the very name typed); a workbook whose first sheet is
notes said "no column matches" with no word of its other sheets; the CLI spoke Python (``columns=``, "this
DataFrame"); ``Low``, ``HIGH`` and `` 1:1 `` were refused with no "did you mean low?"; an estimate with
every row invalid printed an empty ``largest rows:`` line. Each case runs on a served sandbox and charges
nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

import mediagen_nb as mg
from mediagen_nb.client import ValidationError

if TYPE_CHECKING:
    from conftest import Service

Cli = Callable[..., tuple[int, str, str]]
PYTHON_WORDS = ("columns=", "DataFrame", "constants")


def people() -> pd.DataFrame:
    """The sheet as it came: a trailing space, a leading space, options in any case and padded."""
    return pd.DataFrame(
        {"Prompt Text ": ["a fox", "a hare"], " Quality": ["Low", "HIGH"], "Aspect Ratio": [" 1:1 ", "1:1"]}
    )


@pytest.fixture
def workbook(tmp_path: Path) -> Path:
    """Notes first, then the prompts: as a team's workbook often is."""
    path = tmp_path / "book.xlsx"
    with pd.ExcelWriter(path) as sheets:
        pd.DataFrame({"Notes": ["ask Dana before running"]}).to_excel(sheets, sheet_name="Notes", index=False)
        people().to_excel(sheets, sheet_name="Prompts", index=False)
    return path


def test_without_sheet_the_message_names_the_sheet_that_would_match(
    cli: Cli, service: Service, workbook: Path
) -> None:
    code, _, err = cli(str(workbook), "--model=gpt-image-2", "--map", "Prompt Text =prompt", "--estimate")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "book.xlsx's sheet 'Prompts' would: pass --sheet Prompts" in err
    assert not [word for word in PYTHON_WORDS if word in err], err
    assert service.charges() == {}


@pytest.mark.parametrize("column", ["Prompt Text ", "Prompt Text", "prompt text", " PROMPT TEXT"])
def test_map_takes_the_column_as_it_is_in_the_sheet_or_with_case_and_spaces_ignored(
    cli: Cli, service: Service, workbook: Path, column: str
) -> None:
    out = workbook.parent / "priced.json"
    code, printed, err = cli(
        str(workbook), "--sheet=Prompts", "--model=gpt-image-2", f"--map={column}=prompt", "--estimate",
        f"--out={out}",
    )  # fmt: skip
    assert code == 0, err
    rows = json.loads(out.read_text())
    # Low, HIGH and " 1:1 " are the options low, high and 1:1: priced and sent as the service spells them
    assert [json.loads(row["input"]) for row in rows] == [
        {"prompt": "a fox", "quality": "low", "aspect_ratio": "1:1"},
        {"prompt": "a hare", "quality": "high", "aspect_ratio": "1:1"},
    ]
    assert [row["credits"] for row in rows] == [3, 25]
    assert "largest rows: row 3: 25, row 2: 3" in printed  # the sheet's own row numbers
    assert service.charges() == {}


def test_a_column_not_in_the_sheet_is_said_in_cli_words(cli: Cli, service: Service, workbook: Path) -> None:
    code, _, err = cli(str(workbook), "--sheet=Prompts", "--model=gpt-image-2", "--map=Prompt=prompt")
    assert code == 2 and "--map: 'Prompt' is not a column of the sheet; did you mean 'Prompt Text '?" in err
    code, _, err = cli(
        str(workbook), "--sheet=Prompts", "--model=gpt-image-2", "--template=prompt=A {Subject}"
    )
    assert code == 2 and "prompt: --template column: 'Subject' is not a column of the sheet" in err
    assert not [word for word in PYTHON_WORDS if word in err], err
    assert service.charges() == {}


def test_a_near_miss_warning_gives_the_cli_fix(cli: Cli, service: Service, tmp_path: Path) -> None:
    sheet = tmp_path / "s.csv"
    sheet.write_text("Prompt Text ,aspect\na fox,3:2\n")
    code, _, err = cli(str(sheet), "--model=gpt-image-2", "--map=Prompt Text =prompt", "--estimate")
    assert code == 0
    fix = "if it is input 'aspect_ratio' of gpt-image-2, pass --map aspect=aspect_ratio"
    assert f"warning: column 'aspect' is not used; {fix}" in err


def test_an_option_not_near_any_says_did_you_mean_and_no_empty_line(
    cli: Cli, service: Service, tmp_path: Path
) -> None:
    sheet = tmp_path / "s.csv"
    sheet.write_text("prompt,quality\na fox,lwo\na hare,hihg\n")
    code, printed, err = cli(str(sheet), "--model=gpt-image-2", "--estimate")
    assert code == 1
    assert "quality must be one of: low, medium, high; did you mean low? (rows 2)" in err
    assert "did you mean high? (rows 3)" in err
    assert "largest rows" not in printed and "" not in printed.splitlines(), printed  # no empty line
    assert service.charges() == {}


def test_python_matches_the_same_way(service: Service) -> None:
    df = people().assign(Subject=[" fox ", "hare"])
    priced = df.mediagen.estimate(
        "gpt-image-2",
        columns={"prompt text": "prompt"},
        client=service.client,
        show=False,
    )
    assert priced["credits"].tolist() == [3, 25]
    assert priced["input"].tolist()[1] == {"prompt": "a hare", "quality": "high", "aspect_ratio": "1:1"}
    # a template's {names} find their columns the same way
    templated = df.drop(columns=["Prompt Text "]).mediagen.estimate(
        "gpt-image-2", client=service.client, show=False, prompt=mg.template("A {subject}")
    )
    assert templated["input"].tolist()[0]["prompt"] == "A  fox "
    asked = len(service.keyed())
    with pytest.raises(ValidationError) as caught:
        df.mediagen.estimate("gpt-image-2", columns={"Prompt": "prompt"}, client=service.client, show=False)
    assert "columns: 'Prompt' is not a column of this DataFrame; did you mean 'Prompt Text '?" in str(
        caught.value
    )
    assert len(service.keyed()) == asked  # refused before any request


def test_a_call_with_an_option_in_other_case_is_refused_with_the_option(service: Service) -> None:
    """Outside a table, the input is sent as written, so it is refused, before sending, naming the option."""
    with mg.Client.for_sandbox(service.sandbox) as client, pytest.raises(ValidationError) as caught:
        client.estimate("gpt-image-2", prompt="a fox", quality="Low")
    assert caught.value.message == "quality must be one of: low, medium, high; did you mean low?"
    assert caught.value.sent is False and service.charges() == {}
