"""Blobs this process read from the store or wrote to it, kept in memory (bounded).

A blob's key names its content (a git blob id, a content id, a tree's sha256) and a stored
blob is never changed or deleted, so a kept one can never be stale. A new revision reads the
bytes of every file it did not download again (its tokenizer.json among them: megabytes) and
wrote them back as no-op inserts; with the bytes kept since the last revision, neither reaches
the database (benchmarks/new_revision.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping

MAX_BYTES = 32 * 1024 * 1024
MAX_ONE = 8 * 1024 * 1024  # a larger blob is read from the database each time


class BlobCache:
    """Least recently used out first, by bytes; thread-safe."""

    def __init__(self, max_bytes: int = MAX_BYTES, max_one: int = MAX_ONE) -> None:
        self.max_bytes, self.max_one = max_bytes, max_one
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def holds(self, key: str) -> bool:
        with self._lock:
            return key in self._items

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        with self._lock:
            for key in keys:
                data = self._items.get(key)
                if data is not None:
                    self._items.move_to_end(key)
                    out[key] = data
        return out

    def put_many(self, blobs: Mapping[str, bytes]) -> None:
        with self._lock:
            for key, data in blobs.items():
                if len(data) > self.max_one:
                    continue
                if key in self._items:
                    self._items.move_to_end(key)
                    continue
                self._items[key] = data
                self._bytes += len(data)
            while self._bytes > self.max_bytes:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= len(dropped)
