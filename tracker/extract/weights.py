"""Build a revision's weight manifest from its file tree, safetensors headers and indexes.

Layer 1 (stage 3, extract), pure. Weight bytes are never read: a file is known by its path,
size, content id (LFS sha256) and format; a safetensors file also by the tensors of its
header when the snapshot has it; a sharding index by its ``weight_map`` and ``total_size``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracker.errors import InvalidContent
from tracker.extract import paths
from tracker.extract.gguf import load_gguf_digest
from tracker.extract.jsonsafe import load_json
from tracker.extract.pickle_scan import load_pickle_digest
from tracker.extract.safetensors import parse_safetensors_header
from tracker.model import FileEntry, ParseIssue, TensorInfo, WeightFile, WeightManifest


def parse_index(raw: bytes) -> tuple[dict[str, str], int | None]:
    """``weight_map`` (tensor -> shard file) and ``metadata.total_size`` of an index file."""
    doc = load_json(raw, max_bytes=paths.DEFAULT_MAX_FILE_BYTES, max_depth=4)
    if not isinstance(doc, dict):
        raise InvalidContent("index is not a JSON object")
    wmap = doc.get("weight_map")
    if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
        raise InvalidContent("index weight_map is not an object of tensor -> file names")
    meta = doc.get("metadata")
    total = meta.get("total_size") if isinstance(meta, dict) else None
    # total_size is an int, but some exporters write a float
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    return dict(wmap), total if type(total) is int else None


def _hub_scan(raw: bytes | None) -> dict[str, Any] | None:
    """The Hub's securityFileStatus as recorded (None: not reported, or not JSON)."""
    if raw is None:
        return None
    try:
        doc = load_json(raw, max_bytes=paths.DEFAULT_MAX_FILE_BYTES, max_depth=8)
    except InvalidContent:
        return None
    return doc if isinstance(doc, dict) else None


def build_manifest(
    files: tuple[FileEntry, ...],
    contents: Mapping[str, bytes],
    headers: Mapping[str, bytes],
    issues: list[ParseIssue],
    digests: Mapping[str, bytes] | None = None,
    security: Mapping[str, bytes] | None = None,
    earlier: WeightManifest | None = None,
) -> WeightManifest:
    """Every weight file of the tree, sorted by path, plus the parsed sharding indexes.

    ``earlier``: another revision's manifest (the parent's): a safetensors file with the same
    content id there has the same header, so its tensors are taken from it rather than parsed
    again (2,500 tensors of a granite checkpoint were most of an unrelated revision's analysis).
    """
    parsed = {(f.path, f.content_id): f.tensors for f in earlier.files
              if f.format == "safetensors" and f.tensors is not None} if earlier is not None else {}
    weights: list[WeightFile] = []
    maps: dict[str, dict[str, str]] = {}
    totals: dict[str, int] = {}
    for entry in sorted(files, key=lambda f: f.path):
        if paths.is_weight_index(entry.path):
            raw = contents.get(entry.path)
            if raw is None:
                continue  # the caller already recorded why it was not read
            try:
                wmap, total = parse_index(raw)
            except InvalidContent as e:
                issues.append(ParseIssue(entry.path, str(e)))
                continue
            maps[entry.path] = wmap
            if total is not None:
                totals[entry.path] = total
            continue
        fmt = paths.weight_format(entry.path)
        if fmt is None:
            continue
        tensors: tuple[TensorInfo, ...] | None = None
        header = headers.get(entry.path) if fmt == "safetensors" else None
        if header is not None and (entry.path, entry.content_id) in parsed:
            tensors = parsed[(entry.path, entry.content_id)]
        elif header is not None:
            try:
                tensors = parse_safetensors_header(header)
            except InvalidContent as e:
                issues.append(ParseIssue(entry.path, f"safetensors header: {e}"))
        gguf, pickle = None, None
        digest = (digests or {}).get(entry.path)
        if digest is not None:
            try:
                if fmt == "gguf":
                    gguf = load_gguf_digest(digest)
                    tensors = gguf.tensors
                elif fmt == "pickle":
                    pickle = load_pickle_digest(digest)
            except InvalidContent as e:
                issues.append(ParseIssue(entry.path, f"{fmt} digest: {e}"))
        weights.append(
            WeightFile(
                entry.path, entry.size, entry.content_id, fmt, tensors, gguf=gguf, pickle=pickle,
                hub_scan=_hub_scan((security or {}).get(entry.path)),
            )
        )
    return WeightManifest(tuple(weights), maps, totals)
