"""A scripted hostile server for tests: raw HTTP on 127.0.0.1, answering each request from a table.

A test says what each path answers (``server.on("POST", "/v3/playground/v1/run", answer)``): any
status, headers and bytes, so it can send what no framework would (a traversal id, a body that is
not JSON, gzip that is garbage, a redirect to itself, JSON nested 200,000 deep), or ``forward`` it
to a sandbox and alter the answer on the way back. It runs on its own event loop in a thread; every
request it read is kept in ``seen``. ``catalog()`` adds a one-model catalog, so the client's own
checks pass and the start reaches the server. ``running(handle)`` serves any raw connection handler
the same way, for a test whose server misbehaves below HTTP (silence, a slow loris).
"""

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

GENERATION_ID = "3f0c2a7e-5b1d-4c8e-9a6f-1d2e3f4a5b6c"
MODEL = {
    "id": "gpt-image-2",
    "name": "GPT Image 2",
    "description": "a test model",
    "outputType": "image",
    "group": "image",
    "credits": 3,
    "pricing": None,
    "input_schema": {
        "type": "object",
        "required": ["prompt"],
        "properties": {"prompt": {"type": "string"}},
    },
}


@dataclass
class Answer:
    """One HTTP answer: a status, headers and the body as bytes."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})

    def raw(self) -> bytes:
        head = f"HTTP/1.1 {self.status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
        head += f"Content-Length: {len(self.body)}\r\nConnection: close\r\n\r\n"
        return head.encode("latin-1") + self.body


def data(value: Any, status: int = 200) -> Answer:
    """The spec's success envelope around ``value``."""
    return Answer(status, json.dumps({"success": True, "data": value}).encode())


def generation(ident: str, url: str | None = None, status: str = "succeeded", kind: str = "image") -> Answer:
    """A generation resource with ``ident`` as its id (anything: a UUID, a path) and one output URL."""
    output = {"type": kind, "urls": [url]} if url else None
    return data(
        {
            "id": ident,
            "modelId": "gpt-image-2",
            "status": status,
            "output": output,
            "error": None,
            "creditsSpent": 3,
            "createdAt": "2025-01-01T00:00:00Z",
        },
        status=201 if status == "processing" else 200,
    )


@dataclass(frozen=True)
class Request:
    """A request as the server read it."""

    method: str
    target: str  # the path and query
    headers: dict[str, str]  # names in lower case
    body: bytes


Route = Answer | Callable[[Request], Answer]  # a fixed answer, or one made from the request


def forward(base_url: str, change: Callable[[Request, Answer], Answer] | None = None) -> Route:
    """A route that sends the request on to ``base_url`` (a sandbox) and answers what it answered,
    through ``change`` when given: a man in the middle that can alter one answer."""

    def route(request: Request) -> Answer:
        headers = {k: v for k, v in request.headers.items() if k in ("authorization", "idempotency-key")}
        headers["content-type"] = "application/json"
        answer = httpx.request(
            request.method, base_url + request.target, headers=headers, content=request.body, timeout=30
        )
        got = Answer(answer.status_code, answer.content, {"Content-Type": "application/json"})
        return change(request, got) if change is not None else got

    return route


@dataclass
class Hostile:
    """The server's table of answers by method and path prefix (the longest prefix wins)."""

    base_url: str = ""
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    seen: list[tuple[str, str]] = field(default_factory=list)

    def on(self, method: str, prefix: str, answer: Route) -> None:
        self.routes[(method, prefix)] = answer

    def catalog(self) -> None:
        """``GET /models`` and ``/models/gpt-image-2``: one model with a ``prompt`` input."""
        self.on("GET", "/v3/playground/v1/models", data({"models": [MODEL]}))
        self.on("GET", "/v3/playground/v1/models/gpt-image-2", data(MODEL))

    def starts(self) -> int:
        return sum(1 for method, target in self.seen if method == "POST" and target.endswith("/run"))

    def answer(self, request: Request) -> Answer:
        path = request.target.split("?", 1)[0]
        found = [(p, a) for (m, p), a in self.routes.items() if m == request.method and path.startswith(p)]
        if not found:
            return Answer(404, b'{"statusCode": 404, "message": "Not found", "error": "Not Found"}')
        route = max(found, key=lambda item: len(item[0]))[1]
        return route(request) if callable(route) else route

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            method, target = head.split(" ", 2)[:2]
            headers = {}
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name:
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            body = await reader.readexactly(length) if length else b""
            request = Request(method, target, headers, body)
            self.seen.append((method, target))
            answer = await asyncio.get_running_loop().run_in_executor(None, self.answer, request)
            writer.write(answer.raw())
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextmanager
def serve() -> Iterator[Hostile]:
    """A Hostile server on a free 127.0.0.1 port, on its own loop in a thread; stopped after use."""
    hostile = Hostile()
    with running(hostile.handle) as base_url:
        hostile.base_url = base_url
        yield hostile


@contextmanager
def running(handle: Handler) -> Iterator[str]:
    """A raw asyncio server of ``handle`` (each connection) on a free 127.0.0.1 port, on its own loop in a
    thread: its base URL; stopped after use, its connections cancelled."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(asyncio.start_server(handle, "127.0.0.1", 0), loop).result(10)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:

        async def stop() -> None:
            server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
