"""A small thread-safe LRU bounded by count, for what a process keeps between checks
(recent artifacts, plans, meaning keys of stored documents): values that never go stale under
their key, so keeping one is only a question of room."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")


class Kept(Generic[K, V]):
    """At most ``max_items`` values, the least recently used dropped first."""

    def __init__(self, max_items: int):
        self.max_items = max_items
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, default: D | None = None) -> V | D | None:
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


__all__ = ["Kept"]
