"""Read inside weight files by Range through the HubSource protocol: GGUF headers, pickles.

Layer 2 (source side): only ``HubSource.read_range`` is used, so git and HTTP sources read
the same bytes. What decides is parsed by the pure readers of :mod:`tracker.extract` and
returned as the compact digest the blob store keeps per content id:

- GGUF: the first 24 bytes, then up to an estimate from below of the header's end (keys at
  their smallest, the rest of a token list or of the tensor infos at 90% of their average so
  far), again until the key/value section and the tensor infos parse, never past
  ``max_bytes``: no tensor data is read, in a handful of requests.
- zip checkpoints (torch.save): the first 4 bytes (the magic), the end records (the last 98
  bytes; the longest possible tail only when a zip comment hides them), the central
  directory, then each ``*/data.pkl`` member (its local header, then its data).
- legacy pickles: a prefix, grown until the pickles at the front are complete or the cap.
"""

from __future__ import annotations

import zlib

from tracker.errors import InvalidContent, SourceUnavailable, TooLarge
from tracker.extract.gguf import digest_gguf
from tracker.extract.gguf_reader import NeedMore, parse_gguf_header
from tracker.extract.pickle_scan import digest_scan, scan_pickles
from tracker.extract.zipdir import (
    DEFLATED,
    STORED,
    TAIL_BYTES,
    find_directory,
    is_pickle_member,
    local_data_start,
    parse_directory,
)
from tracker.hub.interface import HubSource
from tracker.model import FileEntry

FIRST_READ = 64 * 1024  # a legacy pickle's first prefix; grown (doubling) while cut
MAX_PICKLE_MEMBERS = 8
#: EOCD (22) + zip64 locator (20) + zip64 end record (56)
SHORT_TAIL = 98


def _read_exact(source: HubSource, sha: str, entry: FileEntry, start: int, length: int) -> bytes:
    data = source.read_range(sha, entry.path, start, length)
    if len(data) != length:
        if entry.size and start + length <= entry.size:  # the file holds them: a short answer (issue 10)
            raise SourceUnavailable(f"{entry.path}: short Range answer, {len(data)} of {length} bytes at {start}")
        raise InvalidContent(f"{entry.path}: {len(data)} of {length} bytes at {start} came back")
    return data


def read_gguf_digest(source: HubSource, sha: str, entry: FileEntry, max_bytes: int) -> bytes:
    """The digest of a GGUF file's header, read by growing ranges (each byte read once)."""
    size = entry.size or None
    buf = b""
    want = 24 if size is None else min(24, size)  # magic, version and the two counts
    resume = None
    while True:
        if want > len(buf):
            buf += _read_exact(source, sha, entry, len(buf), want - len(buf))
        try:
            return digest_gguf(
                parse_gguf_header(buf, file_size=size, max_bytes=max_bytes, resume=resume)
            )
        except NeedMore as e:
            resume = e.resume
            if e.header_at_least <= len(buf):
                raise TooLarge(f"{entry.path}: GGUF header over the cap of {max_bytes} bytes") from None
            want = e.header_at_least


def _zip_members(source: HubSource, sha: str, entry: FileEntry, tail: bytes, start: int,
                 max_bytes: int) -> bytes:
    directory = find_directory(tail, start, entry.size)
    assert directory is not None
    if directory.size > max_bytes:
        raise TooLarge(f"{entry.path}: zip directory of {directory.size} bytes, over the cap")
    if directory.offset >= start:
        raw = tail[directory.offset - start : directory.offset - start + directory.size]
    else:
        raw = _read_exact(source, sha, entry, directory.offset, directory.size)
    members = parse_directory(raw, directory, entry.size)
    pickles = [m for m in members if is_pickle_member(m.name)][:MAX_PICKLE_MEMBERS]
    if not pickles:
        return digest_scan("zip", [], None, "zip archive without a data.pkl member")
    globals_found = None
    complete = True
    for m in pickles:
        if m.compressed_size > max_bytes or m.size > max_bytes:
            raise TooLarge(f"{entry.path}: {m.name} is {m.size} bytes, over the cap of {max_bytes}")
        if m.method not in (STORED, DEFLATED):
            raise InvalidContent(f"{entry.path}: {m.name} uses zip method {m.method}")
        head = _read_exact(source, sha, entry, m.header_offset, 30)
        offset = m.header_offset + local_data_start(head)
        if offset + m.compressed_size > entry.size:
            raise InvalidContent(f"{entry.path}: {m.name} runs past the end of the file")
        body = _read_exact(source, sha, entry, offset, m.compressed_size)
        if m.method == DEFLATED:
            d = zlib.decompressobj(-15)
            body = d.decompress(body, max_bytes)
            if d.unconsumed_tail:
                raise TooLarge(f"{entry.path}: {m.name} inflates past the cap of {max_bytes}")
        found = scan_pickles(body, whole=True)
        if globals_found is None:
            globals_found = found
        else:
            globals_found.globals |= found.globals
        complete = complete and found.complete
    assert globals_found is not None
    globals_found.complete = complete
    return digest_scan("zip", [m.name for m in pickles], globals_found)


def read_pickle_digest(source: HubSource, sha: str, entry: FileEntry, max_bytes: int) -> bytes:
    """The globals a pickle checkpoint imports: zip members by directory, legacy by prefix."""
    if entry.size <= 0:
        raise InvalidContent(f"{entry.path}: empty file")
    # Legacy pickles start with the pickle opcode PROTO (0x80); zips with a local header.
    first = _read_exact(source, sha, entry, 0, min(entry.size, 4))
    if first.startswith(b"PK\x03\x04"):
        # torch writes no zip comment: the end records are the last 98 bytes (zip64 included);
        # only an archive with a comment needs the longer tail
        for tail_len in (min(entry.size, SHORT_TAIL), min(entry.size, TAIL_BYTES)):
            start = entry.size - tail_len
            tail = _read_exact(source, sha, entry, start, tail_len)
            if find_directory(tail, start, entry.size) is not None:
                return _zip_members(source, sha, entry, tail, start, max_bytes)
            if tail_len == entry.size:
                break
        raise InvalidContent(f"{entry.path}: zip file without an end of central directory")
    buf = first
    want = min(entry.size, FIRST_READ, max_bytes)
    while True:
        if want > len(buf):
            buf += _read_exact(source, sha, entry, len(buf), want - len(buf))
        whole = len(buf) >= entry.size
        found = scan_pickles(buf, whole=whole)
        if found.complete or whole or len(buf) >= max_bytes:
            return digest_scan("legacy", [], found)
        want = min(2 * len(buf), entry.size, max_bytes)
