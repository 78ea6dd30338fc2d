"""A repo's history read with core selects (no ORM objects), and its version.

A history page is read often and never written: loading ORM rows (identity map, change
tracking) cost more than the query itself (issue 17). ``version`` names what a page of
history shows, in one indexed look-up, so readers in any process can keep pages: stored
revisions never change what a page lists (only ``reachable``, which history entries
leave out of their JSON), so the newest revision (its id, arrival order and chain hash,
which covers every revision before it), the repo's ``added_at`` and its newest rename tell
whether a kept page is still the page.

Imports: stdlib, sqlalchemy, storage.tables, tracker.model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select

from storage.records import RevisionRecord
from storage.tables import ChangeRow, RepoAliasRow, RepoRow, RevisionAmendmentRow, RevisionRow
from tracker.model import Change, ChangeKind, Severity

R = RevisionRow.__table__.c  # type: ignore[attr-defined]
C = ChangeRow.__table__.c  # type: ignore[attr-defined]
P = RepoRow.__table__.c  # type: ignore[attr-defined]
AL = RepoAliasRow.__table__.c  # type: ignore[attr-defined]
AM = RevisionAmendmentRow.__table__.c  # type: ignore[attr-defined]

_REVISION_COLUMNS = (R.id, R.repo_id, R.sha, R.seq, R.parent, R.parents, R.committed_at, R.title, R.message,
                     R.authors, R.severity, R.advisory_id, R.reachable, R.error, R.chain_hash, R.recorded_at,
                     R.tree_key)


def history_version(conn: Any, repo_id: str) -> tuple[Any, ...] | None:
    """What a page of ``repo_id``'s history depends on; None when it has no revision.

    A rename (:mod:`storage.renames`) appends its change to the head revision, and a repo
    renamed back gets its old id again: the newest rename to the id is part of the version;
    so is the newest amendment of a stored revision (:mod:`storage.repairs`: a repair).
    """
    renamed = select(func.max(AL.renamed_at)).where(AL.repo_id == repo_id).scalar_subquery()
    amended = select(func.max(AM.id)).where(AM.repo_id == repo_id).scalar_subquery()
    row = conn.execute(
        select(R.id, R.seq, R.chain_hash, P.added_at, renamed, amended)
        .join_from(RevisionRow.__table__, RepoRow.__table__, P.id == R.repo_id)
        .where(R.repo_id == repo_id).order_by(R.seq.desc()).limit(1)
    ).first()
    return None if row is None else tuple(row)


def history(conn: Any, repo_id: str, *, limit: int | None, before_seq: int | None,
            with_changes: bool) -> list[RevisionRecord]:
    """Revisions newest first, ``before_seq`` exclusive, each with its changes."""
    q = select(*_REVISION_COLUMNS).where(R.repo_id == repo_id)
    if before_seq is not None:
        q = q.where(R.seq < before_seq)
    q = q.order_by(R.seq.desc())
    if limit is not None:
        q = q.limit(limit)
    rows = conn.execute(q).all()
    changes = changes_of(conn, [r.id for r in rows]) if with_changes else {}
    return [revision_record(r, changes.get(r.id, ())) for r in rows]


def changes_of(conn: Any, revision_ids: Sequence[int]) -> dict[int, tuple[Change, ...]]:
    if not revision_ids:
        return {}
    out: dict[int, list[Change]] = {}
    rows = conn.execute(
        select(C.revision_id, C.kind, C.path, C.summary, C.topics, C.severity, C.detail)
        .where(C.revision_id.in_(list(revision_ids))).order_by(C.revision_id, C.idx)
    ).all()
    for r in rows:
        out.setdefault(r.revision_id, []).append(Change(
            kind=ChangeKind(r.kind), path=r.path, summary=r.summary, topics=tuple(r.topics or ()),
            severity=Severity(r.severity) if r.severity else None, detail=r.detail or {},
        ))
    return {k: tuple(v) for k, v in out.items()}


def revision_record(row: Any, changes: tuple[Change, ...] = (), *, plan: dict[str, Any] | None = None,
                    delta: dict[str, Any] | None = None) -> RevisionRecord:
    """A stored revision (an ORM row or a core row: the same attribute names)."""
    return RevisionRecord(
        repo_id=row.repo_id, sha=row.sha, seq=row.seq, parent=row.parent, parents=tuple(row.parents or ()),
        committed_at=row.committed_at, title=row.title, message=row.message, authors=tuple(row.authors or ()),
        severity=row.severity, advisory_id=row.advisory_id, reachable=row.reachable, error=row.error,
        chain_hash=row.chain_hash, recorded_at=row.recorded_at, tree_key=row.tree_key, changes=changes,
        plan=plan, plan_delta=delta,
    )
