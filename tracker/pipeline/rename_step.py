"""Stages 6-7 for a repo the Hub renamed (issue 10 point 8): the repo id moves with its history,
the old id stays an alias, every record names the repo under both ids, and the rename is a
change (HIGH) on the head revision with its own advisory.

The Hub answers the old id with a 307 to the new one, which clients follow silently; the old
name is then free for anyone to register, and whoever loads by it gets their files.
"""

from __future__ import annotations

import logging
from datetime import datetime

from advisories.osv import add_repo_name, build_record
from advisories.rules import apply_rules
from storage.records import RepoRecord
from storage.renames import RenameEvent, rename_repo
from storage.store import Store
from tracker.diff import rename_change
from tracker.model import CommitInfo, RevisionDiff
from tracker.pipeline.advise_step import AdviseStep, canonical_repo_url, commit_url

log = logging.getLogger("hubwatch.pipeline")


def record_rename(
    store: Store, repo: RepoRecord, new_id: str, source_url: str, advise: AdviseStep, *, now: datetime
) -> RepoRecord:
    """Move ``repo`` to ``new_id``; the repo as stored under its new id."""
    old_id = repo.id
    # the URL records name: the source's, with the new id in place of the old one
    url = source_url[: -len(old_id)] + new_id if source_url.endswith("/" + old_id) else ""
    moved = RepoRecord(**{**{f: getattr(repo, f) for f in repo.__dataclass_fields__}, "id": new_id,
                          "repo_url": None if repo.repo_url and repo.repo_url.endswith(old_id) else repo.repo_url})
    new_url, hub = canonical_repo_url(moved, url, advise.hub_endpoint)
    event = None
    head = store.get_revision(old_id, repo.head_sha) if repo.head_sha else None
    if head is not None:
        commit = CommitInfo(head.sha, head.parents, head.committed_at, head.title, head.message, head.authors)
        diff = apply_rules(RevisionDiff(base=head.parent, head=head.sha, changes=(rename_change(old_id, new_id),)))
        record = build_record(
            prefix=advise.prefix, repo_id=new_id, repo_url=new_url, commit_url=commit_url(new_url, head.sha) or "",
            branch=repo.branch, commit=commit, parent=head.parent, diff=diff, plan_delta=None, related=(),
            now=now, repository_url=hub,
        )
        event = RenameEvent(head.sha, diff.changes[0], record)
    log.warning("%s was renamed on the Hub to %s: moving its history and advisories", old_id, new_id)
    renamed = rename_repo(
        store, old_id, new_id, now=now, event=event,
        edit_record=lambda r: add_repo_name(r, repo_id=new_id, repo_url=new_url, now=now, repository_url=hub),
    )
    return renamed if renamed is not None else moved
