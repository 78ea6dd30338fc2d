"""Layer 0: when a later revision undoes an advisory (the OSV lifecycle's ``fixed``). Pure.

Shared by :mod:`advisories.osv` (which writes the event) and :mod:`storage` (which keeps an
index of each open advisory's paths and the content a revision must bring back, issue 17).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tracker.model.core import ChangeKind, FileEntry


def is_open(record: Mapping[str, Any]) -> bool:
    """Neither withdrawn nor fixed: a later revision may still restore its content."""
    if "withdrawn" in record:
        return False
    for affected in record.get("affected") or []:
        for rng in affected.get("ranges") or []:
            if any("fixed" in e for e in rng.get("events", [])):
                return False
    return True


_REPO_EVENTS = {ChangeKind.HISTORY.value, ChangeKind.RENAME.value, ChangeKind.NAMESPACE_REUSE.value}


def changed_paths(record: Mapping[str, Any]) -> list[str]:
    """The repo files whose change gave the advisory its severity (``#...`` dropped).

    History changes name no file; informational entries (no severity, or the pipeline's
    plan / read notes) are not what a later revision has to restore.
    """
    changes = (record.get("database_specific") or {}).get("changes") or []
    paths = {
        str(c["path"]).split("#", 1)[0]
        for c in changes
        if isinstance(c, dict)
        and c.get("kind") not in _REPO_EVENTS
        and c.get("path")
        and c.get("severity")
        and not any(str(t).startswith(("plan.", "read.")) for t in c.get("topics") or [])
    }
    return sorted(paths)


def content_ids(files: Iterable[FileEntry], paths: Iterable[str]) -> dict[str, str | None]:
    """``path -> content id`` (LFS sha256, else git blob id) at one revision; None: absent."""
    by_path = {f.path: f.content_id for f in files}
    return {p: by_path.get(p) for p in paths}


def restores(
    paths: Iterable[str], before: Mapping[str, str | None], later: Mapping[str, str | None]
) -> bool:
    """Whether a later revision put back every changed file as it was before the advisory.

    ``paths`` = :func:`changed_paths` of advisory A; ``before`` = :func:`content_ids` at A's
    parent, ``later`` = at the later revision. A file A added counts as restored when it is
    gone again. Whole-file identity: a re-serialised but equal file is not a restore (no
    false "fixed").
    """
    wanted = list(paths)
    return bool(wanted) and all(before.get(p) == later.get(p) for p in wanted)
