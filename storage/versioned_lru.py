"""Answers kept by key, each valid for the version it was made at, bounded by bytes.

A reader passes the version it just read from the database (a counter every relevant write
bumps in its own transaction: ``repos.history_version``, ``commit_index_versions``), so a
kept value made at another version is a miss and is replaced: nothing is stale past the next
read, whichever process wrote. At most ``max_bytes`` (as the caller weighs its values) are
kept, the least recently used going first. Shared by the history pages (tracker.api) and the
commit answers (:mod:`storage.commit_answers`).

Imports: stdlib.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

V = TypeVar("V")


class VersionedLru(Generic[V]):
    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._kept: OrderedDict[Hashable, tuple[Hashable, V, int]] = OrderedDict()
        self._lock = threading.Lock()  # readers run in worker threads

    def get(self, key: Hashable, version: Hashable) -> V | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None or found[0] != version:
                return None
            self._kept.move_to_end(key)
            return found[1]

    def get_many(self, wanted: Iterable[tuple[Hashable, Hashable]]) -> list[V | None]:
        """:meth:`get` of each ``(key, version)``, under one hold of the lock (a commit query
        asks for its ~40 records at once)."""
        out: list[V | None] = []
        append, kept, touch = out.append, self._kept.get, self._kept.move_to_end
        with self._lock:
            for key, version in wanted:
                found = kept(key)
                if found is None or found[0] != version:
                    append(None)
                else:
                    touch(key)
                    append(found[1])
        return out

    def put(self, key: Hashable, version: Hashable, value: V, weight: int) -> None:
        """Keep ``value`` (``weight`` bytes, about) for ``key`` at ``version``."""
        if weight > self.max_bytes:
            return
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self.size -= old[2]
            self._kept[key] = (version, value, weight)
            self.size += weight
            while self.size > self.max_bytes:
                _, (_, _, dropped) = self._kept.popitem(last=False)
                self.size -= dropped

    def add(self, key: Hashable, version: Hashable, value: V, weight: int) -> bool:
        """Keep ``value`` only where nothing is kept for ``key`` and it fits the room left
        (evicting nothing: what a warm-up reads ahead never pushes out what requests use)."""
        with self._lock:
            if key in self._kept or self.size + weight > self.max_bytes:
                return False
            self._kept[key] = (version, value, weight)
            self.size += weight
            return True

    def __contains__(self, key: Hashable) -> bool:
        """Whether anything is kept for ``key``, at any version (a hint: no lock, no touch)."""
        return key in self._kept

    def __len__(self) -> int:
        return len(self._kept)
