"""GGUF headers: a compact digest for the blob store, and the parsed :class:`GgufInfo`.

Layer 1 (stage 3, extract), pure. The snapshot stage parses the header bytes it read by
Range (:mod:`tracker.extract.gguf_reader`) and stores :func:`digest_gguf`'s JSON, not the
megabytes of token lists: those become a count and a hash, the special tokens keep their
texts. :func:`load_gguf_digest` turns the stored JSON back into a :class:`GgufInfo`.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

from tracker.errors import InvalidContent
from tracker.extract.gguf_reader import (
    MAX_KEPT_ITEMS,
    GgufArray,
    GgufHeaderBytes,
    tensor_bytes,
)
from tracker.extract.jsonsafe import load_json
from tracker.model import TensorInfo
from tracker.model.inside import GgufInfo

DIGEST_VERSION = 1
TEMPLATE_KEY = "tokenizer.chat_template"
TOKENS_KEY = "tokenizer.ggml.tokens"
_SPECIAL_ID = re.compile(r"^tokenizer\.ggml\.([a-z_]+)_token_id$")
MAX_DIGEST_BYTES = 64 * 1024 * 1024


def _json_value(value: object) -> Any:
    if isinstance(value, GgufArray):
        if value.items is not None and value.count <= MAX_KEPT_ITEMS:
            return list(value.items)
        return {"array": value.item_type, "count": value.count, "sha256": value.sha256}
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return "NaN"
    return value


def digest_gguf(header: GgufHeaderBytes) -> bytes:
    """Canonical JSON of a parsed header: what the blob store keeps per GGUF content id."""
    tokens = header.metadata.get(TOKENS_KEY)
    texts = tokens.items if isinstance(tokens, GgufArray) and tokens.item_type == "STRING" else None
    special: dict[str, list[Any]] = {}
    for key, value in header.metadata.items():
        m = _SPECIAL_ID.match(key)
        if m and type(value) is int:
            text = texts[value] if texts is not None and 0 <= value < len(texts) else None
            special[m.group(1)] = [value, text]
    doc = {
        "digest": DIGEST_VERSION,
        "version": header.version,
        "header_bytes": header.header_end,
        "metadata": {k: _json_value(v) for k, v in sorted(header.metadata.items())},
        "special_tokens": dict(sorted(special.items())),
        "tensors": [[t.name, t.type_name, list(t.dims), tensor_bytes(t)] for t in header.tensors],
    }
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, allow_nan=False).encode()


def _template_name(key: str) -> str | None:
    if key == TEMPLATE_KEY:
        return "default"
    if key.startswith(TEMPLATE_KEY + "."):
        return key[len(TEMPLATE_KEY) + 1 :] or None
    return None


def load_gguf_digest(raw: bytes) -> GgufInfo:
    """The GgufInfo of a stored digest; InvalidContent when it is not one."""
    doc = load_json(raw, max_bytes=MAX_DIGEST_BYTES, max_depth=6)
    if not isinstance(doc, dict) or doc.get("digest") != DIGEST_VERSION:
        raise InvalidContent("not a GGUF header digest")
    meta, templates = {}, {}
    for key, value in (doc.get("metadata") or {}).items():
        name = _template_name(key)
        if name is not None and isinstance(value, str):
            templates[name] = value
        else:
            meta[key] = value
    special = {
        k: (int(v[0]), v[1] if isinstance(v[1], str) else None)
        for k, v in (doc.get("special_tokens") or {}).items()
        if isinstance(v, list) and len(v) == 2 and type(v[0]) is int
    }
    tensors: list[TensorInfo] = []
    by_type: defaultdict[str, int] = defaultdict(int)
    for row in doc.get("tensors") or []:
        if not (isinstance(row, list) and len(row) == 4):
            raise InvalidContent("GGUF digest: bad tensor row")
        name, dtype, dims, nbytes = row
        tensors.append(TensorInfo(str(name), str(dtype), tuple(int(d) for d in dims)))
        if type(nbytes) is int:
            by_type[str(dtype)] += nbytes
    return GgufInfo(
        version=int(doc.get("version") or 0),
        metadata=meta,
        chat_templates=dict(sorted(templates.items())),
        special_tokens=special,
        tensors=tuple(tensors),
        tensor_bytes=dict(sorted(by_type.items())),
    )
