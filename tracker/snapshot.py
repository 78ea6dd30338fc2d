"""Stage 2: a revision's snapshot — its file tree plus the bytes of the files that matter.

Reads through the ``HubSource`` protocol only. Small files are fetched only when their blob
id is new (``known`` looks them up in the content-addressed store first); safetensors files
give their JSON header by byte range, never a tensor byte. Every read is capped; a file over
its cap, or an LFS object the source does not hold, is recorded in ``read_errors`` instead
of failing the revision; a cap is remembered by content id (a permanent property of the
content), an object not held is not (a property of the source).

An error that may be transient (a 5xx, a timeout, a reset, a 404 of a file the tree lists, a
short Range answer) is retried a few times with backoff (``ReadPolicy``); if it persists the
snapshot raises :class:`~tracker.errors.ReadIncomplete`, so the revision stays pending and a
later poll reads it again: a revision is never stored half-read as if it were complete. Only
``ReadPolicy.accept_unreadable`` (a repo whose reads kept failing over several polls) records
such a file as unreadable, in ``transient_errors``, which are never remembered by content id,
and in ``unreadable``: the revision is read again later and amended (``tracker.pipeline.repair``).
Rate limits propagate at once (the daemon pauses).
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from tracker.errors import (
    EntryNotFound,
    InvalidContent,
    ObjectNotHeld,
    RateLimited,
    ReadIncomplete,
    SourceUnavailable,
    TooLarge,
)
from tracker.extract.paths import is_content_path, is_safetensors, reads_inside, weight_format
from tracker.hub.interface import HubSource
from tracker.hub.weight_ranges import read_gguf_digest, read_pickle_digest
from tracker.model import FileEntry, Snapshot
from tracker.model.keys import (
    content_error_key,
    content_key,
    digest_error_key,
    digest_key,
    header_error_key,
    header_key,
    security_key,
)


@dataclass(frozen=True, slots=True)
class SnapshotLimits:
    max_file_bytes: int = 2_000_000
    max_tokenizer_bytes: int = 25_165_824
    max_header_bytes: int = 25_000_000
    max_files: int = 100_000
    max_gguf_header_bytes: int = 33_554_432  # a GGUF header, token lists included
    max_pickle_bytes: int = 16_777_216  # a data.pkl member, or a legacy pickle's prefix
    #: bytes read for one revision across all its files (issue 16, point 6: 300 files of 1.9 MB
    #: each, every one under its own cap, took 1.8 GB of memory and 561 MB of database)
    max_revision_bytes: int = 67_108_864

    def cap_for(self, path: str) -> int:
        name = path.rsplit("/", 1)[-1]
        return self.max_tokenizer_bytes if name == "tokenizer.json" else self.max_file_bytes


#: ``known(key)`` returns stored bytes for a content key, or None when they must be read.
BlobLookup = Callable[[str], "bytes | None"]
#: ``known_many(keys)`` returns the stored ones of ``keys`` at once (one query, not one per file).
BlobBatchLookup = Callable[[list[str]], Mapping[str, bytes]]

T = TypeVar("T")

#: Memos that older versions stored for what may have been a transient failure: ignored.
_LEGACY_TRANSIENT_MEMOS = (b"listed in the tree but not readable from the source",)


class ShortRead(SourceUnavailable):
    """The source answered fewer bytes than the file holds (a short Range answer)."""


@dataclass(frozen=True, slots=True)
class ReadPolicy:
    """How a read that may be transient is retried within one poll."""

    delays: tuple[float, ...] = (0.5, 2.0)  # seconds before the 2nd, 3rd attempt
    accept_unreadable: bool = False  # record a still-failing file as unreadable instead of raising
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def run(self, what: str, read: Callable[[], T]) -> T:
        """``read()``, again after each delay while it fails transiently; the last error raised."""
        for delay in (*self.delays, None):
            try:
                return read()
            except (RateLimited, ObjectNotHeld):
                raise
            except (SourceUnavailable, EntryNotFound) as e:
                if delay is None:
                    raise ReadIncomplete(f"{what}: {e} (after {len(self.delays) + 1} attempts)",
                                         repo_id=e.repo_id, revision=e.revision) from e
                self.sleep(delay)
        raise AssertionError("unreachable")


def take_snapshot(
    source: HubSource,
    sha: str,
    *,
    limits: SnapshotLimits = SnapshotLimits(),
    known: BlobLookup = lambda _key: None,
    files: tuple[FileEntry, ...] | None = None,
    policy: ReadPolicy = ReadPolicy(),
    known_many: BlobBatchLookup | None = None,
) -> Snapshot:
    """Read revision ``sha``: the tree, the small files that matter, the safetensors headers.

    ``known_many``, when given, looks up every key the tree may need in one go (a store query
    per file was a tenth of a new revision's cost); ``known`` answers the rest.
    Raises :class:`~tracker.errors.ReadIncomplete` when a transient failure outlasts the retries.
    """
    tree = files if files is not None else policy.run(f"tree of {sha[:12]}", lambda: source.list_files(sha))
    if len(tree) > limits.max_files:
        return Snapshot(
            sha=sha, files=(), read_errors={"": f"tree has {len(tree)} files, over the cap of {limits.max_files}"}
        )
    if known_many is not None:
        known = _prefetched(tree, known, known_many)
    contents: dict[str, bytes] = {}
    headers: dict[str, bytes] = {}
    digests: dict[str, bytes] = {}
    errors: dict[str, str] = {}
    transient: set[str] = set()
    unreadable: set[str] = set()
    spent = 0
    for entry in tree:
        small = is_content_path(entry.path) and not is_safetensors(entry.path) and not reads_inside(entry.path)
        need = min(entry.size, limits.cap_for(entry.path)) if small else 0  # a header's size shows when read
        if (small or is_safetensors(entry.path) or reads_inside(entry.path)) and (
                spent + need > limits.max_revision_bytes):
            # not a property of the file's content: not remembered, a later revision reads it
            errors[entry.path] = f"not read: the revision's read budget of {limits.max_revision_bytes} bytes is spent"
            transient.add(entry.path)
            continue
        try:
            if is_safetensors(entry.path):
                _read_header(source, sha, entry, limits, known, headers, errors, policy, transient)
            elif reads_inside(entry.path):
                _read_inside(source, sha, entry, limits, known, digests, errors, policy, transient)
            elif is_content_path(entry.path):  # over its cap: recorded as such by _read_small
                _read_small(source, sha, entry, limits, known, contents, errors, policy, transient)
            spent += len(contents.get(entry.path, b"")) + len(headers.get(entry.path, b""))
        except ReadIncomplete as e:
            if not policy.accept_unreadable:
                raise
            errors[entry.path] = f"not readable from the source after several polls: {e}"
            transient.add(entry.path)
            unreadable.add(entry.path)
    return Snapshot(
        sha=sha, files=tuple(tree), contents=contents, safetensors_headers=headers, read_errors=errors,
        weight_digests=digests, transient_errors=frozenset(transient), unreadable=frozenset(unreadable),
        security=_read_security(source, sha, tree, known),
    )


def keys_for(entry: FileEntry) -> list[str]:
    """Every blob key ``take_snapshot`` may look up for ``entry``."""
    keys = []
    if is_safetensors(entry.path):
        keys += [header_key(entry), header_error_key(entry)]
    elif reads_inside(entry.path):
        keys += [digest_key(entry), digest_error_key(entry)]
    elif is_content_path(entry.path):
        keys += [content_key(entry), content_error_key(entry)]
    if weight_format(entry.path) is not None:
        keys.append(security_key(entry))
    return keys


def _prefetched(tree: tuple[FileEntry, ...], known: BlobLookup, known_many: BlobBatchLookup) -> BlobLookup:
    asked = [key for entry in tree for key in keys_for(entry)]
    found = known_many(asked)
    wanted = set(asked)
    return lambda key: found.get(key) if key in wanted else known(key)


def _read_whole(source: HubSource, sha: str, entry: FileEntry, cap: int) -> bytes:
    data = source.read_file(sha, entry.path, max_bytes=cap)
    if entry.size and len(data) != entry.size:  # never store a file cut short as its content
        raise ShortRead(f"{entry.path}: {len(data)} of {entry.size} bytes read")
    return data


def _memo(known: BlobLookup, key: str) -> bytes | None:
    failed = known(key)
    return None if failed is None or failed in _LEGACY_TRANSIENT_MEMOS else failed


def _read_security(
    source: HubSource, sha: str, tree: tuple[FileEntry, ...], known: BlobLookup
) -> dict[str, bytes]:
    """The Hub's scan status of each weight file: asked (one request per 100 files) only for
    contents never seen before; ``null`` when the Hub says nothing, so it is not asked again."""
    out: dict[str, bytes] = {}
    new: list[FileEntry] = []
    for entry in tree:
        if weight_format(entry.path) is None:
            continue
        cached = known(security_key(entry))
        if cached is not None:
            out[entry.path] = cached
        else:
            new.append(entry)
    if new:
        try:
            found = source.file_security(sha, [e.path for e in new])
        except EntryNotFound:  # a mirror without paths-info: nothing reported
            found = {}
        for entry in new:
            status = found.get(entry.path)
            out[entry.path] = json.dumps(status, sort_keys=True).encode()
    return out


def _read_once(
    entry: FileEntry,
    key: str,
    error_key: str,
    known: BlobLookup,
    out: dict[str, bytes],
    errors: dict[str, str],
    read: Callable[[], bytes],
    permanent: tuple[type[Exception], ...],
    not_held: str,
    transient: set[str],
) -> None:
    """Bytes stored under ``key`` once per content id; a permanent failure remembered under
    ``error_key`` answers the same again without a request. Transient errors propagate.

    An object the source does not hold (or holds with other content) is a property of this
    source, not of the content: added to ``transient``, never remembered, or one hostile repo
    would make the content unreadable for every repo that has it."""
    cached = known(key)
    if cached is not None:
        out[entry.path] = cached
        return
    failed = _memo(known, error_key)
    if failed is not None:  # the same content failed before, permanently: no request, same answer
        errors[entry.path] = failed.decode("utf-8", "replace")
        return
    try:
        out[entry.path] = read()
    except permanent as e:
        errors[entry.path] = str(e)
    except ObjectNotHeld:
        # The same words whatever the source said, so git and HTTP histories agree.
        errors[entry.path] = not_held
        transient.add(entry.path)


def _read_small(
    source: HubSource,
    sha: str,
    entry: FileEntry,
    limits: SnapshotLimits,
    known: BlobLookup,
    out: dict[str, bytes],
    errors: dict[str, str],
    policy: ReadPolicy,
    transient: set[str],
) -> None:
    cap = limits.cap_for(entry.path)
    if entry.size > cap:
        errors[entry.path] = f"{entry.size} bytes, over the cap of {cap}"
        return
    _read_once(entry, content_key(entry), content_error_key(entry), known, out, errors,
               lambda: policy.run(entry.path, lambda: _read_whole(source, sha, entry, cap)),
               (TooLarge,), "listed in the tree but not held by the source", transient)


def _read_header(
    source: HubSource,
    sha: str,
    entry: FileEntry,
    limits: SnapshotLimits,
    known: BlobLookup,
    out: dict[str, bytes],
    errors: dict[str, str],
    policy: ReadPolicy,
    transient: set[str],
) -> None:
    _read_once(entry, header_key(entry), header_error_key(entry), known, out, errors,
               lambda: policy.run(
                   entry.path, lambda: read_safetensors_header(source, sha, entry, limits.max_header_bytes)),
               (TooLarge, InvalidContent),
               "safetensors header not readable: the source does not serve the weights object", transient)


def _read_inside(
    source: HubSource,
    sha: str,
    entry: FileEntry,
    limits: SnapshotLimits,
    known: BlobLookup,
    out: dict[str, bytes],
    errors: dict[str, str],
    policy: ReadPolicy,
    transient: set[str],
) -> None:
    """A GGUF header or a pickle's imports, by Range, once per content id (issue 13)."""
    kind = reads_inside(entry.path)

    def read() -> bytes:
        if kind == "gguf":
            return read_gguf_digest(source, sha, entry, limits.max_gguf_header_bytes)
        return read_pickle_digest(source, sha, entry, limits.max_pickle_bytes)

    _read_once(entry, digest_key(entry), digest_error_key(entry), known, out, errors,
               lambda: policy.run(entry.path, read), (TooLarge, InvalidContent),
               f"{kind} weights not readable: the source does not serve the weights object", transient)


def read_safetensors_header(source: HubSource, sha: str, entry: FileEntry, max_header_bytes: int) -> bytes:
    """The JSON header of a safetensors file: 8-byte little-endian length, then that many bytes.

    Two exact range reads (the length, then the header), so not one tensor byte is fetched;
    this costs one request more than reading a first 100 kB blindly, but only once per new
    weights content (headers are stored by content id). A length over the cap (a hostile file
    claiming terabytes) or past the end of the file is refused before anything more is read.
    """
    first = source.read_range(sha, entry.path, 0, 8)
    if len(first) < 8:
        if entry.size >= 8:  # the file is longer: the answer was cut short
            raise ShortRead(f"{entry.path}: short Range answer ({len(first)} of 8 bytes)")
        raise InvalidContent(f"{entry.path}: not a safetensors file (only {len(first)} bytes)")
    (n,) = struct.unpack("<Q", first)
    if n > max_header_bytes:
        raise TooLarge(f"{entry.path}: safetensors header claims {n} bytes, over the cap of {max_header_bytes}")
    if entry.size and n + 8 > entry.size:
        raise TooLarge(f"{entry.path}: safetensors header claims {n} bytes, past the end of the file")
    header = source.read_range(sha, entry.path, 8, n)
    if len(header) != n:
        raise ShortRead(f"{entry.path}: short Range answer for the safetensors header ({len(header)} of {n} bytes)")
    return header
