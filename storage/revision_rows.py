"""The rows of one new revision, written in Core statements inside the caller's transaction.

The ORM's unit of work (objects built, flushed in three rounds, identity-mapped, expired) was
most of the CPU of a revision's write transaction (benchmarks/new_revision.py: ~10 ms of the
daemon's thread for a revision with its advisory, its SQL statements together ~1.5 ms). Here
each row is one INSERT of plain values (the changes of a revision in one executemany), the
advisory's edit and outbox rows likewise; what the transaction writes is unchanged.

``db`` is a Connection or a Session (both execute Core statements): the rename's transaction
(:mod:`storage.renames`) shares the advisory functions.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update

from storage.outbox import enqueue_advisory_event
from storage.tables import AdvisoryEditRow, AdvisoryRow, ChangeRow, PlanRow, RevisionRow
from tracker.model import Change

R = RevisionRow.__table__.c  # type: ignore[attr-defined]
A = AdvisoryRow.__table__.c  # type: ignore[attr-defined]
E = AdvisoryEditRow.__table__.c  # type: ignore[attr-defined]


def insert_revision(db: Any, values: dict[str, Any]) -> int:
    """The revision's row; its id."""
    result = db.execute(insert(RevisionRow.__table__), [values])  # type: ignore[arg-type]
    ids = getattr(result, "inserted_primary_key_rows", None) or [result.inserted_primary_key]
    return int(ids[0][0])


def insert_changes(db: Any, revision_id: int, changes: tuple[Change, ...]) -> None:
    if not changes:
        return
    db.execute(insert(ChangeRow.__table__), [  # type: ignore[arg-type]
        {"revision_id": revision_id, "idx": i, "kind": ch.kind.value, "path": ch.path, "summary": ch.summary,
         "severity": ch.severity.value if ch.severity else None, "topics": list(ch.topics),
         "detail": ch.detail}  # JSON as it is: storage.sanitise made it so
        for i, ch in enumerate(changes)
    ])


def insert_plan(db: Any, revision_id: int, plan: dict[str, Any], delta: dict[str, Any] | None) -> None:
    db.execute(insert(PlanRow.__table__), [{"revision_id": revision_id, "plan": plan, "delta": delta}])  # type: ignore[arg-type]


def insert_advisory(db: Any, repo_id: str, sha: str, record: dict[str, Any], now: datetime) -> None:
    """A new advisory, its first version and its deliveries (none when it is stored already)."""
    modified = ts(record["modified"]) or now
    added = db.execute(_advisory_insert(_dialect(db)), {
        "id": record["id"], "repo_id": repo_id, "sha": sha, "severity": record_severity(record),
        "published": ts(record.get("published")) or now, "modified": modified,
        "withdrawn": ts(record.get("withdrawn")), "record": record,
    })
    if added.first() is None:  # stored already: its edits and deliveries were written with it
        return
    db.execute(insert(AdvisoryEditRow.__table__), [{  # type: ignore[arg-type]
        "advisory_id": record["id"], "version": 1, "modified": modified, "reason": "published", "record": record,
    }])
    enqueue_advisory_event(db, repo_id, record, "advisory.published", now)


@functools.cache
def _advisory_insert(dialect: str) -> Any:
    """INSERT of an advisory that leaves one stored already (same id) as it is, returning the id
    where it inserted: one statement where a SELECT for the id came first (RETURNING, not the
    row count, which SQLAlchemy reports as -1 on psycopg)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert  # type: ignore[assignment]
    return dialect_insert(AdvisoryRow.__table__).on_conflict_do_nothing(index_elements=["id"]).returning(A.id)  # type: ignore[arg-type]


def _dialect(db: Any) -> str:
    """The dialect name of a Connection or a Session."""
    bind = db if hasattr(db, "dialect") else db.get_bind()
    return str(bind.dialect.name)


def edit_advisory(db: Any, record: dict[str, Any], reason: str) -> str | None:
    """Store one edit of an advisory and its next version; its repo (None: no such advisory)."""
    row = db.execute(select(A.repo_id, A.modified).where(A.id == record["id"])).first()
    if row is None:
        return None
    repo_id, modified = row[0], ts(record["modified"]) or row[1]
    db.execute(update(AdvisoryRow.__table__).where(A.id == record["id"]).values(  # type: ignore[arg-type]
        record=record, modified=modified, withdrawn=ts(record.get("withdrawn")), severity=record_severity(record),
    ))
    version = db.execute(select(func.max(E.version)).where(E.advisory_id == record["id"])).scalar() or 0
    db.execute(insert(AdvisoryEditRow.__table__), [{  # type: ignore[arg-type]
        "advisory_id": record["id"], "version": int(version) + 1, "modified": modified, "reason": reason,
        "record": record,
    }])
    enqueue_advisory_event(db, repo_id, record, "advisory.updated", modified)
    return str(repo_id)


def ts(value: Any) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def record_severity(record: dict[str, Any]) -> str:
    return str((record.get("database_specific") or {}).get("severity") or "LOW")
