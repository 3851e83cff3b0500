"""The catalog browser: filters by kind, group and text, paged cards, and Open giving a model's form."""

from collections import Counter
from collections.abc import Iterator

import pytest

from mediagen_nb import Client, Sandbox
from mediagen_nb.notebook.browser import PAGE_SIZE, CatalogBrowser, card_html, catalog
from mediagen_nb.notebook.forms import Form
from mediagen_nb.notebook.session import SESSION


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    sandbox = Sandbox(time_scale=600, seed=1).start()
    with Client.for_sandbox(sandbox) as c:
        yield c
    sandbox.stop()


@pytest.fixture
def browser(client: Client) -> Iterator[CatalogBrowser]:
    b = CatalogBrowser(client)
    yield b
    if b.form is not None:
        b.form.close()


def test_filter_counts_by_kind(browser: CatalogBrowser) -> None:
    assert len(browser.filter()) == len(browser.filter(kind="all")) == 130
    assert len(browser.filter(kind="image")) == 41
    assert len(browser.filter(kind="video")) == 72
    assert len(browser.filter(kind="audio")) == 17
    assert all(m.output_type == "audio" for m in browser.filter(kind="audio"))


def test_filter_by_group_and_text(browser: CatalogBrowser) -> None:
    groups = Counter(m.group for m in browser.models)
    assert len(browser.filter(group="Lip-sync")) == groups["Lip-sync"] > 0
    assert {m.id for m in browser.filter(group="Lip-sync")} >= {"infinitetalk", "infinitetalk-fast"}
    assert browser.filter(kind="image", group="Lip-sync") == []

    assert {m.id for m in browser.filter(text="infinitetalk")} == {"infinitetalk", "infinitetalk-fast"}
    assert [m.id for m in browser.filter(text="ZONOS")] == ["zonos2"]  # any case
    assert "gpt-image-2" in {m.id for m in browser.filter(text="GPT Image")}  # name, every word
    assert "gpt-image-2" in {m.id for m in browser.filter(text="portraits product")}  # description
    assert browser.filter(text="no such model anywhere") == []
    assert len(browser.filter(kind="video", text="upscale")) < len(browser.filter(text="upscale"))


def test_controls_page_through_the_cards(browser: CatalogBrowser) -> None:
    assert len(browser.grid.children) == PAGE_SIZE and browser.pages == 6
    assert browser.prev_button.disabled and not browser.next_button.disabled
    assert "130 models" in browser.count.value and "page 1 of 6" in browser.count.value

    browser.next_button.click()
    assert browser.page == 1 and not browser.prev_button.disabled
    last = browser.show(99)  # clamped to the last page
    assert browser.page == 5 and len(last) == 130 - 5 * PAGE_SIZE and browser.next_button.disabled

    browser.kind.value = "audio"  # a filter change starts again at page 1
    assert browser.page == 0 and len(browser.grid.children) == 17 and browser.pages == 1
    assert browser.next_button.disabled and "17 models" in browser.count.value
    browser.group.value = "Voice cloning"
    browser.text.value = "zonos"
    assert [m.id for m in browser.shown] == ["zonos2"] and len(browser.grid.children) == 1
    browser.text.value = "nothing like this"
    assert browser.shown == [] and browser.grid.children == () and "0 models" in browser.count.value


def test_cards_show_preview_price_and_billing(browser: CatalogBrowser) -> None:
    by_id = {m.id: m for m in browser.models}
    flat = next(m for m in browser.models if m.pricing is None)
    card = card_html(flat)
    assert f'src="{flat.preview_url}"' in card and 'loading="lazy"' in card
    assert f"{flat.credits} credits per run" in card and flat.id in card
    assert "varies by quality (billed per option); listed at 8 credits" in card_html(by_id["gpt-image-2"])
    assert "priced by the audio&#x27;s length (billed per media second)" in card_html(by_id["zonos2"])
    html_of_cards = " ".join(box.children[0].value for box in browser.grid.children)
    assert html_of_cards.count("<img") == PAGE_SIZE


def test_cards_escape_catalog_text(browser: CatalogBrowser) -> None:
    from mediagen_nb import Model

    evil = Model(
        id="x",
        name="<script>alert(1)</script>",
        description="d",
        preview_url='javascript:alert(1)"',
        credits=1,
    )
    card = card_html(evil)
    assert "<script>" not in card and "&lt;script&gt;" in card and "javascript:" not in card


def test_open_shows_the_form_in_place_of_the_cards_and_back_returns(browser: CatalogBrowser) -> None:
    """The form opens where the click was (the cards hide, a back button leads back to them as they were)."""
    form = browser.open("gpt-image-2")
    assert isinstance(form, Form) and form.model.id == "gpt-image-2" and browser.form is form
    assert browser.detail.children == (browser.back_button, form.widget)
    assert browser.browsing.layout.display == "none"
    second = browser.open("zonos2")
    assert browser.detail.children == (browser.back_button, second.widget) and browser.form is second
    browser.back_button.click()
    assert browser.form is None and browser.detail.children == () and browser.browsing.layout.display is None

    browser.text.value = "infinitetalk-fast"
    open_button = browser.grid.children[0].children[1]
    open_button.click()  # the card's Open button calls open()
    assert browser.form is not None and browser.form.model.id == "infinitetalk-fast"
    assert browser.detail.children == (browser.back_button, browser.form.widget)
    browser.back()
    assert browser.text.value == "infinitetalk-fast" and len(browser.grid.children) == 1  # as it was


def test_catalog_uses_the_session_client_and_renders(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    SESSION.use(client)  # the autouse fixture forgets it after the test
    b = catalog()
    assert b.client is client and len(b.models) == 130
    bundle = b._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == b.widget.model_id
    assert "130" in repr(b)
