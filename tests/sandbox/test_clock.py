"""The one clock: manual (virtual) time, timers in time order, jumps, holds, and clients that step it."""

import asyncio
import threading
from collections.abc import Iterator

import httpx
import pytest
from _wait import turns, wait_until

from mediagen_nb.client import AsyncClient, Client
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime.clock import MAX_SKIP_SECONDS, ManualClock, ScaledClock
from mediagen_nb.sandbox import Sandbox
from mediagen_nb.sandbox.__main__ import parser

IMAGE = {"modelId": "gpt-image-2", "input": {"prompt": "a cat"}}
START = 1_700_000_000.0


def test_a_manual_clock_stands_still_and_fires_timers_in_time_order_each_at_its_moment() -> None:
    clock = ManualClock(START)
    fired: list[tuple[str, float]] = []

    async def arm() -> None:
        for name, seconds in (("c", 30.0), ("a", 10.0), ("b", 20.0), ("late", 99.0)):
            clock.call_later(seconds, lambda n=name: fired.append((n, clock.now() - START)))

    asyncio.run(arm())
    assert clock.now() == START and fired == []
    clock.advance(25)
    assert fired == [("a", 10.0), ("b", 20.0)] and clock.now() == START + 25
    clock.advance(5)
    assert fired[-1] == ("c", 30.0) and clock.now() == START + 30


def test_a_cancelled_timer_never_fires_and_the_clock_moves_a_century_at_most() -> None:
    clock = ManualClock(START)
    fired: list[str] = []

    async def arm() -> None:
        clock.call_later(5, lambda: fired.append("kept"))
        clock.call_later(5, lambda: fired.append("cancelled")).cancel()

    asyncio.run(arm())
    clock.advance(5)
    assert fired == ["kept"]
    with pytest.raises(ValueError, match="forward only"):
        clock.advance(-1)
    clock.advance(MAX_SKIP_SECONDS - 5)
    with pytest.raises(ValueError, match="0 left"):
        clock.advance(1)


def test_a_thread_sleeping_on_a_manual_clock_wakes_when_another_advances_it() -> None:
    clock = ManualClock(START)
    woke: list[float] = []
    sleeper = threading.Thread(target=lambda: (clock.sleep(60), woke.append(clock.now())))
    sleeper.start()
    wait_until(lambda: clock.next_due() is not None, what="the sleeper's timer")
    clock.advance(59)
    assert woke == []
    clock.advance(1)
    sleeper.join(10)
    assert woke == [START + 60]


def test_a_jump_of_a_scaled_clock_fires_the_timers_it_passes_in_time_order() -> None:
    """Timers armed before a jump fire at the jump (re-armed), not at their old real-time moment."""
    clock = ScaledClock(1.0)
    fired: list[str] = []

    async def scenario() -> None:
        for name, seconds in (("hour", 3600.0), ("minute", 60.0), ("day", 86400.0)):
            clock.call_later(seconds, lambda n=name: fired.append(n))
        clock.advance(7200)
        assert fired == ["minute", "hour"]
        await turns()
        assert fired == ["minute", "hour"]
        clock.advance(86400)
        assert fired == ["minute", "hour", "day"]

    asyncio.run(scenario())


def test_a_hold_ends_when_its_event_is_set_or_its_simulated_time_has_passed() -> None:
    clock = ManualClock(START)

    async def scenario() -> None:
        event = asyncio.Event()
        held = asyncio.create_task(clock.hold(event, 30))
        await turns()
        clock.advance(29.5)
        await turns()
        assert not held.done()
        clock.advance(0.5)
        assert await held is False
        settled = asyncio.create_task(clock.hold(event, 30))
        await turns()
        event.set()
        assert await settled is True and clock.now() == START + 30

    asyncio.run(scenario())


@pytest.fixture
def manual() -> Iterator[Sandbox]:
    """A served sandbox on a manual clock."""
    with Sandbox(clock="manual", seed=1, allow_private_webhooks=True) as box:
        yield box


def _http(box: Sandbox) -> httpx.Client:
    assert box.base_url is not None
    key = {"Authorization": f"Bearer {box.demo_key}"}
    return httpx.Client(base_url=box.base_url, headers=key, timeout=30)


def test_on_a_manual_sandbox_a_generation_runs_exactly_until_its_run_time_is_advanced_past(
    manual: Sandbox,
) -> None:
    with _http(manual) as http:
        gen_id = http.post(path("run"), json=IMAGE).json()["data"]["id"]
        run_time = manual.world.generations.items[gen_id].finish_at - manual.world.clock.now()
        assert run_time > 1
        manual.advance(run_time - 1)
        assert http.get(path("generation", id=gen_id)).json()["data"]["status"] == "processing"
        manual.advance(1)
        assert manual.world.generations.items[gen_id].status == "succeeded"  # its timer, not a read
        assert http.get(path("generation", id=gen_id)).json()["data"]["status"] == "succeeded"
        assert http.get(path("sandbox_info")).json()["data"]["clock"] == "manual"


def test_a_long_poll_on_a_manual_sandbox_returns_when_its_wait_has_been_advanced(manual: Sandbox) -> None:
    with _http(manual) as http:
        gen_id = http.post(path("run"), json=IMAGE).json()["data"]["id"]
        gen = manual.world.generations.items[gen_id]
        gen.finish_at += 3600  # it outlasts the hold: its own timer, passed first, finds it still running
        manual.advance(gen.finish_at - 3600 - manual.world.clock.now())
        answers: list[httpx.Response] = []

        def long_poll() -> None:
            answers.append(http.get(path("generation", id=gen_id), params={"wait": 30}))

        poll = threading.Thread(target=long_poll)
        held_from = manual.world.clock.now()
        poll.start()
        wait_until(lambda: held_from + 30 in manual.world.clock.pending(), what="the long poll's hold")
        manual.advance(29)
        assert answers == []
        manual.advance(1)
        poll.join(10)
        assert answers[0].json()["data"]["status"] == "processing"


def test_posting_an_advance_fires_the_timers_it_passes_before_it_answers(manual: Sandbox) -> None:
    with _http(manual) as http:
        body = {**IMAGE, "webhook": "http://127.0.0.1:9/hook"}
        gen_id = http.post(path("run"), json=body).json()["data"]["id"]
        assert not manual.world.outbox.sent
        run_time = manual.world.generations.items[gen_id].finish_at - manual.world.clock.now()
        http.post(path("sandbox_clock"), json={"advance": run_time}).raise_for_status()
        assert [gen_id in sent["body"] for sent in manual.world.outbox.sent] == [True]


def test_a_stepping_client_waits_instantly_and_moves_the_sandbox_exactly_as_far_as_it_waited() -> None:
    with Sandbox(clock="manual", seed=1) as box, Client.for_sandbox(box) as client:
        start = box.world.clock.now()
        generation = client.generate("gpt-image-2", {"prompt": "a cat"})
        assert generation.status == "succeeded"
        settled = box.world.generations.items[generation.id]
        assert box.world.clock.now() == settled.finish_at  # the long poll moved it to the end, no further
        assert settled.created_at == start


@pytest.mark.anyio
async def test_an_async_stepping_client_in_process_steps_the_sandbox_on_the_same_loop() -> None:
    box = Sandbox(clock="manual", seed=1)
    async with AsyncClient.for_sandbox(box) as client:
        generation = await client.generate("gpt-image-2", {"prompt": "a cat"})
        assert generation.status == "succeeded"
        assert box.world.clock.now() == box.world.generations.items[generation.id].finish_at
        before = box.world.clock.now()
        await client.clock.wait(42)
        assert box.world.clock.now() == before + 42


def test_the_command_line_takes_a_manual_clock() -> None:
    assert parser().parse_args(["--clock", "manual"]).clock == "manual"
    assert parser().parse_args([]).clock == "scaled"
