"""Commit answers kept in memory (storage.commit_answers) equal the SQL path's, and follow
every write at once (issue 17).

Random histories (branches, merges, commits stored in two repos) and advisories (introduced,
fixed, last_affected, limit; edited, withdrawn, restored) are written through the store as
the daemon writes them; after each write the store's kept answers (``/v1/query`` and
``/v1/querybatch`` read them) are compared with :func:`storage.commit_rows.affecting_json`,
one SQL statement over the span index, on SQLite and PostgreSQL, with caches small enough
to evict and chains too large to keep. A writer in another process is seen by the next query.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.commit_answers import CommitAnswers, NotKept, build_chain
from storage.commit_index import OPEN
from storage.commit_labels import read_stamp
from storage.commit_rows import affecting_json
from storage.records import NewRevision
from tracker.api.osv_routes import commit_batch_json

WHEN = datetime(2024, 1, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]
_runs = itertools.count()


def _record(adv_id: str, events: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    return {
        "id": adv_id, "modified": "2024-01-01T00:00:00Z", "published": "2024-01-01T00:00:00Z",
        "affected": [{"ranges": [{"type": "GIT", "repo": "https://example.invalid/r", "events": events}]}],
        "database_specific": {"severity": "HIGH"}, **extra,
    }


def _store(store: Any, repo: str, sha: str, parents: tuple[str, ...], advisory: dict[str, Any] | None = None,
           updates: tuple[tuple[dict[str, Any], str], ...] = ()) -> None:
    store.record_revision(NewRevision(
        repo_id=repo, sha=sha, parent=parents[0] if parents else None, parents=parents, committed_at=WHEN,
        title=sha[:8], message="", authors=(), changes=(), severity=None, tree=None, advisory=advisory,
        advisory_updates=updates, new_head=sha,
    ))


def _agree(store: Any, shas: list[str], sizes: tuple[int, ...] | None = None,
           earlier: CommitAnswers | None = None) -> int:
    """The kept answers equal the SQL path's, full and brief, and so do a warmed-up
    ``CommitAnswers(*sizes)``'s from memory alone, and ``earlier``'s batch (warmed before
    some writes: its label map, if any, read before them); returns how many were held."""
    held = 0
    for brief in (True, False):
        kept = store.advisories_affecting_json(shas, brief=brief)
        with store.engine.connect() as conn:
            want = affecting_json(conn, shas, brief=brief)
        assert {sha: list(texts) for sha, texts in kept.items()} == want
        held += sum(len(t) for t in want.values())
        # what the warm-up keeps answers alike, from memory alone (kept_only reads the labels only)
        warmed = CommitAnswers(*sizes) if sizes else CommitAnswers()
        with store.engine.connect() as conn:
            warmed.warm(conn, pause=0)
            assert warmed.labels is not None or sizes, "a warm-up with room for every label kept none"
            try:
                from_memory = warmed.answer(conn, shas, brief=brief, kept_only=True)
            except NotKept:
                assert sizes, "a warm-up with room for everything missed something a query needs"
            else:
                assert from_memory is not None
                assert {sha: list(texts) for sha, texts in from_memory.items()} == want
            in_two = conn.exec_driver_sql("SELECT sha FROM revisions GROUP BY sha HAVING count(*) > 1").first()
            stamp = read_stamp(conn.connection.cursor())
            try:  # the event loop's answer: the label map at a stamp read after the query came
                at = warmed.answer_at(shas, stamp, brief=brief)
            except NotKept:
                assert sizes or in_two, "a warm-up with room for everything missed something a query needs"
            else:
                assert at is not None or sizes, "no label map after a warm-up with room for it"
                assert at is None or {sha: list(texts) for sha, texts in at.items()} == want
            if brief:  # a querybatch's text in one pass, in query order (repeats too)
                order = [*reversed(shas), *shas[:2]]
                try:
                    text = warmed.batch_json(conn, order)
                except NotKept:
                    in_two = conn.exec_driver_sql(
                        "SELECT sha FROM revisions GROUP BY sha HAVING count(*) > 1").first()
                    assert sizes or in_two, "a warmed batch of commits in one repo each was not kept"
                else:
                    assert text == commit_batch_json(_Answers(want), order, math.inf)
                    assert len(json.loads(text)["results"]) == len(order)
                    assert warmed.batch_at(order, stamp) in (text, None)
                    assert warmed.labels is None or warmed.batch_at(order, stamp) == text
                    assert warmed.batch_at(order, (-1, -1)) is None and warmed.labels is None  # another stamp: dropped
                if earlier is not None:  # chains read again where stale, then a batch
                    earlier.answer(conn, shas, brief=True)
                    try:
                        text = earlier.batch_json(conn, order)
                    except NotKept:
                        pass
                    else:
                        assert text == commit_batch_json(_Answers(want), order, math.inf)
    return held


class _Answers:
    """A reader whose commit answers are given (what commit_batch_json asks of one)."""

    def __init__(self, held: dict[str, list[str]]) -> None:
        self.held = held

    def affecting_json(self, shas: Any, *, brief: bool, deadline: Any = None) -> dict[str, list[str]]:
        return self.held


# one step of a random history: a commit (its parents drawn from the commits so far, and an
# advisory introduced at it or at an earlier commit), or an edit of an advisory
_step = st.tuples(
    st.sampled_from(["commit", "commit", "commit", "merge", "branch", "fix", "limit", "last", "withdraw",
                     "restore", "intro0"]),
    st.integers(0, 10**6), st.integers(0, 10**6), st.booleans(),
)


@pytest.mark.parametrize("sizes", [None, (4_000, 2_000, 600, 2_500)], ids=["default", "evicting"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_step, min_size=4, max_size=22))
def test_kept_answers_equal_the_sql_path_after_every_write(store: Any, sizes: Any, steps: list[Any]) -> None:
    if sizes is not None:
        store.commit_answers = CommitAnswers(*sizes)  # evicts, and keeps no chain over 600 bytes
    run = next(_runs)
    repos = [f"org/h{run}", f"org/h{run}-fork"]
    for repo in repos:
        store.add_repo(repo, source=repo, source_kind="hub")
    commits: list[str] = []
    tips: dict[str, str] = {}
    records: dict[str, tuple[str, dict[str, Any]]] = {}  # id -> (repo, record)
    # warmed once, its label map read again only after every third write: batches between
    # must see that it is stale (a new commit is not in it, a label may have moved)
    earlier = CommitAnswers(*sizes) if sizes else CommitAnswers()
    with store.engine.connect() as conn:
        earlier.warm(conn, pause=0)
    for n, (kind, a, b, flag) in enumerate(steps):
        sha = f"{run:08x}{n:032x}"
        if kind in ("commit", "merge", "branch", "intro0") or not records:
            parents: tuple[str, ...] = ()
            if commits:
                parents = (tips[repos[0]] if kind != "branch" else commits[a % len(commits)],)
                other = commits[b % len(commits)]
                if kind == "merge" and other != parents[0]:
                    parents = (parents[0], other)
            # the same commit in the fork too (a linear copy): answers from both repos, by id
            homes = [repos[0], repos[1]] if a % 3 == 0 else [repos[0]]
            for home in homes:
                advisory = None
                if flag or kind == "intro0":
                    at = "0" if kind == "intro0" else (commits[b % len(commits)] if commits and a % 2 else sha)
                    advisory = _record(f"x_T-{run}-{n:03d}-{home[-4:]}", [{"introduced": at}])
                    records[advisory["id"]] = (home, advisory)
                _store(store, home, sha, parents if home == repos[0] else tuple(t for t in [tips.get(home)] if t),
                       advisory)
                tips[home] = sha
            commits.append(sha)
        else:
            adv_id = sorted(records)[a % len(records)]
            home, old = records[adv_id]
            events = list(old["affected"][0]["ranges"][0]["events"])
            extra = {"withdrawn": old["withdrawn"]} if "withdrawn" in old else {}
            target = commits[b % len(commits)]
            stamp = f"2024-01-01T00:{n:02d}:00Z"
            if kind in ("fix", "limit", "last"):
                events.append({{"fix": "fixed", "limit": "limit", "last": "last_affected"}[kind]: target})
            elif kind == "withdraw":
                extra = {"withdrawn": stamp}
            else:
                extra = {}
            rec = _record(adv_id, events, **extra) | {"modified": stamp}
            records[adv_id] = (home, rec)
            if flag:  # as the lifecycle edits: with the repo's next revision
                _store(store, home, sha, (tips[home],), updates=((rec, kind),))
                tips[home] = sha
                commits.append(sha)
            else:
                store.update_advisories([(rec, kind)])
        _agree(store, [*commits, "f" * 40], sizes, earlier)
        if n % 3 == 2:
            with store.engine.connect() as conn:
                earlier.refresh_labels(conn)


def test_a_write_in_another_process_is_seen_by_the_next_query(db_url: str) -> None:
    """The daemon and the API are separate processes: a new advisory, a fixed event and a
    withdrawal written by another one reach the next query, never a kept answer."""
    from storage import open_store

    store = open_store(db_url)
    repo = "org/two-processes"
    store.add_repo(repo, source=repo, source_kind="hub")
    shas = [f"{i:040x}" for i in range(1, 7)]
    for i, sha in enumerate(shas):
        _store(store, repo, sha, (shas[i - 1],) if i else ())
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import json, sys
            sys.path.insert(0, {str(ROOT)!r})
            from storage import open_store
            from tests.storage.test_commit_answers import _record, _store
            store = open_store({db_url!r})
            for line in sys.stdin:
                step = json.loads(line)
                if step["kind"] == "new":
                    _store(store, {repo!r}, step["sha"], (step["parent"],), _record("x_T-2P", [{{"introduced": step["at"]}}]))
                else:
                    store.update_advisories([(step["record"], step["kind"])])
                print("done", flush=True)
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    assert writer.stdin is not None and writer.stdout is not None

    def write(step: dict[str, Any]) -> None:
        writer.stdin.write(json.dumps(step) + "\n")  # type: ignore[union-attr]
        writer.stdin.flush()  # type: ignore[union-attr]
        assert writer.stdout.readline().strip() == "done"  # type: ignore[union-attr]

    def held() -> dict[str, list[str]]:
        texts = store.advisories_affecting_json(shas, brief=True)
        return {sha: [json.loads(t)["modified"] for t in texts[sha]] for sha in shas}

    try:
        assert held() == {sha: [] for sha in shas}  # kept: every chain answered from memory
        new = f"{7:040x}"
        write({"kind": "new", "sha": new, "parent": shas[-1], "at": shas[2]})
        assert held() == {sha: ["2024-01-01T00:00:00Z"] if i >= 2 else [] for i, sha in enumerate(shas)}
        fixed = _record("x_T-2P", [{"introduced": shas[2]}, {"fixed": shas[4]}]) | {"modified": "2024-01-02T00:00:00Z"}
        write({"kind": "fixed", "record": fixed})
        assert held() == {sha: ["2024-01-02T00:00:00Z"] if i in (2, 3) else [] for i, sha in enumerate(shas)}
        full = store.advisories_affecting_json([shas[3]], brief=False)[shas[3]]
        assert [json.loads(t)["affected"][0]["ranges"][0]["events"][-1] for t in full] == [{"fixed": shas[4]}]
        write({"kind": "withdrawn", "record": fixed | {"withdrawn": "2024-01-03T00:00:00Z",
                                                     "modified": "2024-01-03T00:00:00Z"}})
        assert held() == {sha: [] for sha in shas}
        assert store.advisories_affecting_json([shas[3]], brief=False)[shas[3]] == []
    finally:
        writer.stdin.close()
        writer.wait(30)
        store.close()


def test_segments_of_overlapping_spans() -> None:
    """Boundaries where the set changes; an advisory's overlapping spans count once; a
    withdrawn one (no brief) holds nothing; too large a chain is not kept."""
    a, b = '{"id":"a"}', '{"id":"b"}'
    spans = [("b", 0, 10, b), ("b", 5, 20, b), ("a", 3, OPEN, a), ("c", 4, 8, None), ("b", 0, 10, b)]
    chain = build_chain(spans)
    assert chain is not None
    assert [(p, chain.at(p)) for p in (0, 2, 3, 9, 19, 20, 10**9)] == [
        (0, (b,)), (2, (b,)), (3, (a, b)), (9, (a, b)), (19, (a, b)), (20, (a,)), (10**9, (a,))]
    assert chain.at(-1) == ()
    assert build_chain(spans, max_bytes=100) is None


def test_a_batch_past_its_deadline_is_not_answered(store: Any) -> None:
    """The budget of a querybatch is checked between the chains read and the SQL steps."""
    import time

    repo = "org/deadline"
    store.add_repo(repo, source=repo, source_kind="hub")
    shas = [f"{i:040x}" for i in range(1, 4)]
    for i, sha in enumerate(shas):
        _store(store, repo, sha, (shas[i - 1],) if i else (), _record(f"x_T-D{i}", [{"introduced": sha}]))
    for sizes in [None, (4_000, 2_000, 10)]:  # kept, and a chain too big to keep (the SQL path)
        store.commit_answers = CommitAnswers(*sizes) if sizes else CommitAnswers()
        assert store.advisories_affecting_json(shas, brief=True, deadline=time.monotonic() - 1) is None
        found = store.advisories_affecting_json(shas, brief=True, deadline=time.monotonic() + 60)
        assert [len(found[sha]) for sha in shas] == [1, 2, 3]


def test_a_rename_and_a_new_repo_under_the_old_id_are_answered_afresh(store: Any) -> None:
    """The rename moves the spans to the new id; a repo tracked again under the old id (its
    chains numbered from 0 again, no advisory yet) answers nothing from the old one's."""
    from storage.renames import rename_repo

    old, new = "org/before", "org/after"
    store.add_repo(old, source=old, source_kind="hub")
    shas = [f"{i:040x}" for i in range(1, 4)]
    for i, sha in enumerate(shas):
        _store(store, old, sha, (shas[i - 1],) if i else (), _record("x_T-R", [{"introduced": shas[0]}]) if not i else None)
    assert [len(t) for t in store.advisories_affecting_json(shas, brief=True).values()] == [1, 1, 1]
    earlier = CommitAnswers()  # its label map read under the old id
    with store.engine.connect() as conn:
        earlier.warm(conn, pause=0)
    assert earlier.labels is not None
    rename_repo(store, old, new, now=WHEN, edit_record=lambda r: r, event=None)
    assert _agree(store, shas, earlier=earlier) == 6  # three commits, brief and full, under the new id
    assert earlier.labels is None and earlier.labels_dropped
    with store.engine.connect() as conn:
        assert earlier.refresh_labels(conn)
    store.add_repo(old, source=old, source_kind="hub")
    again = [f"{i:040x}" for i in range(11, 14)]
    for i, sha in enumerate(again):
        _store(store, old, sha, (again[i - 1],) if i else ())
    assert _agree(store, [*again, *shas], earlier=earlier) == 6
    assert all(not t for t in store.advisories_affecting_json(again, brief=True).values())


def test_kept_queries_answer_inline_only_from_what_is_kept(store: Any) -> None:
    """What the OSV routes ask first: nothing before the warm-up (cold chains and records
    are read by the reader), the SQL path's answer after it (on the event loop on SQLite
    only: on PostgreSQL the label statement is a round trip), nothing kept at an older
    index version; a connection gone bad is dropped and the reader answers."""
    from storage.commit_answers import KeptQueries

    repo = "org/inline"
    store.add_repo(repo, source=repo, source_kind="hub")
    shas = [f"{i:040x}" for i in range(1, 5)]
    for i, sha in enumerate(shas):
        _store(store, repo, sha, (shas[i - 1],) if i else (), _record("x_T-I", [{"introduced": sha}]) if not i else None)
    queries = KeptQueries(store)
    assert queries.kept(shas, brief=False) is None
    queries.warm_soon()
    assert queries._warming is not None
    queries._warming.join(30)
    assert queries.inline == (store.dialect == "sqlite")

    def agree(last_held: bool) -> None:
        order = [shas[3], "f" * 40, *shas, shas[0]]
        want = commit_batch_json(_Answers(store.advisories_affecting_json(order, brief=True)), order, math.inf)
        assert queries.batch_json(order) == want
        first = {"vulns": [{"id": "x_T-I", "modified": ANY}]} if last_held else {}
        assert json.loads(want)["results"][:2] == [first, {}]
        for brief in (True, False):
            got = queries.kept(shas, brief=brief)
            assert got is not None
            want = store.advisories_affecting_json(shas, brief=brief)
            assert {s: list(t) for s, t in got.items()} == {s: list(t) for s, t in want.items()}

    agree(True)
    if queries.inline:  # on the event loop: a lock is waited for briefly, then the reader answers
        assert queries._idle[0].connection.execute("PRAGMA busy_timeout").fetchone()[0] == 100
    fixed = _record("x_T-I", [{"introduced": shas[0]}, {"fixed": shas[2]}]) | {"modified": "2024-01-02T00:00:00Z"}
    store.update_advisories([(fixed, "fixed")])
    assert queries.kept(shas, brief=True) is None  # kept at the version before the write
    held = store.advisories_affecting_json(shas, brief=True)  # read again, in a worker thread
    assert held is not None and [len(held[s]) for s in shas] == [1, 1, 0, 0]
    store.advisories_affecting_json(shas, brief=False)  # and the records, at the new version
    agree(False)
    for conn in queries._idle:  # the server went away under them
        conn.connection.close()
    assert queries.kept(shas, brief=True) is None and not queries._idle
    agree(False)  # on new connections


def test_concurrent_misses_of_one_chain_read_it_once(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sixteen cold batches each want every chain: one thread reads a chain, the others wait
    for it (and answer alike), instead of each reading and building it."""
    import threading
    import time

    from storage import commit_answers

    repo = "org/once"
    store.add_repo(repo, source=repo, source_kind="hub")
    shas = [f"{i:040x}" for i in range(1, 4)]
    for i, sha in enumerate(shas):
        _store(store, repo, sha, (shas[i - 1],) if i else (), _record(f"x_T-O{i}", [{"introduced": sha}]))
    built = []
    real = commit_answers.build_chain

    def slow(*a: Any, **kw: Any) -> Any:
        built.append(1)
        time.sleep(0.3)  # the others ask meanwhile
        return real(*a, **kw)

    monkeypatch.setattr(commit_answers, "build_chain", slow)
    answers: list[Any] = []
    threads = [threading.Thread(target=lambda: answers.append(store.advisories_affecting_json(shas, brief=True)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(built) == 1
    assert len(answers) == 4 and all(a == answers[0] for a in answers)
    assert [len(answers[0][sha]) for sha in shas] == [1, 2, 3]


@given(st.lists(st.tuples(st.integers(0, 300), st.integers(1, 60), st.booleans()), max_size=12))
@settings(max_examples=60, deadline=None)
def test_a_chains_position_index_answers_as_its_bisection(spans: list[tuple[int, int, bool]]) -> None:
    """ChainAnswers.segment_of (the position index, where it is kept) agrees with bisecting
    the segment starts at every position, before, inside and after the spans, open ones too."""
    from bisect import bisect_right

    built = build_chain([(f"A{i}", start, OPEN if open_ else start + length, f'{{"id":"A{i}"}}')
                         for i, (start, length, open_) in enumerate(spans)])
    assert built is not None
    for pos in [*range(-2, 400), OPEN - 1, 10**9]:
        assert built.segment_of(pos) == bisect_right(built.starts, pos) - 1, pos
    assert len(built.index) <= 64 * len(built.starts) + 1024


def test_a_sparse_chain_keeps_no_position_index() -> None:
    built = build_chain([("A", 10**7, 10**7 + 5, '{"id":"A"}')])
    assert built is not None and len(built.index) == 0
    assert [built.segment_of(p) for p in (0, 10**7, 10**7 + 4, 10**7 + 5)] == [-1, 0, 0, 1]


def test_kept_queries_wait_briefly_for_a_busy_connection(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off the event loop, a query that finds every kept connection in use waits for one to
    come back (then answers from memory) instead of going to the reader's path; it gives
    up after WAIT_SECONDS."""
    import threading

    from storage.commit_answers import KeptQueries

    repo = "org/busy"
    store.add_repo(repo, source=repo, source_kind="hub")
    shas = [f"{i:040x}" for i in range(1, 3)]
    for i, sha in enumerate(shas):
        _store(store, repo, sha, (shas[i - 1],) if i else (), _record("x_T-B", [{"introduced": sha}]) if not i else None)
    queries = KeptQueries(store)
    queries.warm_soon()
    assert queries._warming is not None
    queries._warming.join(30)
    monkeypatch.setattr(KeptQueries, "CONNECTIONS", 1)
    queries.inline = False  # as on PostgreSQL: called in worker threads
    assert queries.kept(shas, brief=True) is not None  # its one connection, made and kept
    holding, release = threading.Event(), threading.Event()

    def hold(conn: Any) -> None:
        holding.set()
        release.wait(10)

    holder = threading.Thread(target=queries._use, args=(hold,))
    holder.start()
    assert holding.wait(10)
    monkeypatch.setattr(KeptQueries, "WAIT_SECONDS", 0.05)
    assert queries.kept(shas, brief=True) is None  # still in use past the wait: the reader answers
    monkeypatch.setattr(KeptQueries, "WAIT_SECONDS", 10.0)
    threading.Timer(0.2, release.set).start()
    got = queries.kept(shas, brief=True)
    holder.join(10)
    assert got is not None and [len(got[s]) for s in shas] == [1, 1]


def test_a_kept_batch_reads_its_labels_from_memory_until_a_write(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the warm-up a batch reads one stamp row, not its commits' labels; a revision
    written since (the label map lacks it) makes the next batch read labels by SQL and
    answer it, and the map read again answers as the SQL path."""
    import storage.commit_answers as module

    repo = "org/labels"
    store.add_repo(repo, source=repo, source_kind="hub")
    shas = [f"{i:040x}" for i in range(21, 25)]
    for i, sha in enumerate(shas):
        _store(store, repo, sha, (shas[i - 1],) if i else (), _record("x_T-L1", [{"introduced": sha}]) if i == 1 else None)
    unknown = "e" * 40
    answers = CommitAnswers()
    with store.engine.connect() as conn:
        answers.warm(conn, pause=0)
    assert answers.labels is not None and len(answers.labels) >= len(shas)
    order = [*shas, unknown]

    def want() -> bytes | None:
        return commit_batch_json(_Answers(store.advisories_affecting_json(order, brief=True)), order, math.inf)

    def from_memory() -> bytes:
        def no_sql(*args: Any) -> Any:
            raise AssertionError("labels read by SQL")

        with monkeypatch.context() as patch, store.engine.connect() as conn:
            patch.setattr(module, "_labels", no_sql)
            return answers.batch_json(conn, order)

    assert from_memory() == want()
    newest = "d" * 40
    _store(store, repo, newest, (shas[-1],), _record("x_T-L2", [{"introduced": newest}]))
    order.append(newest)
    with store.engine.connect() as conn:
        answers.answer(conn, order, brief=True)  # the chain read again at its new version
        text = answers.batch_json(conn, order)
    assert text == want()
    assert [v["id"] for v in json.loads(text)["results"][-1]["vulns"]] == ["x_T-L1", "x_T-L2"]
    assert answers.labels is None and answers.labels_dropped
    with store.engine.connect() as conn:
        assert answers.refresh_labels(conn)
    assert from_memory() == want()


def test_a_label_map_over_its_bytes_is_not_kept(store: Any) -> None:
    repo = "org/labels-big"
    store.add_repo(repo, source=repo, source_kind="hub")
    shas = [f"{i:040x}" for i in range(31, 41)]
    for i, sha in enumerate(shas):
        _store(store, repo, sha, (shas[i - 1],) if i else ())
    answers = CommitAnswers(label_bytes=200)
    with store.engine.connect() as conn:
        answers.warm(conn, pause=0)
        assert answers.labels is None
        assert json.loads(answers.batch_json(conn, shas))["results"] == [{}] * len(shas)


def test_labels_moved_while_read_are_read_again_later(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write between the stamps before and after the read: no map, and one asked for again."""
    import storage.commit_labels as labels_module

    store.add_repo("org/moving", source="org/moving", source_kind="hub")
    _store(store, "org/moving", "c" * 40, ())
    stamps = itertools.count()
    monkeypatch.setattr(labels_module, "read_stamp", lambda cursor: (next(stamps),))
    answers = CommitAnswers()
    with store.engine.connect() as conn:
        assert not answers.refresh_labels(conn)
    assert answers.labels is None and answers.labels_dropped


def _warm_queries(store: Any, repo: str, shas: list[str]) -> Any:
    from storage.commit_answers import KeptQueries

    store.add_repo(repo, source=repo, source_kind="hub")
    for i, sha in enumerate(shas):
        _store(store, repo, sha, (shas[i - 1],) if i else (), _record(f"x_T-{repo[-1]}{i}", [{"introduced": sha}])
               if i % 2 == 0 else None)
    queries = KeptQueries(store)
    queries.warm_soon()
    assert queries._warming is not None
    queries._warming.join(30)
    assert queries.warm_state()["state"] == "warm"
    return queries


def test_awaited_answers_come_from_memory_at_a_fresh_stamp_and_see_every_write(
        store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off the inline path (PostgreSQL; SQLite made to take it too) a commit query and a
    batch are answered on the loop from the label map after one stamp read, no label
    statement and no worker thread, byte for byte as the SQL path; a revision written since
    (another connection, committed before the call) is seen by the very next one."""
    import asyncio

    import anyio.to_thread

    import storage.commit_answers as module

    shas = [f"{i:040x}" for i in range(51, 56)]
    queries = _warm_queries(store, "org/awaited", shas)
    queries.inline = False
    order = [shas[4], "e" * 40, *shas, shas[0]]

    def want_batch() -> bytes | None:
        return commit_batch_json(_Answers(store.advisories_affecting_json(order, brief=True)), order, math.inf)

    def no_sql(*args: Any) -> Any:
        raise AssertionError("labels read by SQL")

    async def no_thread(*args: Any, **kw: Any) -> Any:
        raise AssertionError("a worker thread")

    batch = want_batch()
    wants = {brief: store.advisories_affecting_json(shas, brief=brief) for brief in (True, False)}
    assert any(wants[False].values())
    with monkeypatch.context() as patch:
        patch.setattr(module, "_labels", no_sql)
        patch.setattr(anyio.to_thread, "run_sync", no_thread)
        assert asyncio.run(queries.batch_soon(order)) == batch
        for brief in (True, False):
            got = asyncio.run(queries.kept_soon(shas, brief=brief))
            want = wants[brief]
            assert got is not None and {s: list(t) for s, t in got.items()} == {s: list(t) for s, t in want.items()}
    newest = "d" * 40
    _store(store, "org/awaited", newest, (shas[-1],), _record("x_T-new", [{"introduced": newest}]))
    order.append(newest)
    assert asyncio.run(queries.batch_soon(order)) is None  # the map dropped, the chain stale: the reader answers
    want = want_batch()  # (the reader keeps the chain at its new version)
    text = asyncio.run(queries.batch_soon(order))  # labels by SQL, in a thread
    assert text == want
    assert [v["id"] for v in json.loads(text or b"")["results"][-1]["vulns"]][-1] == "x_T-new"
    assert asyncio.run(queries.kept_soon([newest], brief=False)) is None  # its record not kept: the reader
    want_full = store.advisories_affecting_json([newest], brief=False)
    got = asyncio.run(queries.kept_soon([newest], brief=False))
    assert got is not None and list(got[newest]) == list(want_full[newest])
    assert [json.loads(t)["id"] for t in got[newest]][-1] == "x_T-new"


def test_the_shared_stamp_read_started_after_each_caller(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Callers that come while a stamp read runs do not take its value (it may predate a
    write they saw committed): they share the next read, one for all of them."""
    import asyncio
    import threading

    import storage.commit_answers as module

    shas = [f"{i:040x}" for i in range(61, 63)]
    queries = _warm_queries(store, "org/stamped", shas)
    queries.inline = False
    reads: list[tuple[Any, ...]] = []
    first_read, go_on = threading.Event(), threading.Event()
    real = module._read_stamp_on

    def read(conn: Any) -> tuple[Any, ...]:
        stamp = real(conn)
        reads.append(stamp)
        if len(reads) == 1:
            first_read.set()
            assert go_on.wait(10)
        return stamp

    monkeypatch.setattr(module, "_read_stamp_on", read)

    async def scenario() -> list[Any]:
        early = asyncio.ensure_future(queries.fresh_stamp())
        assert await asyncio.to_thread(first_read.wait, 10)  # read, not yet answered
        _store(store, "org/stamped", "c" * 40, (shas[-1],))  # committed before the next callers
        late = [asyncio.ensure_future(queries.fresh_stamp()) for _ in range(5)]
        await asyncio.sleep(0.05)
        go_on.set()
        return [await early, *[await f for f in late]]

    got = asyncio.run(scenario())
    assert len(reads) == 2  # one for the early caller, one shared by the five late ones
    assert got[0] == reads[0] and got[1:] == [reads[1]] * 5
    assert reads[1] != reads[0]  # the write raised the stamp: every late caller sees it
    assert queries._stamp_running is None and queries._stamp_next is None
    assert asyncio.run(queries.fresh_stamp()) == reads[1] and len(reads) == 3  # a new caller: a new read
