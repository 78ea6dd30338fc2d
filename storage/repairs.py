"""Storage: revisions recorded with files unreadable for now, their repairs, and amendments
appended to the repo's hash chain (issue 10: a transient failure never leaves a revision
permanently incomplete).

A revision whose files kept failing transiently over several polls is recorded with them
marked unreadable (so the repo does not stall) and a *pending repair*. Later polls read
those files again; once they read, the revision's changes are amended in place, and the
amendment is appended to the chain: its hash covers the tip before it (the newest revision,
or the newest amendment after it) and the new changes, and ``before`` keeps what the revision
showed until then, so the revision's own ``chain_hash`` still verifies against what it was
recorded with (:func:`verify_chain`). Revisions recorded later chain after the amendment.

``repos.repair_due_at`` is the soonest pending attempt of the repo (NULL when none): the
scheduler's claim returns it, so an unchanged repo with nothing pending costs no query.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, insert, update
from sqlmodel import Session, col, delete, select

from storage import commit_rows, history_entries, restore_rows
from storage.records import Amendment, NewRevision, PendingRepair
from storage.sanitise import clean_text, storable_amendment
from storage.tables import (
    ChangeRow,
    PlanRow,
    RepoRow,
    RevisionAmendmentRow,
    RevisionRepairRow,
    RevisionRow,
)

if TYPE_CHECKING:
    from storage.store import Store

PENDING, REPAIRED, GIVEN_UP = "pending", "repaired", "given_up"


# ---------------------------------------------------------------- the chain
def amendment_hash(prev: str, sha: str, severity: str | None, changes: Iterable[Sequence[str]], reason: str) -> str:
    """An amendment's link: the tip before it, the revision, its new severity and changes."""
    body = json.dumps([prev, "amendment", sha, severity, [list(c) for c in changes], reason], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def chain_tip(s: Any, repo_id: str, last_seq: int, last_hash: str) -> str:
    """The repo's chain tip: the newest amendment appended after revision ``last_seq``, else that
    revision's own hash."""
    found = s.execute(  # a Session or a Connection (record_revision's Core transaction)
        select(RevisionAmendmentRow.chain_hash)
        .where(RevisionAmendmentRow.repo_id == repo_id, RevisionAmendmentRow.after_seq >= last_seq)
        .order_by(col(RevisionAmendmentRow.id).desc()).limit(1)
    ).scalar()
    return found or last_hash


def _triples(changes: Iterable[Any]) -> list[list[str]]:
    return [[c.kind, c.path, c.summary] for c in changes]


def verify_chain(store: Store, repo_id: str) -> list[str]:
    """Recompute the repo's chain, amendments included; the problems found (none: intact).

    Each revision's hash is checked against what it was recorded with (the ``before`` of its
    first amendment, else its changes as stored), each amendment against the state it left."""
    from storage.store import chain_hash

    problems: list[str] = []
    with store.session() as s:
        revs = s.exec(select(RevisionRow).where(RevisionRow.repo_id == repo_id).order_by(col(RevisionRow.seq))).all()
        amends = s.exec(select(RevisionAmendmentRow).where(RevisionAmendmentRow.repo_id == repo_id)
                        .order_by(col(RevisionAmendmentRow.id))).all()
        ids = [r.id for r in revs if r.id is not None]
        stored: dict[int, list[ChangeRow]] = {}
        for ch in s.exec(select(ChangeRow).where(col(ChangeRow.revision_id).in_(ids)).order_by(
                col(ChangeRow.revision_id), col(ChangeRow.idx))).all():
            stored.setdefault(ch.revision_id, []).append(ch)
    by_rev: dict[int, list[RevisionAmendmentRow]] = {}
    for a in amends:
        by_rev.setdefault(a.revision_id, []).append(a)
    after: dict[int, list[RevisionAmendmentRow]] = {}
    for a in amends:
        after.setdefault(a.after_seq, []).append(a)
    sha_of = {r.id: r.sha for r in revs}
    tip = ""
    for r in revs:
        assert r.id is not None
        first = by_rev.get(r.id, [None])[0]
        if first is not None:
            severity, changes = first.before.get("severity"), first.before.get("changes", [])
        else:
            severity, changes = r.severity, _triples(stored.get(r.id, []))
        probe = _Probe(r.sha, r.parent, severity, changes)
        if chain_hash(tip, probe) != r.chain_hash:  # type: ignore[arg-type]
            problems.append(f"revision {r.sha[:12]} (seq {r.seq}): chain hash does not match")
        tip = r.chain_hash
        for a in after.get(r.seq, []):
            later = by_rev[a.revision_id]
            nxt = later[later.index(a) + 1] if later.index(a) + 1 < len(later) else None
            if nxt is not None:
                state = (nxt.before.get("severity"), nxt.before.get("changes", []))
            else:
                state = (next(x.severity for x in revs if x.id == a.revision_id),
                         _triples(stored.get(a.revision_id, [])))
            if amendment_hash(tip, sha_of.get(a.revision_id, ""), state[0], state[1], a.reason) != a.chain_hash:
                problems.append(f"amendment {a.id} of {sha_of.get(a.revision_id, '?')[:12]}: chain hash does not match")
            tip = a.chain_hash
    return problems


class _Probe:
    """The fields ``chain_hash`` reads, from stored values."""

    def __init__(self, sha: str, parent: str | None, severity: str | None, changes: list[list[str]]):
        from tracker.model import Change, ChangeKind

        self.sha, self.parent, self.severity = sha, parent, severity
        self.changes = [Change(kind=ChangeKind(k), path=p, summary=t) for k, p, t in changes]


# ---------------------------------------------------------------- pending repairs
def add_pending(s: Any, revision_id: int, rev: NewRevision, now: datetime) -> None:
    """Inside ``record_revision``'s transaction: the revision's repair, due at the repo's next check."""
    s.execute(insert(RevisionRepairRow.__table__), [{  # type: ignore[arg-type]  # a Session or a Connection
        "revision_id": revision_id, "repo_id": rev.repo_id, "base_sha": rev.base_sha, "paths": sorted(rev.unreadable),
        "status": PENDING, "attempts": 0, "recorded_at": now, "next_attempt_at": now}])
    _refresh_due(s, rev.repo_id)


def _refresh_due(s: Any, repo_id: str) -> None:
    soonest = select(func.min(RevisionRepairRow.next_attempt_at)).where(
        RevisionRepairRow.repo_id == repo_id, RevisionRepairRow.status == PENDING).scalar_subquery()
    s.execute(update(RepoRow).where(col(RepoRow.id) == repo_id).values(repair_due_at=soonest))


def due(store: Store, repo_id: str, *, now: datetime, limit: int) -> list[PendingRepair]:
    """The repo's pending repairs whose next attempt is due, oldest revision first."""
    with store.session() as s:
        rows = s.exec(
            select(RevisionRepairRow, RevisionRow.sha, RevisionRow.seq)
            .join(RevisionRow, col(RevisionRow.id) == col(RevisionRepairRow.revision_id))
            .where(RevisionRepairRow.repo_id == repo_id, RevisionRepairRow.status == PENDING,
                   col(RevisionRepairRow.next_attempt_at) <= now)
            .order_by(col(RevisionRow.seq)).limit(limit)
        ).all()
        return [PendingRepair(r.revision_id, r.repo_id, sha, seq, r.base_sha, tuple(r.paths), r.attempts,
                              _aware(r.recorded_at)) for r, sha, seq in rows]


def pending_shas(store: Store, repo_id: str) -> set[str]:
    """Revisions of the repo still waiting for a repair."""
    with store.session() as s:
        return set(s.exec(
            select(RevisionRow.sha).join(RevisionRepairRow, col(RevisionRow.id) == col(RevisionRepairRow.revision_id))
            .where(RevisionRepairRow.repo_id == repo_id, RevisionRepairRow.status == PENDING)
        ).all())


def count_by_status(store: Store) -> dict[str, int]:
    """How many repairs there are of each status (``/metrics``)."""
    with store.session() as s:
        rows = s.exec(select(RevisionRepairRow.status, func.count()).group_by(col(RevisionRepairRow.status))).all()
        return {status: int(n) for status, n in rows}


def state(store: Store, repo_id: str, sha: str) -> dict[str, Any] | None:
    """A revision's repair, as ``show`` and the API tell it (None: it never needed one)."""
    with store.session() as s:
        row = s.exec(
            select(RevisionRepairRow).join(RevisionRow, col(RevisionRow.id) == col(RevisionRepairRow.revision_id))
            .where(RevisionRow.repo_id == repo_id, RevisionRow.sha == sha)
        ).first()
        if row is None:
            return None
        return {"status": row.status, "paths": list(row.paths), "attempts": row.attempts,
                "recorded_at": _aware(row.recorded_at), "next_attempt_at": _aware(row.next_attempt_at),
                "done_at": _aware(row.done_at) if row.done_at else None, "last_error": row.last_error}


def attempt_failed(store: Store, repair: PendingRepair, *, now: datetime, error: str,
                   next_attempt_at: datetime | None) -> None:
    """A repair attempt that could not read the files: try again at ``next_attempt_at``, or,
    None, give up (the revision stays as recorded, the repair marked ``given_up``)."""
    with store.session() as s:
        row = s.get(RevisionRepairRow, repair.revision_id)
        if row is None or row.status != PENDING:
            return
        row.attempts += 1
        row.last_error = clean_text(error, 2000)
        if next_attempt_at is None:
            row.status, row.done_at = GIVEN_UP, now
        else:
            row.next_attempt_at = next_attempt_at
        s.add(row)
        s.flush()
        _refresh_due(s, repair.repo_id)
        s.commit()


def amend(store: Store, repair: PendingRepair, amendments: Sequence[Amendment], *, now: datetime) -> bool:
    """Write a repair in one transaction: the repaired revision's (and its children's) new
    changes, blobs, plans and advisories, each amendment appended to the chain, the repair
    marked done. False (nothing written) when the repair is no longer pending."""
    with store.session() as s:
        q = select(RevisionRepairRow).where(RevisionRepairRow.revision_id == repair.revision_id)
        if store.dialect == "postgresql":
            q = q.with_for_update()
        row = s.exec(q).first()
        if row is None or row.status != PENDING:
            return False
        published: dict[str, dict[str, Any]] = {}
        edited: dict[str, dict[str, Any]] = {}
        for am in map(storable_amendment, amendments):
            _amend_one(store, s, repair.repo_id, am, now, published, edited)
        s.flush()
        chains = commit_rows.load_chains(s, repair.repo_id)
        commit_rows.index_advisories(s, repair.repo_id, {**published, **edited}, chains)
        if published or edited:  # kept commit answers (storage.commit_answers) are read again
            commit_rows.bump_index_version(s, [repair.repo_id])
        for record in published.values():
            restore_rows.index_restore(s, repair.repo_id, record, new=True)
        for record in edited.values():
            restore_rows.index_restore(s, repair.repo_id, record, new=False)
        row.status, row.done_at, row.attempts, row.last_error = REPAIRED, now, row.attempts + 1, None
        s.add(row)
        s.flush()
        _refresh_due(s, repair.repo_id)
        s.commit()
        return True


def _amend_one(store: Store, s: Session, repo_id: str, am: Amendment, now: datetime,
               published: dict[str, dict[str, Any]], edited: dict[str, dict[str, Any]]) -> None:
    rev = s.exec(select(RevisionRow).where(RevisionRow.repo_id == repo_id, RevisionRow.sha == am.sha)).first()
    if rev is None or rev.id is None:
        return
    before = shown(s, rev)
    store._put_blobs(s, am.blobs)
    s.execute(delete(ChangeRow).where(col(ChangeRow.revision_id) == rev.id))
    for i, ch in enumerate(am.changes):
        s.add(ChangeRow(revision_id=rev.id, idx=i, kind=ch.kind.value, path=ch.path, summary=ch.summary,
                        severity=ch.severity.value if ch.severity else None, topics=list(ch.topics),
                        detail=json.loads(json.dumps(ch.detail, default=str))))
    if am.plan is not None:
        plan = s.get(PlanRow, rev.id)
        if plan is None:
            s.add(PlanRow(revision_id=rev.id, plan=am.plan, delta=am.plan_delta))
        else:
            plan.plan, plan.delta = am.plan, am.plan_delta
            s.add(plan)
    rev.severity, rev.error = am.severity, am.error
    if am.advisory is not None:
        store._insert_advisory(s, repo_id, am.sha, am.advisory, now)
        published[str(am.advisory["id"])] = am.advisory
        rev.advisory_id = rev.advisory_id or str(am.advisory["id"])
    for record, reason in am.advisory_updates:
        store._edit_advisory(s, record, reason)
        edited[str(record["id"])] = record
    s.add(rev)
    s.flush()
    append_amendment(s, repo_id, rev, before, am.reason, now)


def shown(s: Any, rev: RevisionRow) -> dict[str, Any]:
    """What a stored revision shows now, as an amendment's ``before`` keeps it."""
    rows = s.exec(select(ChangeRow).where(ChangeRow.revision_id == rev.id).order_by(col(ChangeRow.idx))).all()
    return {"severity": rev.severity, "error": rev.error, "changes": _triples(rows)}


def append_amendment(s: Any, repo_id: str, rev: RevisionRow, before: dict[str, Any], reason: str,
                     now: datetime) -> None:
    """Inside the transaction that changed ``rev``'s changes: the amendment's link, after the
    chain's tip, over what the revision shows now; ``before`` is what it showed until then."""
    newest = s.exec(select(RevisionRow.seq, RevisionRow.chain_hash).where(RevisionRow.repo_id == repo_id)
                    .order_by(col(RevisionRow.seq).desc()).limit(1)).one()
    tip = chain_tip(s, repo_id, newest[0], newest[1])
    now_shown = shown(s, rev)
    s.add(RevisionAmendmentRow(
        revision_id=rev.id, repo_id=repo_id, after_seq=newest[0], reason=reason, before=before,
        severity=rev.severity, recorded_at=now,
        chain_hash=amendment_hash(tip, rev.sha, rev.severity, now_shown["changes"], reason)))
    # the revision's history entry changed: made again, and pages kept per history version too (issue 17)
    history_entries.write(s, rev.id, rev.id)
    s.execute(update(RepoRow).where(col(RepoRow.id) == repo_id)
              .values(history_version=col(RepoRow.history_version) + 1))
    s.flush()


def _aware(value: datetime) -> datetime:
    from datetime import UTC

    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


# ---------------------------------------------------------------- upgrades
#: the words a revision recorded with files unreadable for now carries in its changes
UNREADABLE_WORDS = "not readable from the source after several polls"


def backfill(db: Any, now: datetime) -> int:
    """Pending repairs for revisions recorded with files unreadable before repairs were
    recorded (migration 0012): found by the words their changes carry, diffed against their
    parent when it is stored. Returns how many were added. Plain tables, so later changes to
    the models cannot change what this migration does."""
    from sqlalchemy import JSON, column, table
    from sqlmodel.sql.sqltypes import UTCDateTime

    revs = table("revisions", column("id"), column("repo_id"), column("sha"), column("parent"), column("seq"),
                 column("recorded_at", UTCDateTime()))
    changes = table("changes", column("revision_id"), column("path"), column("summary"))
    held = table("revision_repairs", column("revision_id"), column("repo_id"), column("base_sha"),
                 column("paths", JSON), column("status"), column("attempts"),
                 column("recorded_at", UTCDateTime()), column("next_attempt_at", UTCDateTime()))
    repos = table("repos", column("id"), column("repair_due_at", UTCDateTime()))
    r, c = revs.c, changes.c
    found = db.execute(
        select(r.id, r.repo_id, r.parent, r.seq, r.recorded_at, c.path).join_from(revs, changes, c.revision_id == r.id)
        .where(c.summary.contains(UNREADABLE_WORDS), r.id.not_in(select(held.c.revision_id)))
    ).all()
    wanted: dict[int, dict[str, Any]] = {}
    for rev_id, repo_id, parent, seq, recorded_at, path in found:
        entry = wanted.setdefault(rev_id, {"repo": repo_id, "parent": parent, "seq": seq, "at": recorded_at,
                                           "paths": set()})
        entry["paths"].add(str(path).split("#", 1)[0])
    if not wanted:
        return 0
    for rev_id, e in sorted(wanted.items()):
        base = db.execute(select(r.seq).where(r.repo_id == e["repo"], r.sha == e["parent"])).first() \
            if e["parent"] else None
        db.execute(held.insert().values(
            revision_id=rev_id, repo_id=e["repo"], base_sha=e["parent"] if base and base[0] < e["seq"] else None,
            paths=sorted(p for p in e["paths"] if p and p != "/"), status=PENDING, attempts=0,
            recorded_at=e["at"] or now, next_attempt_at=now))
    for repo_id in sorted({e["repo"] for e in wanted.values()}):
        db.execute(update(repos).where(repos.c.id == repo_id).values(repair_due_at=now))
    return len(wanted)
