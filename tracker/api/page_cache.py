"""Stage 8 (read): answers kept by key, each valid for the version it was made at.

A history page is the same bytes until a write changes it; encoding it again on every
request was most of a page's cost (issue 17). Callers pass the version they just read from
the database (:meth:`storage.store.Store.probe_repo`): one primary-key look-up of a counter
every such write bumps, which sees every writer, in this process or another, on SQLite or
PostgreSQL. A kept answer made at another version is a miss, and is replaced
(:class:`storage.versioned_lru.VersionedLru`, which the commit answers use too).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from storage.versioned_lru import VersionedLru


@dataclass(frozen=True, slots=True)
class Kept:
    """An encoded answer, its headers, and its strong ETag (a digest of the body)."""

    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    etag: str = ""

    @classmethod
    def of(cls, body: bytes, headers: Mapping[str, str] | None = None) -> Kept:
        return cls(body, dict(headers or {}), f'"{hashlib.sha256(body).hexdigest()[:32]}"')


#: history pages, pickers and fragments kept per (key, history version)
PageCache = VersionedLru
