"""Storage: a repo renamed on the Hub moves to its new id with everything it holds, and its
old id stays an alias (issue 10 point 8).

Everything moves in one transaction: the repo row (a new row under the new id, the old one
deleted: primary keys are referenced without ON UPDATE CASCADE), revisions, the commit index,
advisories (each record edited by the caller, who knows OSV), subscriptions naming the repo,
and the rename's own change and advisory on the head revision: that change is appended to
the repo's hash chain as an amendment (:mod:`storage.repairs`), so the head's own hash still
verifies and the rename is covered by the chain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, update
from sqlalchemy import select as core_select
from sqlmodel import col, select

from storage import commit_rows, repairs, restore_rows
from storage.tables import (
    AdvisoryRestoreRow,
    AdvisoryRow,
    AdvisorySpanRow,
    ChainPointRow,
    ChangeRow,
    RepoAliasRow,
    RepoRow,
    RevisionAmendmentRow,
    RevisionRepairRow,
    RevisionRow,
    SubscriptionRow,
)
from tracker.model import Change, Severity, max_severity

if TYPE_CHECKING:
    from storage.records import RepoRecord
    from storage.store import Store

_MOVED = (RevisionRow, ChainPointRow, AdvisorySpanRow, AdvisoryRestoreRow, AdvisoryRow, RevisionRepairRow,
          RevisionAmendmentRow)


class RenameConflict(ValueError):
    """The new id is tracked already (as another repo): nothing is moved."""


@dataclass(frozen=True, slots=True)
class RenameEvent:
    """The rename's change on the head revision and its advisory (None: no record)."""

    sha: str
    change: Change
    record: dict[str, Any] | None


def canonical_id(store: Store, repo_id: str) -> str:
    """The id a repo is tracked under now: ``repo_id`` itself, or where its alias points."""
    with store.session() as s:
        if s.get(RepoRow, repo_id) is not None:
            return repo_id
        alias = s.get(RepoAliasRow, repo_id)
        return alias.repo_id if alias is not None else repo_id


def former_ids(store: Store, repo_id: str) -> list[str]:
    """The ids the repo had before its renames, oldest rename first."""
    a = RepoAliasRow.__table__.c  # type: ignore[attr-defined]
    with store.reads.connect() as db:  # asked at every advisory: Core, not an ORM session
        return list(db.execute(core_select(a.old_id).where(a.repo_id == repo_id).order_by(a.renamed_at)).scalars())


def rename_repo(
    store: Store, old: str, new: str, *, now: datetime,
    edit_record: Callable[[dict[str, Any]], dict[str, Any]], event: RenameEvent | None,
) -> RepoRecord | None:
    """Move ``old`` and all it holds to ``new``; None when ``old`` is not tracked."""
    with store.session() as s:
        row = s.get(RepoRow, old)
        if row is None:
            return None
        if s.get(RepoRow, new) is not None:
            raise RenameConflict(f"{old} was renamed on the Hub to {new}, which is tracked already")
        fields = row.model_dump()
        # a new id's pages, and its former id's if it is renamed back, are never the kept ones
        fields.update(id=new, lease_owner=None, lease_expires_at=None, history_version=row.history_version + 1)
        if row.source_kind == "hub" and row.source == old:
            fields["source"] = new
        s.add(RepoRow(**fields))
        s.flush()
        for table in _MOVED:
            s.execute(update(table).where(col(table.repo_id) == old).values(repo_id=new))
        s.execute(update(RepoAliasRow).where(col(RepoAliasRow.repo_id) == old).values(repo_id=new))
        back = s.get(RepoAliasRow, new)  # renamed back to a name it had: no longer an alias
        if back is not None:
            s.delete(back)
        s.flush()
        s.delete(row)
        s.flush()
        s.add(RepoAliasRow(old_id=old, repo_id=new, renamed_at=now))
        for sub in s.exec(select(SubscriptionRow)).all():
            if sub.repos and old in sub.repos and new not in sub.repos:
                sub.repos = [*sub.repos, new]
                s.add(sub)
        records = {}
        for adv in s.exec(select(AdvisoryRow).where(AdvisoryRow.repo_id == new)).all():
            edited = edit_record(dict(adv.record))
            if edited != adv.record:
                store._edit_advisory(s, edited, f"repo renamed to {new}")
                records[str(edited["id"])] = edited
        if event is not None:
            _add_event(store, s, new, event, now)
        s.flush()
        chains = commit_rows.load_chains(s, new)
        commit_rows.reindex_repo(s, new, chains)
        commit_rows.bump_index_version(s, [old, new])  # the old id's kept answers go too
        for record in records.values():
            restore_rows.index_restore(s, new, record, new=False)
        s.commit()
    return store.get_repo(new)


def _add_event(store: Store, s: Any, repo_id: str, event: RenameEvent, now: datetime) -> None:
    """The rename's change appended to the head revision, and its advisory published."""
    rev = s.exec(select(RevisionRow).where(RevisionRow.repo_id == repo_id, RevisionRow.sha == event.sha)).first()
    if rev is None:
        return
    before = repairs.shown(s, rev)
    last = s.exec(select(func.max(ChangeRow.idx)).where(ChangeRow.revision_id == rev.id)).one()
    ch = event.change
    s.add(ChangeRow(revision_id=rev.id, idx=int(last if last is not None else -1) + 1, kind=ch.kind.value,
                    path=ch.path, summary=ch.summary, severity=ch.severity.value if ch.severity else None,
                    topics=list(ch.topics), detail=dict(ch.detail)))
    worst = max_severity([Severity(rev.severity) if rev.severity else None, ch.severity])
    rev.severity = worst.value if worst else None
    if event.record is not None:
        if s.get(AdvisoryRow, event.record["id"]) is None:
            store._insert_advisory(s, repo_id, event.sha, event.record, now)
        rev.advisory_id = rev.advisory_id or event.record["id"]
    s.add(rev)
    s.flush()
    # appended to the hash chain as an amendment of the head revision, not written into it
    # unhashed (storage.repairs): the revision's own chain_hash still verifies
    repairs.append_amendment(s, repo_id, rev, before, f"repo renamed to {repo_id}", now)
