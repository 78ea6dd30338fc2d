"""Advisory lifecycle driven by later revisions: a revision that restores what an advisory's
revision changed adds a ``fixed`` event to that advisory (and bumps its ``modified``), with
the commits the now bounded range holds as its ``versions``.

Only advisories naming a file this revision changed can become restored by it (their other
files are as they were at the parent, where they were not restored), so the store's restore
index is asked for those alone, with their parents' content; of those, it leaves out by index
the ones whose keyed document means something else here (the check below would rule them out
by the same keys). The commits a range holds come from the commit index. No tree parse, no
graph walk, no scan of every open advisory per revision (issue 17).

"Restores" is semantic (issue 11): the files are back byte for byte, or a diff of the
advisory's parent against this revision finds no change with a severity on them (same parsed
JSON, same template text, same tensors; re-serialised or bookkeeping-only differences left).
The restoring changes themselves are then notes, not a new advisory: :func:`demote_restores`
says in their summary what they restore.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from advisories.osv import VERSIONS_MAX, add_fixed, is_open, restores
from advisories.rules import apply_rules
from storage.restore_rows import stored_meaning_key
from storage.store import Store
from tracker.diff import diff_artifacts
from tracker.diff.meaning import KEYED_DOCUMENTS, meaning_key
from tracker.model import Artifacts, Change, FileEntry, RevisionDiff
from tracker.pipeline.kept import Kept
from tracker.pipeline.stored import stored_artifacts

RESTORE_TOPIC = "restore.earlier"


@dataclass(frozen=True, slots=True)
class Restored:
    """Paths this revision put back as they were before advisory ``advisory_id``'s revision."""

    advisory_id: str
    parent: str
    paths: tuple[str, ...]


def touched_paths(base: Iterable[FileEntry], head: Iterable[FileEntry]) -> set[str]:
    """Paths whose content differs between two revisions (added and removed included)."""
    before = {f.path: f.content_id for f in base}
    after = {f.path: f.content_id for f in head}
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def fixed_updates(
    store: Store, repo_id: str, head: Artifacts, head_sha: str, now: datetime, touched: Iterable[str],
    *, skip: frozenset[str] = frozenset(),
) -> tuple[list[tuple[dict[str, Any], str]], list[Restored]]:
    """Edits for every open advisory whose changed files are back to their earlier content
    (byte for byte or semantically), and what each restore covers (for :func:`demote_restores`).

    The candidates are the open advisories naming a touched path less those the index rules
    out by content id and meaning key (stored with each row); each left costs a comparison of
    content ids and of meaning keys (kept per content id), and only one that passes both is
    read and, when its bytes differ, diffed in full."""
    out: list[tuple[dict[str, Any], str]] = []
    restored: list[Restored] = []
    parents: dict[str, Artifacts | None] = {}
    head_content = {f.path: f.content_id for f in head.files}
    touched = set(touched)
    head_keys: dict[str, str | None] = {}
    probe = restore_probe(head, head_content, touched, head_keys)
    for adv_id, before in sorted(store.restore_candidates(repo_id, touched, probe).items()):
        if not may_restore(store, before, head, head_content, head_keys):
            continue
        same = restores(before, before, {p: head_content.get(p) for p in before})
        adv = store.get_advisory(adv_id)
        if adv is None or adv.sha == head_sha or adv_id in skip or not is_open(adv.record):
            continue
        parent = str((adv.record.get("database_specific") or {}).get("parent") or "")
        if not same and parent:
            if parent not in parents:
                parents[parent] = stored_artifacts(store, repo_id, parent)
            same = _semantically_equal(parents[parent], head, parent, head_sha, list(before))
        if not same:
            continue
        # head is not stored yet: what the range holds now is what it holds once head fixes it
        held = store.commits_held(adv_id, limit=VERSIONS_MAX + 1)
        out.append((add_fixed(adv.record, head_sha, now, affected=held), f"restored by {head_sha}"))
        restored.append(Restored(adv_id, parent, tuple(sorted(before))))
    return out, restored


def restore_probe(head: Artifacts, head_content: Mapping[str, str], touched: Iterable[str],
                  head_keys: dict[str, str | None]) -> dict[str, tuple[str | None, str | None]]:
    """``path -> (content id, meaning key)`` at ``head`` of its touched keyed documents, what
    the restore index matches its rows with; the keys are kept in ``head_keys`` too."""
    wanted = set(touched)
    for path, attr in KEYED_DOCUMENTS.items():
        if path in wanted and path not in head_keys:
            head_keys[path] = meaning_key(path, getattr(head, attr))
    return {path: (head_content.get(path), head_keys[path]) for path in KEYED_DOCUMENTS if path in wanted}


def may_restore(store: Store, before: Mapping[str, str | None], head: Artifacts,
                head_content: Mapping[str, str], head_keys: dict[str, str | None]) -> bool:
    """The cheap checks of a candidate: its files are back byte for byte, or no keyed document
    of them means something else at ``head`` (then only the full diff can tell)."""
    return restores(before, before, {p: head_content.get(p) for p in before}) or not _meaning_differs(
        store, before, head, head_keys)


def _meaning_differs(store: Store, before: Mapping[str, str | None], head: Artifacts,
                     head_keys: dict[str, str | None]) -> bool:
    """Whether a keyed document (:mod:`tracker.diff.meaning`) of the advisory's paths means
    something else at ``head`` than at the advisory's parent: then no diff can find a restore."""
    for path, content in before.items():
        attr = KEYED_DOCUMENTS.get(path)
        if attr is None or not content:
            continue
        if path not in head_keys:
            head_keys[path] = meaning_key(path, getattr(head, attr))
        now = head_keys[path]
        then = _parent_key(store, path, content)
        if now is not None and then is not None and now != then:
            return True
    return False


#: Meaning keys of stored documents by (path, content id): content never changes under its id,
#: so a key is computed once per process.
_PARENT_KEYS: Kept[tuple[str, str], str | None] = Kept(16_384)
_UNSEEN = object()


def _parent_key(store: Store, path: str, content: str) -> str | None:
    found = _PARENT_KEYS.get((path, content), _UNSEEN)
    if found is not _UNSEEN:
        return found  # type: ignore[return-value]
    raw = store.get_blob(content) if content.startswith("git:") else None  # small files: by blob id
    if raw is None:  # not held (yet): no key, the full diff decides
        return None
    key = stored_meaning_key(path, raw)
    _PARENT_KEYS.put((path, content), key)
    return key


def _semantically_equal(before: Artifacts | None, head: Artifacts, before_sha: str, head_sha: str,
                        paths: Sequence[str]) -> bool:
    """No change with a severity on ``paths`` between the two revisions' parsed artifacts."""
    if before is None:
        return False
    wanted = set(paths)
    diff = apply_rules(diff_artifacts(before, head, base_sha=before_sha, head_sha=head_sha))
    return not any(c.severity is not None and _paths_of(c) & wanted for c in diff.changes)


def _paths_of(change: Change) -> set[str]:
    paths = {change.path.split("#", 1)[0]}
    sources = change.detail.get("sources") if isinstance(change.detail, Mapping) else None
    if isinstance(sources, Mapping):
        paths.update(p for p in sources.values() if isinstance(p, str))
    return paths


def demote_restores(diff: RevisionDiff, restored: Sequence[Restored]) -> RevisionDiff:
    """The revision's changes that only restore earlier content become notes that say so.

    They keep their detail; their severity goes (the earlier advisory is fixed instead), so a
    revert publishes no advisory of its own.
    """
    by_path: dict[str, Restored] = {}
    for r in restored:
        for p in r.paths:
            by_path.setdefault(p, r)
    changes = []
    for c in diff.changes:
        hit = next((by_path[p] for p in sorted(_paths_of(c)) if p in by_path), None)
        if c.severity is None or hit is None:
            changes.append(c)
            continue
        summary = f"restores {c.path} as it was at {hit.parent[:12]} (fixes {hit.advisory_id}): {c.summary}"
        changes.append(replace(c, summary=summary[:500], topics=(RESTORE_TOPIC,), severity=None))
    return replace(diff, changes=tuple(changes))
