"""The restore index: for each open advisory, its changed paths and the content each had at
the advisory's parent. A later revision fixes the advisory when it brings every one back;
the lifecycle asks only for advisories naming a path the revision changed, instead of
re-reading every open advisory and its parent's tree per revision (issue 17).

Rows are written with the advisory (the parent's tree is read once, then) and dropped when
the advisory is fixed or withdrawn. Runs inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, insert, select
from sqlmodel import col

from storage.tables import AdvisoryRestoreRow, BlobRow, RevisionRow
from storage.trees import parse_tree
from tracker.model import FileEntry
from tracker.model.restore import changed_paths, content_ids, is_open

X = AdvisoryRestoreRow.__table__.c  # type: ignore[attr-defined]
R = RevisionRow.__table__.c  # type: ignore[attr-defined]
B = BlobRow.__table__.c  # type: ignore[attr-defined]
ABSENT = ""  # the content id of a file the parent did not have


def index_restore(db: Any, repo_id: str, record: Mapping[str, Any], *, new: bool,
                  parent_files: tuple[str, Sequence[FileEntry]] | None = None) -> None:
    """Keep ``record``'s rows in step with it: written when new, dropped once it is closed.

    ``parent_files``: (sha, its files) where the caller holds a revision's tree; when that is
    the record's parent, its stored tree is not read (and parsed) again."""
    if not new and is_open(record):
        return  # an open record's changed paths and parent never change
    db.execute(delete(AdvisoryRestoreRow.__table__).where(X.advisory_id == record["id"]))  # type: ignore[arg-type]
    if not is_open(record):
        return
    parent = str((record.get("database_specific") or {}).get("parent") or "")
    paths = changed_paths(record)
    if not parent or not paths:
        return
    if parent_files is not None and parent_files[0] == parent:
        files: Sequence[FileEntry] = parent_files[1]
    else:
        data = db.execute(
            select(B.data).join(RevisionRow.__table__, R.tree_key == B.key).where(R.repo_id == repo_id, R.sha == parent)  # type: ignore[arg-type]
        ).scalar()
        if data is None:
            return  # the parent's tree was never stored: nothing to compare with
        files = parse_tree(data)
    before = content_ids(files, paths)
    db.execute(insert(AdvisoryRestoreRow.__table__), [  # type: ignore[arg-type]
        {"advisory_id": record["id"], "repo_id": repo_id, "path": p, "content_id": before[p] or ABSENT}
        for p in paths
    ])


def candidates(db: Any, repo_id: str, touched: Iterable[str]) -> dict[str, dict[str, str | None]]:
    """``advisory id -> {path: content at its parent}`` of open advisories naming a touched path."""
    paths = sorted(set(touched))
    if not paths:
        return {}
    hit = select(X.advisory_id).where(X.repo_id == repo_id, col(X.path).in_(paths))
    out: dict[str, dict[str, str | None]] = {}
    for adv_id, path, content in db.execute(
        select(X.advisory_id, X.path, X.content_id).where(col(X.advisory_id).in_(hit))
    ).all():
        out.setdefault(adv_id, {})[path] = content or None
    return out


def rebuild(db: Any) -> None:
    """Rows for every open advisory (the migration that adds the index)."""
    from storage.tables import AdvisoryRow

    for repo_id, record in db.execute(select(AdvisoryRow.__table__.c.repo_id, AdvisoryRow.__table__.c.record)).all():  # type: ignore[attr-defined]
        index_restore(db, repo_id, record, new=True)
