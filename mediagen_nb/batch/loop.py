"""One asyncio loop on a background thread, for running async work from sync code and notebooks.

A notebook cell already runs inside ipykernel's loop, so ``asyncio.run`` is not allowed there and
patching the running loop (nest-asyncio) is fragile; a loop of our own on a daemon thread works
the same in a kernel, a terminal and a script, and leaves the kernel free during a long sweep.
"""

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's background loop, started on first use."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="mediagen-loop", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def submit(coroutine: Coroutine[Any, Any, T]) -> "Future[T]":
    """Schedule ``coroutine`` on the background loop; returns a thread-safe future."""
    return asyncio.run_coroutine_threadsafe(coroutine, background_loop())
