"""The restore index: open advisories by path and their parents' content (issue 17).

Revisions with real trees and records from ``build_record`` go through ``record_revision``;
the lifecycle's candidates are exactly the open advisories naming a touched path, however
many advisories the repo has, and a fixed or withdrawn advisory leaves the index.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete

from advisories.osv import add_fixed, build_record, withdraw
from storage import restore_rows
from storage.records import NewRevision
from storage.tables import AdvisoryRestoreRow
from storage.trees import serialise_tree
from tracker.model import Change, ChangeKind, CommitInfo, FileEntry, RevisionDiff, Severity

REPO = "org/model"
WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def _sha(i: int) -> str:
    return f"{i:040x}"


def _files(config: int, tok: int) -> tuple[FileEntry, ...]:
    return (
        FileEntry("config.json", 10, f"{config:040x}"),
        FileEntry("tokenizer_config.json", 10, f"{tok + 1000:040x}"),
    )


def _record(i: int, path: str) -> dict[str, Any]:
    change = Change(ChangeKind.CONFIG, path, f"{path} changed", severity=Severity.LOW)
    commit = CommitInfo(sha=_sha(i), parents=(_sha(i - 1),), committed_at=WHEN, title=str(i))
    record = build_record(
        prefix="x_T", repo_id=REPO, repo_url=f"https://huggingface.co/{REPO}", commit_url="", branch="main",
        commit=commit, parent=_sha(i - 1), diff=RevisionDiff(base=_sha(i - 1), head=_sha(i), changes=(change,)),
        plan_delta=None, related=(), now=WHEN,
    )
    assert record is not None
    return record


def _store(store: Any, i: int, files: tuple[FileEntry, ...], record: dict[str, Any] | None) -> None:
    parents = (_sha(i - 1),) if i > 0 else ()
    assert store.record_revision(NewRevision(
        repo_id=REPO, sha=_sha(i), parent=parents[0] if parents else None, parents=parents, committed_at=WHEN,
        title=str(i), message="", authors=(), changes=(), severity=None, tree=serialise_tree(files),
        advisory=record, new_head=_sha(i),
    ))


def test_candidates_are_the_open_advisories_naming_a_touched_path(store: Any) -> None:
    store.add_repo(REPO, source=REPO, source_kind="hub")
    _store(store, 0, _files(0, 0), None)
    records = {}
    for i in range(1, 211):  # 210 advisories, each moving config.json one step on
        records[i] = _record(i, "config.json")
        _store(store, i, _files(i, 0), records[i])
    tok = _record(211, "tokenizer_config.json")
    _store(store, 211, _files(210, 1), tok)
    found = store.restore_candidates(REPO, {"tokenizer_config.json"})
    assert found == {tok["id"]: {"tokenizer_config.json": "git:" + f"{1000:040x}"}}
    config = store.restore_candidates(REPO, {"config.json"})
    assert len(config) == 210  # the oldest ones too (the old scan stopped at 200)
    assert config[records[1]["id"]] == {"config.json": "git:" + _sha(0)}
    assert store.restore_candidates(REPO, {"README.md"}) == {}

    store.update_advisories([(add_fixed(records[1], _sha(212), WHEN), "restored")])
    store.update_advisories([(withdraw(records[2], "test", WHEN), "withdrawn")])
    left = store.restore_candidates(REPO, {"config.json"})
    assert len(left) == 208 and records[1]["id"] not in left and records[2]["id"] not in left

    # the migration's rebuild lands on the same rows
    with store.engine.begin() as conn:
        conn.execute(delete(AdvisoryRestoreRow))
        restore_rows.rebuild(conn)
    assert store.restore_candidates(REPO, {"config.json"}) == left
