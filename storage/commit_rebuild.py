"""The whole commit index built at once: migrations 0004 and 0007 upgrading a store, and
``benchmarks/api.py`` (issue 17: a million revisions in seconds, not a quarter of an hour).

Set-based, inside the caller's transaction, the same rows as the incremental path
(:meth:`storage.store.Store.record_revision` labels each commit as it arrives, in ``seq``
order, and indexes advisories as they are written):

- one ordered scan of a repo's revisions through the driver; a commit that continues its
  parent's chain is labelled without :func:`~storage.commit_index.label_new` (no chain point);
- labels written as runs: one ``UPDATE ... SET chain_pos = seq + k WHERE seq BETWEEN`` per
  stretch of one chain in arrival order (a linear history is one statement per repo), by
  revision id where a repo's ``seq`` repeats;
- every advisory's spans computed in memory from those labels and written in bulk
  (``COPY`` on PostgreSQL, the driver's executemany on SQLite).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import delete, insert, inspect, select, union

from storage.commit_index import Chains, Label, event_shas, label_new, record_spans, span_keys
from storage.engine import param_mark
from storage.tables import AdvisoryRow, AdvisorySpanRow, ChainPointRow, RevisionRow

PENDING = -1  # as storage.commit_rows.PENDING (imported from there would be circular)
_SPAN_COLUMNS = ("advisory_id", "repo_id", "chain", "level", "bucket", "start_pos", "end_pos")
_BATCH = 20_000  # span rows per executemany

Run = tuple[int, int, int, int]  # chain, seq -> pos offset, first seq, last seq


def rebuild(conn: Any) -> None:
    """Label every stored revision and index every advisory, repo by repo."""
    from storage.commit_rows import bump_index_version

    schema = inspect(conn)
    brief = "brief" in {c["name"] for c in schema.get_columns("advisory_spans")}  # 0007 on
    versions = schema.has_table("commit_index_versions")  # 0009 on
    R, A = RevisionRow.__table__.c, AdvisoryRow.__table__.c  # type: ignore[attr-defined]
    repos = sorted(r for (r,) in conn.execute(union(select(R.repo_id).distinct(), select(A.repo_id).distinct())))
    for repo_id in repos:
        conn.execute(delete(ChainPointRow.__table__).where(ChainPointRow.__table__.c.repo_id == repo_id))  # type: ignore[attr-defined]
        chains, labels = _label_repo(conn, repo_id)
        _index_repo(conn, repo_id, chains, labels, brief=brief)
    if versions:  # answers an API process keeps in memory (storage.commit_answers) are stale
        bump_index_version(conn, repos)


def _driver(conn: Any) -> tuple[Any, str]:
    """The DBAPI cursor of the caller's transaction, and its parameter mark."""
    return conn.connection.cursor(), param_mark(conn)


def _label_repo(conn: Any, repo_id: str) -> tuple[Chains, dict[str, Label]]:
    cur, mark = _driver(conn)
    try:
        cur.execute(f"SELECT id, sha, seq, parents FROM revisions WHERE repo_id = {mark} ORDER BY seq, id", (repo_id,))
        rows = cur.fetchall()
    finally:
        cur.close()
    chains = Chains()
    labels: dict[str, Label] = {}
    tips: set[Label] = set()
    points: list[dict[str, Any]] = []
    by_id: list[tuple[int, int, int]] = []  # (chain, pos, revision id)
    runs: list[Run] = []
    seqs: set[int] = set()
    unique_seq = True
    for rev_id, sha, seq, raw_parents in rows:
        parents = _parents(raw_parents)
        first = labels.get(parents[0]) if parents else None
        if len(parents) == 1 and first is not None and first in tips:
            label = (first[0], first[1] + 1)  # continues its chain: reaches what its parent did
        else:
            label, reach, point = label_new([labels.get(p) for p in parents], first_is_tip=first in tips,
                                            chains=chains)
            if point:
                chains.points.setdefault(label[0], []).append((label[1], dict(reach)))
                chains.points[label[0]].sort(key=lambda p: p[0])
                points.append({"repo_id": repo_id, "chain": label[0], "pos": label[1],
                               "reach": {str(k): v for k, v in reach.items()}})
        if first is not None and label[0] == first[0]:
            tips.discard(first)
        tips.add(label)
        labels[sha] = label
        by_id.append((label[0], label[1], rev_id))
        if unique_seq:
            unique_seq = seq not in seqs
            seqs.add(seq)
            last = runs[-1] if runs else None
            if last and last[0] == label[0] and last[1] == label[1] - seq and last[3] == seq - 1:
                runs[-1] = (last[0], last[1], last[2], seq)
            else:
                runs.append((label[0], label[1] - seq, seq, seq))
    _write_labels(conn, repo_id, runs if unique_seq else None, by_id)
    if points:
        conn.execute(insert(ChainPointRow.__table__), points)  # type: ignore[arg-type]
    return chains, labels


def _parents(raw: Any) -> Sequence[str]:
    """``revisions.parents`` as the driver gives it: a list (psycopg) or JSON text (SQLite)."""
    if isinstance(raw, bytes):
        raw = raw.decode()
    if isinstance(raw, str):
        one = raw[2:-2]  # '["<sha>"]', one parent as json.dumps writes it: no decoder needed
        if raw[:2] == '["' and raw[-2:] == '"]' and '"' not in one and "\\" not in one:
            return (one,)
        return json.loads(raw) or ()
    return raw or ()


def _write_labels(conn: Any, repo_id: str, runs: list[Run] | None, by_id: list[tuple[int, int, int]]) -> None:
    cur, mark = _driver(conn)
    try:
        if runs is not None:
            cur.executemany(
                f"UPDATE revisions SET chain = {mark}, chain_pos = seq + {mark}"
                f" WHERE repo_id = {mark} AND seq BETWEEN {mark} AND {mark}",
                [(chain, offset, repo_id, lo, hi) for chain, offset, lo, hi in runs],
            )
        else:
            cur.executemany(f"UPDATE revisions SET chain = {mark}, chain_pos = {mark} WHERE id = {mark}", by_id)
    finally:
        cur.close()


def _index_repo(conn: Any, repo_id: str, chains: Chains, labels: dict[str, Label], *, brief: bool) -> None:
    """Spans of every advisory of the repo (as :func:`storage.commit_rows.index_advisories`)."""
    from storage.commit_rows import span_brief

    cur, mark = _driver(conn)
    try:
        cur.execute(f"SELECT id, record FROM advisories WHERE repo_id = {mark} ORDER BY id", (repo_id,))
        advisories = cur.fetchall()
    finally:
        cur.close()
    A, spans = AdvisoryRow.__table__.c, AdvisorySpanRow.__table__  # type: ignore[attr-defined]
    conn.execute(delete(spans).where(spans.c.advisory_id.in_(select(A.id).where(A.repo_id == repo_id))))
    rows: list[tuple[Any, ...]] = []
    for adv_id, raw in advisories:
        record = json.loads(raw) if isinstance(raw, (bytes, str)) else raw
        extra = (span_brief(record),) if brief else ()
        for chain, start, end in sorted(record_spans(record, labels, chains)):
            rows += [(adv_id, repo_id, chain, level, bucket, start, end, *extra) for level, bucket in span_keys(start, end)]
        if not event_shas(record) <= labels.keys():  # names a commit not stored yet
            rows.append((adv_id, repo_id, PENDING, 0, 0, 0, 0, *((None,) if brief else ())))
    _insert_spans(conn, rows, _SPAN_COLUMNS + (("brief",) if brief else ()))


def _insert_spans(conn: Any, rows: Iterable[tuple[Any, ...]], columns: Sequence[str]) -> None:
    rows = list(rows)
    if not rows:
        return
    cur, mark = _driver(conn)
    try:
        if conn.dialect.name == "postgresql":
            with cur.copy(f"COPY advisory_spans ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            sql = f"INSERT INTO advisory_spans ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
            for i in range(0, len(rows), _BATCH):
                cur.executemany(sql, rows[i : i + _BATCH])
    finally:
        cur.close()
