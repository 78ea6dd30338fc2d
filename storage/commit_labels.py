"""Every stored commit's label, kept in memory for commit queries (issue 17).

A batch of 1,000 commits spent 2.3-5 ms (SQLite) on the statement that reads their labels.
The warm-up reads every label once into a :class:`LabelMap`, kept only whole: it is complete
for the *stamp* it was read at, so a commit it lacks is not stored (answered ``{}``), never
"not read". The stamp is ``(sum(repos.history_version), sum(commit_index_versions.version))``:
every write that adds a labelled revision raises its repo's ``history_version`` (renames,
whose new row is one higher, too), and every rewrite of labels (a rebuild, a repair) raises
``commit_index_versions``, each in the write's own transaction; neither counter is ever
lowered. So an equal stamp means the labels, and each repo's index version, are as read; a
query reads the stamp (one row) and, on any change, drops the map and reads labels by SQL.

The map is compact, 32-36 bytes a commit (a dict of str was ~160, so 1,000,000 commits did
not fit its 64 MiB): per commit the 20 bytes of its sha and its label (two 4-byte words),
grouped by bucket (a hash of the sha's bytes) in one ``bytearray``, and each bucket's first
entry. A look-up is one hash, one bounded ``find`` in C and two words, about two cache
misses (a dict's three); the sha is compared in full, so it is exact whatever collides. A sha that is not 40 lowercase hex digits (none git makes)
stays in a small dict beside.

Imports: stdlib.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

LABEL_BYTES = 64 * 2**20  # about 32 bytes a commit: 2,000,000 commits; more: no map
STAMP = (
    "SELECT (SELECT coalesce(sum(history_version), 0) FROM repos),"
    " (SELECT coalesce(sum(version), 0) FROM commit_index_versions)"
)
IN_TWO = 2**32 - 1  # key index of a commit stored in more than one repo: its answer is merged (not from the map)
SHA_BYTES = 20
ENTRY_BYTES = SHA_BYTES + 8  # the sha, its key index and pos (4 bytes each, native order)
_WORDS = struct.Struct("=II")
_PAGE = 65_536  # rows per statement (a driver may hold a whole result at once)
_FETCH = 4096  # rows read (or placed) between two moments given way
_KEY_BYTES = 120  # one (repo, chain) key, its tuple and list slots
_ODD_BYTES = 160  # one sha kept in the dict beside


class LabelsMoved(Exception):
    """A write came between the stamps read before and after the labels: read them again."""


@dataclass(slots=True)
class LabelMap:
    """Every labelled revision's ``(key index, pos)`` (key index :data:`IN_TWO`: stored in
    two repos), found by :meth:`find`; ``keys[i]`` is its ``(repo, chain)`` and
    ``versions[i]`` the repo's index version, at ``stamp``."""

    stamp: tuple[Any, ...]
    keys: list[tuple[str, int]]
    versions: list[int]
    size: int  # estimated bytes
    starts: array[int]  # bucket b's entries are entries[starts[b] * 28 : starts[b + 1] * 28]
    entries: bytearray  # per sha: its 20 bytes, key index and pos (4 bytes each); never written once built
    words: memoryview  # ``entries`` as 4-byte words: an entry at byte ``at`` has its key index at (at + 20) / 4
    odd: dict[str, tuple[int, int]]  # shas that are not 40 lowercase hex digits
    mask: int  # a bucket is hash(sha bytes) & mask

    def __len__(self) -> int:
        return len(self.entries) // ENTRY_BYTES + len(self.odd)  # (a table sha in two repos counts twice)

    def find(self, sha: str) -> tuple[int, int] | None:
        """``(key index, pos)`` of ``sha`` (exactly that string, as a dict would); None: not stored."""
        return self.find_all([sha])[0]

    def find_all(self, shas: Iterable[str]) -> list[tuple[int, int] | None]:
        """:meth:`find` of each of ``shas``, in one loop (a querybatch's 1,000: ~0.5 ms)."""
        starts, entries, words, mask, odd = self.starts, self.entries, self.words, self.mask, self.odd
        fromhex = bytes.fromhex
        out: list[tuple[int, int] | None] = []
        append = out.append
        for sha in shas:
            try:
                key = fromhex(sha) if len(sha) == 2 * SHA_BYTES else b""
            except ValueError:
                key = b""
            if len(key) == SHA_BYTES:
                b = hash(key) & mask
                lo, hi = starts[b] * ENTRY_BYTES, starts[b + 1] * ENTRY_BYTES
                if hi - lo == ENTRY_BYTES:  # the common case: one sha in the bucket
                    at = lo if entries[lo : lo + SHA_BYTES] == key else -1
                else:
                    at = entries.find(key, lo, hi)
                    while at % ENTRY_BYTES and at > 0:  # not at an entry's start: look on
                        at = entries.find(key, at + 1, hi)
                if at >= 0 and key.hex() == sha:  # (fromhex reads capitals too)
                    w = (at + SHA_BYTES) >> 2
                    append((words[w], words[w + 1]))
                    continue
            append(odd.get(sha) if odd else None)
        return out


def map_bytes(commits: int) -> int:
    """What a map of ``commits`` labels is estimated to weigh (before its keys)."""
    return ENTRY_BYTES * commits + 4 * (_buckets(commits) + 1) + 3 * sys.getsizeof(b"")


def build_label_map(stamp: tuple[Any, ...], rows: Iterable[tuple[str, str, int, int | None]],
                    repo_versions: dict[str, int], max_bytes: int = LABEL_BYTES, expected: int = 0,
                    breathe: Callable[[], None] | None = None, buckets: int | None = None) -> LabelMap | None:
    """The map of label rows ``(sha, repo, chain, pos)``; None: over ``max_bytes`` or a
    position past 32 bits. ``expected`` rows size the buckets (``buckets``: their count, a
    power of two, for tests); ``breathe`` is called every few thousand rows."""
    n_buckets = buckets or _buckets(expected)
    raw = bytearray()  # the entries in row order, then placed by bucket
    odd: dict[str, tuple[int, int]] = {}
    index: dict[tuple[str, int], int] = {}
    size = 4 * (n_buckets + 1) + 3 * sys.getsizeof(b"")
    fromhex, pack = bytes.fromhex, _WORDS.pack
    for n, (sha, repo, chain, pos) in enumerate(rows):
        if pos is None or not 0 <= pos < IN_TWO:
            return None
        key = (repo, chain)
        i = index.get(key)
        if i is None:
            i = index[key] = len(index)
            size += _KEY_BYTES
            if i >= IN_TWO:
                return None
        binary = _canonical(sha, fromhex)
        if binary is None:
            odd[sha] = (IN_TWO, 0) if sha in odd else (i, pos)
            size += _ODD_BYTES + len(sha)
        else:
            raw += binary
            raw += pack(i, pos)
            size += ENTRY_BYTES
        if n % _FETCH == _FETCH - 1:
            if size > max_bytes:
                return None
            if breathe is not None:
                breathe()
    if size > max_bytes:
        return None
    starts, entries = _place(raw, n_buckets - 1, breathe)
    keys = list(index)
    return LabelMap(stamp, keys, [repo_versions.get(repo, 0) for repo, _ in keys], size, starts, entries,
                    memoryview(entries).cast("I"), odd, n_buckets - 1)


def _canonical(sha: str, fromhex: Callable[[str], bytes]) -> bytes | None:
    """The 20 bytes of a sha of 40 lowercase hex digits; None for any other string."""
    if len(sha) != 2 * SHA_BYTES:
        return None
    try:
        binary = fromhex(sha)
    except ValueError:
        return None
    return binary if len(binary) == SHA_BYTES and binary.hex() == sha else None


def _buckets(commits: int) -> int:
    """A power of two at least ``commits`` (about one sha a bucket)."""
    return 1 << max(0, commits - 1).bit_length()


def _place(raw: bytearray, mask: int, breathe: Callable[[], None] | None) -> tuple[array[int], bytearray]:
    """The entries grouped by bucket (a counting sort), and each bucket's start; a sha met
    twice (two repos) gets the key index :data:`IN_TWO` in both places."""
    blob = bytes(raw)  # (a bytearray's slices are not hashable)
    raw.clear()
    n = len(blob) // ENTRY_BYTES
    where = array("I", (hash(blob[at : at + SHA_BYTES]) & mask for at in range(0, len(blob), ENTRY_BYTES)))
    counts = array("I", bytes(4 * (mask + 2)))
    for b in where:
        counts[b + 1] += 1
    starts = array("I", accumulate(counts))
    del counts
    fill = array("I", starts)
    entries = bytearray(len(blob))
    words = memoryview(entries).cast("I")
    for i, b in enumerate(where):
        d = fill[b]
        fill[b] = d + 1
        src, at, lo = i * ENTRY_BYTES, d * ENTRY_BYTES, starts[b] * ENTRY_BYTES
        entries[at : at + ENTRY_BYTES] = blob[src : src + ENTRY_BYTES]
        key = blob[src : src + SHA_BYTES]
        seen = entries.find(key, lo, at) if at > lo else -1
        while seen % ENTRY_BYTES and seen > 0:
            seen = entries.find(key, seen + 1, at)
        if seen >= 0:  # (IN_TWO, 0) in both
            for w in ((seen + SHA_BYTES) >> 2, (at + SHA_BYTES) >> 2):
                words[w], words[w + 1] = IN_TWO, 0
        if breathe is not None and i % _FETCH == _FETCH - 1:
            breathe()
    words.release()
    assert n == len(where)
    return starts, entries


def read_stamp(cursor: Any) -> tuple[Any, ...]:
    cursor.execute(STAMP)
    return tuple(cursor.fetchone())


def read_label_map(cursor: Any, mark: str, max_bytes: int = LABEL_BYTES,
                   breathe: Callable[[], None] | None = None) -> LabelMap | None:
    """Every labelled revision's label (``mark``: the driver's parameter mark); None: over
    ``max_bytes`` or a position past 32 bits.
    :class:`LabelsMoved`: a write between the stamps read before and after (the labels
    would be of no one moment)."""
    stamp = read_stamp(cursor)
    cursor.execute("SELECT count(*) FROM revisions WHERE chain IS NOT NULL")
    expected = cursor.fetchone()[0]
    if map_bytes(expected) > max_bytes:
        return None  # not read at all
    cursor.execute("SELECT repo_id, version FROM commit_index_versions")
    repo_versions: dict[str, int] = dict(cursor.fetchall())
    built = build_label_map(stamp, _label_rows(cursor, mark, breathe), repo_versions, max_bytes, expected, breathe)
    if read_stamp(cursor) != stamp:
        raise LabelsMoved(stamp)
    return built


def _label_rows(cursor: Any, mark: str,
                breathe: Callable[[], None] | None) -> Iterable[tuple[str, str, int, int | None]]:
    """``(sha, repo, chain, pos)`` of every labelled revision, in pages of ``_PAGE`` rows
    along the ``(sha, repo_id, ...)`` index (each page a statement: bounded, whatever the
    driver holds), read ``_FETCH`` at a time."""
    after: tuple[str, str] | None = None
    while True:
        where = "" if after is None else f" AND (sha, repo_id) > ({mark}, {mark})"
        args = () if after is None else after
        cursor.execute(
            f"SELECT sha, repo_id, chain, chain_pos FROM revisions WHERE chain IS NOT NULL{where}"
            f" ORDER BY sha, repo_id LIMIT {_PAGE}", args,
        )
        got = 0
        while rows := cursor.fetchmany(_FETCH):
            got += len(rows)
            yield from rows
            last = rows[-1]
        if got < _PAGE:
            return
        after = (last[0], last[1])
        if breathe is not None:
            breathe()
