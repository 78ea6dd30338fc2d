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
"""

from __future__ import annotations

import bisect
import time
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from storage import commit_rows
from storage.engine import param_mark
from storage.versioned_lru import VersionedLru

CACHE_BYTES = 96 * 2**20  # chains' segments, all repos together
RECORD_CACHE_BYTES = 64 * 2**20  # full records' stored JSON text
MAX_CHAIN_BYTES = 16 * 2**20  # one chain larger than this is not kept: the SQL path answers
_CHUNK = 1000  # commits per label statement (a querybatch's whole size)
_SLOW_STEP = 250  # commits per SQL-path step, the deadline checked between them
_SEGMENT_BYTES = 56 + 8 + 32  # a tuple, its slot in the list, its start position
_SLOT_BYTES = 8

Label = tuple[str, int, int, int]  # repo, chain, pos, version


@dataclass(slots=True)
class ChainAnswers:
    """One chain's answers (kept at the index version they were read at): segment ``i``
    holds positions ``[starts[i], starts[i + 1])`` and is answered by ``segments[i]``."""

    starts: list[int]
    segments: list[tuple[str, ...]]  # live briefs, sorted by advisory id
    ids: dict[str, str]  # brief -> advisory id
    size: int  # estimated bytes

    def at(self, pos: int) -> tuple[str, ...]:
        i = bisect.bisect_right(self.starts, pos) - 1
        return self.segments[i] if i >= 0 else ()


_TOO_BIG = "too big"  # a chain answered by SQL at this version


def build_chain(spans: Iterable[tuple[str, int, int, str | None]],
                max_bytes: int = MAX_CHAIN_BYTES) -> ChainAnswers | None:
    """The segments of one chain's spans ``(advisory id, start, end, brief)``; a span
    without a brief (its record withdrawn) holds nothing. None: over ``max_bytes``."""
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
    for pos in sorted(deltas):
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
        size += _SEGMENT_BYTES + _SLOT_BYTES * len(segment)
        if size > max_bytes:
            return None
    return ChainAnswers(starts, segments, ids, size)


class CommitAnswers:
    """The caches of one process (the API's store); :meth:`answer` is ``affecting_json``'s
    contract, answered from them."""

    def __init__(self, cache_bytes: int = CACHE_BYTES, record_bytes: int = RECORD_CACHE_BYTES,
                 max_chain_bytes: int = MAX_CHAIN_BYTES):
        # (repo, chain) -> its answers, or _TOO_BIG; (advisory id, repo) -> (record text or
        # None once withdrawn,); both at the repo's index version
        self.chains: VersionedLru[ChainAnswers | str] = VersionedLru(cache_bytes)
        self.records: VersionedLru[tuple[str | None]] = VersionedLru(record_bytes)
        self.max_chain_bytes = min(max_chain_bytes, cache_bytes)

    def answer(self, conn: Any, shas: Iterable[str], *, brief: bool,
               deadline: float | None = None) -> dict[str, Sequence[str]] | None:
        """``sha -> JSON texts`` of the live records whose GIT ranges hold it, sorted by id:
        each record's brief, or (``brief=False``) its stored text. None once past
        ``deadline`` (``time.monotonic()``; checked between chains read and SQL steps)."""
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
                    c = chains[key] = self._chain(cursor, mark, repo, chain, version or 0)
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
                    i = bisect_right(c.starts, lab[2]) - 1
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
                out.update(self._records(cursor, mark, full))
        finally:
            cursor.close()
        slow_list = sorted(slow)
        for i in range(0, len(slow_list), _SLOW_STEP):
            if deadline is not None and time.monotonic() > deadline:
                return None
            out.update(commit_rows.affecting_json(conn, slow_list[i : i + _SLOW_STEP], brief=brief))
        return out

    def _chain(self, cursor: Any, mark: str, repo: str, chain: int, version: int) -> ChainAnswers | None:
        key = (repo, chain)
        hit = self.chains.get(key, version)
        if isinstance(hit, ChainAnswers):
            return hit
        if hit == _TOO_BIG:
            return None
        cursor.execute(
            f"SELECT advisory_id, start_pos, end_pos, brief FROM advisory_spans WHERE repo_id = {mark}"
            f" AND chain = {mark}", (repo, chain)
        )
        built = build_chain(cursor.fetchall(), self.max_chain_bytes)
        if built is None:
            self.chains.put(key, version, _TOO_BIG, 100)
        else:
            self.chains.put(key, version, built, built.size)
        return built

    def _records(self, cursor: Any, mark: str,
                 held: dict[str, list[tuple[str, str, int]]]) -> dict[str, Sequence[str]]:
        """Each held advisory's stored record text (kept by id and repo at the repo's version); one
        withdrawn since its spans were read is left out."""
        found: dict[tuple[str, str, int], str | None] = {}
        missing: list[tuple[str, str, int]] = []
        for key in {key for keys in held.values() for key in keys}:
            hit = self.records.get((key[0], key[1]), key[2])
            if hit is None:
                missing.append(key)
            else:
                found[key] = hit[0]
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
