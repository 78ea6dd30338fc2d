"""Layer 3 (daemon): firehose coverage — which tracked repos one listing read vouches for.

Reads chain: each reaches back to the previous read's watermark (the newest ``lastModified``
it saw), so together they list every push since the chain began. The first read of a chain
reaches back to the oldest last successful check of the covered repos, so a restarted daemon
needs no poll of its own per repo. A covered repo (a Hub repo tracked on ``main`` with a
known head) is confirmed unchanged when it was checked successfully since the chain began
and is not listed with another head; a listed repo with another head is marked due. When a
read cannot reach its watermark (too many pushes for ``max_pages``), the chain breaks and
repos are polled one by one until a read reaches back again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from storage import scheduling
from storage.store import Store
from tracker.hub.firehose import Firehose


@dataclass(frozen=True, slots=True)
class CoverageRead:
    requests: int
    bytes: int
    listed: int
    moved: tuple[str, ...]
    confirmed: int
    complete: bool


class FirehoseCoverage:
    """The chain state of one daemon's firehose reads (kept in memory; see the module doc)."""

    def __init__(self, firehose: Firehose):
        self.firehose = firehose
        self.watermark: datetime | None = None
        self.chain_start: datetime | None = None

    def read(self, store: Store, now: datetime, *, confirm_until: datetime) -> CoverageRead:
        """One read: mark moved repos due, confirm the unmoved ones until ``confirm_until``.

        Raises :class:`~tracker.errors.SourceError` when the listing cannot be read; the chain
        is kept (the next read reaches back to the same watermark). Only the listed repos are
        looked up; the confirmation is one statement: the cost grows with the Hub's pushes,
        not with the tracked set (benchmarks/firehose_cost.py).
        """
        since = self.watermark
        if self.chain_start is None:
            since = scheduling.firehose_oldest_success(store)
        read = self.firehose.read(since)
        heads = scheduling.firehose_heads(store, (i.id for i in read.items))
        moved = sorted({i.id for i in read.items if i.id in heads and i.sha != heads[i.id]})
        for repo_id in moved:
            store.mark_due(repo_id, now)
        confirmed = 0
        if read.complete and since is not None:
            start = self.chain_start = self.chain_start or since
            confirmed = scheduling.confirm_covered(store, moved=moved, checked_since=start, now=now,
                                                   next_check_at=confirm_until)
            self.watermark = read.watermark
        else:
            self.chain_start = self.watermark = None
        return CoverageRead(read.requests, read.bytes, len(read.items), tuple(moved), confirmed,
                            read.complete and since is not None)


def covered_count(store: Store) -> int:
    """Repos a complete firehose read can vouch for (the rest are polled)."""
    return scheduling.count_firehose_repos(store)
