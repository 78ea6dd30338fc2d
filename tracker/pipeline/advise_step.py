"""Stage 7 inside the pipeline: the OSV advisory of a revision, and edits to earlier ones.

The root (or first read) revision is the baseline: a history entry, never an advisory.
Edits to earlier advisories (a history rewrite that dropped their commits, a revision that
restored what they changed) travel with the revision's transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from advisories.osv import (
    HUB_URL,
    also_named,
    build_record,
    mark_history_rewritten,
    mark_namespace_reused,
)
from advisories.osv_client import OsvClient
from storage.records import RepoRecord
from storage.renames import former_ids
from storage.store import Store
from tracker.model import Artifacts, ChangeKind, CommitInfo, RevisionDiff
from tracker.pipeline.lifecycle import demote_restores, fixed_updates, touched_paths

log = logging.getLogger("hubwatch.advise")

Update = tuple[dict[str, Any], str]


def canonical_repo_url(repo: RepoRecord, source_url: str, hub_endpoint: str) -> tuple[str, str | None]:
    """(the URL records name, the Hub it is on when that is a mirror) for a tracked repo.

    ``--repo-url`` from track time wins, then the source's own public URL (a Hub repo's page,
    a git remote), then the Hub URL of the repo id: a local path never reaches a record.
    """
    hub = hub_endpoint.rstrip("/") or HUB_URL
    url = (repo.repo_url or source_url or f"{hub}/{repo.id}").rstrip("/")
    base = url[: -len(repo.id) - 1] if url.endswith("/" + repo.id) else ""
    return url, (base if base and base in (hub, HUB_URL) else None)


def commit_url(repo_url: str, sha: str) -> str | None:
    """The commit's web page, where the repo lives on the web (the Hub, a git forge)."""
    if repo_url.startswith(("https://", "http://")):
        return f"{repo_url.rstrip('/')}/commit/{sha}"
    return None


@dataclass
class AdviseStep:
    prefix: str = "x_HUBWATCH"
    osv: OsvClient | None = field(default=None, repr=False)
    hub_endpoint: str = HUB_URL

    @classmethod
    def from_settings(
        cls, prefix: str, osv_api: str, *, timeout: float = 10.0, hub_endpoint: str = HUB_URL
    ) -> AdviseStep:
        return cls(prefix=prefix, osv=OsvClient(osv_api, timeout=timeout) if osv_api else None,
                   hub_endpoint=hub_endpoint)

    def run(
        self, store: Store, repo: RepoRecord, repo_url: str, commit: CommitInfo, base_sha: str | None,
        diff: RevisionDiff, plan_delta: dict[str, Any] | None, head: Artifacts, *, lost: tuple[str, ...],
        now: datetime, base: Artifacts | None = None, not_fixing: frozenset[str] = frozenset(),
    ) -> tuple[dict[str, Any] | None, tuple[Update, ...], RevisionDiff]:
        """(the revision's advisory, edits of earlier ones, the diff with restores demoted).

        ``not_fixing``: advisories this revision cannot restore (a repaired revision: those of
        revisions recorded after it)."""
        updates: list[Update] = []
        reused = any(c.kind is ChangeKind.NAMESPACE_REUSE for c in diff.changes)
        if lost:
            updates.extend(self._rewrite_updates(store, repo, lost, commit.sha, now, reused=reused))
        if base_sha is None and not reused:
            return None, tuple(updates), diff
        if base_sha is not None:  # a fresh baseline (reuse) restores nothing of the old repo's
            touched = touched_paths(base.files if base else (), head.files)
            fixed, restored = fixed_updates(store, repo.id, head, commit.sha, now, touched, skip=not_fixing)
            updates.extend(fixed)
            diff = demote_restores(diff, restored)  # a restore fixes the old advisory, publishes none
        if diff.severity is None:
            return None, tuple(updates), diff
        related: list[str] = []
        if self.osv is not None:
            related = self.osv.related_ids(head.config, head.generation_config)
        url, hub = canonical_repo_url(repo, repo_url, self.hub_endpoint)
        record = build_record(
            prefix=self.prefix, repo_id=repo.id, repo_url=url, commit_url=commit_url(url, commit.sha),
            branch=repo.branch, commit=commit, parent=base_sha, diff=diff, plan_delta=plan_delta,
            related=related, now=now, repository_url=hub,
        )
        former = former_ids(store, repo.id)  # renamed: findable by its old names too (issue 10)
        if record is not None and former and url.endswith("/" + repo.id):
            base = url[: -len(repo.id)]
            record = also_named(record, [(old, base + old) for old in former], repository_url=hub)
            record.setdefault("database_specific", {})["repo_names"] = [*former, repo.id]
        return record, tuple(updates), diff

    def _rewrite_updates(
        self, store: Store, repo: RepoRecord, lost: tuple[str, ...], new_head: str, now: datetime,
        *, reused: bool = False,
    ) -> list[Update]:
        lost_set = set(lost)
        out: list[Update] = []
        for adv in store.list_advisories(repo.id):
            if adv.sha not in lost_set:
                continue
            if reused:
                out.append((mark_namespace_reused(adv.record, baseline=new_head, now=now), "namespace reused"))
            else:
                out.append((mark_history_rewritten(adv.record, new_head=new_head, now=now), "history rewritten"))
        return out

    def history_rewritten(
        self, store: Store, repo: RepoRecord, lost: tuple[str, ...], new_head: str, *, now: datetime
    ) -> None:
        """A reset with no new commit: mark the advisories of the vanished commits."""
        store.update_advisories(self._rewrite_updates(store, repo, lost, new_head, now))
