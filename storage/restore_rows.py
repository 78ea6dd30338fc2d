"""The restore index: for each open advisory, its changed paths and the content each had at
the advisory's parent. A later revision fixes the advisory when it brings every one back;
the lifecycle asks only for advisories naming a path the revision changed, instead of
re-reading every open advisory and its parent's tree per revision (issue 17).

A keyed document's row (:data:`tracker.diff.meaning.KEYED_DOCUMENTS`) also holds the meaning
key of its content at the parent, so the lookup can leave out, by index, the advisories whose
document means something else at the revision asking: in a long history nearly every open
advisory names generation_config.json, and reading them all per revision made the per-commit
cost grow with the history. NULL: no key (none defined, the blob not held, or a row from
before migration 0013), which leaves nothing out.

Rows are written with the advisory (the parent's tree is read once, then) and dropped when
the advisory is fixed or withdrawn. Runs inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, union, update
from sqlmodel import col

from storage.tables import AdvisoryRestoreRow, BlobRow, RevisionRow
from storage.trees import parse_tree
from tracker.diff.meaning import KEYED_DOCUMENTS, meaning_key
from tracker.errors import InvalidContent
from tracker.extract import paths as extract_paths
from tracker.extract.jsonsafe import load_json
from tracker.model import FileEntry
from tracker.model.restore import changed_paths, content_ids, is_open

X = AdvisoryRestoreRow.__table__.c  # type: ignore[attr-defined]
R = RevisionRow.__table__.c  # type: ignore[attr-defined]
B = BlobRow.__table__.c  # type: ignore[attr-defined]
ABSENT = ""  # the content id of a file the parent did not have


BACKFILL_BATCH = 200  # rows (and at most as many small-file blobs) held at once by the backfill


def stored_meaning_key(path: str, raw: bytes) -> str | None:
    """The meaning key of a stored document's bytes (None: none defined, or not valid JSON);
    the one definition for the index and the lifecycle's own check of its candidates."""
    if path not in KEYED_DOCUMENTS:
        return None
    try:
        return meaning_key(path, load_json(raw, max_bytes=extract_paths.max_content_bytes(path)))
    except InvalidContent:
        return None


def keyed_blob(path: str, content: str | None) -> bool:
    """Whether ``content`` at ``path`` has a key to look for: a keyed document held by blob id
    (small files are stored by it)."""
    return path in KEYED_DOCUMENTS and bool(content) and str(content).startswith("git:")


def index_restore(db: Any, repo_id: str, record: Mapping[str, Any], *, new: bool,
                  parent_files: tuple[str, Sequence[FileEntry]] | None = None,
                  meaning_keys: bool = True) -> None:
    """Keep ``record``'s rows in step with it: written when new, dropped once it is closed.

    ``parent_files``: (sha, its files) where the caller holds a revision's tree; when that is
    the record's parent, its stored tree is not read (and parsed) again. ``meaning_keys``
    False: rows without keys (migration 0004 runs before the column exists; 0013 fills them)."""
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
    rows: list[dict[str, Any]] = [
        {"advisory_id": record["id"], "repo_id": repo_id, "path": p, "content_id": before[p] or ABSENT}
        for p in paths
    ]
    if meaning_keys:
        keys = _keys(db, [(p, before[p]) for p in paths])
        for row in rows:
            row["meaning_key"] = keys.get((row["path"], row["content_id"]))
    db.execute(insert(AdvisoryRestoreRow.__table__), rows)  # type: ignore[arg-type]


def _keys(db: Any, held: Iterable[tuple[str, str | None]]) -> dict[tuple[str, str], str | None]:
    """``(path, content id) -> meaning key`` of the keyed documents among ``held``, their
    blobs read in one statement (a blob not stored has no key)."""
    wanted = {(p, str(c)) for p, c in held if keyed_blob(p, c)}
    if not wanted:
        return {}
    blobs = dict(db.execute(select(B.key, B.data).where(col(B.key).in_(sorted({c for _, c in wanted})))).all())
    return {(p, c): stored_meaning_key(p, bytes(blobs[c])) for p, c in wanted if c in blobs}


def candidates(db: Any, repo_id: str, touched: Iterable[str],
               head: Mapping[str, tuple[str | None, str | None]] | None = None) -> dict[str, dict[str, str | None]]:
    """``advisory id -> {path: content at its parent}`` of open advisories naming a touched path.

    ``head``: ``path -> (content id, meaning key)`` at the revision asking, for its touched
    keyed documents. Then an advisory is left out when on every touched path it names the
    revision has other content and a document whose known key differs from the row's: such an
    advisory cannot be restored by it (:func:`tracker.pipeline.lifecycle.fixed_updates` would
    rule it out by the same keys), and each kept one is one the old lookup returned."""
    paths = sorted(set(touched))
    if not paths:
        return {}
    plain, keyed = [], []
    for p in paths:
        content, key = (head or {}).get(p, (None, None))
        if key is None or p not in KEYED_DOCUMENTS:
            plain.append(p)  # every row of the path may be restored
        else:
            keyed.append((p, content or ABSENT, key))
    hits = [select(X.advisory_id).where(X.repo_id == repo_id, col(X.path).in_(plain))] if plain else []
    for p, content, key in keyed:  # each an indexed probe: (repo, path, content) or (repo, path, key)
        at = (X.repo_id == repo_id, X.path == p)
        hits += [select(X.advisory_id).where(*at, X.content_id == content),
                 select(X.advisory_id).where(*at, X.meaning_key == key),
                 select(X.advisory_id).where(*at, col(X.meaning_key).is_(None))]
    hit = hits[0] if len(hits) == 1 else union(*hits)
    out: dict[str, dict[str, str | None]] = {}
    for adv_id, path, content in db.execute(
        select(X.advisory_id, X.path, X.content_id).where(col(X.advisory_id).in_(hit))
    ).all():
        out.setdefault(adv_id, {})[path] = content or None
    return out


def rebuild(db: Any, *, meaning_keys: bool = True) -> None:
    """Rows for every open advisory (the migration that adds the index)."""
    from storage.tables import AdvisoryRow

    for repo_id, record in db.execute(select(AdvisoryRow.__table__.c.repo_id, AdvisoryRow.__table__.c.record)).all():  # type: ignore[attr-defined]
        index_restore(db, repo_id, record, new=True, meaning_keys=meaning_keys)


def backfill_keys(db: Any) -> int:
    """Keys for the keyed rows that have none (migration 0013), :data:`BACKFILL_BATCH` rows
    and their blobs at a time, walked by id; how many rows got one."""
    done, after = 0, 0
    while True:
        batch = db.execute(
            select(X.id, X.path, X.content_id)
            .where(X.id > after, col(X.path).in_(sorted(KEYED_DOCUMENTS)), col(X.meaning_key).is_(None),
                   col(X.content_id).like("git:%"))
            .order_by(X.id).limit(BACKFILL_BATCH)
        ).all()
        if not batch:
            return done
        after = batch[-1][0]
        keys = _keys(db, [(p, c) for _, p, c in batch])
        found = [{"row": i, "key": keys[(p, c)]} for i, p, c in batch if keys.get((p, c)) is not None]
        if found:
            db.execute(update(AdvisoryRestoreRow.__table__).where(X.id == bindparam("row"))  # type: ignore[arg-type]
                       .values(meaning_key=bindparam("key")), found)
            done += len(found)
