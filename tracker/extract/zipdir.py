"""The end of central directory and the central directory of a zip file, from its last bytes.

Layer 1 (stage 3, extract), pure. torch.save writes a zip (stored, not compressed) whose
``<name>/data.pkl`` member is the pickle; the snapshot stage reads the file's tail by Range,
asks :func:`find_directory` where the central directory is, reads it (when the tail did not
already hold it), lists the members with :func:`parse_directory`, and then reads only the
pickle members. Everything is bounds-checked: a hostile directory cannot point outside the
file or claim more entries than its bytes can hold.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from tracker.errors import InvalidContent

EOCD_SIG = b"PK\x05\x06"
EOCD64_SIG = b"PK\x06\x06"
EOCD64_LOCATOR_SIG = b"PK\x06\x07"
CENTRAL_SIG = b"PK\x01\x02"
LOCAL_SIG = b"PK\x03\x04"
#: The EOCD record (22 bytes) plus the longest comment it may carry.
TAIL_BYTES = 22 + 65_535 + 20
MAX_MEMBERS = 1_000_000
STORED, DEFLATED = 0, 8


@dataclass(frozen=True, slots=True)
class ZipDirectory:
    offset: int
    size: int
    entries: int


@dataclass(frozen=True, slots=True)
class ZipMember:
    name: str
    method: int
    compressed_size: int
    size: int
    header_offset: int


def find_directory(tail: bytes, tail_start: int, file_size: int) -> ZipDirectory | None:
    """Where the central directory is, from the file's last bytes; None: not a zip."""
    at = tail.rfind(EOCD_SIG)
    while at >= 0 and len(tail) - at < 22:
        at = tail.rfind(EOCD_SIG, 0, at)
    if at < 0:
        return None
    (_, disk, _, _, entries, size, offset, _) = struct.unpack("<4sHHHHIIH", tail[at : at + 22])
    if disk != 0:
        raise InvalidContent("multi-disk zip archives are not read")
    if 0xFFFFFFFF in (size, offset) or entries == 0xFFFF:
        loc = at - 20
        if loc < 0 or tail[loc : loc + 4] != EOCD64_LOCATOR_SIG:
            raise InvalidContent("zip64 archive without its end-of-directory locator")
        (rec_at,) = struct.unpack("<Q", tail[loc + 8 : loc + 16])
        rel = rec_at - tail_start
        if rel < 0 or rel + 56 > len(tail) or tail[rel : rel + 4] != EOCD64_SIG:
            raise InvalidContent("zip64 end-of-directory record not in the file's tail")
        entries, size, offset = struct.unpack("<QQQ", tail[rel + 32 : rel + 56])
    if offset + size > file_size or entries > MAX_MEMBERS or entries * 46 > size:
        raise InvalidContent(f"zip directory of {entries} entries at {offset}+{size} does not fit")
    return ZipDirectory(offset, size, entries)


def _zip64_sizes(extra: bytes, size: int, csize: int, offset: int) -> tuple[int, int, int]:
    pos = 0
    while pos + 4 <= len(extra):
        tag, n = struct.unpack("<HH", extra[pos : pos + 4])
        body = extra[pos + 4 : pos + 4 + n]
        if tag == 1:
            vals = [v for (v,) in struct.iter_unpack("<Q", body[: len(body) // 8 * 8])]
            if size == 0xFFFFFFFF and vals:
                size = vals.pop(0)
            if csize == 0xFFFFFFFF and vals:
                csize = vals.pop(0)
            if offset == 0xFFFFFFFF and vals:
                offset = vals.pop(0)
        pos += 4 + n
    return size, csize, offset


def parse_directory(raw: bytes, directory: ZipDirectory, file_size: int) -> tuple[ZipMember, ...]:
    """The members the central directory lists (names decoded, zip64 sizes applied)."""
    members: list[ZipMember] = []
    pos = 0
    for _ in range(directory.entries):
        head = raw[pos : pos + 46]
        if len(head) < 46 or head[:4] != CENTRAL_SIG:
            raise InvalidContent(f"zip directory entry {len(members)} is malformed")
        fields = struct.unpack("<4sHHHHHHIIIHHHHHII", head)
        method, csize, size = fields[4], fields[8], fields[9]
        n_name, n_extra, n_comment, offset = fields[10], fields[11], fields[12], fields[16]
        name_raw = raw[pos + 46 : pos + 46 + n_name]
        extra = raw[pos + 46 + n_name : pos + 46 + n_name + n_extra]
        size, csize, offset = _zip64_sizes(extra, size, csize, offset)
        if offset + csize > file_size:
            raise InvalidContent(f"zip member {len(members)} points past the end of the file")
        members.append(ZipMember(name_raw.decode("utf-8", "replace"), method, csize, size, offset))
        pos += 46 + n_name + n_extra + n_comment
    return tuple(members)


def local_data_start(local_header: bytes) -> int:
    """Bytes from a member's local header to its data (30 + name + the local extra field)."""
    if len(local_header) < 30 or local_header[:4] != LOCAL_SIG:
        raise InvalidContent("zip member has no local file header")
    n_name, n_extra = struct.unpack("<HH", local_header[26:30])
    return 30 + int(n_name) + int(n_extra)


def is_pickle_member(name: str) -> bool:
    """torch.save's pickle: ``<archive>/data.pkl`` (also a bare ``data.pkl``)."""
    return name == "data.pkl" or name.endswith("/data.pkl")
