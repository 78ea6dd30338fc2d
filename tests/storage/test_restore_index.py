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


def _rows(store: Any, advisory_id: str) -> list[tuple[str, str]]:
    from sqlalchemy import select

    X = AdvisoryRestoreRow.__table__.c  # type: ignore[attr-defined]
    with store.engine.connect() as db:
        return sorted((p, c) for p, c in db.execute(select(X.path, X.content_id).where(X.advisory_id == advisory_id)))


def test_the_parents_files_from_the_check_give_the_rows_the_stored_tree_gives(store: Any) -> None:
    """A new advisory's rows come from the parent's files the check holds (no read of its
    stored tree) only when they are that parent's; either way the rows are the same."""
    from dataclasses import replace

    parent_files = (*_files(0, 0), FileEntry("model.safetensors", 10, f"{7:040x}", lfs_sha256="ab" * 32))
    rows = {}
    for repo, given in (("a/read", None), ("b/given", (_sha(0), parent_files)),
                        ("c/other-sha", (_sha(5), _files(9, 9)))):
        store.add_repo(repo, source=repo, source_kind="hub")
        assert store.record_revision(NewRevision(
            repo_id=repo, sha=_sha(0), parent=None, parents=(), committed_at=WHEN, title="0", message="",
            authors=(), changes=(), severity=None, tree=serialise_tree(parent_files), new_head=_sha(0)))
        record = _record(1, "config.json")
        record = {**record, "id": f"{record['id']}-{repo[0]}",
                  "database_specific": {**record["database_specific"],
                                        "changes": [*record["database_specific"]["changes"],
                                                    {**record["database_specific"]["changes"][0],
                                                     "path": "model.safetensors"}]}}
        rev = NewRevision(
            repo_id=repo, sha=_sha(1), parent=_sha(0), parents=(_sha(0),), committed_at=WHEN, title="1", message="",
            authors=(), changes=(), severity=None, tree=serialise_tree(_files(1, 0)), advisory=record,
            new_head=_sha(1), base_sha=given[0] if given else None)
        assert store.record_revision(replace(rev, base_files=tuple(given[1]) if given else None))
        rows[repo] = _rows(store, record["id"])
    assert rows["a/read"] == [("config.json", "git:" + _sha(0)), ("model.safetensors", "sha256:" + "ab" * 32)]
    assert rows["b/given"] == rows["a/read"] == rows["c/other-sha"]


def test_an_advisory_stored_already_gets_no_second_version_or_delivery(store: Any) -> None:
    from sqlalchemy import func, select

    from storage import revision_rows
    from storage.tables import AdvisoryEditRow

    store.add_repo(REPO, source=REPO, source_kind="hub")
    _store(store, 0, _files(0, 0), None)
    record = _record(1, "config.json")
    _store(store, 1, _files(1, 0), record)
    with store.engine.begin() as db:
        revision_rows.insert_advisory(db, REPO, _sha(1), {**record, "summary": "another"}, WHEN)
    E = AdvisoryEditRow.__table__.c  # type: ignore[attr-defined]
    with store.engine.connect() as db:
        assert db.execute(select(func.count()).where(E.advisory_id == record["id"])).scalar() == 1
    assert store.get_advisory(record["id"]).record["summary"] == record["summary"]
