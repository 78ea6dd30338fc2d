"""The set-based build of the commit index (``storage.commit_rows.rebuild``, what migration
0004 runs on an upgraded store) writes exactly the rows the incremental path writes.

A history with branches, merges, a root, a commit whose parent was never stored and a run
of one chain that arrives out of order is stored commit by commit through
``Store.record_revision`` (advisories introduced on the way, edited to fixed ranges, one
withdrawn, one naming an unknown commit); its labels, chain points and spans are the
reference. The build from nothing, and an upgrade from schema 0003 holding the same rows,
must land on the same rows, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import MetaData, delete, insert, select, update

from storage import commit_rows, open_store
from storage.commit_rows import PENDING, rebuild
from storage.engine import make_engine, migrate
from storage.records import NewRevision
from storage.tables import AdvisoryRow, AdvisorySpanRow, ChainPointRow, RepoRow, RevisionRow

REPOS = ("org/branchy", "org/other")
WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def _sha(repo: str, n: int) -> str:
    return hashlib.sha1(f"{repo}:{n}".encode()).hexdigest()


def _record(repo: str, n: int, events: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    return {
        "id": f"x_TEST-{repo[4:]}-{n:04d}", "modified": "2024-01-01T00:00:00Z", "published": "2024-01-01T00:00:00Z",
        "affected": [{"ranges": [{"type": "GIT", "repo": f"https://example.invalid/{repo}", "events": events}]}],
        "database_specific": {"severity": "HIGH"},
    } | extra


def _history(repo: str, rng: random.Random, length: int) -> list[tuple[str, tuple[str, ...]]]:
    """``(sha, parents)`` in arrival order: branches, merges, a root, a missing parent."""
    commits: list[tuple[str, tuple[str, ...]]] = [(_sha(repo, 0), ())]
    heads = [commits[0][0]]
    for n in range(1, length):
        roll, sha = rng.random(), _sha(repo, n)
        if roll < 0.55:
            i = rng.randrange(len(heads))
            parents: tuple[str, ...] = (heads[i],)
            heads[i] = sha
        elif roll < 0.7:  # a branch from any earlier commit
            parents = (rng.choice(commits)[0],)
            heads.append(sha)
        elif roll < 0.88 and len(heads) > 1:  # a merge of two heads
            a, b = rng.sample(range(len(heads)), 2)
            parents = (heads[a], heads[b])
            heads[a] = sha
            del heads[b]
        elif roll < 0.94:  # its parent was never stored
            parents = (_sha(repo, 10_000 + n),)
            heads.append(sha)
        else:
            parents = ()
            heads.append(sha)
        commits.append((sha, parents))
    return commits


def _store_incrementally(store: Any) -> None:
    rng = random.Random(17)
    for repo in REPOS:
        store.add_repo(repo, source=repo, source_kind="hub")
        history = _history(repo, rng, 90 if repo == REPOS[0] else 30)
        history[5:8] = history[5:8][::-1]  # a child before its parent: it starts a chain
        records = []
        for n, (sha, parents) in enumerate(history):
            record = _record(repo, n, [{"introduced": sha}]) if n % 4 == 1 else None
            records += [record] if record else []
            assert store.record_revision(NewRevision(
                repo_id=repo, sha=sha, parent=parents[0] if parents else None, parents=parents,
                committed_at=WHEN, title=str(n), message="", authors=(), changes=(), severity=None, tree=None,
                advisory=record, new_head=sha,
            ))
        shas = [sha for sha, _ in history]
        edits = []
        for i, record in enumerate(records):
            events = record["affected"][0]["ranges"][0]["events"]
            if i % 3 == 0:
                events = [*events, {"fixed": rng.choice(shas)}]
            elif i % 3 == 1:
                events = [{"introduced": "0"}, {"fixed": rng.choice(shas)}, {"introduced": rng.choice(shas)}]
            else:
                continue
            edits.append((record | {"affected": [{"ranges": [{**record["affected"][0]["ranges"][0],
                                                             "events": events}]}]}, "fixed"))
        edits.append((records[1] | {"withdrawn": "2024-01-02T00:00:00Z"}, "withdrawn"))
        edits.append((records[2] | {"affected": [{"ranges": [{"type": "GIT", "repo": "https://example.invalid/r",
                                                              "events": [{"introduced": shas[3]},
                                                                         {"fixed": "f" * 40}]}]}]}, "unknown"))
        store.update_advisories(edits)


def _index(engine: Any) -> dict[str, Any]:
    """The commit index's rows, comparable across databases and build orders."""
    r, p, s = RevisionRow.__table__.c, ChainPointRow.__table__.c, AdvisorySpanRow.__table__.c  # type: ignore[attr-defined]
    with engine.connect() as c:
        labels = {(repo, sha): (chain, pos) for repo, sha, chain, pos in c.execute(select(r.repo_id, r.sha, r.chain,
                                                                                          r.chain_pos))}
        points = sorted((repo, chain, pos, json.dumps(reach, sort_keys=True))
                        for repo, chain, pos, reach in c.execute(select(p.repo_id, p.chain, p.pos, p.reach)))
        # migration 0007 gives a pending marker its advisory's brief; a marker is never probed
        spans = sorted((a, repo, chain, level, bucket, start, end, brief if chain != PENDING else None)
                       for a, repo, chain, level, bucket, start, end, brief in c.execute(
                           select(s.advisory_id, s.repo_id, s.chain, s.level, s.bucket, s.start_pos, s.end_pos, s.brief)))
    return {"labels": labels, "points": points, "spans": spans}


def _reference(tmp_path: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The incremental path's index, and the rows it was built from."""
    store = open_store(f"sqlite:///{tmp_path / 'reference.db'}")
    try:
        _store_incrementally(store)
        index = _index(store.engine)
        with store.engine.connect() as c:
            rows = {t.name: [dict(row._mapping) for row in c.execute(select(t))]
                    for t in (RepoRow.__table__, RevisionRow.__table__, AdvisoryRow.__table__)}  # type: ignore[attr-defined]
    finally:
        store.close()
    return index, rows


def test_the_reference_history_has_what_the_build_must_handle(tmp_path: Path) -> None:
    index, _ = _reference(tmp_path)
    merges = [pos for _repo, _chain, pos, reach in index["points"] if pos > 0]
    chains = {(repo, chain) for (repo, _sha), (chain, _pos) in index["labels"].items()}
    assert len(merges) >= 5 and len(chains) >= 15
    assert any(chain == PENDING for _a, _r, chain, *_ in index["spans"])
    assert len({a for a, *_ in index["spans"]}) >= 25


def test_the_build_from_nothing_equals_the_incremental_index(store: Any, tmp_path: Path) -> None:
    want, _ = _reference(tmp_path)
    _store_incrementally(store)
    assert _index(store.engine) == want  # the same on this database as on the reference
    with store.engine.begin() as conn:
        conn.execute(delete(AdvisorySpanRow))
        conn.execute(delete(ChainPointRow))
        conn.execute(update(RevisionRow).values(chain=None, chain_pos=None))
        rebuild(conn)
    assert _index(store.engine) == want
    with store.engine.begin() as conn:  # over an index already there: replaced, not doubled
        rebuild(conn)
    assert _index(store.engine) == want


def test_answers_kept_in_memory_follow_a_rebuild(store: Any) -> None:
    """The build raises each repo's index version (migration 0009 on), so an API process's
    kept answers (storage.commit_answers) are read again, not served stale."""
    _store_incrementally(store)
    shas = [_sha(repo, n) for repo in REPOS for n in range(30)]
    before = store.advisories_affecting_json(shas, brief=True)  # kept now
    assert any(before.values())
    with store.engine.begin() as conn:  # every record of the first repo closed at once: spans only change with a build
        for adv_id, record in conn.execute(select(AdvisoryRow.id, AdvisoryRow.record).where(AdvisoryRow.repo_id == REPOS[0])).all():
            rng = record["affected"][0]["ranges"][0]
            closed = record | {"affected": [{"ranges": [{**rng, "events": [{"introduced": _sha(REPOS[0], 0)},
                                                                          {"fixed": _sha(REPOS[0], 0)}]}]}]}
            conn.execute(update(AdvisoryRow).where(AdvisoryRow.id == adv_id).values(record=closed))
        rebuild(conn)
    with store.engine.connect() as conn:
        want = commit_rows.affecting_json(conn, shas, brief=True)
    assert {sha: list(v) for sha, v in store.advisories_affecting_json(shas, brief=True).items()} == want
    assert want != {sha: list(v) for sha, v in before.items()}


def test_an_upgrade_from_before_the_index_builds_the_same_rows(db_url: str, tmp_path: Path) -> None:
    """Migration 0004 on a store of schema 0003 holding revisions and advisories (its spans
    have no brief column yet: 0007 fills it), then the later migrations."""
    want, rows = _reference(tmp_path)
    engine = make_engine(db_url)
    try:
        migrate(engine, "0003")
        old = MetaData()
        old.reflect(engine)
        with engine.begin() as c:
            for name in ("repos", "revisions", "advisories"):
                keep = set(old.tables[name].c.keys())
                c.execute(insert(old.tables[name]), [{k: v for k, v in row.items() if k in keep} for row in rows[name]])
        migrate(engine, "head")
        assert _index(engine) == want
    finally:
        engine.dispose()
