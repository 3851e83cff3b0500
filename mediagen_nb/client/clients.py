"""``Client`` and ``AsyncClient``: the same operations, driven by httpx's sync or async client.

Each operation is written once, in a part of :mod:`mediagen_nb.client.engine`, as a generator of
steps; the ``operation`` descriptor below binds it, signature and docstring included, as a plain
method on ``Client`` and as a coroutine method on ``AsyncClient``. Only the loop that drives steps is
per client.
"""

import asyncio
import functools
import inspect
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, get_args, overload

import httpx

from mediagen_nb.client import assemble, transport
from mediagen_nb.client.catalog import Catalog
from mediagen_nb.client.config import Settings
from mediagen_nb.client.controls import Controls
from mediagen_nb.client.engine import Webhooks
from mediagen_nb.client.errors import MediagenError
from mediagen_nb.client.generations import Generations
from mediagen_nb.client.ledger import Ledger
from mediagen_nb.client.pacing import Limits
from mediagen_nb.client.replication import Replication
from mediagen_nb.client.resources import Model
from mediagen_nb.client.retry import RetryPolicy
from mediagen_nb.client.steps import Call, Op, Pause, Record
from mediagen_nb.client.timing import ServiceClock
from mediagen_nb.client.videos import Videos
from mediagen_nb.runtime import tls
from mediagen_nb.runtime.clock import REAL, Clock

# Long polls hold a connection up to 55 s; the limiters, not the pool, bound how many are open.
POOL = httpx.Limits(max_connections=None, max_keepalive_connections=64)
IN_PROCESS_URL = "http://sandbox.local"  # what a client of an in-process sandbox calls it
P = ParamSpec("P")
T = TypeVar("T")


class operation(Generic[P, T]):
    """An operation of a part of the engine (a generator of steps), run by the client it is read from.

    ``run = operation(Generations.run)`` gives ``Client.run`` (returns the result) and
    ``AsyncClient.run`` (returns a coroutine) one signature and one docstring: the operation's. It runs
    on the client's engine part of the class that defines it.
    """

    def __init__(self, fn: Callable[Concatenate[Any, P], Op[T]]) -> None:
        self.fn = fn
        self.part: type = getattr(sys.modules[fn.__module__], fn.__qualname__.rsplit(".", 1)[0])
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]
        signature = inspect.signature(fn)  # as the client shows it: no part, the result not the generator
        result = get_args(signature.return_annotation)
        self.__signature__ = signature.replace(
            parameters=list(signature.parameters.values())[1:],
            return_annotation=result[2] if len(result) == 3 else signature.return_annotation,
        )

    @overload
    def __get__(self, obj: None, owner: type) -> "operation[P, T]": ...
    @overload
    def __get__(self, obj: "Client", owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: "AsyncClient", owner: type) -> Callable[P, Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, obj: "BaseClient", owner: type) -> Callable[P, Any]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        fn, part = self.fn, obj._engine.part(self.part)

        @functools.wraps(fn)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return obj._drive(fn(part, *args, **kwargs))

        bound.__signature__ = self.__signature__  # type: ignore[attr-defined]
        return bound


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
        ledger: "Ledger | str | None" = None,
        wire: str | None = None,
        clock: Clock = REAL,
        time_scale: float | None = None,
    ) -> None:
        """Connect with ``api_key`` (or several keys of one account, pooled) to ``base_url``.

        Without either, ``MEDIAGEN_API_KEY`` / ``MEDIAGEN_BASE_URL`` are read; with neither set (or
        ``sandbox=True``), the embedded sandbox is used. ``time_scale`` is the service's seconds a real
        second, a time-scaled sandbox's (default: the embedded sandbox's, else ``MEDIAGEN_TIME_SCALE``,
        else 1).
        Paid starts are written to ``ledger`` (a path or a Ledger; default: the user's ledger).
        ``wire`` is a names file with the service's spelling of the names the spec does not show
        (default ``MEDIAGEN_WIRE``). ``clock`` answers the waits (retry backoff, polls, pacing) and keeps
        the deadlines: the wall clock, or a manual sandbox's stepping clock in tests, where each wait of
        ``s`` advances the sandbox by ``s`` (``for_sandbox`` gives it one) so waits are instant and exact.
        The assembler makes them one clock in the service's seconds, once (:attr:`clock`).
        """
        settings = settings or assemble.resolve(
            api_key,
            base_url,
            account=account,
            limits=limits,
            sandbox=sandbox,
            wire=wire,
            time_scale=time_scale,
        )
        self._engine = assemble.engine(settings, retry or RetryPolicy(), timeout, ledger, clock)

    @property
    def clock(self) -> ServiceClock:
        """The clock this client waits on and reads its deadlines from, in the service's seconds."""
        return self._engine.core.clock

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
        return f"<{type(self).__name__} {where} keys={len(s.keys)} {self.clock.label}>"

    def _drive(self, op: Op[Any]) -> Any:
        raise NotImplementedError

    def check_input(
        self, model: Model, input: Mapping[str, Any], *, extra_inputs: bool = False
    ) -> dict[str, Any]:
        """Validate ``input`` against ``model``'s schema as the service would; no request is sent.

        A name the schema does not have is refused unless ``extra_inputs=True``.
        """
        return self._engine.catalog.check_input(model, input, extra_inputs=extra_inputs)

    def attach(self, model: Model, input: Mapping[str, Any]) -> dict[str, Any]:
        """``input`` with its local files uploaded (once each) and replaced by URLs, in this thread."""
        return self._engine.catalog.attach_now(model, input)

    models = operation(Catalog.models)
    model = operation(Catalog.model)
    openapi = operation(Catalog.openapi)
    llms_txt = operation(Catalog.llms_txt)
    estimate = operation(Generations.estimate)
    run = operation(Generations.run)
    generation = operation(Generations.generation)
    wait = operation(Generations.wait)
    generate = operation(Generations.generate)
    analyze = operation(Replication.analyze)
    analysis = operation(Replication.analysis)
    analysis_of = operation(Replication.analysis_of)
    build_blueprint = operation(Replication.build_blueprint)
    wait_analysis = operation(Replication.wait_analysis)
    replicate = operation(Replication.replicate)
    replication_run = operation(Replication.replication_run)
    wait_replication = operation(Replication.wait_replication)
    make_video = operation(Videos.make_video)
    video_estimate = operation(Videos.video_estimate)
    job = operation(Videos.job)
    video_options = operation(Videos.video_options)
    reedit = operation(Videos.reedit)
    wait_job = operation(Videos.wait_job)
    confirm_webhook = operation(Webhooks.confirm_webhook)
    sandbox_control = operation(Controls.sandbox_control)


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
        self._http = http_client or httpx.Client(
            transport=transport, follow_redirects=True, limits=POOL, verify=tls.context()
        )
        self._owns_http = http_client is None

    @classmethod
    def for_sandbox(cls, sandbox: Any, **options: Any) -> "Client":
        """A client for a :class:`~mediagen_nb.sandbox.Sandbox` (served on loopback; started if needed)."""
        if sandbox.base_url is None:
            sandbox.start()
        assemble.for_sandbox(sandbox, options, sandbox.base_url)
        return cls(sandbox.demo_key, base_url=sandbox.base_url, **options)

    def _drive(self, op: Op[T]) -> T:
        reply: Any = None
        failure: BaseException | None = None
        while True:
            try:
                step = op.throw(failure) if failure is not None else op.send(reply)
            except StopIteration as done:
                result: T = done.value
                return result
            reply, failure = None, None
            if isinstance(step, Call):
                try:
                    core = self._engine.core
                    request = core.build(self._http, step)
                    reply = transport.send(self._http, request, core.deadline(step), core.auth(step))
                except (httpx.TransportError, MediagenError) as exc:
                    failure = exc
            elif isinstance(step, Record):
                try:
                    reply = step.fn()
                except Exception as exc:
                    failure = exc
            else:
                self._engine.core.clock.sleep(step.seconds)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True)
class _Ended:
    """An operation ended in a worker thread with ``value`` (a StopIteration cannot cross into a future)."""

    value: Any


def _records(op: Op[Any], step: Record) -> Call | Pause | _Ended:
    """Run ``step`` and every Record the operation yields after it, here (a worker thread: the ledger
    and the limits store may wait on another process); the next step, a Call or a Pause, or how the
    operation ended. One hand-off per run of Records (a read's confirm and ledger write; a start's
    ledger checks and its booking), not one each: the hand-offs were a fifth of a request's CPU."""
    while True:
        try:
            try:
                reply = step.fn()
            except Exception as exc:
                following = op.throw(exc)
            else:
                following = op.send(reply)
        except StopIteration as done:
            return _Ended(done.value)
        if not isinstance(following, Record):
            return following
        step = following


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
        self._http = http_client or httpx.AsyncClient(
            transport=transport, follow_redirects=True, limits=POOL, verify=tls.context()
        )
        self._owns_http = http_client is None

    @classmethod
    def like(cls, other: BaseClient, **options: Any) -> "AsyncClient":
        """An AsyncClient with the same service, keys, account and limits as ``other``."""
        return cls(settings=other.settings, **options)

    @classmethod
    def for_sandbox(cls, sandbox: Any, **options: Any) -> "AsyncClient":
        """A client for a Sandbox: over HTTP when it is served, else in-process (ASGI transport)."""
        assemble.for_sandbox(sandbox, options, sandbox.base_url or IN_PROCESS_URL)
        if sandbox.base_url is not None:
            return cls(sandbox.demo_key, base_url=sandbox.base_url, **options)
        return cls(sandbox.demo_key, base_url=IN_PROCESS_URL, transport=sandbox.transport(), **options)

    async def _drive(self, op: Op[T]) -> T:
        reply: Any = None
        failure: BaseException | None = None
        while True:
            try:
                step = op.throw(failure) if failure is not None else op.send(reply)
            except StopIteration as done:
                result: T = done.value
                return result
            if isinstance(step, Record):  # this one and the Records after it, in one hand-off
                ran = await asyncio.to_thread(_records, op, step)
                if isinstance(ran, _Ended):
                    ended: T = ran.value
                    return ended
                step = ran
            reply, failure = None, None
            if isinstance(step, Call):
                try:
                    core = self._engine.core
                    request = core.build(self._http, step)
                    reply = await transport.asend(self._http, request, core.deadline(step), core.auth(step))
                except (httpx.TransportError, MediagenError) as exc:
                    failure = exc
            else:
                await self._engine.core.clock.wait(step.seconds)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
