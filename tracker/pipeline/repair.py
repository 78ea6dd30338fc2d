"""The repair pass (issue 10): a revision recorded with files unreadable for now is read again
by later polls of its repo and amended, so a transient failure never leaves it incomplete.

A check of a repo runs it after the head check, only when the repo's claim says a repair is
due (``repos.repair_due_at``): an unchanged repo with nothing pending spends no request and
no query on it. A repair reads only the files that are missing (the tree and every other
content are stored), re-analyses the revision against the parent it was diffed against,
re-diffs the revisions recorded against it meanwhile, and amends them all in one transaction
(``storage.repairs.amend``): new advisories are published for changes that became visible,
existing records are amended with ``modified`` bumped (or withdrawn when nothing of note
is left), and subscribers get the events through the outbox as for any advisory.

An attempt that cannot read the files backs off (``RepairPolicy``) and the repair is given
up, recorded as such, past a long horizon. A permanent property found on the way (over a
size cap, not a safetensors file) ends the repair: it is what the revision holds.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from advisories.osv import amend, withdraw
from storage import repairs
from storage.records import Amendment, NewRevision, PendingRepair, RepoRecord, RevisionRecord
from storage.store import Store
from storage.trees import parse_tree
from tracker.errors import RateLimited, SourceError
from tracker.hub.interface import HubSource
from tracker.model import Artifacts, ChangeKind, CommitInfo, Snapshot
from tracker.snapshot import take_snapshot

if TYPE_CHECKING:
    from tracker.pipeline.check import PipelineOptions

log = logging.getLogger("hubwatch.repair")

#: changes a repair keeps from what was recorded: the branch's own events lead the revision's
#: changes, a rename's is appended after them
_LEADING = (ChangeKind.HISTORY, ChangeKind.NAMESPACE_REUSE)


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    """How often a revision with files unreadable for now is read again, and for how long.

    The first attempt comes with the repo's next check after the revision was recorded; each
    failed one doubles the wait from ``first_delay_seconds`` up to ``max_delay_seconds``; past
    ``give_up_after_seconds`` from the recording the repair is given up (recorded as such)."""

    first_delay_seconds: float = 900.0
    max_delay_seconds: float = 86_400.0
    give_up_after_seconds: float = 7 * 86_400.0
    per_check: int = 4  # revisions repaired in one check of a repo at most

    def next_attempt(self, repair: PendingRepair, now: datetime) -> datetime | None:
        """When to try again after a failed attempt; None: give up."""
        horizon = repair.recorded_at + timedelta(seconds=self.give_up_after_seconds)
        if now >= horizon:
            return None
        delay = min(self.max_delay_seconds, self.first_delay_seconds * 2.0 ** min(repair.attempts, 30))
        return min(now + timedelta(seconds=delay), horizon)


def repair_due(repo: RepoRecord, now: datetime) -> bool:
    """Whether the repo's claim says a repair is due (no query)."""
    due = repo.repair_due_at
    if due is None:
        return False
    return (due if due.tzinfo is not None else due.replace(tzinfo=UTC)) <= now


def run_repairs(store: Store, source: HubSource, repo: RepoRecord, opts: PipelineOptions) -> int:
    """Attempt the repo's due repairs, oldest revision first; how many were repaired.

    A failed attempt is recorded and backed off; it never fails the check. Rate limits (and a
    cancelled check) propagate."""
    done = 0
    for item in repairs.due(store, repo.id, now=opts.clock(), limit=opts.repair.per_check):
        try:
            done += _repair(store, source, repo, item, opts)
        except RateLimited:
            raise
        except SourceError as e:
            _failed(store, item, opts, str(e))
    return done


def _failed(store: Store, item: PendingRepair, opts: PipelineOptions, error: str) -> None:
    now = opts.clock()
    at = opts.repair.next_attempt(item, now)
    if at is None:
        log.warning("%s@%s: giving up the repair of %s after %d attempts: %s", item.repo_id, item.sha[:12],
                    _names(item.paths), item.attempts + 1, error)
    else:
        log.info("%s@%s: repair of %s failed (attempt %d), next at %s: %s", item.repo_id, item.sha[:12],
                 _names(item.paths), item.attempts + 1, at.isoformat(), error)
    opts.writes.run(f"recording the repair attempt of {item.repo_id}@{item.sha[:12]}",
                    lambda: repairs.attempt_failed(store, item, now=now, error=error, next_attempt_at=at))


def _repair(store: Store, source: HubSource, repo: RepoRecord, item: PendingRepair, opts: PipelineOptions) -> int:
    from tracker.pipeline.check import RECENT, _ArtifactCache  # check runs this pass

    rev = store.get_revision(repo.id, item.sha)
    tree = store.get_blob(rev.tree_key) if rev is not None and rev.tree_key else None
    if rev is None or tree is None:
        _failed(store, replace(item, recorded_at=datetime.min.replace(tzinfo=UTC)), opts,
                "the revision's tree is not stored")  # nothing to read against: given up at once
        return 0
    snap = _read(source, rev.sha, tree, store, opts)  # only the missing files are asked for
    cache = _ArtifactCache(store, opts.max_json_depth)
    later = _advisories_after(store, repo.id, rev.seq)
    reason = f"repaired: {_names(item.paths)} read on repair attempt {item.attempts + 1}"
    new, head, complete = _analyse(store, source, repo, rev, item.base_sha, snap, cache.get(repo.id, item.base_sha),
                                   opts, later)
    amendments = [_amendment(store, rev, new, reason, opts)]
    fresh: list[tuple[str, Artifacts, bool]] = [(rev.sha, head, complete)]
    pending = repairs.pending_shas(store, repo.id) - {rev.sha}
    for child in _children(store, repo.id, rev.sha, pending):
        child_snap = _read(source, child.sha, store.get_blob(child.tree_key or "") or b"", store, opts)
        child_new, child_head, child_complete = _analyse(
            store, source, repo, child, rev.sha, child_snap, head, opts, _advisories_after(store, repo.id, child.seq))
        if _shown(child_new) != _shown_record(child):
            amendments.append(_amendment(store, child, child_new,
                                         f"re-diffed against {rev.sha[:12]}, repaired ({_names(item.paths)})", opts))
            fresh.append((child.sha, child_head, child_complete))
    if not opts.writes.run(f"amending {repo.id}@{rev.sha[:12]}",
                           lambda: repairs.amend(store, item, amendments, now=opts.clock())):
        return 0
    where = str(store.engine.url)
    for sha, artifacts, whole in fresh:  # later revisions are diffed against the repaired ones
        if whole:
            RECENT.put((where, repo.id, sha, opts.max_json_depth), artifacts)
    log.warning("%s@%s: repaired (%s readable now); %d revision(s) amended", repo.id, rev.sha[:12],
                _names(item.paths), len(amendments))
    return 1


def _read(source: HubSource, sha: str, tree: bytes, store: Store, opts: PipelineOptions) -> Snapshot:
    return take_snapshot(source, sha, limits=opts.limits, known=store.get_blob, files=parse_tree(tree),
                         policy=replace(opts.reads, accept_unreadable=False), known_many=store.get_blobs)


def _analyse(
    store: Store, source: HubSource, repo: RepoRecord, rev: RevisionRecord, base_sha: str | None, snap: Snapshot,
    base: Artifacts | None, opts: PipelineOptions, not_fixing: frozenset[str],
) -> tuple[NewRevision, Artifacts, bool]:
    """The revision analysed again as the pipeline would, keeping the events it was recorded with."""
    from tracker.pipeline.check import analyse_revision
    commit = CommitInfo(rev.sha, rev.parents, rev.committed_at, rev.title, rev.message, rev.authors)
    lead = rev.changes[0] if rev.changes and rev.changes[0].kind in _LEADING else None
    tail = [c for c in rev.changes if c.kind is ChangeKind.RENAME]
    return analyse_revision(store, source.web_url, repo, commit, base_sha, snap, base, opts,
                            event=(lead, ()) if lead is not None else None, tail=tail, not_fixing=not_fixing)


def _amendment(store: Store, rev: RevisionRecord, new: NewRevision, reason: str, opts: PipelineOptions) -> Amendment:
    """The revision's new changes, and what becomes of its advisory: published now, amended
    (``modified`` bumped), or withdrawn when nothing of note is left."""
    now = opts.clock()
    existing = store.get_advisory(str(new.advisory["id"])) if new.advisory is not None else None
    if existing is None and rev.advisory_id:
        existing = store.get_advisory(rev.advisory_id)
    publish = None
    updates = list(new.advisory_updates)
    if existing is None:
        publish = new.advisory
    elif new.advisory is not None:
        edited = amend(existing.record, new.advisory, reason=reason, now=now)
        if edited != existing.record:
            updates.append((edited, reason))
    elif "withdrawn" not in existing.record:
        updates.append((withdraw(existing.record, f"{reason}: no change of note is left", now), reason))
    return Amendment(sha=rev.sha, changes=new.changes, severity=new.severity, error=new.error, reason=reason,
                     blobs=new.blobs, plan=new.plan, plan_delta=new.plan_delta, advisory=publish,
                     advisory_updates=tuple(updates))


def _children(store: Store, repo_id: str, sha: str, pending: set[str]) -> list[RevisionRecord]:
    """Stored revisions diffed against ``sha`` (its children on the first parent), except those
    waiting for a repair of their own (that repair re-diffs them)."""
    graph = store.commit_graph(repo_id)
    out = []
    for child, parents in sorted(graph.items()):
        if parents and parents[0] == sha and child not in pending:
            found = store.get_revision(repo_id, child)
            if found is not None and found.tree_key:
                out.append(found)
    return sorted(out, key=lambda r: r.seq)


def _advisories_after(store: Store, repo_id: str, seq: int) -> frozenset[str]:
    """Advisories of revisions recorded after ``seq``: a repaired revision cannot fix them."""
    later = {r.sha for r in store.history(repo_id, with_changes=False) if r.seq > seq}
    return frozenset(a.id for a in store.list_advisories(repo_id) if a.sha in later)


def _names(paths: tuple[str, ...], shown: int = 5) -> str:
    """The paths a repair is about, a few named (a hostile tree may list thousands)."""
    out = ", ".join(paths[:shown])
    return out + (f" (+{len(paths) - shown} more)" if len(paths) > shown else "")


def _shown(new: NewRevision) -> tuple[object, ...]:
    return (new.severity, [(c.kind, c.path, c.summary, c.severity) for c in new.changes])


def _shown_record(rev: RevisionRecord) -> tuple[object, ...]:
    return (rev.severity, [(c.kind, c.path, c.summary, c.severity) for c in rev.changes])

