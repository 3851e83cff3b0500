"""Each row's price is explained by the inputs that set it, with their values, and the charge agrees.

The cases of issue 20: a sweep's rows costing 3 and 25 credits were all labelled "8 credits per image
at quality medium" (one model-wide text for every estimate); a 480p lip-sync was explained "at
resolution 720p"; an audio URL the service cannot read was priced as 30 s (120 credits) without
saying so, nor that the run would be refused. Every figure is checked against the sandbox's ledger.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from mediagen_nb.batch import loop
from mediagen_nb.client import BadRequestError

if TYPE_CHECKING:
    from conftest import Service


def charged(service: Service) -> dict[str, int]:
    """Net credits per generation, from the sandbox's own ledger."""
    net: dict[str, int] = {}
    for entry in service.ledger():
        sign = 1 if entry["kind"] == "charge" else -1
        net[entry["resourceId"]] = net.get(entry["resourceId"], 0) + sign * entry["credits"]
    return net


def test_each_row_names_its_own_quality_and_is_charged_what_it_says(service: Service) -> None:
    qualities = ["low", "high", "medium", "low", "high"]
    df = pd.DataFrame({"prompt": [f"a kite {i}" for i in range(5)], "quality": qualities})
    priced = df.mediagen.estimate("gpt-image-2", client=service.client, show=False)
    for quality, credits, billing in zip(qualities, priced["credits"], priced["billing"], strict=True):
        assert billing.startswith(f"{credits} credits per image at quality {quality} ("), billing
        others = re.findall(r"\((.*)\)", billing)[0]
        assert quality not in others  # the other options' prices, not this row's
    done = df.mediagen.run("gpt-image-2", client=service.client, progress=False)
    net = charged(service)
    assert [net[g] for g in done["generation_id"]] == priced["credits"].tolist() == [3, 25, 8, 3, 25]


def test_a_480p_lip_sync_is_explained_at_480p_with_its_measured_length(service: Service) -> None:
    df = pd.DataFrame(
        {
            "image": [service.sample("face.png")] * 2,
            "audio": [service.sample("short-voice.wav"), service.sample("voice.wav")],
            "resolution": ["480p", "720p"],
        }
    )
    priced = df.mediagen.estimate("infinitetalk", client=service.client, show=False)
    low, high = priced["billing"]
    assert "at resolution 480p" in low and "720p" not in low.split(";")[0]
    assert "at resolution 720p" in high
    seconds = [int(re.findall(r"for (\d+) s measured", text)[0]) for text in priced["billing"]]
    assert priced["credits"].tolist() == [2 * seconds[0], 4 * seconds[1]]  # 2 a second at 480p, 4 at 720p
    done = df.mediagen.run("infinitetalk", client=service.client, progress=False)
    net = charged(service)
    assert [net[g] for g in done["generation_id"]] == priced["credits"].tolist()


@pytest.mark.parametrize("model", ["infinitetalk", "zonos2"])
def test_an_unreadable_file_says_30_s_were_assumed_and_that_a_run_is_refused(
    service: Service, model: str
) -> None:
    missing = service.sample("no-such-voice.mp3")  # answers 404: its length cannot be read
    inputs = {"image": service.sample("face.png"), "audio": missing}
    if model == "zonos2":
        inputs = {"text": "Hello there", "audio": missing}
    df = pd.DataFrame([inputs])
    priced = df.mediagen.estimate(model, client=service.client, show=False)
    [billing] = priced["billing"]
    assert ", for 30 s assumed" in billing
    assert billing.endswith(
        "the audio's length could not be read, so it was assumed; a run would refuse this file"
    )
    if model == "infinitetalk":
        assert priced["credits"].tolist() == [120]  # 4 credits a second at 720p, for the assumed 30 s
    with pytest.raises(BadRequestError, match="audio URL is not reachable"):
        loop.submit(service.client.run(model, inputs)).result(60)
    assert service.ledger() == []  # refused: nothing charged
