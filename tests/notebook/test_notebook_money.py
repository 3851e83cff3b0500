"""The notebook and money: one connection for every layer, re-runs and clicks that never pay twice.

Each test checks what was charged in the sandbox's own ledger (``/_sandbox/ledger``).
"""

import os
import signal
import threading
from typing import Any

import httpx
import pandas as pd
import pytest
from _shell import Notebook, assert_short
from _wait import wait_until
from IPython.core.error import UsageError

import mediagen_nb as mg
from mediagen_nb.client import BudgetExceeded, Client, Generation, VideoEstimate, settings
from mediagen_nb.client.assemble import embedded_sandbox
from mediagen_nb.notebook.forms import Form
from mediagen_nb.protocol import ownership
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig


def embedded_charges() -> list[dict[str, Any]]:
    sandbox = embedded_sandbox()  # it answers its owner alone: the owner's token goes along
    owner = {ownership.HEADER: sandbox.token.reveal()}
    answer = httpx.get(sandbox.base_url + path("sandbox_ledger"), headers=owner, timeout=10)
    entries = answer.json()["data"]["entries"]
    return [e for e in entries if e["kind"] == "charge"]


def test_use_sandbox_switches_sweeps_too(
    nb: Notebook, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a service configured in the environment, ``%mediagen use sandbox`` moves the magics, the
    forms *and* ``df.mediagen`` to the embedded sandbox: the service's ledger is unchanged."""
    monkeypatch.setenv(settings.ENV_KEY, nb.sandbox.demo_key)
    monkeypatch.setenv(settings.ENV_BASE_URL, str(nb.sandbox.base_url))
    nb.ok("%mediagen use service")
    assert f"now uses {nb.sandbox.base_url.split('//')[1]}" in capsys.readouterr().out
    before_service, before_embedded = nb.charges(), len(embedded_charges())
    nb.ok("%mediagen use sandbox")
    assert "every magic, form and sweep now uses the embedded sandbox" in capsys.readouterr().out
    nb.ns["pd"] = pd
    out = nb.ok(
        "df = pd.DataFrame({'prompt': ['a fox', 'a hare']})\ndf.mediagen.run('flare-1-swift', progress=False)"
    )
    assert (out["status"] == "succeeded").all()
    nb.ok("%%generate flare-1-swift\na badger")
    assert mg.form("flare-1-swift").client is mg.current()
    assert nb.charges() == before_service, "the service was charged after %mediagen use sandbox"
    assert len(embedded_charges()) == before_embedded + 3


def test_the_same_cell_twice_is_one_charge_and_says_reused(nb: Notebook) -> None:
    """Re-running a cell returns the same generation at no charge, says so; --fresh makes a new one."""
    first = nb.ok("%%generate gpt-image-2 --quality low -o face\na lighthouse at dawn")
    second = nb.ok("%%generate gpt-image-2 --quality low -o face\na lighthouse at dawn")
    assert second.id == first.id and second.reused and not first.reused
    assert nb.ns["face"] is second
    assert [e["resourceId"] for e in nb.charges()] == [first.id]
    assert len(nb.sent("run", "POST")) == 1  # the re-run sent no start at all
    third = nb.ok("%%generate gpt-image-2 --quality low --fresh\na lighthouse at dawn")
    assert third.id != first.id and not third.reused and len(nb.charges()) == 2
    assert nb.ok("%%generate gpt-image-2 --quality low\na lighthouse at dawn").id == third.id
    assert [item.id for item in nb.ok("%mediagen history").items] == [first.id, third.id]


def test_reused_line_in_the_live_status(nb: Notebook, monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    from mediagen_nb.notebook import cells

    class Recorder(cells.Live):
        def close(self, status: str, ok: bool = True) -> None:
            lines.append(status)
            super().close(status, ok)

    monkeypatch.setattr(cells, "Live", Recorder)
    nb.ok("%%generate gpt-image-2 --quality low\na quiet pond")
    nb.ok("%%generate gpt-image-2 --quality low\na quiet pond")
    assert lines[0].endswith("· 3 credits") and "reused from " in lines[1]
    assert lines[1].endswith("no charge; --fresh for a new one")


@pytest.mark.usefixtures("ctrl_c")  # a real SIGINT to this process
def test_ctrl_c_during_generate_keeps_the_start_and_the_rerun_is_free(
    served_slow: Sandbox, nb: Notebook, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGINT while ``%%generate`` waits: the cell stops, the started generation stays in ``-o NAME``
    and the history; running the cell again picks it up and finishes it, with one charge."""
    nb.use_on(served_slow)
    sent = threading.Event()

    def long_poll_sent() -> bool:
        return any(r.method == "GET" and "wait" in r.url.params for r in nb.requests)

    def interrupt() -> None:
        ledger = served_slow.world.accounts.ledger
        wait_until(lambda: any(e["kind"] == "charge" for e in ledger), 20, "the start's charge")
        wait_until(long_poll_sent, 20, "the cell's long poll")  # Ctrl-C reaches the cell inside it
        sent.set()
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    result = nb.run("%%generate gpt-image-2 --quality low -o face\na slow portrait")
    assert sent.is_set() and isinstance(result.error_in_exec, KeyboardInterrupt)
    shown = capsys.readouterr().out  # IPython's KeyboardInterrupt: our message, none of our frames
    assert "run the cell again to pick it up at no charge" in shown and "mediagen_nb/client" not in shown
    kept = nb.ns["face"]
    assert isinstance(kept, Generation) and kept.status == "processing"
    assert nb.ok("%mediagen history").items[-1].id == kept.id
    again = nb.ok("%%generate gpt-image-2 --quality low -o face\na slow portrait")
    assert again.id == kept.id and again.status == "succeeded"
    charges = [e for e in served_slow.world.accounts.ledger if e["kind"] == "charge"]
    assert [e["resourceId"] for e in charges] == [kept.id]


def test_two_quick_clicks_on_run_are_one_charge(nb: Notebook) -> None:
    """Two clicks on a form's Run before the first finishes, and two submits from two threads: one
    generation, one charge."""
    form = Form("gpt-image-2").set(prompt="a red kite", quality="low")
    form._clicked(form.run_button)
    form._clicked(form.run_button)
    wait_until(lambda: not form._running, 20, "the form's run to end")
    assert len(form.history) == 1
    results: list[Generation] = []
    threads = [threading.Thread(target=lambda: results.append(form.submit())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert {g.id for g in results} == {form.history[0].id}
    assert [e["resourceId"] for e in nb.charges()] == [form.history[0].id]
    assert "no charge" in form.status.value
    fresh = form.submit(fresh=True)
    assert fresh.id != form.history[0].id and len(nb.charges()) == 2


def test_budget_magic_caps_the_kernel(nb: Notebook) -> None:
    assert "no session budget" in str(nb.ok("%mediagen budget"))
    nb.ok("%mediagen budget 5")
    nb.ok("%%generate gpt-image-2 --quality low\na swift")  # 3 credits
    message = nb.usage_error("%%generate gpt-image-2 --quality low\na swallow")
    assert_short(message, "budget: gpt-image-2 would cost 3 credits, but 3 of the session budget")
    assert len(nb.charges()) == 1
    assert "2 left" in str(nb.ok("%mediagen budget"))
    nb.ok("%mediagen budget off")
    nb.ok("%%generate gpt-image-2 --quality low\na swallow")
    assert len(nb.charges()) == 2
    with pytest.raises(UsageError):
        nb.shell.run_line_magic("mediagen", "budget lots")
    with pytest.raises(BudgetExceeded):
        mg.budget(0)
        Client.for_sandbox(nb.sandbox).run("gpt-image-2", prompt="refused", quality="low")
    mg.budget(None)


def test_make_video_estimate_prices_from_the_catalog_and_says_what_it_cannot(nb: Notebook) -> None:
    estimate = nb.ok("%%make_video --seconds 30 --estimate\nwhy owls turn their heads")
    assert isinstance(estimate, VideoEstimate) and estimate.at_least > 0
    assert "not knowable before it runs" in str(estimate) and "the script" in str(estimate)
    assert nb.charges() == [] and nb.sent("job_start") == []


def test_make_video_rerun_is_free(nb: Notebook) -> None:
    job = nb.ok("%%make_video --seconds 20 -o job\nwhy owls turn their heads")
    again = nb.ok("%%make_video --seconds 20 -o job\nwhy owls turn their heads")
    assert again.id == job.id and again.reused and len(nb.sent("job_start")) == 1


@pytest.fixture
def served_slow() -> Any:
    """A sandbox at x10, so a picture takes a few real seconds: time to press Ctrl-C."""
    with Sandbox(SandboxConfig(time_scale=10.0, seed=3)) as sandbox:
        yield sandbox
