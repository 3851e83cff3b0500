"""``Client`` and ``AsyncClient``: the same operations, driven by httpx's sync or async client.

Each operation is written once, in :mod:`mediagen_nb.client.engine`, as a generator of steps; the
``operation`` descriptor below exposes it as a plain method on ``Client`` and as a coroutine
method on ``AsyncClient``. The only code written twice is the ten-line loop that drives a step.
"""

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

import httpx

from mediagen_nb.client.config import Settings, resolve
from mediagen_nb.client.engine import Call, Engine, Op
from mediagen_nb.client.pacing import Limits
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

# Long polls hold a connection up to 55 s; the limiters, not the pool, bound how many are open.
POOL = httpx.Limits(max_connections=None, max_keepalive_connections=64)
P = ParamSpec("P")
T = TypeVar("T")
Self = TypeVar("Self", bound="BaseClient")


class operation(Generic[P, T]):
    """A method written once as a generator of steps, run by the client it is called on."""

    def __init__(self, fn: Callable[Concatenate[Any, P], Op[T]]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    @overload
    def __get__(self, obj: None, owner: type) -> "operation[P, T]": ...
    @overload
    def __get__(self, obj: "AsyncClient", owner: type) -> Callable[P, Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, obj: "Client", owner: type) -> Callable[P, T]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        fn = self.fn

        @functools.wraps(fn)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return obj._drive(fn(obj, *args, **kwargs))

        return bound


def _input(input: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """``input`` and keyword fields merged (keywords win), so both call styles work.

    A non-object ``input`` is passed on as it is: the operation refuses it (``input must be an object``).
    """
    if input is not None and not isinstance(input, Mapping):
        return input  # type: ignore[return-value]
    return {**(input or {}), **fields}


class BaseClient:
    """Configuration and the operations shared by both clients."""

    def __init__(
        self,
        api_key: str | Sequence[str] | None = None,
        *,
        base_url: str | None = None,
        account: str | None = None,
        limits: Limits | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        settings: Settings | None = None,
        sandbox: bool = False,
    ) -> None:
        """Connect with ``api_key`` (or several keys of one account, pooled) to ``base_url``.

        Without either, ``MEDIAGEN_API_KEY`` / ``MEDIAGEN_BASE_URL`` are read; with neither set (or
        ``sandbox=True``), the embedded sandbox is used. ``limits`` must match a time-scaled sandbox.
        """
        settings = settings or resolve(api_key, base_url, account=account, limits=limits, sandbox=sandbox)
        self._engine = Engine(settings, retry or RetryPolicy(), timeout)

    @property
    def settings(self) -> Settings:
        """Where and how this client connects (keys shown only as fingerprints)."""
        return self._engine.settings

    @property
    def base_url(self) -> str:
        return self._engine.settings.base_url

    def __repr__(self) -> str:
        s = self._engine.settings
        where = "embedded sandbox" if s.sandbox else s.base_url
        return f"<{type(self).__name__} {where} keys={len(s.keys)} time_scale={s.limits.time_scale:g}>"

    def _drive(self, op: Op[Any]) -> Any:
        raise NotImplementedError

    def check_input(self, model: Model, input: Mapping[str, Any]) -> dict[str, Any]:
        """Validate ``input`` against ``model``'s schema as the service would; no request is sent."""
        return self._engine.check_input(model, input)

    @operation
    def models(self, refresh: bool = False) -> Op[list[Model]]:
        """Every catalog model (cached per client; ``refresh=True`` reads it again)."""
        return self._engine.models(refresh)

    @operation
    def model(self, model_id: str, refresh: bool = False) -> Op[Model]:
        """One catalog model, with ``example`` when the service has one."""
        return self._engine.model(model_id, refresh)

    @operation
    def openapi(self) -> Op[dict[str, Any]]:
        """The service's OpenAPI 3.1 document."""
        return self._engine.openapi()

    @operation
    def llms_txt(self) -> Op[str]:
        """Model ids, output types and required inputs as plain text."""
        return self._engine.llms_txt()

    @operation
    def estimate(
        self, model_id: str, input: Mapping[str, Any] | None = None, *, validate: bool = True, **fields: Any
    ) -> Op[Estimate]:
        """What a run would charge; never charges."""
        return self._engine.estimate(model_id, _input(input, fields), validate)

    @operation
    def run(
        self,
        model_id: str,
        input: Mapping[str, Any] | None = None,
        *,
        webhook: str | None = None,
        idempotency_key: str | None = None,
        validate: bool = True,
        **fields: Any,
    ) -> Op[Generation]:
        """Start a generation (charges credits) and return it ``processing``."""
        return self._engine.run(model_id, _input(input, fields), webhook, idempotency_key, validate)

    @operation
    def generation(self, generation_id: str, wait: int | None = None) -> Op[Generation]:
        """Read a generation; ``wait`` (5 to 55 s) holds the request until it ends."""
        return self._engine.generation(generation_id, wait)

    @operation
    def wait(
        self,
        generation: Generation | str,
        *,
        timeout: float | None = None,
        on_update: Callable[[Generation], None] | None = None,
    ) -> Op[Generation]:
        """Long-poll until the generation ends (it may have failed: see ``raise_for_status``)."""
        return self._engine.wait(generation, timeout, on_update)

    @operation
    def generate(
        self,
        model_id: str,
        input: Mapping[str, Any] | None = None,
        *,
        webhook: str | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
        on_update: Callable[[Generation], None] | None = None,
        **fields: Any,
    ) -> Op[Generation]:
        """Run and wait in one call; raises GenerationFailed or GenerationTimedOut on failure."""
        return self._engine.generate(
            model_id, _input(input, fields), webhook, idempotency_key, timeout, on_update
        )

    @operation
    def analyze(self, url: str, *, idempotency_key: str | None = None) -> Op[Analysis]:
        """Start reading a short video into a blueprint (flat 5 credits)."""
        return self._engine.analyze(url, idempotency_key)

    @operation
    def analysis(self, analysis_id: str) -> Op[Analysis]:
        """Read an analysis and its blueprint."""
        return self._engine.analysis(analysis_id)

    @operation
    def build_blueprint(self, analysis_id: str) -> Op[BlueprintBuild]:
        """Ask for clip prompts when only the shot list exists."""
        return self._engine.build_blueprint(analysis_id)

    @operation
    def wait_analysis(
        self,
        analysis: Analysis | str,
        *,
        build_blueprint: bool = True,
        poll: float = 5.0,
        timeout: float | None = None,
        on_update: Callable[[Analysis], None] | None = None,
    ) -> Op[Analysis]:
        """Poll until the analysis is ready with clip prompts (building them if needed) or failed."""
        return self._engine.wait_analysis(analysis, build_blueprint, poll, timeout, on_update)

    @operation
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
        """Render a replica of a ready analysis (charged per clip as it renders)."""
        return self._engine.replicate(
            analysis_id,
            model_id=model_id,
            quality=quality,
            accuracy=accuracy,
            clips=clips,
            character_image=character_image,
            captions=captions,
            audio=audio,
            marketing_aspect=marketing_aspect,
            webhook=webhook,
            idempotency_key=idempotency_key,
        )

    @operation
    def replication_run(self, run_id: str) -> Op[ReplicationRun]:
        """Read a replication run."""
        return self._engine.replication_run(run_id)

    @operation
    def wait_replication(
        self,
        run: ReplicationRun | str,
        *,
        poll: float = 5.0,
        timeout: float | None = None,
        on_update: Callable[[ReplicationRun], None] | None = None,
    ) -> Op[ReplicationRun]:
        """Poll until the run is done or failed."""
        return self._engine.wait_replication(run, poll, timeout, on_update)

    @operation
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
        """Start a topic-to-video job."""
        return self._engine.make_video(
            topic,
            seconds=seconds,
            gender=gender,
            look=look,
            voice=voice,
            flow=flow,
            captions=captions,
            music=music,
            webhook=webhook,
            idempotency_key=idempotency_key,
        )

    @operation
    def job(self, job_id: str) -> Op[ShortVideoJob]:
        """Read a topic-to-video job."""
        return self._engine.job(job_id)

    @operation
    def video_options(self) -> Op[VideoOptions]:
        """Voices by gender, looks, edit styles and length bounds."""
        return self._engine.video_options()

    @operation
    def reedit(
        self, job_id: str, *, flow: str | None = None, captions: bool | None = None, music: bool | None = None
    ) -> Op[ShortVideoJob]:
        """Re-cut a finished video with another edit style; returns the new job."""
        return self._engine.reedit(job_id, flow=flow, captions=captions, music=music)

    @operation
    def wait_job(
        self,
        job: ShortVideoJob | str,
        *,
        poll: float = 5.0,
        timeout: float | None = None,
        on_update: Callable[[ShortVideoJob], None] | None = None,
    ) -> Op[ShortVideoJob]:
        """Poll until the job is done or failed."""
        return self._engine.wait_job(job, poll, timeout, on_update)

    @operation
    def confirm_webhook(self, payload: bytes | str | Mapping[str, Any]) -> Op[Any]:
        """Read the generation, run or job a webhook names, with this client's key."""
        return self._engine.confirm_webhook(payload)


class Client(BaseClient):
    """The synchronous client. Safe to share between threads; limits are shared process-wide."""

    def __init__(
        self,
        api_key: str | Sequence[str] | None = None,
        *,
        http_client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        **options: Any,
    ) -> None:
        super().__init__(api_key, **options)
        self._http = http_client or httpx.Client(transport=transport, follow_redirects=True, limits=POOL)
        self._owns_http = http_client is None

    @classmethod
    def for_sandbox(cls, sandbox: Any, **options: Any) -> "Client":
        """A client for a :class:`~mediagen_nb.sandbox.Sandbox` (served on loopback; started if needed)."""
        if sandbox.base_url is None:
            sandbox.start()
        options.setdefault("limits", Limits(time_scale=sandbox.config.time_scale))
        return cls(sandbox.demo_key, base_url=sandbox.base_url, **options)

    def _drive(self, op: Op[T]) -> T:
        reply: Any = None
        failure: BaseException | None = None
        while True:
            try:
                step = op.throw(failure) if failure is not None else op.send(reply)
            except StopIteration as done:
                return done.value
            reply, failure = None, None
            if isinstance(step, Call):
                try:
                    reply = self._http.send(self._engine.build(self._http, step))
                except httpx.TransportError as exc:
                    failure = exc
            else:
                time.sleep(step.seconds)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient(BaseClient):
    """The asyncio client: every operation is a coroutine. Limits are shared with sync clients."""

    def __init__(
        self,
        api_key: str | Sequence[str] | None = None,
        *,
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        **options: Any,
    ) -> None:
        super().__init__(api_key, **options)
        self._http = http_client or httpx.AsyncClient(transport=transport, follow_redirects=True, limits=POOL)
        self._owns_http = http_client is None

    @classmethod
    def like(cls, other: BaseClient, **options: Any) -> "AsyncClient":
        """An AsyncClient with the same service, keys, account and limits as ``other``."""
        return cls(settings=other.settings, **options)

    @classmethod
    def for_sandbox(cls, sandbox: Any, **options: Any) -> "AsyncClient":
        """A client for a Sandbox: over HTTP when it is served, else in-process (ASGI transport)."""
        options.setdefault("limits", Limits(time_scale=sandbox.config.time_scale))
        if sandbox.base_url is not None:
            return cls(sandbox.demo_key, base_url=sandbox.base_url, **options)
        return cls(
            sandbox.demo_key, base_url="http://sandbox.local", transport=sandbox.transport(), **options
        )

    async def _drive(self, op: Op[T]) -> T:
        reply: Any = None
        failure: BaseException | None = None
        while True:
            try:
                step = op.throw(failure) if failure is not None else op.send(reply)
            except StopIteration as done:
                return done.value
            reply, failure = None, None
            if isinstance(step, Call):
                try:
                    reply = await self._http.send(self._engine.build(self._http, step))
                except httpx.TransportError as exc:
                    failure = exc
            else:
                await asyncio.sleep(step.seconds)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
