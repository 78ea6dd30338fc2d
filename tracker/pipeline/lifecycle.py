"""Advisory lifecycle driven by later revisions: a revision that restores what an advisory's
revision changed adds a ``fixed`` event to that advisory (and bumps its ``modified``), with
the commits the now bounded range holds as its ``versions``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from advisories.osv import add_fixed, changed_paths, content_ids, is_open, restores
from storage.store import Store
from storage.trees import parse_tree
from tracker.model import Artifacts, FileEntry

#: How many advisories of a repo are looked at per revision (most recently modified first).
MAX_CHECKED = 200


def fixed_updates(
    store: Store, repo_id: str, head: Artifacts, head_sha: str, now: datetime
) -> list[tuple[dict[str, Any], str]]:
    """Edits for every open advisory whose changed files are back to their earlier content."""
    trees: dict[str, tuple[FileEntry, ...] | None] = {}
    graph: dict[str, tuple[str, ...]] | None = None
    out: list[tuple[dict[str, Any], str]] = []
    for adv in store.list_advisories(repo_id, limit=MAX_CHECKED):
        record = adv.record
        if adv.sha == head_sha or not is_open(record):
            continue
        parent = (record.get("database_specific") or {}).get("parent")
        paths = changed_paths(record)
        if not parent or not paths:
            continue
        if parent not in trees:
            rev = store.get_revision(repo_id, parent)
            data = store.get_blob(rev.tree_key) if rev is not None and rev.tree_key else None
            trees[parent] = None if data is None else parse_tree(data)
        before = trees[parent]
        if before is None:
            continue
        if restores(paths, content_ids(before, paths), content_ids(head.files, paths)):
            if graph is None:
                graph = store.commit_graph(repo_id)
            held = commits_between(graph, adv.sha, head_sha)
            out.append((add_fixed(record, head_sha, now, affected=held), f"restored by {head_sha}"))
    return out


def commits_between(
    graph: Mapping[str, Sequence[str]], introduced: str, fixed: str
) -> list[str]:
    """The stored commits a GIT range ``introduced``..``fixed`` holds: ``introduced`` and its
    descendants, less those that contain ``fixed`` (the spec's evaluation over the DAG)."""
    children: dict[str, list[str]] = {}
    for sha, parents in graph.items():
        for p in parents:
            children.setdefault(p, []).append(sha)

    def descendants(root: str) -> set[str]:
        seen, stack = {root}, [root]
        while stack:
            for child in children.get(stack.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        return seen

    if introduced not in graph:
        return []
    return sorted(descendants(introduced) - descendants(fixed))
