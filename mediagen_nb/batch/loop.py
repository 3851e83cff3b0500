"""One asyncio loop on a background thread, for running async work from sync code and notebooks.

A notebook cell already runs inside ipykernel's loop, so ``asyncio.run`` is not allowed there and
patching the running loop (nest-asyncio) is fragile; a loop of our own on a daemon thread works
the same in a kernel, a terminal and a script, and leaves the kernel free during a long sweep.
"""

import asyncio
import queue
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from mediagen_nb.runtime.clock import REAL

T = TypeVar("T")

# Real seconds between the wake-ups of a thread waiting on the loop's work. With some extension modules
# loaded (polars is one) SIGINT no longer interrupts a blocked wait: the Ctrl-C would be raised only
# once the whole sweep had ended, every row started and charged. A wait that wakes raises it at once.
WAKE = 0.1

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


def result(future: "Future[T]", timeout: float | None = None) -> T:
    """``future.result(timeout)``, waking every :data:`WAKE` so a Ctrl-C is raised at once."""
    return _waking(future.result, timeout, FutureTimeout)


def get(items: "queue.Queue[T]", timeout: float | None = None) -> T:
    """``items.get(timeout=timeout)``, waking every :data:`WAKE` so a Ctrl-C is raised at once."""
    return _waking(lambda left: items.get(timeout=left), timeout, queue.Empty)


def _waking(wait: Callable[[float], T], timeout: float | None, not_yet: type[Exception]) -> T:
    """``wait(seconds)`` again every :data:`WAKE` while it raises ``not_yet``, until ``timeout``."""
    deadline = None if timeout is None else REAL.monotonic() + timeout
    while True:
        left = WAKE if deadline is None else min(WAKE, max(0.0, deadline - REAL.monotonic()))
        try:
            return wait(left)
        except not_yet:
            if deadline is not None and REAL.monotonic() >= deadline:
                raise
