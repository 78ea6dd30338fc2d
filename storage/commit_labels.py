"""Every stored commit's label, kept in memory for a querybatch (issue 17).

A batch of 1,000 commits spent 2.3-5 ms (SQLite) on the statement that reads their labels.
The warm-up reads every label once into a :class:`LabelMap`, kept only whole: it is complete
for the *stamp* it was read at, so a commit it lacks is not stored (answered ``{}``), never
"not read". The stamp is ``(sum(repos.history_version), sum(commit_index_versions.version))``:
every write that adds a labelled revision raises its repo's ``history_version`` (renames,
whose new row is one higher, too), and every rewrite of labels (a rebuild, a repair) raises
``commit_index_versions``, each in the write's own transaction; neither counter is ever
lowered. So an equal stamp means the labels, and each repo's index version, are as read; a
batch reads the stamp (one row) and, on any change, drops the map and reads labels by SQL.

Imports: stdlib.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LABEL_BYTES = 64 * 2**20  # about 160 bytes a commit: 400,000 commits; more: no map
STAMP = (
    "SELECT (SELECT coalesce(sum(history_version), 0) FROM repos),"
    " (SELECT coalesce(sum(version), 0) FROM commit_index_versions)"
)
IN_TWO = -1  # a commit stored in more than one repo: its answer is merged (not from the map)
_POS_BITS = 32
_FETCH = 4096  # rows read between two moments given way
_ENTRY_BYTES = 32 + 40  # the packed int, its dict slot (beside the sha's own size)


class LabelsMoved(Exception):
    """A write came between the stamps read before and after the labels: read them again."""


@dataclass(slots=True)
class LabelMap:
    """``sha -> key index << 32 | pos`` (or :data:`IN_TWO`) of every labelled revision,
    ``keys[i]`` its ``(repo, chain)`` and ``versions[i]`` the repo's index version, at ``stamp``."""

    stamp: tuple[Any, ...]
    shas: dict[str, int]
    keys: list[tuple[str, int]]
    versions: list[int]
    size: int

    @staticmethod
    def unpack(value: int) -> tuple[int, int]:
        """``(key index, pos)`` of a value of :attr:`shas` (not :data:`IN_TWO`)."""
        return value >> _POS_BITS, value & ((1 << _POS_BITS) - 1)


def read_stamp(cursor: Any) -> tuple[Any, ...]:
    cursor.execute(STAMP)
    return tuple(cursor.fetchone())


def read_label_map(cursor: Any, max_bytes: int = LABEL_BYTES,
                   breathe: Callable[[], None] | None = None) -> LabelMap | None:
    """Every labelled revision's label; None: over ``max_bytes`` or a position past 32 bits.
    :class:`LabelsMoved`: a write between the stamps read before and after (the labels
    would be of no one moment)."""
    stamp = read_stamp(cursor)
    cursor.execute("SELECT count(*) FROM revisions WHERE chain IS NOT NULL")
    if cursor.fetchone()[0] * (sys.getsizeof("0" * 40) + _ENTRY_BYTES) > max_bytes:
        return None  # not read at all (a driver may hold every row it read at once)
    cursor.execute("SELECT repo_id, version FROM commit_index_versions")
    repo_versions: dict[str, int] = dict(cursor.fetchall())
    cursor.execute("SELECT sha, repo_id, chain, chain_pos FROM revisions WHERE chain IS NOT NULL")
    shas: dict[str, int] = {}
    index: dict[tuple[str, int], int] = {}
    size = sys.getsizeof(shas)
    limit = 1 << _POS_BITS
    while rows := cursor.fetchmany(_FETCH):
        for sha, repo, chain, pos in rows:
            if pos is None or not 0 <= pos < limit:
                return None
            key = (repo, chain)
            i = index.get(key)
            if i is None:
                i = index[key] = len(index)
                size += 120
            if sha in shas:
                shas[sha] = IN_TWO
                continue
            shas[sha] = i << _POS_BITS | pos
            size += sys.getsizeof(sha) + _ENTRY_BYTES
        if size > max_bytes:
            return None
        if breathe is not None:
            breathe()
    if read_stamp(cursor) != stamp:
        raise LabelsMoved(stamp)
    keys = list(index)
    return LabelMap(stamp, shas, keys, [repo_versions.get(repo, 0) for repo, _ in keys], size)
