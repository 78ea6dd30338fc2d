"""What the store hands out: plain frozen records, independent of the SQL rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tracker.model import Change, FileEntry


@dataclass(frozen=True, slots=True)
class RepoRecord:
    """A tracked repo and its polling state."""

    id: str
    source: str
    source_kind: str  # "hub" | "git"
    branch: str
    backfill: str
    active: bool
    head_sha: str | None
    added_at: datetime
    last_poll_at: datetime | None = None
    last_success_at: datetime | None = None
    last_change_at: datetime | None = None
    last_error: str | None = None
    last_error_kind: str | None = None
    failures: int = 0
    next_check_at: datetime | None = None
    revisions: int = 0
    repo_url: str | None = None  # the public URL given at track time (records name it)
    added_by: str = "operator"  # "api": fetched from public addresses only, checked at every fetch
    repair_due_at: datetime | None = None  # the soonest pending repair of a revision (issue 10)

    @property
    def status(self) -> str:
        if not self.active:
            return "untracked"
        if self.last_error:
            return "error"
        if self.last_poll_at is None:
            return "new"
        return "ok"


@dataclass(frozen=True, slots=True)
class RevisionRecord:
    """One stored revision with its changes (and plan, when asked for)."""

    repo_id: str
    sha: str
    seq: int
    parent: str | None
    parents: tuple[str, ...]
    committed_at: datetime
    title: str
    message: str
    authors: tuple[str, ...]
    severity: str | None
    advisory_id: str | None
    reachable: bool
    error: str | None
    chain_hash: str
    recorded_at: datetime
    tree_key: str | None = None
    changes: tuple[Change, ...] = ()
    plan: dict[str, Any] | None = None
    plan_delta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AdvisoryRecord:
    id: str
    repo_id: str
    sha: str
    severity: str
    published: datetime
    modified: datetime
    withdrawn: datetime | None
    record: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NewRevision:
    """Everything one revision produces, written by ``Store.record_revision`` in one transaction."""

    repo_id: str
    sha: str
    parent: str | None
    parents: tuple[str, ...]
    committed_at: datetime
    title: str
    message: str
    authors: tuple[str, ...]
    changes: tuple[Change, ...]
    severity: str | None
    tree: bytes | None  # serialised file tree, stored content-addressed
    blobs: dict[str, bytes] = field(default_factory=dict)  # new content keyed by blob key
    plan: dict[str, Any] | None = None
    plan_delta: dict[str, Any] | None = None
    advisory: dict[str, Any] | None = None  # OSV record
    advisory_updates: tuple[tuple[dict[str, Any], str], ...] = ()  # (edited record, reason)
    error: str | None = None
    new_head: str | None = None  # the repo's head after this revision
    unreachable: tuple[str, ...] = ()  # shas a history rewrite dropped from the branch
    #: files the source kept failing to serve, recorded unreadable for now: a later poll reads
    #: them again and amends the revision (``storage.repairs``); ``base_sha`` is what it was
    #: diffed against
    unreadable: tuple[str, ...] = ()
    base_sha: str | None = None
    #: the files of ``base_sha``'s revision where the check holds them: the new advisory's
    #: restore rows take its parent's content from them instead of reading the stored tree
    base_files: tuple[FileEntry, ...] | None = None


@dataclass(frozen=True, slots=True)
class PendingRepair:
    """A revision recorded with files unreadable for now, due for another read."""

    revision_id: int
    repo_id: str
    sha: str
    seq: int
    base_sha: str | None
    paths: tuple[str, ...]
    attempts: int
    recorded_at: datetime


@dataclass(frozen=True, slots=True)
class Amendment:
    """A stored revision's new changes after a repair: written by ``storage.repairs.amend``
    with its new blobs, plan and advisory edits, in one transaction."""

    sha: str
    changes: tuple[Change, ...]
    severity: str | None
    error: str | None
    reason: str
    blobs: dict[str, bytes] = field(default_factory=dict)
    plan: dict[str, Any] | None = None
    plan_delta: dict[str, Any] | None = None
    advisory: dict[str, Any] | None = None  # a record published for the revision now
    advisory_updates: tuple[tuple[dict[str, Any], str], ...] = ()  # (edited record, reason)
