"""A GGUF header reader over bytes: the key/value section and the tensor infos, never tensor data.

Layer 1 (stage 3, extract), pure. The snapshot stage reads a GGUF file's first bytes by HTTP
Range and calls :func:`parse_gguf_header` on them; :class:`NeedMore` says the header goes on
past the bytes given, so the caller reads further (up to its cap) and tries again. The
``gguf`` package's own reader memory-maps whole files, which is why this one exists.

The header is hostile: every count and length is checked against the bytes that can still
follow (``file_size``) and against fixed bounds before anything is allocated, so a header
that claims a terabyte string or a billion tensors is refused after reading a few bytes.
Layout (GGUF v2/v3, little-endian): ``GGUF`` u32 version, u64 tensor count, u64 kv count,
then kv pairs (string key, u32 type, value), then tensor infos (string name, u32 n_dims,
u64 dims, u32 ggml type, u64 offset).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from tracker.errors import InvalidContent

MAGIC = b"GGUF"
MAX_TENSORS = 1_000_000
MAX_KV = 100_000
MAX_ARRAY = 16_000_000
MAX_KEY = 65_535
MAX_DIMS = 8
#: Arrays up to this many elements keep their items; longer ones keep a hash and the count,
#: except string arrays (token texts are needed to name special tokens).
MAX_KEPT_ITEMS = 64

_SCALARS: dict[int, tuple[str, str]] = {
    0: ("UINT8", "<B"),
    1: ("INT8", "<b"),
    2: ("UINT16", "<H"),
    3: ("INT16", "<h"),
    4: ("UINT32", "<I"),
    5: ("INT32", "<i"),
    6: ("FLOAT32", "<f"),
    7: ("BOOL", "<?"),
    10: ("UINT64", "<Q"),
    11: ("INT64", "<q"),
    12: ("FLOAT64", "<d"),
}
STRING, ARRAY = 8, 9

#: ggml tensor types: name and (elements per block, bytes per block), from ggml.h.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18),
}  # fmt: skip


class NeedMore(Exception):
    """The header continues past the bytes given.

    ``needed``: the end of the item being read; ``header_at_least``: an estimate from below of
    where the header ends (see ``_Cursor.rest_at_least``), so a caller that reads up to it
    reads no tensor data, and still needs few reads.
    """

    def __init__(self, needed: int, header_at_least: int):
        super().__init__(f"GGUF header needs at least {needed} bytes")
        self.needed = needed
        self.header_at_least = max(needed, header_at_least)
        self.resume: Resume | None = None


@dataclass(frozen=True, slots=True)
class GgufArray:
    """An array value: its element type, count, a hash of its bytes, and (kept) items."""

    item_type: str
    count: int
    sha256: str
    items: tuple[object, ...] | None  # None when too long to keep


@dataclass(frozen=True, slots=True)
class GgufTensorInfo:
    name: str
    type_id: int
    dims: tuple[int, ...]
    offset: int

    @property
    def type_name(self) -> str:
        t = GGML_TYPES.get(self.type_id)
        return t[0] if t else f"TYPE_{self.type_id}"


@dataclass(frozen=True, slots=True)
class GgufHeaderBytes:
    """What the header holds, and where it ends (the tensor data starts after alignment)."""

    version: int
    metadata: dict[str, object]  # value: int | float | bool | str | GgufArray
    tensors: tuple[GgufTensorInfo, ...]
    header_end: int


class _Cursor:
    def __init__(self, buf: bytes, file_size: int | None):
        self.buf, self.pos = memoryview(buf), 0
        # bytes that can exist at all: the file's size when known, else what we were given
        # plus "more" (a NeedMore), bounded by the caller's cap
        self.file_size = file_size
        # entities not started yet, at their smallest: (kv pairs, array items, item size, tensors)
        self.kv_left = self.items_left = self.tensors_left = 0
        self.items_start = self.items_done = self.tensors_start = self.tensors_done = 0
        self.pending = 0  # bytes the current tensor info still needs after the current read

    def rest_at_least(self) -> int:
        """Bytes the header still needs after the current item, estimated from below.

        Keys count at their smallest; the rest of a string array and the tensor infos count
        at 90% of the average so far beyond their fixed part: BPE token lists and merges get
        longer with their id, so this stays under the header's end while needing few reads.
        """
        per_item = 8 + _share(self.items_start, self.items_done, self.pos, 8)
        per_tensor = 24 + _share(self.tensors_start, self.tensors_done, self.pos, 24)
        return (
            self.kv_left * 13 + self.items_left * per_item + self.tensors_left * per_tensor
            + self.pending
        )

    def take(self, n: int) -> memoryview:
        end = self.pos + n
        if self.file_size is not None and end > self.file_size:
            raise InvalidContent(f"GGUF header runs past the end of the file (byte {end})")
        if end > len(self.buf):
            raise NeedMore(end, end + self.rest_at_least())
        out = self.buf[self.pos : end]
        self.pos = end
        return out

    def unpack(self, fmt: str) -> object:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def u32(self) -> int:
        value: int = struct.unpack("<I", self.take(4))[0]
        return value

    def u64(self) -> int:
        value: int = struct.unpack("<Q", self.take(8))[0]
        return value

    def remaining(self) -> int | None:
        return None if self.file_size is None else self.file_size - self.pos

    def string(self, what: str, cap: int) -> str:
        n = self.u64()
        left = self.remaining()
        if n > cap or (left is not None and n > left):
            raise InvalidContent(f"GGUF {what}: string of {n} bytes claimed")
        raw = self.take(n)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(raw).decode("utf-8", "replace")


def _share(start: int, done: int, pos: int, fixed: int) -> int:
    """90% of the variable bytes per item among the ``done`` items read from ``start``."""
    if done <= 0:
        return 0
    return max(0, (pos - start - fixed * done) * 9 // (10 * done))


def _value(c: _Cursor, vtype: int, key: str, cap: int, depth: int = 0) -> object:
    if vtype in _SCALARS:
        return c.unpack(_SCALARS[vtype][1])
    if vtype == STRING:
        return c.string(f"value of {key!r}", cap)
    if vtype == ARRAY:
        if depth > 0:
            raise InvalidContent(f"GGUF {key!r}: nested arrays are not read")
        item = c.u32()
        count = c.u64()
        if item != STRING and item not in _SCALARS:
            raise InvalidContent(f"GGUF {key!r}: array of unknown type {item}")
        least = 8 if item == STRING else struct.calcsize(_SCALARS[item][1])
        left = c.remaining()
        if count > MAX_ARRAY or (left is not None and count * least > left):
            raise InvalidContent(f"GGUF {key!r}: array of {count} items claimed")
        start = c.pos
        if item == STRING:
            strings = []
            c.items_start = c.pos
            for i in range(count):
                c.items_left, c.items_done = count - i - 1, i
                strings.append(c.string(f"item of {key!r}", cap))
            c.items_left = c.items_done = 0
            items: tuple[object, ...] | None = tuple(strings)
        else:
            fmt = _SCALARS[item][1]
            size = struct.calcsize(fmt)
            raw = c.take(count * size)
            items = (
                tuple(x[0] for x in struct.iter_unpack(fmt, raw)) if count <= MAX_KEPT_ITEMS else None
            )
        digest = hashlib.sha256(c.buf[start : c.pos]).hexdigest()
        name = "STRING" if item == STRING else _SCALARS[item][0]
        return GgufArray(name, count, digest, items)
    raise InvalidContent(f"GGUF {key!r}: unknown value type {vtype}")


@dataclass
class Resume:
    """Where a cut parse stopped: the next call starts at the first unfinished entry."""

    version: int
    n_tensors: int
    n_kv: int
    pos: int
    metadata: dict[str, object]
    tensors: list[GgufTensorInfo]
    tensors_start: int = 0


def parse_gguf_header(
    buf: bytes, *, file_size: int | None = None, max_bytes: int, resume: Resume | None = None
) -> GgufHeaderBytes:
    """Parse the header at the start of ``buf``.

    Raises :class:`NeedMore` when ``buf`` ends inside the header (the caller reads more, up to
    ``max_bytes``, and passes ``NeedMore.resume`` back so that finished entries are not parsed
    again), and InvalidContent for anything malformed or over a bound, including a header
    that would need more than ``max_bytes``.
    """
    c = _Cursor(buf, file_size)
    state = resume
    try:
        if state is None:
            if bytes(c.take(4)) != MAGIC:
                raise InvalidContent("not a GGUF file (no GGUF magic)")
            version = c.u32()
            if version not in (2, 3):
                raise InvalidContent(f"GGUF version {version} is not read (only 2 and 3)")
            n_tensors, n_kv = c.u64(), c.u64()
            if n_tensors > MAX_TENSORS or n_kv > MAX_KV:
                raise InvalidContent(f"GGUF header claims {n_tensors} tensors and {n_kv} keys")
            state = Resume(version, n_tensors, n_kv, c.pos, {}, [])
        c.pos = state.pos
        metadata, tensors = dict(state.metadata), list(state.tensors)
        c.tensors_left = state.n_tensors
        for i in range(len(metadata), state.n_kv):
            c.kv_left = state.n_kv - i - 1
            key = c.string("key", MAX_KEY)
            metadata[key] = _value(c, c.u32(), key, max_bytes)
            if len(metadata) != i + 1:
                raise InvalidContent(f"GGUF key {key[:80]!r} appears twice")
            state.pos, state.metadata = c.pos, metadata
        c.tensors_start = state.tensors_start = state.tensors_start or c.pos
        for i in range(len(tensors), state.n_tensors):
            c.tensors_left, c.tensors_done = state.n_tensors - i - 1, i
            c.pending = 16  # after the name: n_dims, type and offset at least
            name = c.string("tensor name", MAX_KEY)
            c.pending = 12
            n_dims = c.u32()
            if n_dims > MAX_DIMS:
                raise InvalidContent(f"GGUF tensor {name[:80]!r}: {n_dims} dimensions")
            c.pending = 12 + 8 * n_dims
            dims = []
            for _ in range(n_dims):
                c.pending -= 8
                dims.append(c.u64())
            if any(d > 1 << 48 for d in dims):
                raise InvalidContent(f"GGUF tensor {name[:80]!r}: dimension too large")
            c.pending = 8
            type_id = c.u32()
            c.pending = 0
            tensors.append(GgufTensorInfo(name, type_id, tuple(dims), c.u64()))
            state.pos, state.tensors = c.pos, tensors
    except NeedMore as e:
        e.header_at_least = min(e.header_at_least, max_bytes, file_size or e.header_at_least)
        e.resume = state
        if e.needed > max_bytes:
            raise InvalidContent(
                f"GGUF header is larger than the cap of {max_bytes} bytes"
            ) from None
        raise
    return GgufHeaderBytes(state.version, metadata, tuple(tensors), c.pos)


def tensor_bytes(t: GgufTensorInfo) -> int | None:
    """Bytes of a tensor's data from its type and shape (None for an unknown type)."""
    spec = GGML_TYPES.get(t.type_id)
    if spec is None:
        return None
    n = 1
    for d in t.dims:
        n *= d
    _, block, size = spec
    return (n + block - 1) // block * size
