"""The store's commit index answers exactly what the GIT-range walk answers (issue 17).

The spec's example graph (branches, merges) is stored through ``Store.record_revision``;
every range of the spec cases is written as an advisory, and for every commit the index's
answer is compared with :func:`advisories.query.range_contains` over ``git rev-list`` on a
real git repository, on SQLite and PostgreSQL, whichever order ranges and commits arrive in.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import delete, update
from sqlmodel import select

from advisories.query import range_contains
from storage.commit_index import Chains, compute_spans, probe_keys, span_keys
from storage.commit_rows import rebuild
from storage.records import NewRevision
from storage.tables import AdvisoryRow, AdvisorySpanRow, ChainPointRow, RevisionRow
from tests.advisories.osv_helpers import SPEC_GRAPH, GitGraph
from tests.advisories.test_query import CASES

REPO = "org/spec"
WHEN = datetime(2024, 1, 1, tzinfo=UTC)
EXTRA = [  # beyond the spec's cases: unknown commits, several ranges' limits, a root fix
    [("introduced", "0"), ("fixed", "W")],
    [("introduced", "X"), ("fixed", "f" * 40)],
    [("introduced", "0"), ("limit", "M"), ("limit", "N")],
    [("introduced", "X"), ("fixed", "Y"), ("introduced", "Y")],
]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> GitGraph:
    return GitGraph(tmp_path_factory.mktemp("spec-graph"))


def _events(graph: GitGraph, pairs: Any) -> list[dict[str, str]]:
    return [{kind: graph.sha.get(name, name)} for kind, name in pairs]


def _record(i: int, events: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "id": f"x_TEST-{i:04d}", "modified": "2024-01-01T00:00:00Z", "published": "2024-01-01T00:00:00Z",
        "affected": [{"ranges": [{"type": "GIT", "repo": "https://example.invalid/r", "events": events}]}],
        "database_specific": {"severity": "HIGH"},
    }


def _store_commit(store: Any, graph: GitGraph, name: str, advisories: list[dict[str, Any]] | None = None) -> None:
    sha = graph.sha[name]
    parents = tuple(graph.sha[p] for p in SPEC_GRAPH[name])
    rev = NewRevision(
        repo_id=REPO, sha=sha, parent=parents[0] if parents else None, parents=parents, committed_at=WHEN,
        title=name, message="", authors=(), changes=(), severity=None, tree=None,
        advisory=advisories[0] if advisories else None, new_head=sha,
    )
    assert store.record_revision(rev)


def _expected(graph: GitGraph, records: list[dict[str, Any]], stored: list[str] | None = None) -> dict[str, set[str]]:
    """The walk's answer on the commits stored so far (all of the graph by default)."""
    names = stored or list(SPEC_GRAPH)
    shas = {graph.sha[n] for n in names}

    def ancestors_of(sha: str) -> set[str]:
        return graph.ancestors_of(sha) & shas if sha in shas else set()

    return {
        graph.sha[n]: {
            r["id"] for r in records
            if range_contains(r["affected"][0]["ranges"][0]["events"], graph.sha[n], ancestors_of)
        }
        for n in names
    }


def _answered(store: Any, graph: GitGraph) -> dict[str, set[str]]:
    found = store.advisories_affecting(graph.sha.values())
    return {sha: {r["id"] for r in records} for sha, records in found.items()}


def test_every_case_matches_the_walk(store: Any, graph: GitGraph) -> None:
    """Advisories indexed when written, edited into each case's range, and rebuilt."""
    store.add_repo(REPO, source=REPO, source_kind="hub")
    for name in SPEC_GRAPH:
        _store_commit(store, graph, name)
    cases = [pairs for pairs, _ in CASES] + EXTRA
    seeds = [_record(i, [{"introduced": graph.sha["X"]}]) for i in range(len(cases))]
    _insert_all(store, graph, seeds)
    assert _answered(store, graph) == _expected(graph, seeds)
    records = [_record(i, _events(graph, pairs)) for i, pairs in enumerate(cases)]
    store.update_advisories([(r, "edited") for r in records])
    assert _answered(store, graph) == _expected(graph, records)
    # the migration's rebuild, from nothing, lands on the same index
    with store.engine.begin() as conn:
        conn.execute(delete(AdvisorySpanRow))
        conn.execute(delete(ChainPointRow))
        conn.execute(update(RevisionRow).values(chain=None, chain_pos=None))
        rebuild(conn)
    assert _answered(store, graph) == _expected(graph, records)


def _insert_all(store: Any, graph: GitGraph, records: list[dict[str, Any]]) -> None:
    """Rows for ``records``, then indexed as an edit is (records of other databases get in so)."""
    with store.session() as s:
        for r in records:
            s.add(AdvisoryRow(id=r["id"], repo_id=REPO, sha=graph.sha["W"], severity="HIGH", published=WHEN,
                              modified=WHEN, record=r))
        s.commit()
    store.update_advisories([(r, "indexed") for r in records])


def test_the_spliced_answers_are_the_live_records_as_stored(store: Any, graph: GitGraph) -> None:
    """What /v1/query and /v1/querybatch splice: the same look-up, withdrawn records left
    out, sorted by id, each record's stored text (or its brief) following every edit."""
    store.add_repo(REPO, source=REPO, source_kind="hub")
    for name in SPEC_GRAPH:
        _store_commit(store, graph, name)
    cases = [pairs for pairs, _ in CASES] + EXTRA
    records = [_record(i, _events(graph, pairs)) for i, pairs in enumerate(cases)]
    _insert_all(store, graph, records)
    full = store.advisories_affecting(graph.sha.values())
    held = sorted({r["id"] for recs in full.values() for r in recs})
    withdrawn = next(r for r in records if r["id"] == held[0]) | {
        "withdrawn": "2024-01-02T00:00:00Z", "modified": "2024-01-02T00:00:00Z"}
    edited = next(r for r in records if r["id"] == held[1]) | {"modified": "2024-01-03T00:00:00Z", "summary": "é"}
    store.update_advisories([(withdrawn, "withdrawn"), (edited, "edited")])
    full = store.advisories_affecting(graph.sha.values())
    assert any(r.get("withdrawn") for recs in full.values() for r in recs)
    for brief in (False, True):
        texts = store.advisories_affecting_json([*graph.sha.values(), "f" * 40], brief=brief)
        assert list(texts["f" * 40]) == []
        for sha, recs in full.items():
            live = sorted((r for r in recs if not r.get("withdrawn")), key=lambda r: r["id"])
            want = [{"id": r["id"], "modified": r["modified"]} if brief else r for r in live]
            assert [json.loads(t) for t in texts[sha]] == want
    briefs = store.advisories_affecting_json(graph.sha.values(), brief=True)
    want_brief = '{"id":"' + edited["id"] + '","modified":"2024-01-03T00:00:00Z"}'
    assert want_brief in {t for ts in briefs.values() for t in ts}


def test_ranges_written_before_their_commits_are_indexed_when_they_arrive(store: Any, graph: GitGraph) -> None:
    store.add_repo(REPO, source=REPO, source_kind="hub")
    names = list(SPEC_GRAPH)
    for name in names[:2]:  # W, X
        _store_commit(store, graph, name)
    cases = [pairs for pairs, _ in CASES] + EXTRA
    records = [_record(i, _events(graph, pairs)) for i, pairs in enumerate(cases)]
    _insert_all(store, graph, records)  # most name commits not stored yet
    linear = ["A", "B", "C", "Y", "Z"]  # continue the one chain: no chain point, no full reindex
    for name in linear:
        _store_commit(store, graph, name)
    got, want = _answered(store, graph), _expected(graph, records, ["W", "X", *linear])
    assert {sha: got[sha] for sha in want} == want
    for name in names[2:]:
        if name not in linear:
            _store_commit(store, graph, name)
    assert _answered(store, graph) == _expected(graph, records)


def test_a_new_advisory_on_a_linear_history_is_one_open_span(store: Any, graph: GitGraph) -> None:
    store.add_repo(REPO, source=REPO, source_kind="hub")
    for name in ("W", "X", "A"):
        record = _record(ord(name), [{"introduced": graph.sha[name]}]) if name == "X" else None
        _store_commit(store, graph, name, [record] if record else [])
    _store_commit(store, graph, "B")
    with store.session() as s:
        spans = [(r.chain, r.start_pos, r.level) for r in s.exec(select(AdvisorySpanRow)).all()]
    assert spans == [(0, 1, 99)]
    hits = _answered(store, graph)
    assert [n for n in ("W", "X", "A", "B") if hits[graph.sha[n]]] == ["X", "A", "B"]


def test_span_buckets_cover_every_position_they_hold() -> None:
    for start, end in [(0, 1), (7, 9), (63, 65), (100, 612), (5, 2**40)]:
        keys = set(span_keys(start, end))
        assert len(keys) <= 2
        for pos in {start, end - 1, (start + end) // 2} - {2**40 - 1}:
            assert keys & set(probe_keys(pos))


def test_spans_on_a_chain_label_graph() -> None:
    # chain 0: 0..4; chain 1 branches at 0:1 (reach {0: 1}) and merges 0:3 at its pos 2
    chains = Chains.from_rows([(0, 0, {}), (1, 0, {"0": 1}), (1, 2, {"0": 3})])
    labels = {"x": (0, 1), "f": (0, 2), "b": (1, 1)}
    assert compute_spans([("introduced", "x"), ("fixed", "f")], labels, chains) == [(0, 1, 2), (1, 0, 2)]
    assert compute_spans([("introduced", "b")], labels, chains) == [(1, 1, 2**62)]


def test_the_brief_migrations_fill_existing_advisories_and_spans(db_url: str) -> None:
    """0006 writes the brief of every advisory stored before it, 0007 moves it onto its
    spans (NULL for a withdrawn one)."""
    from sqlalchemy import text

    from storage.engine import make_engine, migrate

    engine = make_engine(db_url)
    migrate(engine, "0005")
    live = _record(1, [{"introduced": "a" * 40}]) | {"summary": "naïve"}
    gone = _record(2, [{"introduced": "a" * 40}]) | {"withdrawn": "2024-01-02T00:00:00Z"}
    with engine.begin() as c:
        c.execute(text("INSERT INTO repos (id, source, source_kind, branch, backfill, active, added_at, failures)"
                       " VALUES ('org/m', 'org/m', 'hub', 'main', 'all', :yes, :t, 0)"), {"t": WHEN, "yes": True})
        for record in (live, gone):
            c.execute(text("INSERT INTO advisories (id, repo_id, sha, severity, published, modified, withdrawn,"
                           " record) VALUES (:id, 'org/m', :sha, 'HIGH', :t, :t, :w, :r)"),
                      {"id": record["id"], "sha": "a" * 40, "t": WHEN, "r": json.dumps(record),
                       "w": WHEN if "withdrawn" in record else None})
            c.execute(text("INSERT INTO advisory_spans (advisory_id, repo_id, chain, level, bucket, start_pos,"
                           " end_pos) VALUES (:id, 'org/m', 0, 99, 0, 0, :open)"), {"id": record["id"], "open": 2**62})
    migrate(engine, "0006")
    with engine.connect() as c:
        briefs = dict(c.execute(text("SELECT id, brief FROM advisories")).all())
    assert json.loads(briefs[live["id"]]) == {"id": live["id"], "modified": live["modified"]}
    migrate(engine, "head")
    with engine.connect() as c:
        spans = dict(c.execute(text("SELECT advisory_id, brief FROM advisory_spans")).all())
    engine.dispose()
    assert spans == {live["id"]: briefs[live["id"]], gone["id"]: None}
