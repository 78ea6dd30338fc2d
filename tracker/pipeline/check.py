"""Stages 1-7 for one repo: read what is new, snapshot, extract, diff, plan, store, advise.

``check_repo`` is idempotent per revision: each revision is written in one transaction
together with the repo's new head, so a crash and a rerun record nothing twice, and a second
daemon racing on the same repo finds the unique (repo, sha) constraint in its way.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from advisories.rules import apply_rules
from storage.records import NewRevision, RepoRecord
from storage.store import Store
from storage.write_retry import WriteRetry
from tracker.diff import history_rewrite_change, namespace_reuse_change
from tracker.extract import extract_artifacts
from tracker.extract.paths import is_safetensors, reads_inside
from tracker.hub.interface import HubSource
from tracker.model import Artifacts, Change, ChangeKind, CommitInfo, RevisionDiff, Snapshot
from tracker.model.keys import (
    content_error_key,
    content_key,
    digest_error_key,
    digest_key,
    header_error_key,
    header_key,
    security_key,
)
from tracker.pipeline.advise_step import AdviseStep
from tracker.pipeline.analysis import AnalysisPool, shared_pool
from tracker.pipeline.kept import Kept
from tracker.pipeline.plan_step import PlanStep
from tracker.pipeline.rename_step import record_rename
from tracker.pipeline.repair import RepairPolicy, repair_due, run_repairs
from tracker.pipeline.stored import serialise_tree
from tracker.snapshot import ReadPolicy, SnapshotLimits, take_snapshot

log = logging.getLogger("hubwatch.pipeline")

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What one check of one repo did (``poll --json`` prints these)."""

    repo: str
    status: str  # ok | unchanged | error
    new_revisions: int = 0
    error: str | None = None
    error_kind: str | None = None
    head: str | None = None
    retry_after: float | None = None
    repaired: int = 0  # revisions recorded with files unreadable for now, amended by this check


@dataclass
class PipelineOptions:
    limits: SnapshotLimits = field(default_factory=SnapshotLimits)
    max_json_depth: int = 32
    plan: PlanStep = field(default_factory=PlanStep)
    advise: AdviseStep = field(default_factory=AdviseStep)
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    reads: ReadPolicy = field(default_factory=ReadPolicy)
    #: checks in a row that ended with a revision read incompletely before that revision is
    #: recorded with the file marked unreadable (a file the source never serves must not stall
    #: the repo for ever); until then the revision stays pending
    give_up_reads_after: int = 6
    analysis: AnalysisPool | None = None  # None: the process's shared pool, default budget
    #: a revision's write that lost a race or found the database away is tried again with the
    #: analysis in hand: the Hub is not asked twice (issue 10)
    writes: WriteRetry = field(default_factory=WriteRetry)
    #: revisions recorded with files unreadable for now are read again on this schedule (issue 10)
    repair: RepairPolicy = field(default_factory=RepairPolicy)


def check_repo(
    store: Store,
    source: HubSource,
    repo: RepoRecord,
    options: PipelineOptions | None = None,
    *,
    progress: Progress | None = None,
) -> CheckResult:
    """Bring ``repo``'s stored history up to its branch head. Source errors propagate."""
    opts = options or PipelineOptions()
    head = source.resolve_head(repo.branch)
    moved = source.renamed_to()
    if moved is not None and moved != repo.id:  # the Hub redirected the old id to this one
        repo = record_rename(store, repo, moved, source.web_url, opts.advise, now=opts.clock())
    # a revision recorded with files unreadable for now: read them again, before new revisions
    # are diffed against it (only when the claim says one is due: no request, no query otherwise)
    repaired = run_repairs(store, source, repo, opts) if repair_due(repo, opts.clock()) else 0
    if head == repo.head_sha:
        return CheckResult(repo.id, "unchanged", head=head, repaired=repaired)
    known = store.known_shas(repo.id)
    if head in known and repo.head_sha is not None:
        # The branch moved back to a commit we already hold (a reset): the commits after it
        # vanished from the branch.
        listing = source.list_commits(repo.branch)
        return replace(_record_reset(store, repo, head, listing.commits, opts), repaired=repaired)
    stop = (repo.head_sha,) if repo.head_sha else ()
    listing = source.list_commits(repo.branch, stop_at=stop)
    rewritten = bool(stop) and not listing.reached_known
    commits = [c for c in reversed(listing.commits) if c.sha not in known]
    lost: tuple[str, ...] = ()
    recreated: str | None = None
    if rewritten:
        on_branch = {c.sha for c in listing.commits}
        lost = tuple(sorted(sha for sha in store.reachable_shas(repo.id) if sha not in on_branch))
        if not known & on_branch:  # no common history at all: a squash, or another repo
            recreated = _recreated_since_seen(source, repo)
    if not known or recreated:  # a first read: the backfill setting says how much of it
        commits = _apply_backfill(commits, repo.backfill)
    if repo.last_error_kind == "incomplete" and repo.failures >= opts.give_up_reads_after:
        log.warning("%s: reads kept failing over %d checks; recording the files as unreadable", repo.id, repo.failures)
        opts = replace(opts, reads=replace(opts.reads, accept_unreadable=True))
    recorded = _record_commits(store, source, repo, commits, set(known), opts, progress, rewritten=rewritten,
                               lost=lost, recreated=recreated)
    return CheckResult(repo.id, "ok", new_revisions=recorded, head=head, repaired=repaired)


def _recreated_since_seen(source: HubSource, repo: RepoRecord) -> str | None:
    """The Hub's creation date of the repo when it is later than our last successful look (at
    which the old repo existed): the repo was deleted and created again (namespace reuse).
    None for a squash of the same repo, and where the source cannot tell (git)."""
    created = source.created_at()
    seen = repo.last_success_at
    if created is None or seen is None:
        return None
    seen = seen if seen.tzinfo is not None else seen.replace(tzinfo=UTC)
    if created <= seen:
        return None
    return created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _apply_backfill(commits: list[CommitInfo], backfill: str) -> list[CommitInfo]:
    """First read of a repo: the whole history, none of it (the head only), or the last N."""
    if backfill == "all" or not commits:
        return commits
    if backfill == "none":
        return commits[-1:]
    n = max(1, int(backfill))
    return commits[-n:]


class RecentArtifacts(Kept[tuple[str, str, str, int], Artifacts]):
    """The artifacts of the revisions this process analysed last, shared by every check.

    A new revision is diffed against its parent, and the parent is almost always the head
    this process analysed when the repo last moved: keeping it saves extracting the parent
    again from the store (a tokenizer.json parse and hash, hundreds of milliseconds for a large
    vocabulary; benchmarks/new_revision.py). Keyed by store, repo, sha and JSON depth limit;
    bounded by count, least recently used out first.
    """

    def __init__(self, max_items: int = 64):
        super().__init__(max_items)


RECENT = RecentArtifacts()


class _ArtifactCache:
    """Artifacts of a check's revisions; else the process's recent ones; else rebuilt from the store."""

    def __init__(self, store: Store, max_json_depth: int, recent: RecentArtifacts = RECENT):
        self.store, self.max_json_depth, self.recent = store, max_json_depth, recent
        self.where = str(store.engine.url)
        self.items: dict[str, Artifacts] = {}

    def get(self, repo_id: str, sha: str | None) -> Artifacts | None:
        if sha is None:
            return None
        if sha not in self.items:
            key = (self.where, repo_id, sha, self.max_json_depth)
            found = self.recent.get(key)
            if found is None:
                snap = self.store.snapshot(repo_id, sha)
                if snap is None:
                    return None
                found = extract_artifacts(snap, max_json_depth=self.max_json_depth)
                self.recent.put(key, found)
            self.items[sha] = found
        return self.items[sha]

    def put(self, repo_id: str, sha: str, artifacts: Artifacts, *, complete: bool) -> None:
        """``complete``: a full analysis (a cut one is kept for this check only, as before)."""
        if len(self.items) > 8:
            self.items.pop(next(iter(self.items)))
        self.items[sha] = artifacts
        if complete:
            self.recent.put((self.where, repo_id, sha, self.max_json_depth), artifacts)


def _record_commits(
    store: Store, source: HubSource, repo: RepoRecord, commits: Sequence[CommitInfo], known: set[str],
    opts: PipelineOptions, progress: Progress | None, *, rewritten: bool, lost: tuple[str, ...],
    recreated: str | None = None,
) -> int:
    """Store ``commits`` oldest first; ``known``: the shas the repo held when the check read
    its listing (grows as commits are stored; read once per check, not again here)."""
    cache = _ArtifactCache(store, opts.max_json_depth)
    previous_head = repo.head_sha
    recorded = 0
    for i, commit in enumerate(commits):
        if progress:
            progress(i, len(commits), commit.sha)
        base_sha = commit.parents[0] if commit.parents and commit.parents[0] in known else None
        if base_sha is None and rewritten and i == 0 and previous_head and not recreated:
            base_sha = previous_head  # a squash: compare with what users had
        event: tuple[Change, tuple[str, ...]] | None = None
        if recreated and i == 0:  # another repo: a fresh baseline that carries the reuse advisory
            event = (namespace_reuse_change(previous_head or "", commits[-1].sha, lost, recreated), lost)
        elif rewritten and not recreated and i == len(commits) - 1:
            event = (history_rewrite_change(previous_head or "", commit.sha, lost), lost)
        new = _process_commit(store, source, repo, commit, base_sha, cache, opts, event=event)
        if opts.writes.run(f"recording {repo.id}@{commit.sha[:12]}",
                           functools.partial(store.record_revision, new, now=opts.clock())):
            recorded += 1
        known.add(commit.sha)
    if progress and commits:
        progress(len(commits), len(commits), commits[-1].sha)
    return recorded


def _process_commit(
    store: Store, source: HubSource, repo: RepoRecord, commit: CommitInfo, base_sha: str | None,
    cache: _ArtifactCache, opts: PipelineOptions, *, event: tuple[Change, tuple[str, ...]] | None,
) -> NewRevision:
    snap = take_snapshot(source, commit.sha, limits=opts.limits, known=store.get_blob, policy=opts.reads,
                         known_many=store.get_blobs)
    new, head, complete = analyse_revision(store, source.web_url, repo, commit, base_sha, snap,
                                           cache.get(repo.id, base_sha), opts, event=event)
    # a revision with files unreadable for now is not kept for the process: once repaired
    # (perhaps by another daemon) its next revision must be diffed against the repaired one
    cache.put(repo.id, commit.sha, head, complete=complete and not snap.unreadable)
    return new


def analyse_revision(
    store: Store, web_url: str, repo: RepoRecord, commit: CommitInfo, base_sha: str | None, snap: Snapshot,
    base: Artifacts | None, opts: PipelineOptions, *, event: tuple[Change, tuple[str, ...]] | None,
    tail: Sequence[Change] = (), not_fixing: frozenset[str] = frozenset(),
) -> tuple[NewRevision, Artifacts, bool]:
    """Stages 3-7 for a revision read: (what to store, its artifacts, whether the analysis was
    whole). ``tail``: changes kept after the diff's (a repair keeps a rename's);
    ``not_fixing``: advisories this revision may not fix (a repair: the later ones)."""
    blobs = _new_blobs(snap)
    # extract, diff (with its renders) and plan in a worker under a time and memory budget
    found = (opts.analysis or shared_pool()).run(snap, base, base_sha=base_sha, head_sha=commit.sha,
                                                 max_json_depth=opts.max_json_depth, plan=opts.plan)
    head, diff, error = found.head, found.diff, found.error
    if error:
        log.warning("revision %s@%s: %s", repo.id, commit.sha[:12], error)
    changes = list(diff.changes)
    touched = {c.path for c in changes}  # the diff names every path whose content changed
    reported = {c.path for c in changes if any(t.endswith(".unreadable") for t in c.topics)}
    for path, message in sorted(snap.read_errors.items()):
        if path and (path not in touched or path in reported):
            continue  # reported once, when the file arrived or changed
        changes.append(Change(kind=ChangeKind.OTHER, path=path or "/", summary=f"not read: {message}",
                              topics=("read.error",)))
    unreachable: tuple[str, ...] = ()
    if event is not None:  # the branch's own change (rewrite, reuse) and the commits it dropped
        changes.insert(0, event[0])
        unreachable = event[1]
    plan_json, delta_json, plan_change = found.plan
    if plan_change is not None:
        changes.append(plan_change)
    changes.extend(tail)
    diff = apply_rules(RevisionDiff(base=diff.base, head=diff.head, changes=tuple(changes)))
    advisory, updates, diff = opts.advise.run(
        store, repo, web_url, commit, base_sha, diff, delta_json, head, lost=unreachable, now=opts.clock(),
        base=base, not_fixing=not_fixing,
    )
    sev = diff.severity
    new = NewRevision(
        repo_id=repo.id, sha=commit.sha, parent=commit.parents[0] if commit.parents else None,
        parents=commit.parents, committed_at=commit.committed_at, title=commit.title, message=commit.message,
        authors=commit.authors, changes=diff.changes, severity=sev.value if sev else None,
        tree=serialise_tree(snap.files), blobs=blobs, plan=plan_json, plan_delta=delta_json,
        advisory=advisory, advisory_updates=updates, error=error or _error_summary(snap, head, touched),
        new_head=commit.sha, unreachable=unreachable, unreadable=tuple(sorted(snap.unreadable)), base_sha=base_sha,
        base_files=base.files if base is not None and base_sha is not None else None,
    )
    return new, head, found.cut is None


def _record_reset(
    store: Store, repo: RepoRecord, head: str, commits: Sequence[CommitInfo], opts: PipelineOptions
) -> CheckResult:
    """The branch now points at an older stored commit: mark what vanished, move the head."""
    on_branch = {c.sha for c in commits}
    lost = tuple(sorted(sha for sha in store.reachable_shas(repo.id) if sha not in on_branch))
    opts.writes.run(f"recording the reset of {repo.id}", lambda: store.mark_unreachable(repo.id, lost, head=head))
    if lost:
        opts.writes.run(f"withdrawing {repo.id}'s vanished advisories",
                        lambda: opts.advise.history_rewritten(store, repo, lost, head, now=opts.clock()))
    return CheckResult(repo.id, "ok", new_revisions=0, head=head)


def _new_blobs(snap: Snapshot) -> dict[str, bytes]:
    blobs: dict[str, bytes] = {}
    by_path = {f.path: f for f in snap.files}
    for path, data in snap.contents.items():
        blobs[content_key(by_path[path])] = data
    for path, data in snap.safetensors_headers.items():
        blobs[header_key(by_path[path])] = data
    for path, data in snap.weight_digests.items():
        blobs[digest_key(by_path[path])] = data
    for path, data in snap.security.items():
        blobs[security_key(by_path[path])] = data
    for path, message in snap.read_errors.items():
        entry = by_path.get(path)
        if entry is not None and path not in snap.transient_errors:  # a property of the content:
            # remembered, so later revisions (and other repos with it) do not ask again
            if is_safetensors(path):
                key = header_error_key(entry)
            elif reads_inside(path):
                key = digest_error_key(entry)
            else:
                key = content_error_key(entry)
            blobs[key] = message.encode()
    return blobs


def _error_summary(snap: Snapshot, head: Artifacts, touched: set[str]) -> str | None:
    """What this revision brought that could not be read or parsed (``show``, the API)."""
    if "" in snap.read_errors:
        return snap.read_errors[""]
    issues = [i for i in head.issues if i.path in touched]
    if not issues:
        return None
    text = "; ".join(f"{i.path}: {i.message}" for i in issues[:5])
    return text[:1000] + (f" (+{len(issues) - 5} more)" if len(issues) > 5 else "")
