"""The Idempotency-Key of a start is derived from everything asked, and from nothing else (issue 35).

Every part of what is asked (kind, scope, model, input, run name, occurrence) changes the key; the
same ask keeps it, across dict orders and releases. On the sandbox, with ``reuse=True``: the same
input on two models is two generations and two charges, the same ask again is one, a variation is
another, and another account's ask is its own (checked on the sandbox's own ledger).
"""

import datetime
from typing import Any

import pytest

from mediagen_nb.client import AsyncClient, idempotency
from mediagen_nb.client.idempotency import SINGLE, SWEEP, ask, derive
from mediagen_nb.client.uploads import UPLOADED
from mediagen_nb.sandbox import Sandbox

pytestmark = pytest.mark.anyio
SCALE = 600.0

INPUT = {"prompt": "a lighthouse at dawn", "seed": 7}
BASE: dict[str, Any] = {
    "kind": "generation",
    "scope": SINGLE,
    "model_id": "flare-1-pro",
    "input": INPUT,
    "run_name": "",
    "occurrence": 1,
}
# Each part of an ask, changed alone: every one must give another key.
CHANGES = {
    "kind": "analysis",
    "scope": SWEEP,
    "model_id": "flare-1-dev",
    "input": {**INPUT, "seed": 8},
    "run_name": "second pass",
    "occurrence": 2,
}


def key_of(**parts: Any) -> str:
    asked = {**BASE, **parts}
    return derive(
        asked["kind"],
        asked["scope"],
        asked["model_id"],
        asked["input"],
        run_name=asked["run_name"],
        occurrence=asked["occurrence"],
    )


@pytest.mark.parametrize("part", sorted(CHANGES))
def test_every_part_of_the_ask_changes_the_key(part: str) -> None:
    assert key_of(**{part: CHANGES[part]}) != key_of()


@pytest.mark.parametrize(
    "changed",
    [
        {"prompt": "a lighthouse at dusk"},
        {"prompt": "a lighthouse at dawn", "seed": 7, "quality": "low"},  # an input added
        {"prompt": "a lighthouse at dawn"},  # an input left out
        {"prompt": "a lighthouse at dawn", "seed": "7"},  # the same digits as text
    ],
    ids=["value", "added", "left-out", "type"],
)
def test_every_change_of_the_input_changes_the_key_and_the_ask(changed: dict[str, Any]) -> None:
    assert key_of(input=changed) != key_of()
    assert ask("generation", "flare-1-pro", changed) != ask("generation", "flare-1-pro", INPUT)


def test_the_ask_names_the_kind_the_model_and_the_input_but_not_the_variation() -> None:
    """The ledger finds an ask's variations by ``ask``: model and kind are in it, scope and occurrence not."""
    same = ask("generation", "flare-1-pro", INPUT)
    assert ask("generation", "flare-1-dev", INPUT) != same
    assert ask("analysis", "flare-1-pro", INPUT) != same
    assert ask("generation", "flare-1-pro", dict(reversed(INPUT.items()))) == same
    assert len(same) == 32 and int(same, 16) >= 0


def test_the_same_ask_keeps_its_key_in_any_order_and_across_releases() -> None:
    """A re-run after an upgrade must find the generations it paid for: the derivation is pinned."""
    assert key_of(input=dict(reversed(INPUT.items()))) == key_of()
    assert key_of() == "mgnb-fca98dea33bed84408b8744b3f9974ef4e5882f1"
    assert ask("generation", "flare-1-pro", INPUT) == "244da474caccb6f88c7b2589634db1e2"


def test_a_key_of_text_in_any_script_and_of_values_json_lacks_is_pinned_too() -> None:
    """The derivation keeps non-ASCII text as it is and writes what JSON cannot carry (a date) as text;
    a run name and an occurrence left out are the empty name and the first."""
    asked = {"prompt": "un phare à l'aube", "day": datetime.date(2026, 9, 16)}
    key = derive("generation", SINGLE, "flare-1-pro", asked)
    assert key == derive("generation", SINGLE, "flare-1-pro", asked, run_name="", occurrence=1)
    assert key == "mgnb-e9e4cf9379d054c65bdfab4cf5384c69e46902a2"


def test_a_key_is_marked_as_derived_and_well_under_what_the_service_reads() -> None:
    key = key_of(input={"prompt": "é" * 5000})  # a long, non-ASCII input still gives a short ASCII key
    assert key.startswith(idempotency.PREFIX) and len(key) == len(idempotency.PREFIX) + 40
    assert key.isascii() and len(key) < 255


def test_a_local_file_counts_by_its_content_not_the_url_it_was_put_at(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Uploaded files get a new (presigned) URL each time: the key follows the file's content name."""
    sources = {"https://store.example/a?sig=1": "sha256-abc", "https://store.example/a?sig=2": "sha256-abc"}
    monkeypatch.setattr(UPLOADED, "sources", sources)
    first = key_of(
        input={"image": "https://store.example/a?sig=1", "others": ["https://store.example/a?sig=2"]}
    )
    again = key_of(
        input={"image": "https://store.example/a?sig=2", "others": ["https://store.example/a?sig=1"]}
    )
    other = key_of(input={"image": "https://store.example/b", "others": ["https://store.example/a?sig=1"]})
    assert first == again != other


# ----------------------------------------------------------------------------- on the sandbox's ledger


def charges(sandbox: Sandbox) -> list[tuple[str, int]]:
    """(resource id, credits) of every charge on the sandbox's own ledger, net of refunds."""
    net: dict[str, int] = {}
    for entry in sandbox.world.accounts.ledger:
        if entry["kind"] in ("charge", "refund") and entry["resourceId"]:
            sign = 1 if entry["kind"] == "charge" else -1
            net[entry["resourceId"]] = net.get(entry["resourceId"], 0) + sign * entry["credits"]
    return [(resource, credits) for resource, credits in net.items() if credits]


async def test_the_same_input_on_two_models_is_two_generations_and_two_charges(
    async_client: AsyncClient, sandbox: Sandbox
) -> None:
    """The issue's case: one prompt with ``reuse=True`` on flare-1-pro, then on flare-1-dev. Each
    model makes its own generation and charges its own price; asking either again charges nothing."""
    pro = await async_client.run("flare-1-pro", INPUT, reuse=True)
    dev = await async_client.run("flare-1-dev", INPUT, reuse=True)
    assert (pro.model_id, dev.model_id) == ("flare-1-pro", "flare-1-dev")
    assert pro.id != dev.id and not pro.reused and not dev.reused
    assert charges(sandbox) == [(pro.id, 5), (dev.id, 3)]
    again = [await async_client.run(m, INPUT, reuse=True) for m in ("flare-1-dev", "flare-1-pro")]
    assert [(g.id, g.model_id, g.reused) for g in again] == [
        (dev.id, "flare-1-dev", True),
        (pro.id, "flare-1-pro", True),
    ]
    assert charges(sandbox) == [(pro.id, 5), (dev.id, 3)]


async def test_a_fresh_variation_is_a_new_generation_and_the_latest_is_reused(
    async_client: AsyncClient, sandbox: Sandbox
) -> None:
    """``fresh=True`` asks for the next variation (the next occurrence of the ask): one more charge; a
    plain re-run afterwards reuses that newest variation."""
    first = await async_client.run("flare-1-swift", INPUT, reuse=True)
    second = await async_client.run("flare-1-swift", INPUT, reuse=True, fresh=True)
    third = await async_client.run("flare-1-swift", INPUT, reuse=True, fresh=True)
    again = await async_client.run("flare-1-swift", INPUT, reuse=True)
    assert len({first.id, second.id, third.id}) == 3
    assert again.id == third.id and again.reused
    assert charges(sandbox) == [(first.id, 1), (second.id, 1), (third.id, 1)]


async def test_another_account_asking_the_same_gets_and_pays_for_its_own(
    async_client: AsyncClient, sandbox: Sandbox
) -> None:
    """The service keeps keys per account, and the ledger's rows say whose they are: the same ask from
    another account (on the same ledger) is its own generation, charged to it, never the first one's;
    and the first account asking again is answered its own, at no charge."""
    mine = await async_client.run("flare-1-dev", INPUT, reuse=True)
    other_key = sandbox.world.accounts.create_key({"account": "other", "name": "theirs"}).secret
    async with AsyncClient(
        other_key, base_url="http://sandbox.local", transport=sandbox.transport(), time_scale=SCALE
    ) as theirs_client:
        theirs = await theirs_client.run("flare-1-dev", INPUT, reuse=True)
        again = await theirs_client.run("flare-1-dev", INPUT, reuse=True)
    assert theirs.id != mine.id and not theirs.reused
    assert again.id == theirs.id and again.reused
    by_account = {
        (e["account"], e["resourceId"]) for e in sandbox.world.accounts.ledger if e["kind"] == "charge"
    }
    assert by_account == {("demo", mine.id), ("other", theirs.id)}
    mine_again = await async_client.run("flare-1-dev", INPUT, reuse=True)
    assert mine_again.id == mine.id and mine_again.model_id == "flare-1-dev"
    assert charges(sandbox) == [(mine.id, 3), (theirs.id, 3)]
