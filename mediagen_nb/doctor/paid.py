"""``mediagen doctor --paid N --max-credits C``: the one check that spends credits, opt-in and capped.

It runs the catalog's cheapest flat-priced model N times through the client's own paid start (each
start in the ledger before it is sent, with its Idempotency-Key), sends the first start again with its
key (from a ledger of its own, so the request really goes out) and checks the service's answers: each
run charged its listed price, the replay the same generation and no second charge, and a run that
failed reporting its refund. On a sandbox its own ledger is read too.
"""

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from mediagen_nb.client import Client, MediagenError
from mediagen_nb.client.config import Settings
from mediagen_nb.client.resources import Generation, Model
from mediagen_nb.doctor.checks import REPORT, Found, Result, credits, minimal_input
from mediagen_nb.doctor.probe import Exchange, Probe, answer_body
from mediagen_nb.protocol import limits, states
from mediagen_nb.protocol.paths import path
from mediagen_nb.protocol.schema import media_kind
from mediagen_nb.runtime import tls

MOST_RUNS = 20  # a check, not a workload: under the service's 60 starts a minute


class PaidRefused(Exception):
    """The paid check would cost more than allowed, or cannot run; nothing was started."""


def cheapest(models: list[Model]) -> Model | None:
    """The flat-priced model with the lowest listed price whose required inputs need no media file."""
    runnable = [
        m
        for m in models
        if m.pricing is None
        and (m.credits or 0) >= 1
        and not any(
            media_kind(m.properties.get(n) or {})
            for n in m.required
            if isinstance(m.properties.get(n), Mapping)
        )
    ]
    return min(runnable, key=lambda m: (m.credits or 0, m.id), default=None)


def plan(models: list[Model], runs: int, max_credits: int) -> tuple[Model, int]:
    """The model the paid check runs and what it costs; PaidRefused (nothing started) otherwise."""
    if not 1 <= runs <= MOST_RUNS:
        raise PaidRefused(f"--paid takes 1 to {MOST_RUNS} runs, not {runs}")
    model = cheapest(models)
    if model is None:
        raise PaidRefused("the catalog has no flat-priced model without media inputs to run")
    total = runs * (model.credits or 0)
    if total > max_credits:
        raise PaidRefused(
            f"{runs} runs of {model.id} cost {total} credits, over --max-credits {max_credits}: none started"
        )
    return model, total


def recording(probe: Probe, check: list[str]) -> dict[str, list[Any]]:
    """httpx event hooks that keep every exchange of a client's calls in the probe (and its recording)."""

    def keep(response: httpx.Response) -> None:
        response.read()
        request = response.request
        try:
            body: Any = json.loads(request.content) if request.content else None
        except ValueError:
            body = None
        answer = answer_body(response)
        keyed = "authorization" in request.headers
        sent = {"method": request.method, "path": request.url.path, "body": body, "key": keyed}
        exchange = Exchange(
            check[0], request.method, request.url.path, response.status_code, answer, sent=sent
        )
        probe.exchanges.append(exchange)
        probe.save(exchange, keyed=keyed)

    return {"response": [keep]}


def paid(
    settings: Settings, probe: Probe, model: Model, runs: int, max_credits: int, found: Found, scratch: Path
) -> list[Result]:
    """Run the paid check (see the module) and compare what the service reports."""
    price = model.credits or 0
    check = ["paid: runs"]
    session = uuid.uuid4().hex[:12]
    keys = [f"mediagen-doctor-{session}-{n}" for n in range(1, runs + 1)]
    values = minimal_input(model)
    with (
        httpx.Client(event_hooks=recording(probe, check), verify=tls.context()) as http,
        Client(settings=settings, http_client=http, ledger=str(scratch / "ledger.sqlite")) as client,
    ):
        try:
            started = [client.run(model.id, values, idempotency_key=key) for key in keys]
            check[0] = "paid: replay"
            again = client.run(
                model.id, values, idempotency_key=keys[0], ledger=str(scratch / "replay.sqlite")
            )
            check[0] = "paid: wait"
            ended = [client.wait(generation) for generation in started]
        except MediagenError as exc:
            return [Result(check[0], False, f"{type(exc).__name__}: {exc}", REPORT)]
        check[0] = "paid: topic-to-video"
        job = _job(client, found, max_credits - price * runs, scratch)
    ledger = _sandbox_ledger(probe, {g.id for g in started})
    return [
        _charges(started, price, model, ledger),
        _replay(probe, started[0], again, ledger),
        _refunds(ended, price, ledger),
        job,
    ]


def _job(client: Client, found: Found, left: int, scratch: Path) -> Result:
    """One topic-to-video job of the shortest length, when the credits left allow the most it can spend:
    its read names learned (the lines printed), what it was asked shown back, its credits read."""
    from mediagen_nb.doctor.shapes import verdict, watch

    check = "paid: topic-to-video"
    least = limits.SHORT_VIDEO_SECONDS_MIN
    try:
        most = client.video_estimate(least).at_most
    except MediagenError as exc:
        return Result(check, False, f"cannot price a job: {exc}", REPORT)
    if most > left:
        return Result(
            check,
            True,
            f"skipped: a {least} s job can spend up to {most} credits and --max-credits leaves {left} (a "
            f"--max-credits {most - left} higher runs one, and confirms its read's names)",
        )

    def make() -> Any:
        job = client.make_video("mediagen doctor: a check of the service", seconds=least)
        return client.wait_job(job, poll=10)

    seen = watch(client, found, make)
    ended = seen.value
    detail = ""
    if ended is not None:
        detail = f"{ended.status}, {ended.credits_used} credits, script and lip-sync read"
    return verdict(check, seen, detail)


def _sandbox_ledger(probe: Probe, ids: set[str]) -> list[Mapping[str, Any]] | None:
    """A sandbox's own ledger entries of these generations (None on the service, which has none)."""
    answer = probe.send("paid: sandbox ledger", "GET", "sandbox_ledger")
    entries = answer.data.get("entries") if isinstance(answer.data, Mapping) else None
    if answer.status != 200 or not isinstance(entries, list):
        return None
    return [e for e in entries if isinstance(e, Mapping) and e.get("resourceId") in ids]


def _charges(
    started: list[Generation], price: int, model: Model, ledger: list[Mapping[str, Any]] | None
) -> Result:
    odd = [f"{g.id} {g.credits_spent}" for g in started if g.credits_spent != price]
    if ledger is not None:
        charged = sum(e.get("credits", 0) for e in ledger if e.get("kind") == "charge")
        if charged != price * len(started):
            odd.append(f"its ledger charged {charged} credits, not {price * len(started)}")
    detail = f"{len(started)} runs of {model.id}: {credits(price)} each, as listed"
    return Result("paid: charge", not odd, "; ".join(odd) or detail, REPORT)


def _replay(
    probe: Probe, first: Generation, again: Generation, ledger: list[Mapping[str, Any]] | None
) -> Result:
    starts = [e for e in probe.exchanges if e.check == "paid: replay" and e.target.endswith(path("run"))]
    status = starts[-1].status if starts else None
    if again.id != first.id:
        return Result(
            "paid: replay", False, f"the same Idempotency-Key started {again.id}, not {first.id}", REPORT
        )
    if (
        ledger is not None
        and sum(1 for e in ledger if e.get("kind") == "charge" and e.get("resourceId") == first.id) != 1
    ):
        return Result("paid: replay", False, "the replay was charged again in the sandbox's ledger", REPORT)
    return Result("paid: replay", True, f"the same generation, answered {status}, no second charge")


def _refunds(ended: list[Generation], price: int, ledger: list[Mapping[str, Any]] | None) -> Result:
    failed = [g for g in ended if g.status == states.FAILED]
    if not failed:
        return Result("paid: refund", True, f"all {len(ended)} runs succeeded: nothing to refund")
    odd = [
        f"{g.id} reports {g.credits_spent} refunded, not {price}" for g in failed if g.credits_spent != price
    ]
    if ledger is not None:
        refunded = {
            e.get("resourceId") for e in ledger if e.get("kind") == "refund" and e.get("credits") == price
        }
        odd += [f"{g.id} has no refund in the sandbox's ledger" for g in failed if g.id not in refunded]
    detail = f"{len(failed)} of {len(ended)} runs failed, each refunded {credits(price)} ({failed[0].error})"
    return Result("paid: refund", not odd, "; ".join(odd) or detail, REPORT)
