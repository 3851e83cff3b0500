"""The generation API: estimate, run, read, wait and generate, written once for both clients."""

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from fractions import Fraction
from functools import partial
from typing import Any

from mediagen_nb.client import certain, errors
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.catalog import Catalog, Measured
from mediagen_nb.client.checks import checked_id
from mediagen_nb.client.core import Core
from mediagen_nb.client.resources import Estimate, Generation, Model, wire_of
from mediagen_nb.client.starts import Recorded, Start, Starts, known
from mediagen_nb.client.steps import START, Call, Op, Pause, Record
from mediagen_nb.protocol import limits as spec_limits
from mediagen_nb.protocol import schema, states, wire
from mediagen_nb.protocol.environment import ENV_WIRE

# Service seconds a wait lasts by default: past the spec's absolute limit a generation can only be stuck.
GENERATION_WAIT = spec_limits.RUNTIME_HARD_SECONDS + 5 * 60


def merged(input: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """``input`` and keyword fields merged (keywords win), so both call styles work.

    A non-object ``input`` is passed on as it is: the operation refuses it (``input must be an object``).
    """
    if input is not None and not isinstance(input, Mapping):
        return input
    return {**(input or {}), **fields}


class Generations:
    """Operations of the generation API, over the core, the catalog and the paid start."""

    def __init__(self, core: Core, catalog: Catalog, starts: Starts) -> None:
        self.core, self.catalog, self.starts = core, catalog, starts
        self.prices = certain.Prices()  # prices seen by class of input, checked against later answers

    def estimate(
        self,
        model_id: str,
        input: Mapping[str, Any] | None = None,
        *,
        validate: bool = True,
        extra_inputs: bool = False,
        **fields: Any,
    ) -> Op[Estimate]:
        """What a run with this input will charge; never charges (the service prices it like a run).

        Local files are not uploaded: each is sent as a URL no one can read, and a length-billed one
        is measured here, its price scaled from the service's price for the 30 s it then assumes.
        ``extra_inputs=True`` sends names the model's schema does not have (refused otherwise).
        """
        values = merged(input, fields)
        catalog = self.catalog
        model = (
            (yield from catalog.catalog_model(model_id)) if validate else (yield from self.known(model_id))
        )
        measured = None
        if model is not None and isinstance(values, Mapping):
            values, measured = yield Record(partial(catalog.stand_ins, model, values))
        if validate and model is not None:
            values = catalog.check_input(model, values, extra_inputs=extra_inputs)
        data = yield from self.core.send(
            Call("POST", "estimate", body={"modelId": model_id, "input": _plain(values)})
        )
        spelling = self.core.spelling
        spelling.estimate_data(data, model_id)
        if len(certain.price_members(data)) > 1 and not spelling.is_confirmed("estimate_credits"):
            yield from self._settle_price_member(data, model)
        estimate = Estimate.from_api(data, spelling.names)
        if estimate.model_id is None:
            estimate = replace(estimate, model_id=model_id)
        certain.estimate(estimate, data, model, values, self.prices, spelling.names)
        return (
            estimate
            if measured is None or model is None
            else measured_price(estimate, measured, model, values)
        )

    def _settle_price_member(self, data: Mapping[str, Any], model: Model | None) -> Op[None]:
        """Which of an estimate's numbers is the price, when it carries several and no names file or
        earlier answer said: the one equal to a flat-priced model's listed price (this model's, or that
        of the catalog's cheapest flat model without media inputs, estimated once, free); where several
        are, the one of those that changes between two options of a per-option model (two more free
        estimates). None left, or several: a ServiceResponseError naming the numbers and the setting."""
        spelling = self.core.spelling
        models = yield from self.catalog.models()
        flat = next(iter(_flat_models(models)), None)
        members = certain.price_members(data)
        if model is not None and model.pricing is None and model.credits is not None:
            flat = model
        elif flat is not None:
            members = certain.price_members((yield from self._free_estimate(flat, certain_input(flat))))
        holding = [name for name, value in members.items() if flat is not None and value == flat.credits]
        if len(holding) > 1:
            holding = yield from self._varying(holding, models)
        if flat is not None and len(holding) == 1:
            spelling.confirm(
                "estimate_credits", holding[0], f"an estimate's credits ({flat.id} lists {flat.credits})"
            )
            return
        setting = wire.setting("estimate_credits")
        raise errors.ServiceResponseError(
            f"the service's estimate carries several numbers ({certain._shown(certain.price_members(data))}) "
            "and none of them can be told to be the price"
            + (
                f" ({flat.id}, listed at {flat.credits} credits, was estimated as {certain._shown(members)})"
                if flat
                else ""
            )
            + f': set {setting} = "<the member that is the price>" in a names file ({ENV_WIRE})',
            field=spelling.names.estimate_credits,
        )

    def _free_estimate(self, model: Model, values: Mapping[str, Any]) -> Op[Mapping[str, Any]]:
        answer: Mapping[str, Any] = yield from self.core.send(
            Call("POST", "estimate", body={"modelId": model.id, "input": dict(values)})
        )
        return answer

    def _varying(self, holding: list[str], models: list[Model]) -> Op[list[str]]:
        """Of ``holding``, the members that change between two options of the first per-option model
        whose inputs need no media (a price does; a listed figure or a balance does not)."""
        for model in models:
            options = _priced_options(model)
            if len(options) < 2:
                continue
            base = certain_input(model)
            name = options[0][0]
            answers = []
            for _, value in options[:2]:
                answers.append(
                    certain.price_members((yield from self._free_estimate(model, {**base, name: value})))
                )
            return [m for m in holding if answers[0].get(m) != answers[1].get(m)]
        return holding

    def known(self, model_id: Any) -> Op[Model | None]:
        """The catalog's record of ``model_id`` (the cached catalog), or None: the service says why."""
        models = yield from self.catalog.models()
        return next((m for m in models if m.id == model_id), None)

    def price(self, model: Model, values: Mapping[str, Any]) -> Op[int]:
        """What a run will charge: the listed price when it never varies, else the service's estimate."""
        if model.pricing is None:
            return model.credits or 0
        return (yield from self.estimate(model.id, values, validate=False)).credits

    def run(
        self,
        model_id: str,
        input: Mapping[str, Any] | None = None,
        *,
        webhook: str | None = None,
        idempotency_key: str | None = None,
        validate: bool = True,
        reuse: bool = False,
        fresh: bool = False,
        ledger: "ledgers.Ledger | str | None" = None,
        price: int | None = None,
        extra_inputs: bool = False,
        **fields: Any,
    ) -> Op[Generation]:
        """Start a generation (charges credits) and return it ``processing``.

        One call is one generation, unless ``reuse=True``: then the same model and input return the
        generation started before (from any path, at no charge; ``reused`` is True) and ``fresh=True``
        starts the next variation. ``idempotency_key`` is sent as given. Retries keep one key.
        ``price`` is what the run costs when the caller already knows (a sweep prices rows in bulk).
        An input name the model's schema does not have (a typo: ``qualty``) is refused before anything
        is sent, naming the nearest one; ``extra_inputs=True`` sends such names as they are.
        """
        values = merged(input, fields)
        model = None
        if validate or self.core.budget.limit is not None:
            model = yield from self.catalog.catalog_model(model_id)
        if validate and model is not None:
            attached = yield from self.catalog.attach(model, values)
            values = self.catalog.check_input(model, attached, extra_inputs=extra_inputs)
        body: dict[str, Any] = {"modelId": model_id, "input": _plain(values)}
        if webhook is not None:
            body["webhook"] = webhook

        def priced() -> Op[int | None]:
            if price is None and model is not None and self.core.budget.limit is not None:
                return (yield from self.price(model, values))
            return price

        started = yield from self.starts.start(
            Start(
                ledgers.GENERATION,
                model_id,
                model_id,
                values,
                request=lambda key: Call("POST", "run", START, body=body, idempotency_key=key),
                parse=Generation.from_api,
                recorded=lambda made, answer, _: Recorded(made.status, made.credits_spent, resource=answer),
                read=self.generation,
                price=priced,
                same=_same_generation,
                kept=True,
                born=lambda made: known(made.created_at),
                new_statuses=(states.PROCESSING, states.QUEUED),
                key=idempotency_key,
                reuse=reuse,
                fresh=fresh,
                ledger=ledger,
            )
        )
        certain.charge(started, model, values if isinstance(values, Mapping) else {}, self.prices)
        return started

    def generation(self, generation_id: str, wait: int | None = None) -> Op[Generation]:
        """Read a generation; with ``wait`` (5 to 55 s) the service holds the request until it ends."""
        query = None
        if wait is not None:
            if not spec_limits.WAIT_MIN_SECONDS <= wait <= spec_limits.WAIT_MAX_SECONDS:
                raise errors.ValidationError(
                    f"wait must be an integer from {spec_limits.WAIT_MIN_SECONDS} to "
                    f"{spec_limits.WAIT_MAX_SECONDS} seconds",
                    field="wait",
                    sent=False,
                )
            query = {"wait": int(wait)}
        ident = checked_id(generation_id, "generation")
        call = Call(
            "GET",
            "generation",
            params={"id": ident},
            query=query,
            hold=wait or 0,
        )
        data = yield from self.core.send(call)
        generation = Generation.from_api(data)
        generation = replace(generation, elapsed_s=self.core.elapsed(generation.id))
        if generation.id.lower() != ident.lower():
            raise errors.ServiceResponseError(
                f"the service answered generation {generation.id} when asked for {ident}: is "
                "MEDIAGEN_BASE_URL the service's address?",
                field="id",
            )
        charged = 0 if generation.status == states.FAILED else generation.credits_spent
        yield from self.core.observed(
            generation.id,
            generation.status,
            credits=charged,
            urls=generation.urls,
            error=generation.error,
            resource=wire_of(generation),
        )
        return generation

    def wait(
        self,
        generation: Generation | str,
        *,
        timeout: float | None = None,
        on_update: Callable[[Generation], None] | None = None,
    ) -> Op[Generation]:
        """Long-poll (``wait=55``) until the generation ends; never short-polls.

        ``timeout`` is in service seconds (default: the service's 30-minute hard limit and a margin,
        after which it can only be stuck); past it WaitTimeout carries the last reading. A rest of the
        timeout shorter than the service's shortest hold (5 s) is waited here and followed by one
        read, so the wait ends on time. The result may have failed: see ``raise_for_status``.
        """
        generation_id = generation.id if isinstance(generation, Generation) else str(generation)
        reused = isinstance(generation, Generation) and generation.reused
        timeout = GENERATION_WAIT if timeout is None else timeout
        clock = self.core.clock
        deadline = clock.monotonic() + timeout  # in service seconds, as the clock is

        def read(hold: int | None) -> Op[Generation]:
            current = yield from self.generation(generation_id, wait=hold)
            current = replace(current, reused=reused)
            if on_update is not None:
                on_update(current)
            return current

        while True:
            left = deadline - clock.monotonic()
            hold = (
                int(min(spec_limits.WAIT_MAX_SECONDS, left)) if left >= spec_limits.WAIT_MIN_SECONDS else None
            )
            current = yield from read(hold)
            rest = deadline - clock.monotonic()
            if not current.done and 0 < rest < spec_limits.WAIT_MIN_SECONDS:
                yield Pause(rest)  # too short for another hold: wait it out here, then read once more
                current = yield from read(None)
                rest = 0.0
            if current.done:
                return current
            if rest <= 0:
                raise errors.WaitTimeout(
                    f"generation {generation_id} is still {current.status} after {timeout:g} s; it goes on "
                    "and can be read again by id (wait(..., timeout=) waits longer)",
                    current,
                )

    def generate(
        self,
        model_id: str,
        input: Mapping[str, Any] | None = None,
        *,
        webhook: str | None = None,
        idempotency_key: str | None = None,
        reuse: bool = False,
        fresh: bool = False,
        timeout: float | None = None,
        on_update: Callable[[Generation], None] | None = None,
        extra_inputs: bool = False,
        **fields: Any,
    ) -> Op[Generation]:
        """Run and wait in one call; raises GenerationFailed or GenerationTimedOut when it fails.

        ``extra_inputs=True`` sends input names the model's schema does not have (refused otherwise).
        """
        started = yield from self.run(
            model_id,
            input,
            webhook=webhook,
            idempotency_key=idempotency_key,
            reuse=reuse,
            fresh=fresh,
            extra_inputs=extra_inputs,
            **fields,
        )
        if on_update is not None:
            on_update(started)
        finished = (
            started if started.done else (yield from self.wait(started, timeout=timeout, on_update=on_update))
        )
        return finished.raise_for_status()


def _flat_models(models: list[Model]) -> list[Model]:
    """Flat-priced models whose required inputs need no media file, cheapest first."""
    runnable = [
        m
        for m in models
        if m.pricing is None
        and m.credits is not None
        and not any(
            schema.media_kind(m.properties[n]) for n in m.required if isinstance(m.properties.get(n), Mapping)
        )
    ]
    return sorted(runnable, key=lambda m: (m.credits or 0, m.id))


def _priced_options(model: Model) -> list[tuple[str, Any]]:
    """The options of the one enum input a media-free model's price varies by (none when it has no such
    input, or needs a media file)."""
    if model.pricing is None or any(
        schema.media_kind(model.properties[n])
        for n in model.required
        if isinstance(model.properties.get(n), Mapping)
    ):
        return []
    for name in model.varies_by:
        prop = model.properties.get(name)
        if isinstance(prop, Mapping) and isinstance(prop.get("enum"), list) and len(prop["enum"]) > 1:
            return [(name, value) for value in prop["enum"]]
    return []


def certain_input(
    model: Model, stand_ins: Mapping[str, str] | None = None, text: str = "A short check of the service."
) -> dict[str, Any]:
    """An input with every required field filled, for a free estimate: defaults, first options, the
    least number, ``text``; a media field by ``stand_ins[kind]`` (a URL no one can read: an estimate then
    assumes the spec's 30 s), else left out."""
    values: dict[str, Any] = {}
    for name in model.required:
        prop = model.properties.get(name)
        prop = prop if isinstance(prop, Mapping) else {}
        kind = schema.media_kind(prop)
        if kind is not None:
            if stand_ins is not None and kind in stand_ins:
                values[name] = [stand_ins[kind]] if prop.get("type") == "array" else stand_ins[kind]
        elif "default" in prop:
            values[name] = prop["default"]
        elif isinstance(prop.get("enum"), list) and prop["enum"]:
            values[name] = prop["enum"][0]
        elif prop.get("type") in ("integer", "number"):
            values[name] = prop.get("minimum", 1)
        elif prop.get("type") == "boolean":
            values[name] = False
        else:
            values[name] = text
    return values


def _same_generation(current: Generation, entry: ledgers.Entry) -> bool:
    """Whether the generation read under an earlier start's id is that start's: same model, same birth
    (a restarted sandbox with the same seed hands the same ids out again)."""
    created = entry.resource.get("createdAt") if isinstance(entry.resource, Mapping) else None
    return current.model_id == entry.model_id and not (created and current.created_at != created)


def measured_price(
    estimate: Estimate, measured: Measured, model: Model, values: Mapping[str, Any]
) -> Estimate:
    """The estimate of a file measured here, from the service's price of the 30 s it assumes for a
    file it cannot read: per started second, the way the service bills the file's length.

    Its billing text is ours: the service's describes the stand-in URL it could not read, not the file.
    """
    per_second = Fraction(estimate.credits) / Fraction(spec_limits.ESTIMATE_FALLBACK_SECONDS)
    seconds = math.ceil(round(measured.seconds, 6))
    credits = max(1, math.ceil(per_second * seconds))
    others = [
        f"{name} {values.get(name, model.properties.get(name, {}).get('default'))}"
        for name in model.varies_by
        if name != measured.field
    ]
    at = f" at {', '.join(others)}" if others else ""
    billing = (
        f"{measured.field}: {measured.name} measured here ({measured.seconds:.2f} s, not uploaded){at}; "
        f"priced per started second from the service's {estimate.credits} credits for 30 s"
    )
    return replace(estimate, credits=credits, billing=billing)


def _plain(input: Any) -> Any:
    """An input mapping as a dict for the body; anything else as it is (the service refuses it)."""
    return dict(input) if isinstance(input, Mapping) else input
