"""Build Snapshots the way the snapshot layer does, from real files or from bytes in memory.

Test helper (not a test). Git blob ids are computed as git does; a Git-LFS pointer file
becomes a FileEntry with the LFS object's size and sha256, and, like on the Hub, its bytes
are not part of the snapshot's contents.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path

from tests.corpus import CORPUS
from tracker.extract.paths import is_content_path
from tracker.model import FileEntry, Snapshot

CHANGES = CORPUS / "changes"
TOKENIZERS = CORPUS / "tokenizers"
_LFS = re.compile(
    rb"^version https://git-lfs\.github\.com/spec/v1\noid sha256:([0-9a-f]{64})\nsize (\d+)\n?$"
)


def blob_id(data: bytes) -> str:
    """The git blob sha1 of ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(data: bytes) -> tuple[str, int] | None:
    """(sha256, size) of a Git-LFS pointer file, or None when ``data`` is not one."""
    m = _LFS.match(data)
    return (m.group(1).decode(), int(m.group(2))) if m else None


def entry_for(path: str, data: bytes) -> FileEntry:
    lfs = lfs_pointer(data)
    if lfs:
        return FileEntry(path, lfs[1], blob_id(data), lfs[0])
    return FileEntry(path, len(data), blob_id(data))


def snapshot_of(
    files: Mapping[str, bytes],
    sha: str = "0" * 40,
    *,
    headers: Mapping[str, bytes] | None = None,
    read_errors: Mapping[str, str] | None = None,
) -> Snapshot:
    """A snapshot whose contents are the read paths of ``files`` that are not LFS pointers."""
    entries = tuple(entry_for(p, d) for p, d in sorted(files.items()))
    contents = {
        p: d
        for p, d in files.items()
        if is_content_path(p) and lfs_pointer(d) is None and p not in (read_errors or {})
    }
    return Snapshot(
        sha=sha,
        files=entries,
        contents=contents,
        safetensors_headers=dict(headers or {}),
        read_errors=dict(read_errors or {}),
    )


def read_tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its relative posix path."""
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def pair_names() -> list[str]:
    return sorted(p.name for p in CHANGES.iterdir() if (p / "NOTE.md").is_file())


def load_pair(name: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The before / after files of one corpus change."""
    return read_tree(CHANGES / name / "before"), read_tree(CHANGES / name / "after")


def lfs(tag: str, size: int) -> bytes:
    """A Git-LFS pointer file for an object named by ``tag`` (its sha256 is that of the tag)."""
    oid = hashlib.sha256(tag.encode()).hexdigest()
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n".encode()


def st_header(tensors: Mapping[str, tuple[str, list[int]]], meta: object = None) -> bytes:
    """A safetensors JSON header laid out as safetensors writes one (offsets in sequence)."""
    from tracker.extract.safetensors import DTYPE_BITS

    doc: dict[str, object] = {}
    if meta is not None:
        doc["__metadata__"] = meta
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = 1
        for d in shape:
            n *= d
        size = (n * DTYPE_BITS[dtype] + 7) // 8
        doc[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    return json.dumps(doc).encode()
