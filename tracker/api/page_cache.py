"""Stage 8 (read): answers kept by key, each valid for the version it was made at.

A history page is the same bytes until a write changes it; encoding it again on every
request was most of a page's cost (issue 17). Callers pass the version they just read from
the database (:meth:`storage.store.Store.probe_repo`): one primary-key look-up of a counter
every such write bumps, which sees every writer, in this process or another, on SQLite or
PostgreSQL. A kept answer made at another version is a miss, and is replaced. At most ``max_bytes`` (as the caller weighs its
answers) are kept, the least recently used going first.

Imports: stdlib.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Kept:
    """An encoded answer, its headers, and its strong ETag (a digest of the body)."""

    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    etag: str = ""

    @classmethod
    def of(cls, body: bytes, headers: Mapping[str, str] | None = None) -> Kept:
        return cls(body, dict(headers or {}), f'"{hashlib.sha256(body).hexdigest()[:32]}"')


class PageCache(Generic[V]):
    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._kept: OrderedDict[Hashable, tuple[Hashable, V, int]] = OrderedDict()
        self._lock = threading.Lock()  # routes run in worker threads

    def get(self, key: Hashable, version: Hashable) -> V | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None or found[0] != version:
                return None
            self._kept.move_to_end(key)
            return found[1]

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

    def __len__(self) -> int:
        return len(self._kept)
