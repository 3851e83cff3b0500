"""A form's "copy as code" reproduces the form's run (issue 19).

The case of the issue: a ``%%generate`` cell copied from a form dropped the schema defaults the form
sent, so it asked for something else (another Idempotency-Key) and running it paid again. Now the
copied cell and the copied Python call find the form's generation at no charge; the sandbox's own
ledger shows one charge.
"""

import json
from typing import Any

import pytest
from _shell import Notebook

import mediagen_nb as mg
from mediagen_nb.client import Client
from mediagen_nb.notebook.forms import Form, main_text_field
from mediagen_nb.notebook.parsing import parse_fields, split


@pytest.mark.parametrize(
    ("model_id", "inputs"),
    [
        ("gpt-image-2", {"prompt": "a red kite over the dunes", "quality": "low"}),
        ("prism-xl", {"prompt": "a lighthouse", "seed": 7, "guidance_scale": 2.5}),  # many defaults
    ],
)
def test_the_copied_cell_and_call_reuse_the_forms_generation(
    nb: Notebook, model_id: str, inputs: dict[str, Any]
) -> None:
    form = Form(model_id).set(**inputs)
    try:
        made = form.submit()
        code = form.code()
    finally:
        form.close()
    assert not made.reused and made.status == "succeeded"

    copied = nb.ok(code.cell)
    assert copied.id == made.id and copied.reused
    nb.ns["client"] = mg.current()
    nb.ok(f"again = {code.python}")
    assert nb.ns["again"].id == made.id and nb.ns["again"].reused
    assert [e["resourceId"] for e in nb.charges()] == [made.id]  # one charge for all three
    [start] = nb.sent("run")  # one start was sent, by the form, with every input it shows
    assert json.loads(start.content)["input"] == form.values


def test_every_catalog_form_reads_back_from_its_cell(nb: Notebook) -> None:
    """For each of the 130 models, the copied cell's options and body parse to the form's input."""
    client: Client = mg.current()  # type: ignore[assignment]
    for model in client.models():
        form = Form(model, client, debounce=60)
        try:
            body_field = main_text_field(model)
            if body_field is not None:
                form.set(**{body_field: "a quiet harbour"})
            line, _, body = form.code().cell.partition("\n")
            parsed = parse_fields(split(line)[2:], model.id, model.properties, {}, {}).inputs
            if body:
                parsed[str(body_field)] = body
            assert parsed == form.values, model.id
        finally:
            form.close()
