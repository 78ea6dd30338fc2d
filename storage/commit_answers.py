"""Commit queries answered from memory: per chain, its segments and their advisories (issue 17).

What holds a commit depends only on its label ``(repo, chain, pos)`` and the chain's spans,
and positions between two span boundaries share one answer. So the API keeps, per chain,
the sorted boundaries and per segment the live advisories' briefs (``{"id","modified"}``,
sorted by id), built on first use from the chain's spans (one indexed read). A query is then
one statement for a whole batch: each commit's labels (a commit may be stored in several
repos) and its repo's ``commit_index_versions`` counter, which every write of the repo's
spans or records raises in its own transaction; a chain kept under another version is read
again. Nothing is stale past the next query, whichever process wrote. Full records (what
``/v1/query`` splices) are kept by ``(id, repo)`` at the repo's version.

Memory is bounded: both caches are LRUs by estimated bytes; a chain whose segments would
exceed ``MAX_CHAIN_BYTES`` (many long overlapping ranges: segments x depth) is answered by
the SQL path (:func:`storage.commit_rows.affecting_json`), as are the commits it labels.

A chain or record read on first touch costs a request a statement or two and builds what
16 concurrent requests would all build at once, so :meth:`CommitAnswers.warm` reads every
chain and record in the background (started when the app starts serving, in each worker
process, or else by the first commit query), in steps that give way to requests, only while
they fit the caches' room: it never evicts. :meth:`KeptQueries.warm_state` says how far it
got (``/readyz`` shows it), so a benchmark or an operator can wait for it. ``kept_only``
answers raise :class:`NotKept` rather than read anything but the labels, so that a caller
on the event loop (SQLite: a label probe is tens of microseconds) can answer inline and go
to a worker thread only on a miss.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from storage import commit_rows
from storage.commit_index import OPEN
from storage.commit_labels import (
    IN_TWO,
    LABEL_BYTES,
    LabelMap,
    LabelsMoved,
    read_label_map,
    read_stamp,
)
from storage.engine import param_mark
from storage.versioned_lru import VersionedLru

CACHE_BYTES = 96 * 2**20  # chains' segments, all repos together
# full records' stored JSON text: 33,300 records of ~2.1 kB (the 100 x 1,000 benchmark) are
# 70 MB; at 64 MiB an LRU under uniform queries missed ~4 of a query's ~43 records, each time
RECORD_CACHE_BYTES = 128 * 2**20
WARM_SECONDS = 120.0  # a warm-up stops after this long, done or not
WARM_PAUSE = 0.002  # seconds given way to requests between warm-up steps
_INDEX_PER_START = 64  # positions a chain's position index may hold per segment start
_BREATHE_EVERY = 256  # segments a warm-up builds between two moments given way (a long chain's build)
MAX_CHAIN_BYTES = 16 * 2**20  # one chain larger than this is not kept: the SQL path answers
_CHUNK = 1000  # commits per label statement (a querybatch's whole size)
_SLOW_STEP = 250  # commits per SQL-path step, the deadline checked between them
_SEGMENT_BYTES = 56 + 8 + 32  # a tuple, its slot in the list, its start position
_SLOT_BYTES = 8
_BUSY_MS = 100  # how long a kept connection on SQLite waits for a lock
_BUILD_WAIT = 2.0  # seconds a thread waits for another's read of the same chain

Label = tuple[str, int, int, int]  # repo, chain, pos, version
log = logging.getLogger(__name__)


class NotKept(Exception):
    """A ``kept_only`` answer needed a chain or record that is not kept (or the SQL path)."""


@dataclass(slots=True)
class ChainAnswers:
    """One chain's answers (kept at the index version they were read at): segment ``i``
    holds positions ``[starts[i], starts[i + 1])`` and is answered by ``segments[i]``."""

    starts: list[int]
    segments: list[tuple[str, ...]]  # live briefs, sorted by advisory id
    ids: dict[str, str]  # brief -> advisory id
    size: int  # estimated bytes
    # each segment as a querybatch result's pieces, encoded: ``brief,`` ... ``brief]},``
    # (after ``{"vulns":[``), the variants shared by all segments; None where it holds nothing
    wire: list[tuple[bytes, ...] | None]
    # the segment of each position from 0 up to the last start (-1: before the first), where
    # that costs at most _INDEX_PER_START slots a start; empty otherwise (a sparse chain)
    index: array[int]

    def segment_of(self, pos: int) -> int:
        """The segment holding ``pos`` (-1: none): one look-up, not a bisection of the starts
        (Python ints apart in memory: 15 % of a querybatch's CPU, one per commit)."""
        index = self.index
        return index[pos] if 0 <= pos < len(index) else bisect_right(self.starts, pos) - 1

    def at(self, pos: int) -> tuple[str, ...]:
        i = self.segment_of(pos)
        return self.segments[i] if i >= 0 else ()


_TOO_BIG = "too big"  # a chain answered by SQL at this version


def build_chain(spans: Iterable[tuple[str, int, int, str | None]],
                max_bytes: int = MAX_CHAIN_BYTES, breathe: Callable[[], None] | None = None) -> ChainAnswers | None:
    """The segments of one chain's spans ``(advisory id, start, end, brief)``; a span
    without a brief (its record withdrawn) holds nothing. None: over ``max_bytes``.
    ``breathe`` is called every ``_BREATHE_EVERY`` positions (a warm-up gives the GIL
    back: a chain of 10,000 revisions is a second's work)."""
    ids: dict[str, str] = {}
    deltas: dict[int, dict[str, int]] = {}
    for adv_id, start, end, brief in set(spans):  # a span is filed under one or two buckets
        if brief is None:
            continue
        ids[brief] = adv_id
        at_start = deltas.setdefault(start, {})
        at_start[brief] = at_start.get(brief, 0) + 1
        at_end = deltas.setdefault(end, {})
        at_end[brief] = at_end.get(brief, 0) - 1
    size = sum(100 + 2 * len(b) for b in ids)
    active: dict[str, int] = {}  # brief -> spans of its advisory holding this segment
    starts: list[int] = []
    segments: list[tuple[str, ...]] = []
    key = ids.__getitem__
    for n_pos, pos in enumerate(sorted(deltas)):
        if breathe is not None and n_pos % _BREATHE_EVERY == _BREATHE_EVERY - 1:
            breathe()
        for brief, d in deltas[pos].items():
            n = active.get(brief, 0) + d
            if n:
                active[brief] = n
            else:
                active.pop(brief, None)
        segment = tuple(sorted(active, key=key))
        if segments and segments[-1] == segment:
            continue
        starts.append(pos)
        segments.append(segment)
        size += 2 * (_SEGMENT_BYTES + _SLOT_BYTES * len(segment))  # the segment and its wire
        if size > max_bytes:
            return None
    comma = {b: (b + ",").encode() for b in ids}
    last = {b: (b + "]},").encode() for b in ids}
    size += sum(2 * (60 + len(b)) for b in ids)
    wire = [(*map(comma.__getitem__, seg[:-1]), last[seg[-1]]) if seg else None for seg in segments]
    index = _position_index(starts)
    return ChainAnswers(starts, segments, ids, size + index.itemsize * len(index), wire, index)


def _position_index(starts: list[int]) -> array[int]:
    """:attr:`ChainAnswers.index` of a chain's sorted segment starts."""
    finite = bisect_right(starts, OPEN - 1)  # a segment starting at OPEN holds no commit
    end = starts[finite - 1] + 1 if finite else 0
    if not finite or starts[0] < 0 or end > _INDEX_PER_START * finite + 1024:
        return array("i")
    index = array("i", [-1]) * starts[0]
    for i in range(finite):
        upto = starts[i + 1] if i + 1 < finite else end
        index.extend(array("i", [i]) * (upto - starts[i]))
    return index


class CommitAnswers:
    """The caches of one process (the API's store); :meth:`answer` is ``affecting_json``'s
    contract, answered from them."""

    def __init__(self, cache_bytes: int = CACHE_BYTES, record_bytes: int = RECORD_CACHE_BYTES,
                 max_chain_bytes: int = MAX_CHAIN_BYTES, label_bytes: int = LABEL_BYTES):
        # (repo, chain) -> its answers, or _TOO_BIG; (advisory id, repo) -> (record text or
        # None once withdrawn,); both at the repo's index version
        self.chains: VersionedLru[ChainAnswers | str] = VersionedLru(cache_bytes)
        self.records: VersionedLru[tuple[str | None]] = VersionedLru(record_bytes)
        self.max_chain_bytes = min(max_chain_bytes, cache_bytes)
        # every commit's label at one stamp (storage.commit_labels), read by the warm-up or
        # :meth:`refresh_labels`; None: not read, too big, or dropped at a batch that saw a write
        self.labels: LabelMap | None = None
        self.label_bytes = label_bytes
        self.labels_dropped = False  # a map was dropped since the last read: worth reading again
        # chains being read, and the event set once kept: concurrent misses of one chain (16
        # cold batches each want every chain) wait for the one read instead of each reading it
        self._building: dict[tuple[str, int], threading.Event] = {}
        self._building_lock = threading.Lock()

    def answer(self, conn: Any, shas: Iterable[str], *, brief: bool,
               deadline: float | None = None, kept_only: bool = False) -> dict[str, Sequence[str]] | None:
        """``sha -> JSON texts`` of the live records whose GIT ranges hold it, sorted by id:
        each record's brief, or (``brief=False``) its stored text. None once past
        ``deadline`` (``time.monotonic()``; checked between chains read and SQL steps).
        ``kept_only``: :class:`NotKept` where more than the labels would have to be read."""
        wanted = list({s.lower() for s in shas})
        mark = param_mark(conn)
        out: dict[str, Sequence[str]] = dict.fromkeys(wanted, ())
        first: dict[str, tuple[ChainAnswers, Label]] = {}  # a commit's label (in one repo) ...
        more: dict[str, list[tuple[ChainAnswers, Label]]] = {}  # ... and its others, if any
        slow: set[str] = set()
        cursor = conn.connection.cursor()  # the driver's own rows
        try:
            chains: dict[tuple[str, int], ChainAnswers | None] = {}
            for sha, repo, chain, pos, version in _labels(cursor, mark, wanted):
                key = (repo, chain)
                if key in chains:
                    c = chains[key]
                else:
                    if deadline is not None and time.monotonic() > deadline:
                        return None
                    c = chains[key] = self._chain(cursor, mark, repo, chain, version or 0, kept_only)
                if c is None:
                    slow.add(sha)
                elif sha in first:
                    more.setdefault(sha, []).append((c, (repo, chain, pos, version or 0)))
                else:
                    first[sha] = (c, (repo, chain, pos, version or 0))
            full: dict[str, list[tuple[str, str, int]]] = {}  # sha -> (id, repo, version), by id
            for sha, (c, lab) in first.items():
                if sha in slow:
                    continue
                if brief and sha not in more:  # the common case: one repo, the kept tuple
                    i = c.segment_of(lab[2])
                    out[sha] = c.segments[i] if i >= 0 else ()
                    continue
                merged: dict[str, tuple[str, str, int]] = {}  # the union over repos, by id
                for c_, lab_ in [(c, lab), *more.get(sha, ())]:
                    for b in c_.at(lab_[2]):
                        merged.setdefault(c_.ids[b], (b, lab_[0], lab_[3]))
                if brief:
                    out[sha] = [merged[k][0] for k in sorted(merged)]
                else:
                    full[sha] = [(k, merged[k][1], merged[k][2]) for k in sorted(merged)]
            if full:
                out.update(self._records(cursor, mark, full, kept_only))
        finally:
            cursor.close()
        slow_list = sorted(slow)
        for i in range(0, len(slow_list), _SLOW_STEP):
            if deadline is not None and time.monotonic() > deadline:
                return None
            out.update(commit_rows.affecting_json(conn, slow_list[i : i + _SLOW_STEP], brief=brief))
        return out

    def batch_json(self, conn: Any, shas: Sequence[str]) -> bytes:
        """``{"results":[...]}`` of a querybatch of commit-only queries (lowercased, in query
        order): the bytes ``tracker.api.osv_routes.commit_batch_json`` makes of
        :meth:`answer` (``brief``), in one pass over the kept chains' encoded wire pieces
        (one join of the whole answer, no text per commit, nothing encoded). :class:`NotKept` when a chain is not kept
        (or too big), or a commit is stored in more than one repo: :meth:`answer` merges."""
        cursor = conn.connection.cursor()
        try:
            labels = self.labels
            text = None if labels is None else self.batch_at(shas, read_stamp(cursor))
            if text is not None:
                return text
            wires = self._wires(_labels(cursor, param_mark(conn), list(set(shas))))
        finally:
            cursor.close()
        return _batch_bytes(shas, wires)

    def batch_at(self, shas: Sequence[str], stamp: tuple[Any, ...]) -> bytes | None:
        """:meth:`batch_json` from :attr:`labels` alone, given a stamp read after the batch
        arrived (no statement here: for the event loop); None: no map, or ``stamp`` is not its
        own (the map is dropped). :class:`NotKept` as :meth:`batch_json`."""
        labels = self._labels_at(stamp)
        return None if labels is None else self._map_batch(shas, labels)

    def answer_at(self, shas: Iterable[str], stamp: tuple[Any, ...], *, brief: bool) -> dict[str, Sequence[str]] | None:
        """:meth:`answer` (``kept_only``) from :attr:`labels` and the kept chains and records
        alone, given a stamp read after the query arrived (no statement here: for the event
        loop); None: no map, or ``stamp`` is not its own (the map is dropped). :class:`NotKept`
        where more would have to be read, or a commit is stored in two repos (merged by :meth:`answer`)."""
        labels = self._labels_at(stamp)
        if labels is None:
            return None
        wanted = list({s.lower() for s in shas})
        out: dict[str, Sequence[str]] = dict.fromkeys(wanted, ())
        full: dict[str, list[tuple[str, str, int]]] = {}  # sha -> (id, repo, version), by id
        get, keys, versions = self.chains.get, labels.keys, labels.versions
        for sha, label in zip(wanted, labels.find_all(wanted), strict=True):
            if label is None:
                continue  # not stored: answered ()
            k, pos = label
            if k == IN_TWO:
                raise NotKept(sha)
            c = get(keys[k], versions[k])
            if not isinstance(c, ChainAnswers):
                raise NotKept(keys[k])
            segment = c.at(pos)
            if brief:
                out[sha] = segment
            elif segment:  # a segment's briefs are sorted by id, one per advisory
                full[sha] = [(c.ids[b], keys[k][0], versions[k]) for b in segment]
        if full:
            out.update(self._records(None, "", full, kept_only=True))
        return out

    def _labels_at(self, stamp: tuple[Any, ...]) -> LabelMap | None:
        """:attr:`labels` if read at ``stamp``; else None, and a map read at another is dropped."""
        labels = self.labels
        if labels is None:
            return None
        if stamp != labels.stamp:
            if self.labels is labels:
                self.labels, self.labels_dropped = None, True
            return None
        return labels

    def _wires(self, rows: Iterable[tuple[str, str, int, int, int | None]]) -> dict[str, tuple[bytes, ...] | None]:
        """Each labelled commit's wire pieces (None: it holds nothing), from the label rows."""
        get = self.chains.get
        chains: dict[tuple[str, int], ChainAnswers] = {}
        wires: dict[str, tuple[bytes, ...] | None] = {}
        for sha, repo, chain, pos, version in rows:
            key = (repo, chain)
            c = chains.get(key)
            if c is None:
                hit = get(key, version or 0)
                if not isinstance(hit, ChainAnswers):
                    raise NotKept(key)
                c = chains[key] = hit
            if sha in wires:
                raise NotKept(sha)
            index = c.index
            i = index[pos] if 0 <= pos < len(index) else bisect_right(c.starts, pos) - 1  # c.segment_of, inline
            wires[sha] = c.wire[i] if i >= 0 else None
        return wires

    def _map_batch(self, shas: Sequence[str], labels: LabelMap) -> bytes:
        """:func:`_batch_bytes` of the wire pieces found by ``labels``, in one pass: each
        commit's pieces in query order (no map of commits to pieces between)."""
        get = self.chains.get
        keys, versions = labels.keys, labels.versions
        chains: dict[int, ChainAnswers] = {}
        found: list[tuple[bytes, ...] | None] = []
        append = found.append
        for sha, label in zip(shas, labels.find_all(shas), strict=True):
            if label is None:  # not stored
                append(None)
                continue
            k, pos = label
            c = chains.get(k)
            if c is None:
                if k == IN_TWO:
                    raise NotKept(sha)
                hit = get(keys[k], versions[k])
                if not isinstance(hit, ChainAnswers):
                    raise NotKept(keys[k])
                c = chains[k] = hit
            index = c.index
            i = index[pos] if 0 <= pos < len(index) else bisect_right(c.starts, pos) - 1  # c.segment_of, inline
            append(c.wire[i] if i >= 0 else None)
        return _joined(found)

    def refresh_labels(self, conn: Any, breathe: Callable[[], None] | None = None) -> bool:
        """Read :attr:`labels` (every commit's label) anew; False: too big, or a write came
        between (none kept; then :attr:`labels_dropped` asks for another read)."""
        self.labels_dropped = False
        cursor = conn.connection.cursor()
        try:
            self.labels = read_label_map(cursor, param_mark(conn), self.label_bytes, breathe)
        except LabelsMoved:
            self.labels, self.labels_dropped = None, True
        finally:
            cursor.close()
        return self.labels is not None

    def _chain(self, cursor: Any, mark: str, repo: str, chain: int, version: int,
               kept_only: bool = False) -> ChainAnswers | None:
        key = (repo, chain)
        hit = self.chains.get(key, version)
        if isinstance(hit, ChainAnswers):
            return hit
        if kept_only:  # to build, or answered by the SQL path
            raise NotKept(key)
        if hit == _TOO_BIG:
            return None
        return self._build_once(cursor, mark, key, version, evict=True)

    def _build_once(self, cursor: Any, mark: str, key: tuple[str, int], version: int, *,
                    evict: bool, breathe: Callable[[], None] | None = None) -> ChainAnswers | None:
        """:meth:`_build_chain`, or, while another thread reads the same chain, what it kept
        (waited for at most ``_BUILD_WAIT`` s; kept at another version: read here too)."""
        with self._building_lock:
            other = self._building.get(key)
            if other is None:
                mine = self._building[key] = threading.Event()
        if other is not None:
            other.wait(_BUILD_WAIT)
            hit = self.chains.get(key, version)
            if isinstance(hit, ChainAnswers):
                return hit
            if hit == _TOO_BIG:
                return None
            return self._build_chain(cursor, mark, key, version, evict=evict, breathe=breathe)
        try:
            return self._build_chain(cursor, mark, key, version, evict=evict, breathe=breathe)
        finally:
            with self._building_lock:
                del self._building[key]
            mine.set()

    def _build_chain(self, cursor: Any, mark: str, key: tuple[str, int], version: int, *,
                     evict: bool, breathe: Callable[[], None] | None = None) -> ChainAnswers | None:
        """Read and keep one chain (``evict=False``: only if it fits the room left)."""
        cursor.execute(
            f"SELECT advisory_id, start_pos, end_pos, brief FROM advisory_spans WHERE repo_id = {mark}"
            f" AND chain = {mark}", key
        )
        built = build_chain(cursor.fetchall(), self.max_chain_bytes, breathe)
        keep = self.chains.put if evict else self.chains.add
        if built is None:
            keep(key, version, _TOO_BIG, 100)
        else:
            keep(key, version, built, built.size)
        return built

    def _records(self, cursor: Any, mark: str, held: dict[str, list[tuple[str, str, int]]],
                 kept_only: bool = False) -> dict[str, Sequence[str]]:
        """Each held advisory's stored record text (kept by id and repo at the repo's version); one
        withdrawn since its spans were read is left out."""
        found: dict[tuple[str, str, int], str | None] = {}
        missing: list[tuple[str, str, int]] = []
        wanted = list({key for keys in held.values() for key in keys})
        for key, hit in zip(wanted, self.records.get_many([((k[0], k[1]), k[2]) for k in wanted]), strict=True):
            if hit is None:
                missing.append(key)
            else:
                found[key] = hit[0]
        if missing and kept_only:
            raise NotKept(missing[0])
        text = "record" if mark == "?" else "record::text"
        for i in range(0, len(missing), _CHUNK):
            chunk = missing[i : i + _CHUNK]
            ids = sorted({k[0] for k in chunk})
            cursor.execute(
                f"SELECT id, {text}, withdrawn IS NOT NULL FROM advisories WHERE id {_in(mark, len(ids))}",
                _args(mark, ids),
            )
            rows = {adv_id: (None if gone else record) for adv_id, record, gone in cursor.fetchall()}
            for key in chunk:
                record = rows.get(key[0])
                found[key] = record
                self.records.put((key[0], key[1]), key[2], (record,), 100 + (len(record) if record else 0))
        return {sha: [r for key in keys if (r := found[key]) is not None] for sha, keys in held.items()}


    def warm(self, conn: Any, *, seconds: float = WARM_SECONDS, pause: float = WARM_PAUSE,
             stop: threading.Event | None = None) -> tuple[int, int]:
        """Read and keep every indexed chain, then the records their spans name, at each
        repo's index version read first (what is read after it is as new or newer: a later
        query reads the version again), while they fit the room left (nothing evicted, so
        what requests keep stays); ``pause`` seconds between statements give the GIL back to
        requests. Stops after ``seconds`` or once ``stop`` is set. Returns (chains, records) kept."""
        deadline = time.monotonic() + seconds
        mark = param_mark(conn)
        text = "record" if mark == "?" else "record::text"
        cursor = conn.connection.cursor()
        kept_chains = kept_records = 0

        def breathe() -> None:
            time.sleep(pause)

        def go_on() -> bool:
            breathe()
            return time.monotonic() < deadline and not (stop is not None and stop.is_set())

        try:
            cursor.execute("SELECT repo_id, version FROM commit_index_versions")
            versions: dict[str, int] = dict(cursor.fetchall())
            cursor.execute(  # every chain has a point where it starts; spans, in case
                "SELECT repo_id, chain FROM chain_points UNION SELECT repo_id, chain FROM advisory_spans"
                " WHERE chain >= 0"
            )
            keys = sorted(cursor.fetchall())
            for repo, chain in keys:
                if not go_on() or self.chains.size + 100 > self.chains.max_bytes:
                    return kept_chains, kept_records
                version = versions.get(repo, 0)
                if self.chains.get((repo, chain), version) is None:
                    self._build_once(cursor, mark, (repo, chain), version, evict=False, breathe=breathe)
                    kept_chains += 1
            for repo in sorted({repo for repo, _ in keys}):
                if not go_on() or self.records.size + 100 > self.records.max_bytes:
                    break
                version = versions.get(repo, 0)
                cursor.execute(
                    f"SELECT id, {text}, withdrawn IS NOT NULL FROM advisories WHERE id IN"
                    f" (SELECT advisory_id FROM advisory_spans WHERE repo_id = {mark} AND chain >= 0)", (repo,)
                )
                for n, (adv_id, record, gone) in enumerate(cursor.fetchall()):
                    if n % _BREATHE_EVERY == _BREATHE_EVERY - 1:
                        breathe()
                    record = None if gone else record
                    if self.records.add((adv_id, repo), version, (record,), 100 + (len(record) if record else 0)):
                        kept_records += 1
        finally:
            cursor.close()
        if go_on():
            self.refresh_labels(conn, breathe)
        return kept_chains, kept_records


def _batch_bytes(shas: Sequence[str], wires: dict[str, tuple[bytes, ...] | None]) -> bytes:
    """``{"results":[...]}`` of ``shas`` (in order) from each one's wire pieces (none: ``{}``)."""
    return _joined(list(map(wires.get, shas)))


def _joined(found: Sequence[tuple[bytes, ...] | None]) -> bytes:
    """``{"results":[...]}`` of each query's wire pieces, in order (None or none: ``{}``)."""
    pieces = [b'{"results":[']
    append, extend = pieces.append, pieces.extend
    for w in found:
        if w:
            append(b'{"vulns":[')
            extend(w)
        else:
            append(b"{},")
    if found:
        pieces[-1] = pieces[-1][:-1]
    append(b"]}")
    return b"".join(pieces)


def _in(mark: str, n: int) -> str:
    """``IN (?, ...)`` on SQLite; ``= ANY(%s)``, one array parameter, on PostgreSQL (psycopg
    would parse a thousand placeholders per statement)."""
    return f"IN ({', '.join([mark] * n)})" if mark == "?" else "= ANY(%s)"


def _args(mark: str, values: Sequence[str]) -> tuple[Any, ...]:
    return tuple(values) if mark == "?" else (list(values),)


def _labels(cursor: Any, mark: str, shas: Sequence[str]) -> list[tuple[str, str, int, int, int | None]]:
    """``(sha, repo, chain, pos, version)``: each commit's label in every repo that stored it,
    and the repo's index version, read in one statement (so the version is the labels' own)."""
    out: list[tuple[str, str, int, int, int | None]] = []
    for i in range(0, len(shas), _CHUNK):
        chunk = shas[i : i + _CHUNK]
        cursor.execute(
            "SELECT r.sha, r.repo_id, r.chain, r.chain_pos, v.version FROM revisions r"
            " LEFT JOIN commit_index_versions v ON v.repo_id = r.repo_id"
            f" WHERE r.sha {_in(mark, len(chunk))} AND r.chain IS NOT NULL",
            _args(mark, chunk),
        )
        out += cursor.fetchall()
    return out


class KeptQueries:
    """The kept answers of a store, asked directly by the OSV routes (``store`` has ``engine``
    and ``commit_answers``): :meth:`kept` and :meth:`batch_json` answer from what is kept, on
    a few DBAPI connections of its own (detached from the engine's pool: no pre-ping round
    trip, no reset per query; autocommit), and :meth:`warm_soon` starts the warm-up once, in
    a daemon thread (:meth:`warm_state` says how it stands). ``inline``: fast enough for
    the event loop (SQLite; on PostgreSQL the label statement is a round trip the loop must
    not wait on). :meth:`kept_soon` and :meth:`batch_soon` are awaited on the loop: on
    PostgreSQL they answer from the label map after one stamp read that started after the
    call, shared by every query in flight (:meth:`fresh_stamp`: a thread reads it while
    the loop goes on), with no worker-thread hop; a miss goes to :meth:`kept` in a thread."""

    CONNECTIONS = 8  # at most, made on demand and kept; all busy past WAIT_SECONDS: the reader answers
    WAIT_SECONDS = 0.05
    LABEL_REFRESH_SECONDS = 5.0

    def __init__(self, store: Any) -> None:
        self.store = store
        self.inline = store.engine.dialect.name == "sqlite"
        self._warming: threading.Thread | None = None
        self._warm_state: dict[str, Any] = {"state": "cold"}
        self._lock = threading.Lock()
        self._returned = threading.Condition(self._lock)  # a connection came back (or one may be made)
        self._idle: list[_Raw] = []
        self._made = 0  # connections open, idle or in use
        self._refreshing = False  # the label map is being read again
        self._refreshed_at = -math.inf
        # the shared stamp read (not inline): the one running, and the one to start after it
        self._stamp_running: Future[tuple[Any, ...] | None] | None = None
        self._stamp_next: Future[tuple[Any, ...] | None] | None = None

    def kept(self, shas: Sequence[str], *, brief: bool) -> dict[str, Sequence[str]] | None:
        """The answer from what is kept (one label statement); None: ask the reader."""
        return self._use(lambda c: self.store.commit_answers.answer(c, shas, brief=brief, kept_only=True))  # type: ignore[no-any-return]

    def batch_json(self, shas: Sequence[str]) -> bytes | None:
        """:meth:`CommitAnswers.batch_json` (on the event loop only where :attr:`inline`);
        None: not kept. A label map dropped at a write is read again soon, in the background."""
        text = self._use(lambda c: self.store.commit_answers.batch_json(c, shas))
        if self.store.commit_answers.labels_dropped:
            self._refresh_labels_soon()
        return text  # type: ignore[no-any-return]

    async def kept_soon(self, shas: Sequence[str], *, brief: bool) -> dict[str, Sequence[str]] | None:
        """:meth:`kept`, awaited on the event loop: inline, or (PostgreSQL) from the label map
        at a stamp read after this call (:meth:`fresh_stamp`, shared), else in a worker thread."""
        if self.inline:
            return self.kept(shas, brief=brief)
        held = await self._from_map(lambda answers, stamp: answers.answer_at(shas, stamp, brief=brief))
        return held if held is not None else await anyio.to_thread.run_sync(lambda: self.kept(shas, brief=brief))

    async def batch_soon(self, shas: Sequence[str]) -> bytes | None:
        """:meth:`batch_json`, awaited on the event loop, as :meth:`kept_soon` answers."""
        if self.inline:
            return self.batch_json(shas)
        text = await self._from_map(lambda answers, stamp: answers.batch_at(shas, stamp))
        return text if text is not None else await anyio.to_thread.run_sync(self.batch_json, shas)

    async def _from_map(self, work: Callable[[CommitAnswers, tuple[Any, ...]], Any]) -> Any:
        """``work(answers, stamp)`` at a fresh stamp, on the loop; None: no stamp, or not kept."""
        stamp = await self.fresh_stamp()
        if stamp is None:
            return None
        answers = self.store.commit_answers
        try:
            return work(answers, stamp)
        except NotKept:
            return None
        finally:
            if answers.labels_dropped:  # read again soon, in the background
                self._refresh_labels_soon()

    async def fresh_stamp(self) -> tuple[Any, ...] | None:
        """The label stamp (:data:`storage.commit_labels.STAMP`) from a read that started
        after this call, so that a write committed before it is seen; concurrent callers
        share reads: one running, and one next that starts when it ends (all who came
        meanwhile await that one). None: no connection, or the read failed."""
        return await asyncio.wrap_future(self._stamp_after_now())

    def _stamp_after_now(self) -> Future[tuple[Any, ...] | None]:
        with self._lock:
            if self._stamp_running is None:
                fut = self._stamp_running = Future()
                start = True
            else:  # running since before this call: not that one, the next
                if self._stamp_next is None:
                    self._stamp_next = Future()
                fut, start = self._stamp_next, False
        if start:
            threading.Thread(target=self._read_stamps, args=(fut,), name="hubwatch-commit-stamp", daemon=True).start()
        return fut

    def _read_stamps(self, fut: Future[tuple[Any, ...] | None] | None) -> None:
        """Read the stamp for ``fut``, then for each next one asked for meanwhile, in turn."""
        while fut is not None:
            try:
                fut.set_result(self._use(_read_stamp_on))
            except BaseException as exc:  # never leave a waiter hanging
                fut.set_exception(exc)
            with self._lock:
                fut, self._stamp_next = self._stamp_next, None
                self._stamp_running = fut

    def _refresh_labels_soon(self) -> None:
        """Read the label map again in a daemon thread: one at a time, at most one start per
        ``LABEL_REFRESH_SECONDS`` (writes keep coming: each read is ~0.1 s per 100,000 commits)."""
        with self._lock:
            now = time.monotonic()
            if self._refreshing or now < self._refreshed_at + self.LABEL_REFRESH_SECONDS:
                return
            self._refreshing, self._refreshed_at = True, now
        threading.Thread(target=self._refresh_labels, name="hubwatch-commit-labels", daemon=True).start()

    def _refresh_labels(self) -> None:
        try:
            with self.store.engine.connect() as conn:
                if conn.dialect.name == "postgresql":
                    conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                self.store.commit_answers.refresh_labels(conn, lambda: time.sleep(WARM_PAUSE))
        except Exception as exc:  # the store closed under it: batches read labels by SQL
            log.info("commit labels not read again: %s: %s", type(exc).__name__, exc)
        finally:
            with self._lock:
                self._refreshing = False

    def _use(self, work: Any) -> Any:
        with self._returned:
            # all in use (PostgreSQL: 16 queries in worker threads, 8 connections): wait for
            # one briefly (a label probe is a fraction of a millisecond) rather than send the
            # query to the reader's path (a pooled connection, its pre-ping round trip, the
            # answer built again); never on the event loop (``inline``)
            if not self._idle and self._made >= self.CONNECTIONS and not self.inline:
                self._returned.wait_for(lambda: bool(self._idle) or self._made < self.CONNECTIONS, self.WAIT_SECONDS)
            if self._idle:
                conn = self._idle.pop()
            elif self._made < self.CONNECTIONS:
                conn, self._made = None, self._made + 1
            else:
                return None
        try:
            if conn is None:
                conn = _Raw(self.store.engine)
            result = work(conn)
        except NotKept:
            result = None
        except Exception as exc:  # a connection gone bad (a restarted server): the reader answers
            log.info("kept commit answers: %s: %s", type(exc).__name__, exc)
            with self._returned:
                self._made -= 1
                self._returned.notify()  # a waiter may make one anew
            if conn is not None:
                conn.close()
            return None
        with self._returned:
            self._idle.append(conn)
            self._returned.notify()
        return result

    def warm_soon(self, then: Callable[[], None] | None = None) -> None:
        """Start the warm-up in a daemon thread of this process, once (later calls: nothing);
        ``then`` runs in it once the warm-up ended well, before :meth:`warm_state` says so."""
        if self._warming is not None:
            return
        with self._lock:
            if self._warming is None:
                self._warm_state["state"] = "warming"
                self._warming = threading.Thread(target=self._warm, args=(then,), name="hubwatch-commit-warm",
                                                 daemon=True)
                self._warming.start()

    def warm_state(self) -> dict[str, Any]:
        """This process's warm-up: ``state`` (``cold``: not started; ``warming``; ``warm``:
        done, or stopped at the caches' room or its time limit; ``failed``), what it kept
        and how long it took, and the process (``serve --workers`` warms each worker)."""
        return {**self._warm_state, "process": os.getpid()}

    def _warm(self, then: Callable[[], None] | None) -> None:
        started = time.monotonic()
        try:
            with self.store.engine.connect() as conn:
                if conn.dialect.name == "postgresql":  # no transaction held open for its length
                    conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                chains, records = self.store.commit_answers.warm(conn)
        except Exception as exc:  # the store closed under it, or a transient error: requests read on
            self._warm_state.update(state="failed", error=type(exc).__name__)
            log.warning("commit answers' warm-up stopped: %s: %s", type(exc).__name__, exc)
            return
        if then is not None:
            then()
        seconds = time.monotonic() - started
        self._warm_state.update(state="warm", chains=chains, records=records, seconds=round(seconds, 3))
        log.info("commit answers warmed: %d chains, %d records in %.1f s", chains, records, seconds)


def _read_stamp_on(conn: Any) -> tuple[Any, ...]:
    cursor = conn.connection.cursor()
    try:
        return read_stamp(cursor)
    finally:
        cursor.close()


class _Raw:
    """A DBAPI connection out of the engine's pool, in autocommit, with what
    :meth:`CommitAnswers.answer` asks of a connection (``dialect``, ``connection``)."""

    def __init__(self, engine: Any) -> None:
        self.dialect = engine.dialect
        fairy = engine.raw_connection()  # made by the pool: its connect hooks ran
        fairy.detach()
        self.connection = fairy.dbapi_connection
        if self.dialect.name == "postgresql":
            self.connection.autocommit = True
        else:  # asked on the event loop: a WAL reader rarely waits, but never 30 s there
            self.connection.execute(f"PRAGMA busy_timeout={_BUSY_MS}")  # (busy: the reader answers)

    def close(self) -> None:
        try:
            self.connection.close()
        except Exception as exc:  # already gone
            log.debug("closing a kept connection: %s", exc)
