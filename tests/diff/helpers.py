"""Test helper: diff two file trees end to end, and compare a diff with its inverse."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from advisories.rules import apply_rules
from tests.extract.snapshots import snapshot_of
from tracker.diff import diff_artifacts
from tracker.diff.topics import swap_op
from tracker.extract import extract_artifacts
from tracker.model import Change, RevisionDiff

BASE, HEAD = "a" * 40, "b" * 40
_SWAP = {"added": "removed", "removed": "added"}


def diff_files(
    before: Mapping[str, bytes] | None,
    after: Mapping[str, bytes],
    *,
    headers_before: Mapping[str, bytes] | None = None,
    headers_after: Mapping[str, bytes] | None = None,
) -> RevisionDiff:
    """Snapshot -> extract -> diff -> rules, as the pipeline runs them."""
    base = (
        None
        if before is None
        else extract_artifacts(snapshot_of(before, BASE, headers=headers_before))
    )
    head = extract_artifacts(snapshot_of(after, HEAD, headers=headers_after))
    return apply_rules(
        diff_artifacts(base, head, base_sha=None if before is None else BASE, head_sha=HEAD)
    )


def only(diff: RevisionDiff, path: str, kind: str | None = None) -> Change:
    found = [c for c in diff.changes if c.path == path and (kind is None or c.kind.value == kind)]
    assert len(found) == 1, [(c.kind, c.path, c.summary) for c in diff.changes]
    return found[0]


def _field(f: Mapping[str, Any], invert: bool) -> tuple[Any, ...]:
    old, new = json.dumps(f.get("old")), json.dumps(f.get("new"))
    op, topic = f["op"], f.get("topic", "")
    if invert:
        old, new, op, topic = new, old, _SWAP.get(op, op), swap_op(topic)
    return (f["path"], op, old, new, topic)


def view(diff: RevisionDiff, *, invert: bool = False) -> list[tuple[Any, ...]]:
    """What must match between diff(b, a) and the inverse of diff(a, b)."""
    out = []
    for c in diff.changes:
        op = c.detail.get("op")
        topics = c.topics
        if invert:
            op = _SWAP.get(op, op) if isinstance(op, str) else op
            topics = tuple(swap_op(t) for t in topics)
        fields = tuple(sorted(_field(f, invert) for f in c.detail.get("fields", [])))
        out.append((c.kind.value, c.path, tuple(sorted(topics)), op, fields))
    return sorted(out, key=repr)
