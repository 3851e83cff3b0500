"""An input name the model's schema does not have is refused before anything is sent (issue 19).

The case of the issue: ``qualty="high"`` was sent as it was, the service ran the default quality and
the user paid for a picture they did not ask for. Each test runs on a sync ``Client`` over real HTTP
and an ``AsyncClient`` in-process; the sandbox's own ledger says what was charged.
"""

from typing import Any

import pytest
from _kit import Kit

from mediagen_nb.client import ValidationError

pytestmark = pytest.mark.anyio
TYPO = "qualty: not an input of gpt-image-2; did you mean quality?"


@pytest.mark.parametrize("operation", ["run", "estimate", "generate"])
@pytest.mark.parametrize("style", ["keywords", "input"])
async def test_a_typo_in_an_input_name_is_refused_naming_the_nearest(
    kit: Kit, operation: str, style: str
) -> None:
    asked = {"prompt": "a paper boat", "qualty": "high"}
    args: tuple[Any, ...] = ("gpt-image-2", asked) if style == "input" else ("gpt-image-2",)
    kwargs = {} if style == "input" else asked
    with pytest.raises(ValidationError) as raised:
        await kit.call(operation, *args, **kwargs)
    error = raised.value
    assert error.message.startswith(TYPO) and "extra_inputs=True" in error.message
    assert error.field == "qualty" and error.sent is False and error.status is None
    assert kit.recorder.non_catalog() == [], "nothing but the catalog may be read"
    assert kit.ledger() == []


async def test_a_name_with_nothing_near_is_refused_without_a_guess(kit: Kit) -> None:
    with pytest.raises(ValidationError) as raised:
        await kit.call("run", "gpt-image-2", prompt="a paper boat", zzz=1)
    assert raised.value.message.startswith("zzz: not an input of gpt-image-2 (")
    assert "did you mean" not in raised.value.message and kit.ledger() == []


async def test_the_internal_length_field_is_not_an_input(kit: Kit) -> None:
    """``_audioDurationSec`` is the service's internal value, "never sent by the caller"."""
    with pytest.raises(ValidationError) as raised:
        await kit.call("estimate", "zonos2", text="Hi", audio=kit.sample("voice.wav"), _audioDurationSec=1)
    assert raised.value.field == "_audioDurationSec" and kit.recorder.non_catalog() == []


async def test_extra_inputs_sends_unknown_names_as_they_are(kit: Kit) -> None:
    """The explicit way through: the service keeps the field and charges the default quality."""
    estimate = await kit.call(
        "estimate", "gpt-image-2", prompt="a paper boat", qualty="high", extra_inputs=True
    )
    started = await kit.call("run", "gpt-image-2", prompt="a paper boat", qualty="high", extra_inputs=True)
    received = kit.sandbox.world.generations.items[started.id].input
    assert received["qualty"] == "high" and received["quality"] == "medium"
    [charge] = [e for e in kit.ledger(started.id) if e["kind"] == "charge"]
    assert charge["credits"] == estimate.credits == started.credits_spent == 8


async def test_check_input_refuses_and_allows_the_same_way(kit: Kit) -> None:
    model = await kit.call("model", "gpt-image-2")
    with pytest.raises(ValidationError, match="did you mean quality"):
        kit.client.check_input(model, {"prompt": "x", "qualty": "low"})
    checked = kit.client.check_input(model, {"prompt": "x", "qualty": "low"}, extra_inputs=True)
    assert checked == {"prompt": "x", "qualty": "low"}
