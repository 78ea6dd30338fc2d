"""The compact label map (storage.commit_labels) finds exactly what a dict of its rows would
(issue 17): shas stored twice, shas that are no canonical hex, buckets shared by many shas
and a sha whose bytes appear across two neighbours; it weighs what it says; and the map
read from a store in pages equals one read in a single statement."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import commit_labels
from storage.commit_labels import ENTRY_BYTES, IN_TWO, build_label_map, map_bytes, read_label_map
from storage.engine import param_mark


def _reference(rows: list[tuple[str, str, int, int]]) -> dict[str, tuple[int, int]]:
    """What the map answers, as a dict (the map before it was compact): a sha in two repos
    is (IN_TWO, 0); key indexes count (repo, chain) keys in the order first met."""
    keys: dict[tuple[str, int], int] = {}
    out: dict[str, tuple[int, int]] = {}
    for sha, repo, chain, pos in rows:
        k = keys.setdefault((repo, chain), len(keys))
        out[sha] = (IN_TWO, 0) if sha in out else (k, pos)
    return out


_hex = st.text("0123456789abcdef", min_size=40, max_size=40)
_few = st.sampled_from(["0" * 40, "f" * 40, "ab" * 20, "0123456789" * 4])  # repeats: stored twice
_odd = st.sampled_from(["A" * 40, "ABab" * 10, "abc", "0" * 64, "g" * 40, " " + "a" * 39, "a b " * 10, ""])
_row = st.tuples(st.one_of(_hex, _few, _odd), st.sampled_from(["org/a", "org/b"]), st.integers(0, 3),
                 st.integers(0, 2**32 - 2))


@given(rows=st.lists(_row, max_size=60), buckets=st.sampled_from([None, 1, 2, 8]),
       probes=st.lists(st.one_of(_hex, _few, _odd, st.sampled_from(["AB" * 20, "0" * 39])), max_size=20))
@settings(max_examples=300, deadline=None)
def test_the_map_finds_what_a_dict_of_its_rows_holds(rows: list[Any], buckets: int | None, probes: list[str]) -> None:
    # a sha stored twice is in two repos (the unique key is repo and sha)
    seen: set[tuple[str, str]] = set()
    rows = [r for r in rows if (r[0], r[1]) not in seen and not seen.add((r[0], r[1]))]  # type: ignore[func-returns-value]
    built = build_label_map((1,), rows, {"org/a": 7}, 10**9, len(rows), buckets=buckets)
    assert built is not None
    want = _reference(rows)
    assert len(want) <= len(built) <= len(rows)  # (a sha in two repos: one entry each, in the table)
    asked = [*want, *probes, *(s.upper() for s in want)]
    assert built.find_all(asked) == [want.get(s) for s in asked]
    assert [built.find(s) for s in asked] == [want.get(s) for s in asked]
    assert built.versions == [7 if repo == "org/a" else 0 for repo, _ in built.keys]


def test_a_sha_across_two_neighbours_bytes_is_not_found_there() -> None:
    """One bucket: the probe's 20 bytes are the second half of one entry's and the first
    half of the next's (their labels between), and are found only where stored whole."""
    first, second = "11" * 20, "22" * 20
    rows = [(first, "r", 0, 0), (second, "r", 0, 1)]
    built = build_label_map((1,), rows, {}, 10**6, buckets=1)
    assert built is not None
    raw = bytes(built.entries)
    straddling = raw[ENTRY_BYTES - 10 : ENTRY_BYTES + 10].hex()
    inside = raw[10:30].hex()  # half a sha, then its label
    assert built.find_all([straddling, inside, first, second]) == [None, None, (0, 0), (0, 1)]
    again = build_label_map((1,), [*rows, (straddling, "r", 0, 2), (inside, "r", 0, 3)], {}, 10**6, buckets=1)
    assert again is not None
    assert again.find_all([straddling, inside, first, second]) == [(0, 2), (0, 3), (0, 0), (0, 1)]


def test_a_position_past_32_bits_keeps_no_map() -> None:
    assert build_label_map((1,), [("a" * 40, "r", 0, 2**32)], {}) is None
    assert build_label_map((1,), [("a" * 40, "r", 0, None)], {}) is None


def test_the_map_weighs_about_32_bytes_a_commit() -> None:
    """Its estimate is what it holds (measured), and a million commits fit in 40 MB."""
    n = 100_000
    rows = [(f"{i % 100:08x}{i:032x}", f"org/m{i % 100}", 0, i) for i in range(n)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        built = build_label_map((1,), rows, {}, 10**9, n)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert built is not None
    assert held <= 1.1 * built.size and built.size <= 40 * n
    assert map_bytes(1_000_000) < 40 * 10**6
    assert built.find_all([rows[5][0], rows[-1][0]]) == [(5, 5), (99, n - 1)]


def test_a_map_read_in_pages_is_the_map_read_at_once(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of three rows along (sha, repo): a sha stored in two repos across a page's end
    is found in both (IN_TWO), every other sha as the single statement reads it."""
    from tests.storage.test_commit_answers import _store

    for repo in ("org/p1", "org/p2"):
        store.add_repo(repo, source=repo, source_kind="hub")
    shas = [f"{i:040x}" for i in range(1, 9)]
    for i, sha in enumerate(shas):
        _store(store, "org/p1", sha, (shas[i - 1],) if i else ())
    for i, sha in enumerate(shas[2:6]):  # the fork holds four of them
        _store(store, "org/p2", sha, (shas[1 + i],) if i else ())
    with store.engine.connect() as conn:
        cursor = conn.connection.cursor()
        whole = read_label_map(cursor, param_mark(conn))
        cursor.execute("SELECT sha, repo_id, chain, chain_pos FROM revisions ORDER BY sha, repo_id")
        rows = cursor.fetchall()
        for page in (1, 2, 3, 5):
            monkeypatch.setattr(commit_labels, "_PAGE", page)
            paged = read_label_map(cursor, param_mark(conn))
            assert paged is not None and whole is not None
            assert paged.find_all(shas) == whole.find_all(shas)
            assert paged.keys == whole.keys
        cursor.close()
    assert whole is not None
    found = dict(zip(shas, whole.find_all(shas), strict=True))
    assert [found[s][0] == IN_TWO for s in shas] == [False, False, True, True, True, True, False, False]
    key_of = {key: i for i, key in enumerate(whole.keys)}
    assert all(found[sha] == (key_of[(repo, chain)], pos) for sha, repo, chain, pos in rows if found[sha][0] != IN_TWO)
