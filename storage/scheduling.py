"""Layer 2: the scheduler's bulk queries on the repos table, beside ``Store``'s per-repo ones.

``Store`` claims, renews and releases one repo at a time; the daemon also needs a few set
operations: release everything one daemon holds (shutdown), count the daemons that hold
leases (to share the Hub's request budget), count the backlog (``/metrics``), and, in
firehose mode, confirm many unchanged repos in one statement. No new table: all of it
lives on ``repos``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, or_, update
from sqlmodel import col, select

from storage.store import Store
from storage.tables import RepoRow


@dataclass(frozen=True, slots=True)
class FirehoseRepo:
    """What the firehose needs of a tracked Hub repo to tell whether it moved."""

    id: str
    head_sha: str
    last_success_at: datetime | None
    failures: int


def release_all(store: Store, owner: str) -> int:
    """Drop every lease ``owner`` holds (graceful shutdown); returns how many there were."""
    with store.session() as s:
        res = s.execute(
            update(RepoRow).where(col(RepoRow.lease_owner) == owner).values(lease_owner=None, lease_expires_at=None)
        )
        s.commit()
        return int(res.rowcount or 0)  # type: ignore[attr-defined]


def leased_by(store: Store, owner: str) -> list[str]:
    """Repo ids ``owner`` holds a lease on (expired or not)."""
    with store.session() as s:
        return list(s.exec(select(RepoRow.id).where(col(RepoRow.lease_owner) == owner).order_by(col(RepoRow.id))).all())


def lease_holders(store: Store, now: datetime) -> set[str]:
    """Owners with at least one unexpired lease: the daemons busy right now."""
    with store.session() as s:
        rows = s.exec(
            select(RepoRow.lease_owner).where(
                col(RepoRow.lease_owner).is_not(None), col(RepoRow.lease_expires_at) > now
            ).distinct()
        ).all()
        return {r for r in rows if r}


def count_due(store: Store, now: datetime) -> int:
    """Active repos due now and not leased: the queue the daemons have not reached yet."""
    with store.session() as s:
        return int(s.exec(
            select(func.count()).select_from(RepoRow).where(
                col(RepoRow.active), col(RepoRow.next_check_at) <= now,
                or_(col(RepoRow.lease_expires_at).is_(None), col(RepoRow.lease_expires_at) < now),
            )
        ).one())


def count_hub_repos(store: Store) -> int:
    """Active repos read from the Hub (git sources cost no Hub requests)."""
    with store.session() as s:
        return int(s.exec(
            select(func.count()).select_from(RepoRow).where(col(RepoRow.active), RepoRow.source_kind == "hub")
        ).one())


def firehose_repos(store: Store) -> list[FirehoseRepo]:
    """Active Hub repos tracked on ``main`` with a known head: the ones the firehose covers.

    ``list_models`` reports the sha of ``main`` only; other branches, git sources and repos
    never read yet are polled one by one.
    """
    with store.session() as s:
        rows = s.exec(
            select(RepoRow.id, RepoRow.head_sha, RepoRow.last_success_at, RepoRow.failures).where(
                col(RepoRow.active), RepoRow.source_kind == "hub", RepoRow.branch == "main",
                col(RepoRow.head_sha).is_not(None),
            )
        ).all()
        return [FirehoseRepo(i, h or "", last, int(f or 0)) for i, h, last, f in rows]


def confirm_unchanged(store: Store, repo_ids: Iterable[str], *, now: datetime, next_check_at: datetime) -> int:
    """The firehose saw these repos unmoved: count it as a poll and push their next check.

    Leased repos (a daemon is checking them right now) are left alone.
    """
    ids = list(repo_ids)
    n = 0
    with store.session() as s:
        for i in range(0, len(ids), 500):
            res = s.execute(
                update(RepoRow)
                .where(col(RepoRow.id).in_(ids[i : i + 500]), col(RepoRow.active))
                .where(or_(col(RepoRow.lease_expires_at).is_(None), col(RepoRow.lease_expires_at) < now))
                .values(last_poll_at=now, next_check_at=next_check_at)
            )
            n += int(res.rowcount or 0)  # type: ignore[attr-defined]
        s.commit()
    return n


def next_check_at(store: Store, repo_id: str) -> datetime | None:
    """The repo's next check time as stored now (a webhook may have moved it during a check)."""
    with store.session() as s:
        return s.exec(select(RepoRow.next_check_at).where(RepoRow.id == repo_id)).first()
