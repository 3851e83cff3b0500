"""Results as they finish: ``handle.as_completed()``, ``async for``, ``on_row=`` and ``handle.frame()``."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pytest
from _wait import loop_settled, wait_until

from mediagen_nb.batch import loop
from mediagen_nb.batch.handle import RowResult, SweepHandle

if TYPE_CHECKING:
    from conftest import Service, ServiceFactory


def frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"prompt": [f"a lantern, take {i}" for i in range(n)], "tag": list(range(n))})


def submit(service: Service, df: pd.DataFrame, tmp_path: Path, **options: Any) -> SweepHandle:
    return df.mediagen.submit(
        "flare-1-swift", client=service.client, ledger=tmp_path / "l.sqlite", progress=False, **options
    )


def test_as_completed_yields_every_row_once_as_it_ends(service: Service, tmp_path: Path) -> None:
    df = frame(12)
    df.loc[5, "prompt"] = ""  # an invalid row ends too (at once)
    handle = submit(service, df, tmp_path)
    seen = list(handle.as_completed(timeout=30))
    assert sorted(r.position for r in seen) == list(range(12))
    assert {r.status for r in seen} == {"succeeded", "invalid"}
    assert seen[0].status == "invalid" and seen[0].label == 5  # ended before any generation did
    done = next(r for r in seen if r.status == "succeeded")
    assert isinstance(done, RowResult) and done.values["tag"] == done.position and done.output_url
    assert done.input == {"prompt": f"a lantern, take {done.position}"} and done.credits == 1
    assert list(handle.as_completed()) == seen  # after the end: the same rows, then it stops
    assert handle.result(timeout=10)["status"].value_counts().to_dict() == {"succeeded": 11, "invalid": 1}


def test_async_for_over_a_handle(service: Service, tmp_path: Path) -> None:
    handle = submit(service, frame(6), tmp_path)

    async def collect() -> list[RowResult]:
        return [row async for row in handle]

    rows = asyncio.run(collect())
    assert sorted(r.position for r in rows) == list(range(6))


def test_on_row_is_called_for_each_row_off_the_sweeps_loop(service: Service, tmp_path: Path) -> None:
    """A slow, even failing, callback neither slows the sweep nor stops it; it sees every row."""
    calls: list[tuple[int, str]] = []
    finished = threading.Event()

    def on_row(row: RowResult) -> None:
        if not calls:  # the first callback is stuck until the sweep has started every row without it
            wait_until(
                lambda: len(service.charges()) == 8, what="every row started while a callback is stuck"
            )
        calls.append((row.position, threading.current_thread().name))
        if len(calls) == 8:  # before the raise: row 3 may be the last to end
            finished.set()
        if row.position == 3:
            raise ValueError("the callback's own bug")

    out = submit(service, frame(8), tmp_path, on_row=on_row).result(timeout=30)
    assert (out["status"] == "succeeded").all()
    assert finished.wait(10)
    assert sorted(p for p, _ in calls) == list(range(8))
    assert {name for _, name in calls} == {"mediagen-on-row"}


def test_frame_so_far_shows_rows_that_ended(make_service: ServiceFactory, tmp_path: Path) -> None:
    service = make_service(time_scale=30.0)
    handle = submit(service, frame(60), tmp_path)
    wait_until(lambda: handle.progress["done"] >= 5, 30, "5 rows done")
    so_far = handle.frame()
    statuses = set(so_far["status"])
    assert "succeeded" in statuses and statuses & {"pending", "processing"}
    assert (so_far.loc[so_far["status"] == "succeeded", "output_url"].notna()).all()
    out = handle.result(timeout=60)
    assert handle.frame() is out and (out["status"] == "succeeded").all()


def test_a_live_preview_fills_in_as_rows_finish(make_service: ServiceFactory, tmp_path: Path) -> None:
    service = make_service(time_scale=30.0)
    handle = submit(service, frame(12), tmp_path)
    view = handle.preview(live=True, width=120)
    assert view.value.count("<img ") < 12  # drawn at once, before the rows have ended
    out = handle.result(timeout=60)  # waits for the preview's final drawing (a saved notebook keeps it)
    assert view.drawn.is_set() and view.value.count("<img ") == 12
    assert all(url in view.value for url in out["output_url"])
    still = handle.preview()  # not live: the gallery of the frame as it is
    assert still._repr_html_().count("<img ") == 12


def test_result_returns_after_every_on_row_callback_has_run(service: Service, tmp_path: Path) -> None:
    """A slow callback is still working through the rows when the sweep ends: ``result()`` waits for
    it, so every row has been seen when it returns (before: the callbacks still pending were dropped)."""
    seen: list[int] = []
    handles: list[SweepHandle] = []

    def on_row(row: RowResult) -> None:
        if not seen:  # the first callback is stuck until every row has ended: the rest are still to run
            wait_until(lambda: handles and handles[0].progress["done"] == 10, what="every row ended")
        seen.append(row.position)

    handles.append(submit(service, frame(10), tmp_path, on_row=on_row))
    out = handles[0].result(timeout=60)
    assert sorted(seen) == list(range(10)) and (out["status"] == "succeeded").all()


@pytest.mark.parametrize("when", ["in the loop's body", "while waiting for a row"])
@pytest.mark.usefixtures("ctrl_c")  # a real SIGINT to this process
def test_ctrl_c_while_iterating_as_completed_stops_starting_rows(
    make_service: ServiceFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], when: str
) -> None:
    """Ctrl-C while iterating ``as_completed()`` stops the sweep as Ctrl-C in ``run()`` does: no start
    is in flight once the KeyboardInterrupt reaches the caller, nothing is charged afterwards, and
    the frame shows every charge (before: the sweep went on in the background, 80 rows, 240 credits).
    ``break`` leaves the sweep running."""
    service = make_service(time_scale=30.0)  # 30 starts a real second: 200 rows take about 7 s
    handle = submit(service, frame(200), tmp_path)
    ended = 0
    with pytest.raises(KeyboardInterrupt):
        for _ in handle.as_completed(timeout=60):
            ended += 1
            if ended == 10:
                if when == "in the loop's body":
                    signal.raise_signal(signal.SIGINT)  # Ctrl-C, while the body runs
                else:
                    threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
    assert handle.done(), "the sweep goes on after Ctrl-C"
    assert "mediagen_nb: interrupted" in capsys.readouterr().out
    charged = service.net_spent()
    assert 10 <= charged < 200
    service.control("sandbox_clock", {"advance": 600})  # time passes for the sandbox: rows in flight end
    loop_settled(loop.background_loop())  # and the client's loop: a sweep still running would start more
    assert service.net_spent() == charged, "a start was charged after the interrupt"
    out = handle.result()
    assert int(out["credits"].sum()) == charged and (out["status"] == "skipped").sum() > 0

    other = submit(service, frame(20).assign(prompt=lambda df: df["prompt"] + ", again"), tmp_path)
    for _ in other.as_completed(timeout=60):
        break  # leaving the loop is not a Ctrl-C: the sweep goes on to the end
    assert (other.result(timeout=120)["status"] == "succeeded").all()
