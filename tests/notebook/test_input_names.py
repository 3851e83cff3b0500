"""A typo in an input name is refused on every path that checks inputs: magic, form and sweep (issue 19).

Each refusal sends nothing and charges nothing (the sandbox's own ledger); ``--extra-inputs`` is the
magic's explicit way to send a field the schema does not have.
"""

import pandas as pd
import pytest
from _shell import Notebook

from mediagen_nb.batch import MappingError
from mediagen_nb.client import ValidationError
from mediagen_nb.notebook.forms import Form


def test_the_magic_refuses_a_typo_and_extra_inputs_sends_it(nb: Notebook) -> None:
    message = nb.usage_error("%%generate gpt-image-2 --qualty high\na cat")
    assert message.startswith("unknown option --qualty for gpt-image-2; did you mean --quality?")
    assert "--extra-inputs" in message  # the way through is listed with the options
    message = nb.usage_error("%generate gpt-image-2 prompt=cat qualty=high")
    assert message.startswith("unknown input qualty for gpt-image-2; did you mean quality=?")
    assert nb.sent("run") == [] and nb.sent("estimate") == [] and nb.charges() == []

    price = nb.ok("%%generate gpt-image-2 --qualty high --extra-inputs --estimate\na cat")
    assert price.credits == 8  # the service ignores the field: the default quality's price
    result = nb.ok("%%generate gpt-image-2 --qualty high --extra-inputs\na cat")
    assert nb.generation(result).input["qualty"] == "high"
    assert [e["resourceId"] for e in nb.charges()] == [result.id]


def test_a_form_refuses_a_name_the_model_does_not_have(nb: Notebook) -> None:
    form = Form("gpt-image-2")
    try:
        with pytest.raises(ValidationError) as raised:
            form.set(prompt="a cat", qualty="high")
        assert raised.value.message == "qualty: not an input of gpt-image-2; did you mean quality?"
        assert raised.value.field == "qualty" and raised.value.sent is False
    finally:
        form.close()
    assert nb.sent("run") == [] and nb.charges() == []


def test_a_sweep_refuses_a_constant_with_a_typo(nb: Notebook) -> None:
    df = pd.DataFrame({"prompt": ["a fox", "a hare"]})
    for operation in ("estimate", "run"):
        with pytest.raises(MappingError) as raised:
            getattr(df.mediagen, operation)("gpt-image-2", qualty="high", progress=False)
        assert "'qualty' is not an input of gpt-image-2; did you mean 'quality'?" in raised.value.message
        assert raised.value.field == "qualty"
    assert nb.sent("run") == [] and nb.sent("estimate") == [] and nb.charges() == []
