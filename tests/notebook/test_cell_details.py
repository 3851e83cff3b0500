"""Issue 39's smaller notebook cases, each on a served sandbox.

``--no-raise`` did not keep a cell green on a refusal; "Unsupported media format" did not name the
field; ``mg.budget("off")`` was refused while ``%mediagen budget off`` worked; the prompt of a form was
a one-line input; ``%mediagen history`` had empty credits for analysis and replication rows.
"""

import ipywidgets as widgets
import pytest
from _shell import Notebook

import mediagen_nb as mg
from mediagen_nb.client import ValidationError

TIKTOK = "https://www.tiktok.com/@demo/video/7301"


def test_no_raise_keeps_the_cell_green_on_a_refusal_too(
    nb: Notebook, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = "%%generate gpt-image-2 --quality ultra{}\nA fox"
    kind, message = nb.error_kind(refused.format(""))
    assert kind == "ValidationError" and message.startswith("quality must be one of")
    capsys.readouterr()
    assert nb.ok(refused.format(" --no-raise")) is None  # the cell succeeds
    said = capsys.readouterr().err
    assert said.strip() == "ValidationError: quality must be one of: low, medium, high"
    assert nb.charges() == []


def test_an_unsupported_media_format_names_the_field(nb: Notebook) -> None:
    with pytest.raises(ValidationError) as caught:
        mg.current().estimate("zonos2", text="hello", audio="https://example.com/voice.ogg")
    assert caught.value.field == "audio"
    assert caught.value.message.startswith("Unsupported media format: audio must be a .mp3, .wav, .mp4 URL")


def test_budget_off_in_python_as_in_the_magic(nb: Notebook) -> None:
    assert mg.budget(500).limit == 500
    assert mg.budget("off").limit is None
    assert mg.budget("OFF").limit is None
    nb.ok("%mediagen budget 20")
    assert nb.ok("%mediagen budget off").limit is None


def test_the_prompt_of_a_form_takes_several_lines(nb: Notebook) -> None:
    form = mg.form("gpt-image-2")
    assert isinstance(form.fields["prompt"].input, widgets.Textarea)
    assert isinstance(mg.form("zonos2").fields["text"].input, widgets.Textarea)
    assert not isinstance(form.fields["quality"].input, widgets.Textarea)  # options stay a dropdown


def test_history_shows_the_credits_of_an_analysis_and_a_replica(nb: Notebook) -> None:
    analysis = nb.ok(f"%replicate {TIKTOK} --analyze -o plan")
    run = nb.ok(f"%replicate {TIKTOK} --clips 0 --quality low -o rep")
    charged: dict[str, int] = {}
    for entry in nb.charges():
        charged[entry["resource"]] = charged.get(entry["resource"], 0) + entry["credits"]
    rows = {row[2]: row for row in nb.ok("%mediagen history").rows()}
    assert rows[analysis.id][4] == 5 == charged["analysis"]  # the flat analysis charge
    assert rows[run.id][4] == charged["replication"] > 0, rows  # the render's, from the ledger
