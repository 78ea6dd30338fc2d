"""A revision's file tree as stored: compact, deterministic, compressed JSON (content-addressed)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from tracker.model import FileEntry


def serialise_tree(files: Sequence[FileEntry]) -> bytes:
    rows = [[f.path, f.size, f.blob_id, f.lfs_sha256] for f in sorted(files, key=lambda f: f.path)]
    return zlib.compress(json.dumps(rows, separators=(",", ":")).encode(), 6)


def parse_tree(data: bytes) -> tuple[FileEntry, ...]:
    rows: list[list[Any]] = json.loads(zlib.decompress(data))
    return tuple(FileEntry(path=p, size=int(s), blob_id=b, lfs_sha256=sha) for p, s, b, sha in rows)
