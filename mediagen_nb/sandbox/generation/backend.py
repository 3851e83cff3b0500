"""The generation backend: the ten start checks in the spec's order, estimates, runs and their reads.

Plain arguments in, :class:`Generation` objects out; refusals raise ``ServiceError``. The checks every
paid start shares (idempotency, cap, moderation, balance, the 503 rule, outcomes) are in ``lifecycle``.
"""

import asyncio
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mediagen_nb.protocol import limits, messages, schema, states
from mediagen_nb.sandbox import catalog, lifecycle, moderation, pricing, shape
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.fetch import media_seconds
from mediagen_nb.sandbox.generation.outputs import face_frame, output_specs, seen_images
from mediagen_nb.sandbox.responses import ServiceError, bad_request, too_many
from mediagen_nb.sandbox.saved import Row, Rows, marked

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

RESOURCE = "generation"  # the ledger's name for it, and its rows' in the saved state
WEBHOOK_FIELDS = ("id", "modelId", "status", "output", "error")


@dataclass
class Generation:
    id: str
    caller: Caller
    model: catalog.ModelSpec
    input: dict[str, Any]
    credits: int
    created_at: float
    finish_at: float
    outcome: lifecycle.Outcome
    base_url: str
    media_seconds: float | None = None
    webhook: str | None = None
    frame: tuple[int, int] | None = None  # lip-sync: the face image's size, whose aspect the video keeps
    unseen: str | None = None  # why an image input cannot be seen by the model: the run fails, refunded
    status: str = states.PROCESSING
    output: dict[str, Any] | None = None
    error: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def public(self, world: "World") -> dict[str, Any]:
        """The Generation resource of the spec's table."""
        names = world.wire
        output = self.output
        if isinstance(output, dict) and names.serve.case:
            output = {**output, "type": shape.word(names, output.get("type"))}
        data: dict[str, Any] = {
            "id": self.id,
            "modelId": self.model.id,
            "status": shape.word(names, self.status),
            "output": output,
            "error": self.error,
            "creditsSpent": shape.number(names, self.credits),
            "createdAt": world.clock.iso(self.created_at),
        }
        if self.media_seconds is not None:
            data["mediaDurationSec"] = round(self.media_seconds, 3)
        return data

    def to_dict(self) -> dict[str, Any]:
        """The generation as saved state (``state.py``): everything but its ``done`` event."""
        return {
            "id": self.id,
            "caller": self.caller.to_dict(),
            "modelId": self.model.id,
            "input": self.input,
            "credits": self.credits,
            "createdAt": self.created_at,
            "finishAt": self.finish_at,
            "outcome": self.outcome,
            "baseUrl": self.base_url,
            "mediaSeconds": self.media_seconds,
            "webhook": self.webhook,
            "frame": list(self.frame) if self.frame is not None else None,
            "unseen": self.unseen,
            "status": self.status,
            "output": self.output,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], caller: Caller, models: catalog.Catalog) -> "Generation":
        gen = cls(
            id=data["id"],
            caller=caller,
            model=models.spec(data["modelId"]),
            input=data["input"],
            credits=data["credits"],
            created_at=data["createdAt"],
            finish_at=data["finishAt"],
            outcome=data["outcome"],
            base_url=data["baseUrl"],
            media_seconds=data["mediaSeconds"],
            webhook=data["webhook"],
            frame=(data["frame"][0], data["frame"][1]) if data["frame"] is not None else None,
            unseen=data.get("unseen"),  # states saved before image inputs were read have none
            status=data["status"],
            output=data["output"],
            error=data["error"],
        )
        if gen.status != states.PROCESSING:
            gen.done.set()
        return gen


@dataclass(frozen=True)
class Priced:
    """A start body that passed checks 2, 3, 6 and 7, with its price."""

    model: catalog.ModelSpec
    values: dict[str, Any]
    media_seconds: float | None
    credits: int
    webhook: str | None
    assumed: bool = False  # an estimate priced the spec's 30 s: the file's length could not be read


def find_model(models: catalog.Catalog, model_id: Any) -> catalog.ModelSpec:
    """Check 2: the model id is in the public catalog."""
    model = models.by_id.get(model_id) if isinstance(model_id, str) else None
    if model is None and isinstance(model_id, str) and model_id in models.flagged:
        raise bad_request(messages.model_not_served(model_id, models.flagged[model_id]))
    if model is None:
        raise bad_request(messages.unknown_model(str(model_id or ""), models.by_id))
    return model


class GenerationBackend:
    """Every generation of the sandbox, by id, with the account-scoped Idempotency-Keys of their starts."""

    def __init__(self, world: "World") -> None:
        self.world = world
        self.items: dict[str, Generation] = {}
        self.idempotency = lifecycle.Idempotency(
            world.clock, retention=None, chars=limits.IDEMPOTENCY_KEY_CHARS
        )
        self.unsaved: set[str] = set()  # ids of generations made or changed since the state was saved

    def dump(self) -> Iterator[Row]:
        """The generations made or changed since the last dump, and the keys of new starts, as saved rows."""
        yield from marked(RESOURCE, self.unsaved, self.items)
        yield from self.idempotency.dump(RESOURCE)

    def load(self, rows: Rows) -> None:
        """Take back the saved generations and keys (:meth:`dump`); their callers are the accounts'."""
        caller, models = self.world.accounts.caller, self.world.catalog
        for data in rows.get(RESOURCE, {}).values():
            self.items[data["id"]] = Generation.from_dict(data, caller(data["caller"]), models)
        self.idempotency.load(rows, RESOURCE)

    def resume(self) -> None:
        """After a restart from saved state: each running generation settles at its own time again."""
        now = self.world.clock.now()
        for gen in self.items.values():
            if gen.status == states.PROCESSING:
                self.world.schedule(gen.finish_at - now, self._settler(gen))

    def _settler(self, gen: Generation) -> Callable[[], None]:
        """A timer callback that settles ``gen``."""
        return lambda: self.settle(gen)

    async def _checks_2_3(
        self, model_id: Any, values: Any, webhook: Any, *, estimate: bool
    ) -> tuple[catalog.ModelSpec, dict[str, Any]]:
        """Check 2 (model in the catalog) and check 3 (webhook, then ``input`` an object)."""
        model = find_model(self.world.catalog, model_id)
        if webhook is not None and not estimate:
            await self.world.outbox.check(webhook)
        if not isinstance(values, dict):
            raise bad_request(messages.INPUT_NOT_OBJECT)
        return model, values

    async def _price(
        self, model: catalog.ModelSpec, values: dict[str, Any], webhook: str | None, *, estimate: bool
    ) -> Priced:
        """Check 6 (schema) and check 7 (media length), then the one pricing rule of run and estimate."""
        try:
            normalized = schema.normalize(model.input_schema, values)
        except schema.InputError as exc:
            raise bad_request(exc.message) from None
        own = self.world.own_file
        seconds, assumed = None, False
        if model.media_field:
            try:
                seconds = await media_seconds(model.media_field, normalized.get(model.media_field), own)
            except ServiceError:
                if not estimate:
                    raise
                seconds, assumed = limits.ESTIMATE_FALLBACK_SECONDS, True
        for name, minimum in () if estimate else model.min_media_seconds:
            if (
                normalized.get(name) is not None
                and await media_seconds(name, normalized[name], own) <= minimum
            ):
                raise bad_request(messages.media_too_short(name, minimum))
        credits = pricing.price(model, normalized, seconds)
        return Priced(model, normalized, seconds, credits, webhook, assumed)

    async def start(
        self,
        caller: Caller,
        model_id: Any,
        values: Any,
        webhook: Any,
        *,
        idempotency_key: str | None,
        at_capacity: bool,
        base_url: str,
    ) -> tuple[Generation, bool]:
        """``POST /v1/run``: the generation and True, or the one the key already started and False."""
        model, values = await self._checks_2_3(model_id, values, webhook, estimate=False)

        async def create() -> str:
            return await self._create(caller, model, values, webhook, at_capacity, base_url)

        gen_id, created = await self.idempotency.once(caller.account.id, idempotency_key, create)
        return self.items[gen_id], created

    async def _create(
        self,
        caller: Caller,
        model: catalog.ModelSpec,
        values: dict[str, Any],
        webhook: str | None,
        at_capacity: bool,
        base_url: str,
    ) -> str:
        """Checks 5 to 10, then the charge and the run."""
        world = self.world
        token = world.starts.acquire(caller.account.id)
        if token is None:
            raise too_many(messages.TOO_MANY_GENERATIONS)
        try:
            priced = await self._price(model, values, webhook, estimate=False)
            seen, unseen = await seen_images(model, priced.values, world.own_file)
            lifecycle.admit(
                world.accounts,
                caller,
                priced.credits,
                lifecycle.top_up_url(base_url),
                moderate=lambda: moderation.check(model.input_schema, priced.values),
            )
            gen_id = world.new_id()
            if at_capacity:
                lifecycle.refuse_at_capacity(
                    world.accounts, caller, priced.credits, RESOURCE, gen_id, modelId=model.id
                )
        except ServiceError:
            world.starts.release(caller.account.id, token)
            raise
        world.accounts.charge(caller, priced.credits, RESOURCE, gen_id, modelId=model.id)
        gen = self._launch(gen_id, caller, priced, base_url)  # then, before the run can settle:
        gen.frame, gen.unseen = face_frame(model, seen), unseen
        return gen_id

    def _launch(self, gen_id: str, caller: Caller, priced: Priced, base_url: str) -> Generation:
        world = self.world
        now = world.clock.now()
        model = priced.model
        mean = catalog.simulated_runtime(model, priced.values, priced.media_seconds)
        runtime = mean * world.rng("runtime", gen_id).lognormvariate(0, 0.25)
        outcome, duration = lifecycle.plan(world.faults, runtime, priced.media_seconds or 0.0)
        gen = Generation(
            id=gen_id,
            caller=caller,
            model=model,
            input=priced.values,
            credits=priced.credits,
            created_at=now,
            finish_at=now + duration,
            outcome=outcome,
            base_url=base_url,
            media_seconds=priced.media_seconds,
            webhook=priced.webhook,
        )
        self.items[gen.id] = gen
        self.unsaved.add(gen.id)
        world.schedule(duration, self._settler(gen))
        return gen

    def settle(self, gen: Generation) -> None:
        """Finish ``gen`` if its time has come: fill the output, or fail and refund; send the webhook."""
        world = self.world
        if gen.status != states.PROCESSING or world.clock.now() < gen.finish_at:
            return
        self.unsaved.add(gen.id)
        if gen.outcome == lifecycle.SUCCEED and gen.unseen is None:
            gen.status = states.SUCCEEDED
            seed = world.rng("media", gen.id).randrange(2**31)
            specs = output_specs(gen.model, gen.input, gen.media_seconds, gen.frame, seed)
            gen.output = {"type": gen.model.kind, "urls": [world.media_url(gen.base_url, s) for s in specs]}
        else:
            gen.status = states.FAILED
            if gen.outcome == lifecycle.TIMEOUT:
                gen.error = lifecycle.timed_out(gen.created_at, gen.finish_at)
            elif gen.unseen is not None:
                gen.error = messages.image_not_seen(gen.model.name, gen.unseen)
            else:
                gen.error = messages.model_failed(gen.model.name)
            world.accounts.refund(
                gen.caller, gen.credits, RESOURCE, gen.id, modelId=gen.model.id, note=gen.status
            )
        gen.done.set()
        if gen.webhook:
            payload = {k: v for k, v in gen.public(world).items() if k in WEBHOOK_FIELDS}
            world.outbox.send(gen.webhook, payload)

    async def read(self, caller: Caller, gen_id: str, wait: int) -> tuple[Generation, bool]:
        """``GET /v1/generations/{id}``, held up to ``wait`` simulated seconds (0: not held) until it ends;
        the generation and whether it is still running after a wait."""
        try:
            uuid.UUID(gen_id)
        except ValueError:
            raise bad_request(messages.INVALID_GENERATION_ID) from None
        gen = lifecycle.owned(self.items, gen_id, caller, messages.GENERATION_NOT_FOUND)
        self.settle(gen)
        if wait and gen.status == states.PROCESSING and not await self.world.clock.hold(gen.done, wait):
            self.settle(gen)
        return gen, bool(wait) and gen.status == states.PROCESSING

    async def estimate(self, model_id: Any, values: Any) -> Priced:
        """``POST /v1/estimate``: the run's checks 2, 3, 6 and 7 and its price; never charges."""
        model, values = await self._checks_2_3(model_id, values, None, estimate=True)
        return await self._price(model, values, None, estimate=True)
