"""Layer 2: the scheduler's bulk queries on the repos table, beside ``Store``'s per-repo ones.

``Store`` claims, renews and releases one repo at a time; the daemon also needs a few set
operations: release everything one daemon holds (shutdown), count the daemons that hold
leases (to share the Hub's request budget), count the backlog (``/metrics``), and, in
firehose mode, confirm many unchanged repos in one statement. No new table: all of it
lives on ``repos``. And one write the Store has in two halves: a claimed check's outcome
and the release of its lease, together, without undoing a webhook that came meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, case, func, or_, update
from sqlmodel import col, select

from storage.sanitise import clean_text
from storage.store import Store
from storage.tables import RepoRow


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


def next_takeover(store: Store, owner: str, *, now: datetime) -> datetime | None:
    """The soonest moment a lease held by another daemon runs out on a repo due by then: when a
    daemon that died holding it leaves it to be claimed. Live daemons renew theirs a good part of
    a lease ahead, so this is only ever near for a dead one's."""
    with store.session() as s:
        at = s.exec(
            select(func.min(RepoRow.lease_expires_at)).where(
                col(RepoRow.active), col(RepoRow.lease_owner).is_not(None), col(RepoRow.lease_owner) != owner,
                col(RepoRow.lease_expires_at) > now, col(RepoRow.next_check_at) <= col(RepoRow.lease_expires_at),
            )
        ).one()
    if at is None:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


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


def _covered() -> list[Any]:
    """The WHERE clause of the repos the firehose covers: active Hub repos tracked on ``main``
    with a known head. ``list_models`` reports the sha of ``main`` only; other branches, git
    sources and repos never read yet are polled one by one."""
    return [col(RepoRow.active), RepoRow.source_kind == "hub", RepoRow.branch == "main",
            col(RepoRow.head_sha).is_not(None)]


def count_firehose_repos(store: Store) -> int:
    """How many repos the firehose covers, counted in the database."""
    with store.session() as s:
        return int(s.exec(select(func.count()).select_from(RepoRow).where(*_covered())).one())


def firehose_heads(store: Store, repo_ids: Iterable[str]) -> dict[str, str]:
    """{id: head} of the covered repos among ``repo_ids`` (the ones a listing named)."""
    ids = list(dict.fromkeys(repo_ids))
    out: dict[str, str] = {}
    with store.session() as s:
        for i in range(0, len(ids), 500):
            rows = s.exec(select(RepoRow.id, RepoRow.head_sha).where(*_covered(), col(RepoRow.id).in_(ids[i : i + 500])))
            out.update({rid: head or "" for rid, head in rows.all()})
    return out


def firehose_oldest_success(store: Store) -> datetime | None:
    """The oldest last successful check among the covered repos without failures: how far back
    the first read of a chain must reach."""
    with store.session() as s:
        return s.exec(select(func.min(RepoRow.last_success_at)).where(*_covered(), RepoRow.failures == 0)).one()


#: moved repos excluded by ``NOT IN`` in one statement, below every database's bound-parameter limit
_MAX_EXCLUDED = 900


def confirm_covered(store: Store, *, moved: Sequence[str], checked_since: datetime, now: datetime,
                    next_check_at: datetime) -> int:
    """Count a poll for every covered repo the listing vouches for: no failures, checked
    successfully since ``checked_since``, not in ``moved``, not leased. One UPDATE in the
    database: no id travels to Python and back (100,000 repos: one statement, not 200).
    Returns how many rows it confirmed.
    """
    where = [*_covered(), RepoRow.failures == 0, col(RepoRow.last_success_at) >= checked_since,
             or_(col(RepoRow.lease_expires_at).is_(None), col(RepoRow.lease_expires_at) < now), _no_repair_due(now)]
    if len(moved) > _MAX_EXCLUDED:  # a burst: name the confirmed ones instead
        with store.session() as s:
            ids = set(s.exec(select(RepoRow.id).where(*where)).all()) - set(moved)
        return confirm_unchanged(store, sorted(ids), now=now, next_check_at=next_check_at)
    if moved:
        where.append(col(RepoRow.id).not_in(list(moved)))
    with store.session() as s:
        res = s.execute(update(RepoRow).where(*where).values(last_poll_at=now, next_check_at=next_check_at))
        s.commit()
        return int(res.rowcount or 0)  # type: ignore[attr-defined]


def _no_repair_due(now: datetime) -> Any:
    """A repo with a repair due is left to its own check (``tracker.pipeline.repair``): the
    listing vouches for its head, not for the files of a revision recorded unreadable."""
    return or_(col(RepoRow.repair_due_at).is_(None), col(RepoRow.repair_due_at) > now)


def confirm_unchanged(store: Store, repo_ids: Iterable[str], *, now: datetime, next_check_at: datetime) -> int:
    """The firehose saw these repos unmoved: count it as a poll and push their next check.

    Leased repos (a daemon is checking them right now) and repos with a repair due are left alone.
    """
    ids = list(repo_ids)
    n = 0
    with store.session() as s:
        for i in range(0, len(ids), 500):
            res = s.execute(
                update(RepoRow)
                .where(col(RepoRow.id).in_(ids[i : i + 500]), col(RepoRow.active))
                .where(or_(col(RepoRow.lease_expires_at).is_(None), col(RepoRow.lease_expires_at) < now))
                .where(_no_repair_due(now))
                .values(last_poll_at=now, next_check_at=next_check_at)
            )
            n += int(res.rowcount or 0)  # type: ignore[attr-defined]
        s.commit()
    return n


def finish_poll(
    store: Store, repo_id: str, owner: str, *, now: datetime, claimed_next: datetime | None,
    next_check_at: datetime, error: str | None = None, error_kind: str | None = None, changed: bool = False,
) -> None:
    """Record a claimed check's outcome and release its lease, in one statement.

    The next check is ``next_check_at`` unless someone moved it while the repo was being checked
    (a webhook or the firehose marked it due, it was tracked again): then theirs stands.
    Only ``owner``'s lease is dropped.
    """
    stored = col(RepoRow.next_check_at)
    marked = stored.is_not(None) if claimed_next is None else (stored != claimed_next)
    mine = col(RepoRow.lease_owner) == owner
    values: dict[str, Any] = {
        "last_poll_at": now,
        "next_check_at": case((marked, stored), else_=next_check_at),
        "lease_owner": case((mine, None), else_=col(RepoRow.lease_owner)),
        "lease_expires_at": case((mine, None), else_=col(RepoRow.lease_expires_at)),
    }
    if error is None:
        values.update(last_success_at=now, last_error=None, last_error_kind=None, failures=0)
        if changed:
            values["last_change_at"] = now
    else:
        values.update(last_error=clean_text(error, 2000), last_error_kind=error_kind, failures=col(RepoRow.failures) + 1)
    with store.session() as s:
        s.execute(update(RepoRow).where(col(RepoRow.id) == repo_id).values(**values))
        s.commit()


@dataclass(frozen=True, slots=True)
class Unchanged:
    """A claimed repo whose head had not moved: what its row needs (issue 17)."""

    repo_id: str
    claimed_next: datetime
    next_check_at: datetime


def finish_unchanged(store: Store, owner: str, done: Sequence[Unchanged], *, now: datetime) -> None:
    """:func:`finish_poll` for many unchanged repos at once: one transaction, one statement
    executed for each (the database's round trips, not a commit, per repo).

    Each repo's next check is its own, unless someone moved it meanwhile (then theirs
    stands); only ``owner``'s leases are dropped.
    """
    if not done:
        return
    stored, lease = col(RepoRow.next_check_at), col(RepoRow.lease_owner)
    mine = lease == owner
    stmt = (
        update(RepoRow.__table__)  # type: ignore[arg-type]
        .where(col(RepoRow.id) == bindparam("rid"))
        .values(
            last_poll_at=now, last_success_at=now, last_error=None, last_error_kind=None, failures=0,
            next_check_at=case((stored != bindparam("claimed"), stored), else_=bindparam("next")),
            lease_owner=case((mine, None), else_=lease),
            lease_expires_at=case((mine, None), else_=col(RepoRow.lease_expires_at)),
        )
    )
    rows = [{"rid": u.repo_id, "claimed": u.claimed_next, "next": u.next_check_at} for u in done]
    with store.engine.begin() as conn:
        conn.execute(stmt, rows)

