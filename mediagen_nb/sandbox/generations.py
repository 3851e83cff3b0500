"""The generation API: the ten start checks, estimates, the run lifecycle, long-polling reads."""

import asyncio
import io
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PIL import Image
from starlette.responses import Response

from mediagen_nb.protocol import limits, messages, schema, wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import catalog, fetch, moderation, pricing
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.media import MediaSpec, measure_seconds
from mediagen_nb.sandbox.responses import ServiceError, bad_request, not_found, ok, too_many
from mediagen_nb.sandbox.routing import Ctx, delegate

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

MAX_SIDE = 768  # images are drawn at most this large; the real service's sizes do not matter here


@dataclass
class Generation:
    id: str
    caller: Caller
    model: catalog.ModelSpec
    input: dict[str, Any]
    credits: int
    created_at: float
    finish_at: float
    outcome: str  # "succeed" | "fail" | "timeout"
    base_url: str
    media_seconds: float | None = None
    webhook: str | None = None
    frame: tuple[int, int] | None = None  # lip-sync: the face image's size, whose aspect the video keeps
    status: str = "processing"
    output: dict[str, Any] | None = None
    error: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def public(self, world: "World") -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "modelId": self.model.id,
            "status": self.status,
            "output": self.output,
            "error": self.error,
            "creditsSpent": self.credits,
            "createdAt": world.clock.iso(self.created_at),
        }
        if self.media_seconds is not None:
            data["mediaDurationSec"] = round(self.media_seconds, 3)
        return data


@dataclass(frozen=True)
class Priced:
    """A start body that passed checks 2, 3, 6 and 7, with its price."""

    model: catalog.ModelSpec
    values: dict[str, Any]
    media_seconds: float | None
    credits: int
    webhook: str | None


def _model(model_id: Any) -> catalog.ModelSpec:
    model = catalog.BY_ID.get(model_id) if isinstance(model_id, str) else None
    if model is None:
        raise bad_request(messages.unknown_model(str(model_id or ""), catalog.BY_ID))
    return model


async def media_seconds(world: "World", field_name: str, url: Any) -> float:
    """Check 7: the length-billed file is .mp3/.wav/.mp4, reachable and of readable length."""
    if not isinstance(url, str):
        raise bad_request(messages.wrong_type(field_name, "a URL"))
    ext = schema.url_extension(url)
    if ext not in limits.LENGTH_BILLED_EXTENSIONS:
        raise bad_request(messages.UNSUPPORTED_MEDIA_FORMAT)
    try:
        data = await fetch.download(url, world.media)
    except fetch.Unreachable:
        raise bad_request(messages.media_not_reachable(field_name)) from None
    seconds = await asyncio.to_thread(measure_seconds, data, ext)
    if seconds is None:
        raise bad_request(
            messages.UNREADABLE_VIDEO_DURATION if ext == ".mp4" else messages.unreadable_audio_duration()
        )
    return seconds


class Generations:
    """Every generation of the sandbox, by id and by (account, Idempotency-Key)."""

    def __init__(self, world: "World") -> None:
        self.world = world
        self.items: dict[str, Generation] = {}
        self.by_idempotency: dict[tuple[str, str], str] = {}
        self._idempotency_locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def _checks_2_3(
        self, body: dict[str, Any], *, estimate: bool
    ) -> tuple[catalog.ModelSpec, dict[str, Any], Any]:
        """Check 2 (model in the catalog) and check 3 (webhook, then ``input`` an object)."""
        model = _model(body.get("modelId"))
        webhook = body.get("webhook")
        if webhook is not None and not estimate:
            await self.world.outbox.check(webhook)
        values = body.get("input")
        if not isinstance(values, dict):
            raise bad_request(messages.INPUT_NOT_OBJECT)
        return model, values, webhook

    async def _price_input(
        self, model: catalog.ModelSpec, values: dict[str, Any], webhook: Any, *, estimate: bool
    ) -> Priced:
        """Check 6 (schema) and check 7 (media length), then the one pricing rule of run and estimate."""
        try:
            normalized = schema.normalize(model.input_schema, values)
        except schema.InputError as exc:
            raise bad_request(exc.message) from None
        seconds = None
        if model.media_field:
            try:
                seconds = await media_seconds(
                    self.world, model.media_field, normalized.get(model.media_field)
                )
            except ServiceError:
                if not estimate:
                    raise
                seconds = limits.ESTIMATE_FALLBACK_SECONDS
        for name, minimum in () if estimate else model.min_media_seconds:
            if (
                normalized.get(name) is not None
                and await media_seconds(self.world, name, normalized[name]) <= minimum
            ):
                raise bad_request(messages.media_too_short(name, minimum))
        return Priced(model, normalized, seconds, pricing.price(model, normalized, seconds), webhook)

    async def start(self, ctx: Ctx) -> Response:
        body = await ctx.body()
        caller = ctx.who
        model, values, webhook = await self._checks_2_3(body, estimate=False)
        raw_key = ctx.request.headers.get("idempotency-key")
        if not raw_key:
            return await self._create(ctx, caller, model, values, webhook, None)
        key = (caller.account.id, raw_key[: limits.IDEMPOTENCY_KEY_CHARS])
        async with self._idempotency_locks.setdefault(key, asyncio.Lock()):
            existing = self.by_idempotency.get(key)
            if existing is not None:
                return ok(self.items[existing].public(self.world), 200)
            return await self._create(ctx, caller, model, values, webhook, key)

    async def _create(
        self,
        ctx: Ctx,
        caller: Caller,
        model: catalog.ModelSpec,
        values: dict[str, Any],
        webhook: str | None,
        idempotency: tuple[str, str] | None,
    ) -> Response:
        world = self.world
        token = world.starts.acquire(caller.account.id)
        if token is None:
            raise too_many(messages.TOO_MANY_GENERATIONS)
        try:
            priced = await self._price_input(model, values, webhook, estimate=False)
            frame = await _face_frame(world, model, priced.values)
            if not world.accounts.cap_allows(caller.key, priced.credits):
                raise too_many(messages.key_cap_reached(caller.key.monthly_cap or 0))
            moderation.check(model.input_schema, priced.values)
            if caller.account.balance < priced.credits:
                top_up = ctx.base_url + path("sandbox_app", page="billing")
                raise bad_request(messages.not_enough_credits(priced.credits, caller.account.balance, top_up))
        except ServiceError:
            world.starts.release(caller.account.id, token)
            raise
        gen_id = world.new_id()
        world.accounts.charge(caller, priced.credits, "generation", gen_id, modelId=model.id)
        if ctx.fault == "503":
            world.accounts.refund(
                caller,
                priced.credits,
                "generation",
                gen_id,
                modelId=model.id,
                note="model could not start the job",
            )
            world.starts.release(caller.account.id, token)
            raise ServiceError(503, messages.AT_CAPACITY)
        gen = self._launch(gen_id, caller, priced, ctx.base_url)
        gen.frame = frame  # set before the loop runs again, so before the run can settle
        if idempotency is not None:
            self.by_idempotency[idempotency] = gen.id
        return ok(gen.public(world), 201)

    def _launch(self, gen_id: str, caller: Caller, priced: Priced, base_url: str) -> Generation:
        world = self.world
        now = world.clock.now()
        model = priced.model
        rng = world.rng("runtime", gen_id)
        runtime = catalog.simulated_runtime(model, priced.values, priced.media_seconds) * rng.lognormvariate(
            0, 0.25
        )
        time_limit = limits.RUNTIME_BASE_SECONDS + limits.RUNTIME_PER_MEDIA_SECOND * (
            priced.media_seconds or 0.0
        )
        time_limit = min(time_limit, limits.RUNTIME_HARD_SECONDS)
        outcome = {"fail": "fail", "hang": "timeout"}.get(world.faults.model_outcome() or "", "succeed")
        if runtime >= time_limit:
            outcome = "timeout"
        duration = time_limit if outcome == "timeout" else runtime
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
        world.schedule(duration, lambda: self.settle(gen))
        return gen

    def settle(self, gen: Generation) -> None:
        """Finish ``gen`` if its time has come: fill the output, or fail and refund; send the webhook."""
        world = self.world
        if gen.status != "processing" or world.clock.now() < gen.finish_at:
            return
        if gen.outcome == "succeed":
            gen.status = "succeeded"
            gen.output = {"type": gen.model.kind, "urls": self._outputs(gen)}
        else:
            gen.status = "failed"
            limit_minutes = (gen.finish_at - gen.created_at) / 60
            gen.error = (
                messages.generation_timed_out(round(limit_minutes, 1))
                if gen.outcome == "timeout"
                else f"Model failed: {gen.model.name} could not produce an output; credits refunded"
            )
            world.accounts.refund(
                gen.caller, gen.credits, "generation", gen.id, modelId=gen.model.id, note=gen.status
            )
        gen.done.set()
        if gen.webhook:
            payload = {
                k: v
                for k, v in gen.public(world).items()
                if k in ("id", "modelId", "status", "output", "error")
            }
            world.outbox.send(gen.webhook, payload)

    def _outputs(self, gen: Generation) -> list[str]:
        world, model, values = self.world, gen.model, gen.input
        seed = world.rng("media", gen.id).randrange(2**31)
        prompt = str(values.get("prompt") or values.get("text") or model.name)
        if model.kind == "image":
            width, height = _image_size(values)
            count = values.get("num_images", 1)
            count = count if isinstance(count, int) and 1 <= count <= 4 else 1
            return [
                world.media_url(gen.base_url, MediaSpec("image", prompt, 0, seed + i, width, height, "png"))
                for i in range(count)
            ]
        seconds = catalog.output_seconds(model, values, gen.media_seconds) or 5.0
        if model.kind == "audio":
            fmt = "mp3" if model.group == "Music" else "wav"
            return [world.media_url(gen.base_url, MediaSpec("audio", prompt, seconds, seed, fmt=fmt))]
        width, height = _video_size(values, gen.frame)
        audio = bool(model.media_field) or bool(values.get("generate_audio"))
        return [
            world.media_url(
                gen.base_url, MediaSpec("video", prompt, seconds, seed, width, height, "mp4", audio)
            )
        ]

    async def read(self, ctx: Ctx) -> Response:
        gen_id = ctx.request.path_params["id"]
        try:
            uuid.UUID(gen_id)
        except ValueError:
            raise bad_request(messages.INVALID_GENERATION_ID) from None
        wait = _wait_seconds(ctx.request.query_params.get("wait"))
        gen = self.items.get(gen_id)
        if gen is None or gen.caller.account.id != ctx.who.account.id:
            raise not_found(messages.GENERATION_NOT_FOUND)
        self.settle(gen)
        if wait and gen.status == "processing":
            try:
                await asyncio.wait_for(gen.done.wait(), timeout=self.world.clock.real(wait))
            except asyncio.TimeoutError:
                self.settle(gen)
        data = gen.public(self.world)
        if wait and gen.status == "processing":
            data["stillRunning"] = True
        return ok(data)

    async def estimate(self, ctx: Ctx) -> Response:
        model, values, webhook = await self._checks_2_3(await ctx.body(), estimate=True)
        priced = await self._price_input(model, values, webhook, estimate=True)
        return ok(
            {
                wire.ESTIMATE_MODEL: priced.model.id,
                wire.ESTIMATE_CREDITS: priced.credits,
                wire.ESTIMATE_BILLING: pricing.billing_text(priced.model),
            }
        )


def _wait_seconds(raw: str | None) -> int:
    if raw is None:
        return 0
    try:
        wait = int(raw)
    except ValueError:
        wait = -1
    if not limits.WAIT_MIN_SECONDS <= wait <= limits.WAIT_MAX_SECONDS:
        raise bad_request(
            f"wait must be an integer from {limits.WAIT_MIN_SECONDS} to {limits.WAIT_MAX_SECONDS} seconds"
        )
    return wait


def _ratio(values: dict[str, Any]) -> tuple[float, float] | None:
    ratio = values.get("aspect_ratio")
    if isinstance(ratio, str) and ":" in ratio:
        w, _, h = ratio.partition(":")
        try:
            return float(w), float(h)
        except ValueError:
            return None
    return None


def _image_size(values: dict[str, Any]) -> tuple[int, int]:
    width, height = values.get("width"), values.get("height")
    if isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
        scale = min(1.0, MAX_SIDE / max(width, height))
        return max(16, int(width * scale)), max(16, int(height * scale))
    ratio = _ratio(values) or (1.0, 1.0)
    scale = 512 / max(ratio)
    return int(ratio[0] * scale), int(ratio[1] * scale)


def _video_size(values: dict[str, Any], frame: tuple[int, int] | None = None) -> tuple[int, int]:
    ratio = frame or _ratio(values) or (16.0, 9.0)
    scale = 320 / max(ratio)
    return max(16, int(ratio[0] * scale) // 2 * 2), max(16, int(ratio[1] * scale) // 2 * 2)


async def _face_frame(
    world: "World", model: catalog.ModelSpec, values: dict[str, Any]
) -> tuple[int, int] | None:
    """The size of a lip-sync run's face ``image`` (the output keeps its aspect ratio); None if unreadable."""
    url = values.get("image")
    if model.group != "Lip-sync" or not isinstance(url, str):
        return None
    try:
        data = await fetch.download(url, world.media)
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except Exception:  # unreachable or not an image: the spec checks neither at start; keep the default
        return None
    return (width, height) if width > 0 and height > 0 else None


# (path name in mediagen_nb.protocol.paths.PATHS, method, endpoint): mounted by the app.
ROUTES = [
    ("run", "POST", delegate("run", "generations", "start")),
    ("generation", "GET", delegate("generation", "generations", "read")),
    ("estimate", "POST", delegate("estimate", "generations", "estimate")),
]
