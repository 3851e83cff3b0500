"""The client's one implementation: every operation is a generator of steps, free of I/O.

An operation yields :class:`Call` (send this request) and :class:`Pause` (sleep this long) and
receives responses; :mod:`mediagen_nb.client.clients` drives the same generators with httpx's
sync or async client. Request building, parsing, limits, retries and waiting are written once here.
"""

import json
import random
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from mediagen_nb.client import errors, pacing
from mediagen_nb.client.config import Secret, Settings
from mediagen_nb.client.resources import (
    Analysis,
    BlueprintBuild,
    Estimate,
    Generation,
    Model,
    ReplicationRun,
    ShortVideoJob,
    VideoOptions,
)
from mediagen_nb.client.retry import RetryPolicy
from mediagen_nb.protocol import limits as spec_limits
from mediagen_nb.protocol import messages, schema, wire
from mediagen_nb.protocol.paths import path

T = TypeVar("T")
R = TypeVar("R")

CATALOG, READ, START = "catalog", "read", "start"
POLL_SECONDS = 5.0  # replication and topic-to-video have no ``wait``: poll every few seconds
HTTP_SLACK = 30.0  # real seconds a request may take beyond the time the service holds it


@dataclass(frozen=True)
class Call:
    """One request to send. ``kind`` decides which limiters it passes through."""

    method: str
    endpoint: str  # a name of mediagen_nb.protocol.paths.PATHS
    kind: str = READ
    params: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, Any] | None = None
    body: Any = None
    idempotency_key: str | None = None
    hold: float = 0.0  # service seconds the service may hold the request (long poll)
    # False for a start the service cannot deduplicate (reedit has no idempotency key): after an
    # ambiguous failure (a broken connection, a 500) it may have started, so it is not sent again.
    replayable: bool = True
    key: Secret | None = None  # filled by the engine


@dataclass(frozen=True)
class Pause:
    """Sleep this many real seconds."""

    seconds: float


Step = Call | Pause
Op = Generator[Step, Any, T]


class Engine:
    """State and logic shared by Client and AsyncClient: settings, limiters, retries, the catalog cache."""

    def __init__(self, settings: Settings, retry: RetryPolicy, timeout: float) -> None:
        self.settings = settings
        self.retry = retry
        self.timeout = timeout
        lim = settings.limits
        self._keys = [
            pacing.shared("key", settings.base_url, k.reveal(), lim.requests_per_key, lim.real_window)
            for k in settings.keys
        ]
        self._account = pacing.shared(
            "account", settings.base_url, settings.account, lim.starts_per_account, lim.real_window
        )
        self._models: dict[str, Model] | None = None
        self._details: dict[str, Model] = {}
        self._started: OrderedDict[str, float] = OrderedDict()  # generation id -> monotonic start
        self._rng = random.Random()

    # -- transport-neutral helpers -------------------------------------------------------------

    def build(self, http: httpx.Client | httpx.AsyncClient, call: Call) -> httpx.Request:
        """The httpx request for ``call``; the key is revealed only here, into the header."""
        headers = {"Accept": "application/json"}
        if call.key is not None:
            headers["Authorization"] = f"Bearer {call.key.reveal()}"
        if call.idempotency_key is not None:
            headers["Idempotency-Key"] = call.idempotency_key
        timeout = self.timeout + self.settings.limits.real(call.hold) + (HTTP_SLACK if call.hold else 0.0)
        return http.build_request(
            call.method,
            self.settings.base_url + path(call.endpoint, **call.params),
            params=call.query,
            json=call.body,
            headers=headers,
            timeout=timeout,
        )

    def _real(self, service_seconds: float) -> float:
        return self.settings.limits.real(service_seconds)

    def _reserve(self, call: Call) -> tuple[Call, float]:
        """Pick the key with budget first (with the account's start budget for starts) and book it."""
        if call.kind == CATALOG:
            return call, 0.0
        choices = [[key] + ([self._account] if call.kind == START else []) for key in self._keys]
        index, delay = pacing.reserve(choices)
        return Call(**{**call.__dict__, "key": self.settings.keys[index]}), delay

    def _penalize(self, call: Call, error: errors.RateLimitError) -> None:
        """An unexpected 429: that key (or the account) sends nothing for a window."""
        window = self.settings.limits.real_window
        if error.scope == "account":
            self._account.pause(window)
        elif call.key is not None:
            self._keys[self.settings.keys.index(call.key)].pause(window)

    def send(self, call: Call) -> Op[Any]:
        """Send ``call`` under the limiters and the retry policy; return ``data`` (or the raw body)."""
        if call.kind == START and call.idempotency_key is None:
            call = Call(**{**call.__dict__, "idempotency_key": uuid.uuid4().hex})
        attempt = 0
        while True:
            call, delay = self._reserve(call)
            if delay > 0:
                yield Pause(delay)
            error: errors.MediagenError
            try:
                response: httpx.Response = yield call
            except httpx.TransportError as exc:
                error = errors.ConnectionFailed(f"{call.method} {path(call.endpoint, **call.params)}: {exc}")
            else:
                if response.is_success:
                    try:
                        return _decode(call, response)
                    except ValueError:
                        error = errors.ConnectionFailed(
                            f"incomplete response to {call.method} {call.endpoint}"
                        )
                else:
                    error = errors.from_response(response.status_code, response.content)
                    if isinstance(error, errors.RateLimitError):
                        self._penalize(call, error)
            ambiguous = isinstance(error, (errors.ConnectionFailed, errors.ServerError))
            wait = None if ambiguous and not call.replayable else self.retry.delay(error, attempt, self._rng)
            if wait is None:
                raise error from None
            yield Pause(self._real(wait))
            attempt += 1

    # -- catalog -------------------------------------------------------------------------------

    def models(self, refresh: bool = False) -> Op[list[Model]]:
        """Every catalog model (cached per client; ``refresh=True`` reads it again)."""
        if self._models is None or refresh:
            data = yield from self.send(Call("GET", "models", CATALOG))
            records = data.get(wire.MODELS_LIST, []) if isinstance(data, Mapping) else data
            self._models = {m.id: m for m in (Model.from_api(r) for r in records)}
        return list(self._models.values())

    def model(self, model_id: str, refresh: bool = False) -> Op[Model]:
        """One model with its ``example`` when the service has one (cached per client)."""
        if model_id not in self._details or refresh:
            data = yield from self.send(Call("GET", "model", CATALOG, params={"id": model_id}))
            self._details[model_id] = Model.from_api(data)
        return self._details[model_id]

    def openapi(self) -> Op[dict[str, Any]]:
        """The service's OpenAPI 3.1 document."""
        return (yield from self.send(Call("GET", "openapi", CATALOG)))

    def llms_txt(self) -> Op[str]:
        """The plain-text list of model ids, output types and required inputs."""
        return (yield from self.send(Call("GET", "llms_txt", CATALOG)))

    def _catalog_model(self, model_id: str) -> Op[Model]:
        models = {m.id: m for m in (yield from self.models())}
        if model_id not in models:
            raise errors.ValidationError(
                messages.unknown_model(str(model_id), models), field="modelId", sent=False
            )
        return models[model_id]

    def check_input(self, model: Model, values: Mapping[str, Any]) -> dict[str, Any]:
        """Refuse, before any request, what the service would refuse; return the input to send."""
        if not isinstance(values, Mapping):
            raise errors.ValidationError(messages.INPUT_NOT_OBJECT, field="input", sent=False)
        try:
            normalized = schema.normalize(model.input_schema, values)
            media = model.length_billed_field
            if media is not None and not schema.is_missing(values.get(media)):
                schema.check_media_extension(media, values[media])
        except schema.InputError as exc:
            raise errors.ValidationError(exc.message, field=exc.field, sent=False) from None
        return {name: normalized[name] for name in values}

    # -- generations ---------------------------------------------------------------------------

    def estimate(self, model_id: str, input: Mapping[str, Any], validate: bool = True) -> Op[Estimate]:
        """What a run with ``input`` will charge (never charges; the service prices it like a run)."""
        if validate:
            input = self.check_input((yield from self._catalog_model(model_id)), input)
        data = yield from self.send(
            Call("POST", "estimate", body={"modelId": model_id, "input": _plain(input)})
        )
        return Estimate.from_api(data)

    def run(
        self,
        model_id: str,
        input: Mapping[str, Any],
        webhook: str | None = None,
        idempotency_key: str | None = None,
        validate: bool = True,
    ) -> Op[Generation]:
        """Start a generation (charges credits). Retries reuse one Idempotency-Key, so one charge."""
        if validate:
            input = self.check_input((yield from self._catalog_model(model_id)), input)
        body: dict[str, Any] = {"modelId": model_id, "input": _plain(input)}
        if webhook is not None:
            body["webhook"] = webhook
        key = (idempotency_key or uuid.uuid4().hex)[: spec_limits.IDEMPOTENCY_KEY_CHARS]
        data = yield from self.send(Call("POST", "run", START, body=body, idempotency_key=key))
        generation = Generation.from_api(data)
        self._started.setdefault(generation.id, time.monotonic())
        while len(self._started) > 10_000:
            self._started.popitem(last=False)
        return generation

    def _elapsed(self, generation_id: str) -> float | None:
        started = self._started.get(generation_id)
        return None if started is None else round(time.monotonic() - started, 3)

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
        call = Call("GET", "generation", params={"id": str(generation_id)}, query=query, hold=wait or 0)
        data = yield from self.send(call)
        return Generation.from_api(data, elapsed_s=self._elapsed(data.get("id", generation_id)))

    def wait(
        self,
        generation: "Generation | str",
        timeout: float | None = None,
        on_update: Callable[[Generation], None] | None = None,
    ) -> Op[Generation]:
        """Long-poll (``wait=55``) until the generation ends; never short-polls.

        ``timeout`` is in service seconds; past it WaitTimeout carries the last reading.
        """
        generation_id = generation.id if isinstance(generation, Generation) else str(generation)
        deadline = None if timeout is None else time.monotonic() + self._real(timeout)
        while True:
            hold = spec_limits.WAIT_MAX_SECONDS
            if deadline is not None:
                left = (deadline - time.monotonic()) * self.settings.limits.time_scale
                hold = int(min(hold, max(spec_limits.WAIT_MIN_SECONDS, left)))
            current = yield from self.generation(generation_id, wait=hold)
            if on_update is not None:
                on_update(current)
            if current.done:
                return current
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.WaitTimeout(f"generation {generation_id} still {current.status}", current)

    def generate(
        self,
        model_id: str,
        input: Mapping[str, Any],
        webhook: str | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
        on_update: Callable[[Generation], None] | None = None,
    ) -> Op[Generation]:
        """Run and wait in one call; raises GenerationFailed / GenerationTimedOut when it fails."""
        started = yield from self.run(model_id, input, webhook, idempotency_key)
        if on_update is not None:
            on_update(started)
        finished = yield from self.wait(started, timeout, on_update)
        return finished.raise_for_status()

    # -- replication ---------------------------------------------------------------------------

    def analyze(self, url: str, idempotency_key: str | None = None) -> Op[Analysis]:
        """Start an analysis of a short video link (flat 5 credits)."""
        if not isinstance(url, str) or not url.strip():
            raise errors.ValidationError("url must be a link to a short video", field="url", sent=False)
        key = idempotency_key or uuid.uuid4().hex
        data = yield from self.send(Call("POST", "analyze", START, body={"url": url}, idempotency_key=key))
        return Analysis.from_api({"sourceUrl": url, **data})

    def analysis(self, analysis_id: str) -> Op[Analysis]:
        data = yield from self.send(Call("GET", "analysis", params={"id": str(analysis_id)}))
        return Analysis.from_api(data)

    def build_blueprint(self, analysis_id: str) -> Op[BlueprintBuild]:
        """Ask for clip prompts when only the shot list exists."""
        data = yield from self.send(Call("POST", "blueprint", params={"id": str(analysis_id)}))
        return BlueprintBuild.from_api(data)

    def replicate(
        self,
        analysis_id: str,
        *,
        model_id: str | None = None,
        quality: str | None = None,
        accuracy: str | None = None,
        clips: list[int] | None = None,
        character_image: str | None = None,
        captions: bool | None = None,
        audio: str | Mapping[str, Any] | None = None,
        marketing_aspect: str | None = None,
        webhook: str | None = None,
        idempotency_key: str | None = None,
    ) -> Op[ReplicationRun]:
        """Render a replica of a ready analysis; omitted fields take the service's defaults.

        ``audio`` is ``"chunks"``, ``"original"``, an https URL (uploaded track) or the spec's object.
        """
        if isinstance(audio, str):
            audio = {"mode": audio} if audio in ("chunks", "original") else {"mode": "upload", "url": audio}
        body = {
            name: value
            for name, value in {
                "modelId": model_id,
                "quality": quality,
                "accuracy": accuracy,
                "clips": list(clips) if clips is not None else None,
                "characterImage": character_image,
                "captions": captions,
                "audio": audio,
                "marketingAspect": marketing_aspect,
                "webhook": webhook,
            }.items()
            if value is not None
        }
        key = idempotency_key or uuid.uuid4().hex
        call = Call(
            "POST", "replicate", START, params={"id": str(analysis_id)}, body=body, idempotency_key=key
        )
        data = yield from self.send(call)
        start = {"analysisId": str(analysis_id), "status": "generating", "quality": quality, **data}
        return ReplicationRun.from_api(start)

    def replication_run(self, run_id: str) -> Op[ReplicationRun]:
        data = yield from self.send(Call("GET", "replication_run", params={"id": str(run_id)}))
        return ReplicationRun.from_api(data)

    def _poll(
        self,
        read: Callable[[], Op[R]],
        finished: Callable[[R], bool],
        poll: float,
        timeout: float | None,
        on_update: Callable[[R], None] | None,
        what: str,
    ) -> Op[R]:
        """Read every ``poll`` service seconds (through the limiters) until ``finished``."""
        deadline = None if timeout is None else time.monotonic() + self._real(timeout)
        while True:
            current = yield from read()
            if on_update is not None:
                on_update(current)
            if finished(current):
                return current
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.WaitTimeout(f"{what} has not finished", current)
            yield Pause(self._real(poll))

    def wait_analysis(
        self,
        analysis: "Analysis | str",
        build_blueprint: bool = True,
        poll: float = POLL_SECONDS,
        timeout: float | None = None,
        on_update: Callable[[Analysis], None] | None = None,
    ) -> Op[Analysis]:
        """Poll until ``ready`` (asking for the blueprint when only a shot list exists) or ``failed``."""
        analysis_id = analysis.id if isinstance(analysis, Analysis) else str(analysis)
        deadline = None if timeout is None else time.monotonic() + self._real(timeout)
        asked = False
        while True:
            current = yield from self.analysis(analysis_id)
            if on_update is not None:
                on_update(current)
            shot_list_only = current.blueprint is not None and not current.blueprint.has_prompts
            if current.status == "failed" or (
                current.status == "ready" and not (build_blueprint and shot_list_only)
            ):
                return current
            if current.status == "ready" and not asked:
                yield from self.build_blueprint(analysis_id)
                asked = True
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.WaitTimeout(f"analysis {analysis_id} has not finished", current)
            yield Pause(self._real(poll))

    def wait_replication(
        self,
        run: "ReplicationRun | str",
        poll: float = POLL_SECONDS,
        timeout: float | None = None,
        on_update: Callable[[ReplicationRun], None] | None = None,
    ) -> Op[ReplicationRun]:
        """Poll until the run is ``done`` or ``failed``."""
        run_id = run.id if isinstance(run, ReplicationRun) else str(run)

        def read() -> Op[ReplicationRun]:
            return (yield from self.replication_run(run_id))

        return (yield from self._poll(read, lambda r: r.done, poll, timeout, on_update, f"run {run_id}"))

    # -- topic-to-video ------------------------------------------------------------------------

    def make_video(
        self,
        topic: str | None = None,
        *,
        seconds: float | None = None,
        gender: str | None = None,
        look: str | None = None,
        voice: str | None = None,
        flow: str | None = None,
        captions: bool | None = None,
        music: bool | None = None,
        webhook: str | None = None,
        idempotency_key: str | None = None,
    ) -> Op[ShortVideoJob]:
        """Start a topic-to-video job; the idempotency key goes in the body, as the spec says."""
        if seconds is not None and not (
            spec_limits.SHORT_VIDEO_SECONDS_MIN <= seconds <= spec_limits.SHORT_VIDEO_SECONDS_MAX
        ):
            raise errors.ValidationError(
                messages.out_of_range(
                    "seconds", spec_limits.SHORT_VIDEO_SECONDS_MIN, spec_limits.SHORT_VIDEO_SECONDS_MAX
                ),
                field="seconds",
                sent=False,
            )
        body = {
            name: value
            for name, value in {
                wire.JOB_TOPIC: topic,
                wire.JOB_SECONDS: seconds,
                wire.JOB_GENDER: gender,
                wire.JOB_LOOK: look,
                wire.JOB_VOICE: voice,
                wire.JOB_FLOW: flow,
                wire.JOB_CAPTIONS: captions,
                wire.JOB_MUSIC: music,
                wire.JOB_WEBHOOK: webhook,
                wire.JOB_IDEMPOTENCY: idempotency_key or uuid.uuid4().hex,
            }.items()
            if value is not None
        }
        data = yield from self.send(Call("POST", "job_start", START, body=body))
        return ShortVideoJob.from_api({"status": "scripting", "topic": topic, **data})

    def job(self, job_id: str) -> Op[ShortVideoJob]:
        data = yield from self.send(Call("GET", "job", params={"id": str(job_id)}))
        return ShortVideoJob.from_api(data)

    def video_options(self) -> Op[VideoOptions]:
        """Voices by gender, looks, edit styles and length bounds."""
        return VideoOptions.from_api((yield from self.send(Call("GET", "job_options"))))

    def reedit(
        self, job_id: str, *, flow: str | None = None, captions: bool | None = None, music: bool | None = None
    ) -> Op[ShortVideoJob]:
        """Re-cut a finished video with another edit; returns the new job."""
        body = {
            k: v for k, v in {"flow": flow, "captions": captions, "music": music}.items() if v is not None
        }
        call = Call("POST", "reedit", START, params={"id": str(job_id)}, body=body, replayable=False)
        data = yield from self.send(call)
        return ShortVideoJob.from_api({"status": "scripting", **data})

    def wait_job(
        self,
        job: "ShortVideoJob | str",
        poll: float = POLL_SECONDS,
        timeout: float | None = None,
        on_update: Callable[[ShortVideoJob], None] | None = None,
    ) -> Op[ShortVideoJob]:
        """Poll until the job is ``done`` or ``failed``."""
        job_id = job.id if isinstance(job, ShortVideoJob) else str(job)

        def read() -> Op[ShortVideoJob]:
            return (yield from self.job(job_id))

        return (yield from self._poll(read, lambda j: j.done, poll, timeout, on_update, f"job {job_id}"))

    # -- webhooks ------------------------------------------------------------------------------

    def confirm_webhook(self, payload: bytes | str | Mapping[str, Any]) -> Op[Any]:
        """Read the resource a webhook names, with this client's key (the signature cannot be checked).

        Returns a Generation, ReplicationRun or ShortVideoJob; trust it, not the payload.
        """
        if isinstance(payload, (bytes, str)):
            try:
                payload = json.loads(payload)
            except ValueError:
                raise errors.ValidationError("webhook body is not JSON", field="body", sent=False) from None
        if not isinstance(payload, Mapping):
            raise errors.ValidationError("webhook body must be a JSON object", field="body", sent=False)
        if payload.get("event") == "replication.completed" and payload.get("id"):
            return (yield from self.replication_run(str(payload["id"])))
        if payload.get("jobId"):
            return (yield from self.job(str(payload["jobId"])))
        if payload.get("id") and payload.get("modelId"):
            return (yield from self.generation(str(payload["id"])))
        raise errors.ValidationError("webhook body names no generation, run or job", field="body", sent=False)


def _plain(input: Any) -> Any:
    """An input mapping as a dict for the body; anything else as it is (the service refuses it)."""
    return dict(input) if isinstance(input, Mapping) else input


def _decode(call: Call, response: httpx.Response) -> Any:
    """The ``data`` of a success envelope; the whole document for openapi.json; text for llms.txt."""
    if call.endpoint == "llms_txt":
        return response.text
    body = json.loads(response.content)
    if call.endpoint == "openapi":
        return body
    if isinstance(body, Mapping) and "data" in body:
        return body["data"]
    return body
