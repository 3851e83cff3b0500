"""Rendered files kept in memory, least recently read first out, up to a number of bytes."""

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class BytesLRU(Generic[K]):
    """Files by key, up to ``limit`` bytes in all (a file over the limit is not kept); thread-safe."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.bytes = 0  # held now, never above ``limit``
        self._files: OrderedDict[K, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> bytes | None:
        with self._lock:
            data = self._files.get(key)
            if data is not None:
                self._files.move_to_end(key)
            return data

    def keep(self, key: K, data: bytes) -> None:
        with self._lock:
            if key in self._files or len(data) > self.limit:
                return
            self._files[key] = data
            self.bytes += len(data)
            while self.bytes > self.limit:
                self.bytes -= len(self._files.popitem(last=False)[1])
