"""Forms and catalog cards show the price of what is on screen, never a listed figure as a minimum.

The case of issue 19: an empty infinitetalk form said "from 40 credits" (the catalog's figure, the
price of 10 s of audio at 720p) for a run that then cost 16. Each price a form shows is checked
against what the sandbox charged for that input (its own ledger).
"""

import re
from collections.abc import Iterator
from html import unescape

import pytest

from mediagen_nb import Client, Sandbox
from mediagen_nb.notebook.browser import card_html
from mediagen_nb.notebook.forms import Form
from mediagen_nb.notebook.prices import listed_price
from mediagen_nb.protocol import messages


@pytest.fixture
def client(served: Sandbox) -> Iterator[Client]:
    with Client.for_sandbox(served) as made:
        yield made


def sample(sandbox: Sandbox, name: str) -> str:
    return f"{sandbox.base_url}/_sandbox/samples/{name}"


def charged(sandbox: Sandbox, resource_id: str) -> int:
    entries = sandbox.world.accounts.ledger
    return sum(
        e["credits"] * (1 if e["kind"] == "charge" else -1) for e in entries if e["resourceId"] == resource_id
    )


def test_a_length_billed_form_shows_no_figure_until_its_file_is_chosen(
    client: Client, served: Sandbox
) -> None:
    form = Form("infinitetalk", client, debounce=60)
    try:
        shown = unescape(form.price_line.value)
        assert "from" not in shown and not re.search(r"\d", shown)
        credits, text = form.price()
        assert credits is None and not re.search(r"\d", text)
        assert text.startswith("priced by the audio's length and resolution") and "set audio" in text
        form.set(audio=sample(served, "short-voice.wav"))
        credits, text = form.price()
        assert credits is None and "set image" in text  # the image has no stand-in: no made-up URL is sent
        form.set(image=sample(served, "face.png"))
        credits, text = form.price()
        assert credits is not None and text == (  # the inputs that set it, with their values (issue 20)
            f"{credits} credits: 4 credits per second of input audio at resolution 720p, "
            f"for {credits // 4} s measured; 720p costs twice 480p"
        )
        assert credits < client.model("infinitetalk").credits  # a short clip costs less than the listing
        talk = form.submit()
    finally:
        form.close()
    assert charged(served, talk.id) == credits == talk.credits_spent


def test_a_form_prices_its_current_inputs_before_it_is_complete(client: Client, served: Sandbox) -> None:
    """gpt-image-2's price depends on ``quality`` only, so an empty prompt does not hide it."""
    form = Form("gpt-image-2", client, debounce=60)
    try:
        assert form.price() == (8, "8 credits: 8 credits per image at quality medium (low 3, high 25)")
        form.set(quality="low")  # the default was medium; the price line names what is chosen now
        assert form.price() == (3, "3 credits: 3 credits per image at quality low (medium 8, high 25)")
        form.set(prompt="a lantern on a jetty")
        picture = form.submit()
    finally:
        form.close()
    assert charged(served, picture.id) == 3 == picture.credits_spent


def test_no_card_shows_a_listed_figure_as_a_minimum(client: Client) -> None:
    for model in client.models():
        card = unescape(card_html(model))
        facts = re.findall(r'<div style="color:#555">(.*?)</div>', model._repr_html_())[0]  # a cell's `model`
        assert unescape(facts).endswith(f"price {listed_price(model)}"), model.id  # not "40 credits (varies)"
        assert "from " not in card, model.id
        if model.length_billed_field is not None:  # its listing is the price of a length nobody chose
            assert f"{model.credits} credits" not in card and "length" in card, model.id
        elif model.pricing is None:
            assert f"{messages.credits(model.credits)} per run" in card
