"""SQLModel rows. Rows are not domain types: storage.store converts between the two.

Unique constraints back up idempotency: (repo_id, sha) for revisions, the advisory id, the
blob key. Everything one revision produces is written in one transaction by the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


class RepoRow(SQLModel, table=True):
    __tablename__ = "repos"

    id: str = Field(primary_key=True, max_length=200)  # org/name
    source: str = Field(sa_column=Column(Text, nullable=False))  # hub repo id or git location
    source_kind: str = Field(max_length=8)  # "hub" | "git"
    # "operator" (CLI, config file) | "api": a source an API client added is fetched from
    # public addresses only, checked again at every fetch (issue 16, point 2)
    added_by: str = Field(default="operator", max_length=8, sa_column_kwargs={"server_default": "operator"})
    repo_url: str | None = Field(default=None, sa_column=Column(Text))  # public URL from --repo-url
    branch: str = Field(default="main", max_length=255)
    backfill: str = Field(default="all", max_length=16)
    active: bool = Field(default=True, index=True)
    head_sha: str | None = Field(default=None, max_length=64)
    added_at: datetime
    last_poll_at: datetime | None = None
    last_success_at: datetime | None = None
    last_change_at: datetime | None = None
    last_error: str | None = Field(default=None, sa_column=Column(Text))
    last_error_kind: str | None = Field(default=None, max_length=40)
    failures: int = 0
    next_check_at: datetime | None = Field(default=None, index=True)
    lease_owner: str | None = Field(default=None, max_length=120)
    lease_expires_at: datetime | None = None
    # the soonest pending repair of a revision recorded with files unreadable for now (issue 10);
    # NULL when none: a check of an unchanged repo reads this from its claim, no query of its own
    repair_due_at: datetime | None = None
    # bumped in every write transaction that changes what the repo's history pages show (a
    # revision, a rename, an amendment, a rewrite's reachability): pages are kept per (this, added_at)
    history_version: int = Field(default=0, sa_type=BigInteger, sa_column_kwargs={"server_default": "0"})


class RevisionRow(SQLModel, table=True):
    __tablename__ = "revisions"
    __table_args__ = (
        UniqueConstraint("repo_id", "sha", name="uq_revisions_repo_sha"),
        Index("ix_revisions_repo_seq", "repo_id", "seq"),
        # a commit query's labels from the index alone (issue 17)
        Index("ix_revisions_sha_label", "sha", "repo_id", "chain", "chain_pos"),
        Index("ix_revisions_chain", "repo_id", "chain", "chain_pos"),
    )

    id: int | None = Field(default=None, primary_key=True)
    repo_id: str = Field(foreign_key="repos.id", max_length=200)
    sha: str = Field(max_length=64)
    seq: int  # order of arrival within the repo (topological for a backfill)
    parent: str | None = Field(default=None, max_length=64)
    parents: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    committed_at: datetime
    title: str = Field(sa_column=Column(Text, nullable=False))
    message: str = Field(default="", sa_column=Column(Text, nullable=False))
    authors: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    severity: str | None = Field(default=None, max_length=10)
    advisory_id: str | None = Field(default=None, max_length=64)
    tree_key: str | None = Field(default=None, max_length=80)  # blob key of the file tree
    reachable: bool = True  # False once a history rewrite dropped it from the branch
    error: str | None = Field(default=None, sa_column=Column(Text))
    chain_hash: str = Field(max_length=64)  # sha256 over the previous entry's hash and this one
    recorded_at: datetime
    chain: int | None = None  # commit index label (storage.commit_index); None only mid-migration
    chain_pos: int | None = None


class ChainPointRow(SQLModel, table=True):
    """Where a chain starts or merges: what its commits reach on other chains from here on."""

    __tablename__ = "chain_points"

    repo_id: str = Field(foreign_key="repos.id", primary_key=True, max_length=200)
    chain: int = Field(primary_key=True)
    pos: int = Field(primary_key=True)
    reach: dict[str, int] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class AdvisorySpanRow(SQLModel, table=True):
    """Commits ``[start_pos, end_pos)`` of one chain that an advisory's GIT ranges hold."""

    __tablename__ = "advisory_spans"
    # A probe reads its answer from this index alone: the position range, and the brief
    # (issue 17: a 1,000-commit querybatch touches no advisory row).
    __table_args__ = (Index("ix_advisory_spans_answer", "repo_id", "chain", "level", "bucket", "start_pos",
                            "end_pos", "advisory_id", "brief"),)

    id: int | None = Field(default=None, primary_key=True)
    advisory_id: str = Field(foreign_key="advisories.id", index=True, max_length=64)
    repo_id: str = Field(max_length=200)
    chain: int
    level: int
    bucket: int
    start_pos: int = Field(sa_type=BigInteger)
    end_pos: int = Field(sa_type=BigInteger)
    # the advisory's ``{"id","modified"}`` as a querybatch answers it; NULL while withdrawn.
    # Written with the spans, which every edit of the record rewrites.
    brief: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class CommitIndexVersionRow(SQLModel, table=True):
    """A counter per repo, raised in the transaction that rewrites any of its advisory spans
    or records: what an API process checks before it answers from its own memory (issue 17)."""

    __tablename__ = "commit_index_versions"

    repo_id: str = Field(primary_key=True, max_length=200)  # no foreign key: outlives a rename
    version: int = Field(default=0, sa_type=BigInteger)


class AdvisoryRestoreRow(SQLModel, table=True):
    """A changed path of an open advisory and its content at the advisory's parent."""

    __tablename__ = "advisory_restore"
    __table_args__ = (Index("ix_advisory_restore_repo_path_content", "repo_id", "path", "content_id"),
                      Index("ix_advisory_restore_repo_path_key", "repo_id", "path", "meaning_key"))

    id: int | None = Field(default=None, primary_key=True)
    advisory_id: str = Field(foreign_key="advisories.id", index=True, max_length=64)
    repo_id: str = Field(max_length=200)
    path: str = Field(sa_column=Column(Text, nullable=False))
    content_id: str = Field(max_length=80)  # "" when the parent did not have the file
    meaning_key: str | None = Field(default=None, max_length=64)  # keyed documents: tracker.diff.meaning


class BlobRow(SQLModel, table=True):
    __tablename__ = "blobs"

    key: str = Field(primary_key=True, max_length=120)  # git:<blob id> | sthdr:<content id> | tree:<sha256>
    size: int
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class ChangeRow(SQLModel, table=True):
    __tablename__ = "changes"
    __table_args__ = (UniqueConstraint("revision_id", "idx", name="uq_changes_revision_idx"),)

    id: int | None = Field(default=None, primary_key=True)
    revision_id: int = Field(foreign_key="revisions.id", index=True)
    idx: int
    kind: str = Field(max_length=24)
    path: str = Field(sa_column=Column(Text, nullable=False))
    summary: str = Field(sa_column=Column(Text, nullable=False))
    severity: str | None = Field(default=None, max_length=10)
    topics: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class HistoryEntryRow(SQLModel, table=True):
    """A revision's history entry as pages show it, made when it is written (storage.history_entries):
    the revisions API's JSON entry and the repo page's row without what a page splices in."""

    __tablename__ = "history_entries"

    revision_id: int = Field(foreign_key="revisions.id", primary_key=True)
    entry: str = Field(sa_column=Column(Text, nullable=False))
    row_head: str = Field(sa_column=Column(Text, nullable=False))
    row_tail: str = Field(sa_column=Column(Text, nullable=False))
    row_advisory: str | None = Field(default=None, sa_column=Column(Text))
    row_option: str = Field(sa_column=Column(Text, nullable=False))


class PlanRow(SQLModel, table=True):
    __tablename__ = "plans"

    revision_id: int = Field(foreign_key="revisions.id", primary_key=True)
    plan: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    delta: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class AdvisoryRow(SQLModel, table=True):
    __tablename__ = "advisories"
    __table_args__ = (Index("ix_advisories_repo_modified", "repo_id", "modified"),)

    id: str = Field(primary_key=True, max_length=64)
    repo_id: str = Field(foreign_key="repos.id", max_length=200)
    sha: str = Field(max_length=64)
    severity: str = Field(max_length=10)
    published: datetime
    modified: datetime = Field(index=True)
    withdrawn: datetime | None = None
    record: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))


class AdvisoryEditRow(SQLModel, table=True):
    """Every version of every advisory, so ``modified`` is truthful and edits are auditable."""

    __tablename__ = "advisory_edits"
    __table_args__ = (UniqueConstraint("advisory_id", "version", name="uq_advisory_edits_version"),)

    id: int | None = Field(default=None, primary_key=True)
    advisory_id: str = Field(foreign_key="advisories.id", index=True, max_length=64)
    version: int
    modified: datetime
    reason: str = Field(max_length=200)
    record: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))


class SubscriptionRow(SQLModel, table=True):
    __tablename__ = "subscriptions"

    id: str = Field(primary_key=True, max_length=40)
    url: str = Field(sa_column=Column(Text, nullable=False))
    repos: list[str] | None = Field(default=None, sa_column=Column(JSON))
    secret: str = Field(max_length=200)
    created_at: datetime
    active: bool = True
    consecutive_failures: int = 0
    disabled_reason: str | None = Field(default=None, sa_column=Column(Text))
    failing_since: datetime | None = None  # first failure since the last success
    last_success_at: datetime | None = None
    previous_secret: str | None = Field(default=None, max_length=200)  # still signs until ...
    previous_secret_until: datetime | None = None


class DeliveryRow(SQLModel, table=True):
    """The webhook outbox: one row per (subscription, event), delivered at least once."""

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("subscription_id", "webhook_id", name="uq_deliveries_sub_event"),
        Index("ix_deliveries_due", "status", "next_attempt_at"),
        Index("ix_deliveries_done", "status", "delivered_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    subscription_id: str = Field(foreign_key="subscriptions.id", max_length=40)
    webhook_id: str = Field(max_length=120)  # <advisory id>.<modified>
    event_type: str = Field(max_length=40)
    payload: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    status: str = Field(default="pending", max_length=12)  # pending | delivered | failed
    attempts: int = 0
    next_attempt_at: datetime
    last_error: str | None = Field(default=None, sa_column=Column(Text))
    last_status_code: int | None = None
    created_at: datetime
    delivered_at: datetime | None = None
    lease_owner: str | None = Field(default=None, max_length=120)
    lease_expires_at: datetime | None = None


class RepoAliasRow(SQLModel, table=True):
    """A former id of a tracked repo (renamed on the Hub): reads by it find the repo."""

    __tablename__ = "repo_aliases"

    old_id: str = Field(primary_key=True, max_length=200)
    repo_id: str = Field(foreign_key="repos.id", index=True, max_length=200)
    renamed_at: datetime


class RevisionRepairRow(SQLModel, table=True):
    """A revision recorded with files the source kept failing to serve (issue 10): later polls
    read them again, and a repair amends the revision. ``status``: pending | repaired | given_up."""

    __tablename__ = "revision_repairs"
    __table_args__ = (Index("ix_revision_repairs_due", "repo_id", "status", "next_attempt_at"),)

    revision_id: int = Field(foreign_key="revisions.id", primary_key=True)
    repo_id: str = Field(max_length=200)
    base_sha: str | None = Field(default=None, max_length=64)  # what the revision was diffed against
    paths: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    status: str = Field(default="pending", max_length=12)
    attempts: int = 0
    recorded_at: datetime
    next_attempt_at: datetime
    last_error: str | None = Field(default=None, sa_column=Column(Text))
    done_at: datetime | None = None


class RevisionAmendmentRow(SQLModel, table=True):
    """A stored revision's changes amended after it was recorded (a repair, a rename): appended
    to the repo's hash chain, never a rewrite of it. ``before`` is what the revision showed
    until then (its severity and changes), so every earlier hash still verifies."""

    __tablename__ = "revision_amendments"
    __table_args__ = (Index("ix_revision_amendments_repo", "repo_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    revision_id: int = Field(foreign_key="revisions.id", index=True)
    repo_id: str = Field(max_length=200)
    after_seq: int  # the repo's newest revision when it was appended: its place in the chain
    reason: str = Field(sa_column=Column(Text, nullable=False))
    before: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    severity: str | None = Field(default=None, max_length=10)
    chain_hash: str = Field(max_length=64)
    recorded_at: datetime
