"""The restore index's meaning keys (migration 0013, issue 17): given the revision's content
and keys, the lookup leaves out only advisories the lifecycle's own checks rule out.

A seeded history of real revisions (trees and blobs through ``record_revision``) in which
config.json, generation_config.json and tokenizer_config.json move between a few versions:
some re-serialised or bookkeeping-only (same key, other bytes), some not valid JSON, one never
held as a blob (no key), files added and removed. For random revisions the new candidate set
is compared with the old one (every open advisory naming a touched path).
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from sqlalchemy import inspect, select

from advisories.osv import build_record
from storage import restore_rows
from storage.engine import alembic_config, migrate
from storage.records import NewRevision
from storage.tables import AdvisoryRestoreRow
from storage.trees import serialise_tree
from tracker.errors import InvalidContent
from tracker.extract.jsonsafe import load_json
from tracker.model import (
    Artifacts,
    Change,
    ChangeKind,
    CommitInfo,
    FileEntry,
    RevisionDiff,
    Severity,
)
from tracker.pipeline.lifecycle import may_restore, restore_probe

REPO = "org/keyed"
WHEN = datetime(2024, 1, 1, tzinfo=UTC)
UNHELD = json.dumps({"temperature": 0.9}).encode()  # never stored as a blob: its rows have no key
POOLS: dict[str, list[bytes | None]] = {
    "generation_config.json": [
        json.dumps({"temperature": 0.7}).encode(),
        json.dumps({"temperature": 0.7, "transformers_version": "4.40.0"}, indent=2).encode(),  # same key
        json.dumps({"temperature": 0.8}).encode(),
        json.dumps({"top_p": 0.9, "_from_model_config": True}).encode(),
        b"{not json",
        b"[1, 2]",
        UNHELD,
        None,  # absent
    ],
    "config.json": [
        json.dumps({"model_type": "llama", "eos_token_id": 2}).encode(),
        json.dumps({"model_type": "llama", "eos_token_id": 2, "_name_or_path": "x"}).encode(),  # same key
        json.dumps({"model_type": "llama", "eos_token_id": 3}).encode(),
    ],
    "tokenizer_config.json": [json.dumps({"eos_token": "</s>"}).encode(), json.dumps({"eos_token": "<eos>"}).encode()],
}
ATTRS = {"config.json": "config", "generation_config.json": "generation_config"}


def _sha(i: int) -> str:
    return f"{i:040x}"


def _files(chosen: dict[str, bytes | None]) -> tuple[FileEntry, ...]:
    return tuple(FileEntry(p, len(raw), hashlib.sha1(raw).hexdigest()) for p, raw in sorted(chosen.items())
                 if raw is not None)


def _draw(rng: random.Random) -> dict[str, bytes | None]:
    return {p: rng.choice(pool) for p, pool in POOLS.items()}


def _record(i: int, paths: list[str]) -> dict[str, Any]:
    changes = tuple(Change(ChangeKind.CONFIG, p, f"{p} changed", severity=Severity.LOW) for p in paths)
    commit = CommitInfo(sha=_sha(i), parents=(_sha(i - 1),), committed_at=WHEN, title=str(i))
    record = build_record(
        prefix="x_K", repo_id=REPO, repo_url=f"https://huggingface.co/{REPO}", commit_url="", branch="main",
        commit=commit, parent=_sha(i - 1), diff=RevisionDiff(base=_sha(i - 1), head=_sha(i), changes=changes),
        plan_delta=None, related=(), now=WHEN,
    )
    assert record is not None
    return record


def _seed(store: Any, n: int, seed: int) -> random.Random:
    """``n`` revisions after a first one; each changing a file gets an advisory naming some of them."""
    rng = random.Random(seed)
    store.add_repo(REPO, source=REPO, source_kind="hub")
    before = _draw(rng)
    for i in range(n + 1):
        now = _draw(rng) if i else before
        changed = sorted(p for p in POOLS if now[p] != before[p])
        named = sorted(rng.sample(changed, rng.randint(1, len(changed)))) if changed and i else []
        files = _files(now)
        blobs = {f.content_id: now[f.path] for f in files if now[f.path] != UNHELD}
        parents = (_sha(i - 1),) if i else ()
        assert store.record_revision(NewRevision(
            repo_id=REPO, sha=_sha(i), parent=parents[0] if parents else None, parents=parents, committed_at=WHEN,
            title=str(i), message="", authors=(), changes=(), severity=None, tree=serialise_tree(files),
            blobs=blobs, advisory=_record(i, named) if named else None, new_head=_sha(i),  # type: ignore[arg-type]
        ))
        before = now
    return rng


def _parsed(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return load_json(raw, max_bytes=1 << 20)
    except InvalidContent:
        return None


def _rows(store: Any) -> list[tuple[str, str, str, str | None]]:
    X = AdvisoryRestoreRow.__table__.c  # type: ignore[attr-defined]
    with store.engine.connect() as db:
        return sorted(db.execute(select(X.advisory_id, X.path, X.content_id, X.meaning_key)).all())  # type: ignore[arg-type]


def test_the_keyed_lookup_keeps_every_candidate_the_lifecycle_keeps(store: Any) -> None:
    rng = _seed(store, 120, seed=17)
    left_out = kept = by_key_only = 0
    for _ in range(150):
        chosen = _draw(rng)
        files = _files(chosen)
        docs = {a: _parsed(chosen[p]) for p, a in ATTRS.items()}
        if rng.random() < 0.25:  # a parse that is not the bytes' own: equal bytes must still be found
            docs["generation_config"] = {"temperature": 0.1}
        head = Artifacts(files=files, **docs)
        content = {f.path: f.content_id for f in files}
        touched = set(rng.sample(sorted(POOLS), rng.randint(1, len(POOLS))))
        probe = restore_probe(head, content, touched, {})
        old = store.restore_candidates(REPO, touched)
        new = store.restore_candidates(REPO, touched, probe)
        assert new.keys() <= old.keys() and all(new[a] == old[a] for a in new)
        keep_old = {a for a, before in old.items() if may_restore(store, before, head, content, {})}
        keep_new = {a for a, before in new.items() if may_restore(store, before, head, content, {})}
        assert keep_new == keep_old
        left_out += len(old) - len(new)
        kept += len(keep_new)
        by_key_only += sum(1 for a in keep_new if any(content.get(p) != c for p, c in new[a].items() if c))
    # the comparison means something: many left out, and kept ones by bytes and by key alone
    assert left_out > 1000 and kept > 100 and by_key_only > 20, (left_out, kept, by_key_only)
    rows = _rows(store)
    keyed = [r for r in rows if r[1] in ATTRS and r[2]]
    assert any(r[3] is None for r in keyed) and any(r[3] is not None for r in keyed)
    assert all(r[3] is None for r in rows if r[1] not in ATTRS)


def test_an_upgraded_database_gets_the_keys_written_live(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Migration 0013 on a database 0012 left: the column and its indexes added, and every
    row's key backfilled (a few rows at a time) as a live write would have stored it."""
    _seed(store, 40, seed=5)
    live = _rows(store)
    assert sum(1 for r in live if r[3] is not None) > 20
    command.downgrade(alembic_config(store.engine), "0012")
    columns = {c["name"] for c in inspect(store.engine).get_columns("advisory_restore")}
    assert "meaning_key" not in columns and "content_id" in columns
    monkeypatch.setattr(restore_rows, "BACKFILL_BATCH", 3)
    migrate(store.engine)
    assert _rows(store) == live
    indexes = {i["name"] for i in inspect(store.engine).get_indexes("advisory_restore")}
    assert {"ix_advisory_restore_repo_path_content", "ix_advisory_restore_repo_path_key"} <= indexes
    with store.engine.begin() as db:  # nothing left to fill: a second run changes nothing
        assert restore_rows.backfill_keys(db) == 0
