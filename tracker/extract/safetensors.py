"""Parse a safetensors JSON header into tensor names, dtypes and shapes.

Layer 1 (stage 3, extract), pure. The snapshot stores only the header bytes (the JSON after
the 8-byte little-endian length), never tensor data. The header is hostile: its size, depth,
tensor count, dtype names, shapes and offsets are all checked, and anything wrong raises
:class:`~tracker.errors.InvalidContent` (the caller records a ParseIssue).
"""

from __future__ import annotations

import re
from typing import Any

from tracker.errors import InvalidContent
from tracker.extract.jsonsafe import load_json
from tracker.extract.paths import DEFAULT_MAX_HEADER_BYTES
from tracker.model import TensorInfo

#: Bytes per element of the dtypes the safetensors format defines (sub-byte types: None).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
#: A dtype the format may add later still parses (its byte size is then not checked).
_DTYPE_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,15}")
MAX_RANK = 16
MAX_DIM = 1 << 48
MAX_TENSORS = 1_000_000
_MAX_NAME = 1024


def _tensor(name: str, spec: Any) -> TensorInfo:
    if not isinstance(spec, dict):
        raise InvalidContent(f"tensor {name!r}: entry is not an object")
    dtype = spec.get("dtype")
    if not isinstance(dtype, str) or not _DTYPE_NAME.fullmatch(dtype):
        raise InvalidContent(f"tensor {name!r}: bad dtype {str(dtype)[:40]!r}")
    shape = spec.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_RANK
        or not all(type(d) is int and 0 <= d <= MAX_DIM for d in shape)
    ):
        raise InvalidContent(f"tensor {name!r}: bad shape {str(shape)[:80]}")
    offsets = spec.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(o) is int and o >= 0 for o in offsets)
        or offsets[1] < offsets[0]
    ):
        raise InvalidContent(f"tensor {name!r}: bad data_offsets {str(offsets)[:80]}")
    info = TensorInfo(name=name, dtype=dtype, shape=tuple(shape))
    bits = DTYPE_BITS.get(dtype)
    if bits is not None and (info.numel * bits + 7) // 8 != offsets[1] - offsets[0]:
        raise InvalidContent(
            f"tensor {name!r}: {dtype}{list(shape)} does not fit data_offsets {offsets}"
        )
    return info


def parse_safetensors_header(
    raw: bytes, *, max_bytes: int = DEFAULT_MAX_HEADER_BYTES
) -> tuple[TensorInfo, ...]:
    """The tensors of a safetensors header, sorted by name; InvalidContent when malformed."""
    doc = load_json(raw, max_bytes=max_bytes, max_depth=4)
    if not isinstance(doc, dict):
        raise InvalidContent("safetensors header is not a JSON object")
    meta = doc.get("__metadata__")
    if meta is not None and not (
        isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())
    ):
        raise InvalidContent("safetensors __metadata__ must map strings to strings")
    names = [k for k in doc if k != "__metadata__"]
    if len(names) > MAX_TENSORS:
        raise InvalidContent(f"safetensors header lists {len(names)} tensors")
    tensors: list[TensorInfo] = []
    for name in sorted(names):
        if not name or len(name) > _MAX_NAME:
            raise InvalidContent(f"bad tensor name of length {len(name)}")
        tensors.append(_tensor(name, doc[name]))
    return tuple(tensors)
