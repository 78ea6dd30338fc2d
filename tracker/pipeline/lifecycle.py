"""Advisory lifecycle driven by later revisions: a revision that restores what an advisory's
revision changed adds a ``fixed`` event to that advisory (and bumps its ``modified``), with
the commits the now bounded range holds as its ``versions``.

Only advisories naming a file this revision changed can become restored by it (their other
files are as they were at the parent, where they were not restored), so the store's restore
index is asked for those alone, with their parents' content; the commits a range holds come
from the commit index. No tree parse, no graph walk, no scan of every open advisory per
revision (issue 17).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from advisories.osv import VERSIONS_MAX, add_fixed, content_ids, is_open, restores
from storage.store import Store
from tracker.model import Artifacts, FileEntry


def touched_paths(base: Iterable[FileEntry], head: Iterable[FileEntry]) -> set[str]:
    """Paths whose content differs between two revisions (added and removed included)."""
    before = {f.path: f.content_id for f in base}
    after = {f.path: f.content_id for f in head}
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def fixed_updates(
    store: Store, repo_id: str, head: Artifacts, head_sha: str, now: datetime, touched: Iterable[str]
) -> list[tuple[dict[str, Any], str]]:
    """Edits for every open advisory whose changed files are back to their earlier content."""
    out: list[tuple[dict[str, Any], str]] = []
    for adv_id, before in sorted(store.restore_candidates(repo_id, touched).items()):
        if not restores(before, before, content_ids(head.files, before)):
            continue
        adv = store.get_advisory(adv_id)
        if adv is None or adv.sha == head_sha or not is_open(adv.record):
            continue
        # head is not stored yet: what the range holds now is what it holds once head fixes it
        held = store.commits_held(adv_id, limit=VERSIONS_MAX + 1)
        out.append((add_fixed(adv.record, head_sha, now, affected=held), f"restored by {head_sha}"))
    return out
