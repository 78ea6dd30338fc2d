"""The commit index (:mod:`storage.commit_index`) kept in SQL: labels on ``revisions``,
``chain_points``, ``advisory_spans``. Every function runs inside the caller's transaction
(a Session, or a Connection during a migration), so an index row lands with its revision."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import JSON, bindparam, column, delete, insert, select, table, text, update
from sqlmodel import col

from storage.commit_index import (
    LEVELS,
    LONG,
    OPEN,
    Chains,
    Label,
    Reach,
    event_shas,
    git_events,
    label_new,
    record_spans,
    span_keys,
)
from storage.engine import param_mark
from storage.tables import AdvisoryRow, AdvisorySpanRow, ChainPointRow, RevisionRow

PENDING = -1  # the chain of an advisory's marker row while it names an unstored commit
_CHUNK = 400  # bound parameters per IN list (SQLite allows 32,766)

R = RevisionRow.__table__.c  # type: ignore[attr-defined]
P = ChainPointRow.__table__.c  # type: ignore[attr-defined]
S = AdvisorySpanRow.__table__.c  # type: ignore[attr-defined]
A = AdvisoryRow.__table__.c  # type: ignore[attr-defined]


def load_chains(db: Any, repo_id: str) -> Chains:
    return Chains.from_rows(db.execute(select(P.chain, P.pos, P.reach).where(P.repo_id == repo_id)).all())


def labels_of(db: Any, repo_id: str, shas: Iterable[str]) -> dict[str, Label]:
    wanted = sorted(set(shas))
    out: dict[str, Label] = {}
    for i in range(0, len(wanted), _CHUNK):
        rows = db.execute(
            select(R.sha, R.chain, R.chain_pos).where(R.repo_id == repo_id, col(R.sha).in_(wanted[i : i + _CHUNK]))
        ).all()
        out.update({sha: (chain, pos) for sha, chain, pos in rows if chain is not None})
    return out


def label_commit(db: Any, repo_id: str, parents: Sequence[str], chains: Chains) -> tuple[Label, Reach, bool]:
    """The label of a commit about to be stored (its parents are stored first, if at all).

    One statement per revision: each parent's label and whether its chain goes on after it
    (the first parent's chain is continued only from its tip); two round trips were one each."""
    known = _labels_and_successors(db, repo_id, parents)
    labels = [known[p][0] if p in known else None for p in parents]
    first_is_tip = bool(parents) and parents[0] in known and not known[parents[0]][1]
    return label_new(labels, first_is_tip=first_is_tip, chains=chains)


_NEXT = RevisionRow.__table__.alias("successor").c  # type: ignore[attr-defined]


def _labels_and_successors(db: Any, repo_id: str, shas: Iterable[str]) -> dict[str, tuple[Label, bool]]:
    """sha -> (its label, whether a revision of the repo holds the next position of its chain)."""
    wanted = sorted(set(shas))
    followed = (select(_NEXT.id).where(_NEXT.repo_id == R.repo_id, _NEXT.chain == R.chain,
                                       _NEXT.chain_pos == R.chain_pos + 1).exists())
    out: dict[str, tuple[Label, bool]] = {}
    for i in range(0, len(wanted), _CHUNK):
        rows = db.execute(select(R.sha, R.chain, R.chain_pos, followed).where(
            R.repo_id == repo_id, col(R.sha).in_(wanted[i : i + _CHUNK]))).all()
        out.update({sha: ((chain, pos), bool(has_next)) for sha, chain, pos, has_next in rows if chain is not None})
    return out


def add_chain_point(db: Any, repo_id: str, label: Label, reach: Reach, chains: Chains) -> None:
    db.execute(insert(ChainPointRow.__table__).values(  # type: ignore[arg-type]
        repo_id=repo_id, chain=label[0], pos=label[1], reach={str(k): v for k, v in reach.items()}
    ))
    chains.points.setdefault(label[0], []).append((label[1], dict(reach)))
    chains.points[label[0]].sort(key=lambda p: p[0])


def index_advisories(db: Any, repo_id: str, records: Mapping[str, Mapping[str, Any]], chains: Chains) -> bool:
    """(Re)write the spans of ``records`` (advisory id -> OSV record) of one repo; False
    when there was nothing to write. The caller raises the repo's index version
    (:func:`bump_index_version`) in the same transaction, or kept answers stay as they were."""
    if not records:
        return False
    shas = set().union(*(event_shas(r) for r in records.values()))
    labels = labels_of(db, repo_id, shas)
    ids = sorted(records)
    for i in range(0, len(ids), _CHUNK):
        db.execute(delete(AdvisorySpanRow.__table__).where(col(S.advisory_id).in_(ids[i : i + _CHUNK])))  # type: ignore[arg-type]
    briefs = {adv_id: span_brief(records[adv_id]) for adv_id in ids}
    rows = [
        {"advisory_id": adv_id, "repo_id": repo_id, "chain": chain, "level": level, "bucket": bucket,
         "start_pos": start, "end_pos": end, "brief": briefs[adv_id]}
        for adv_id in ids
        for chain, start, end in sorted(record_spans(records[adv_id], labels, chains))
        for level, bucket in span_keys(start, end)
    ]
    rows += [  # names a commit not stored yet: indexed again when the repo gets a commit
        {"advisory_id": adv_id, "repo_id": repo_id, "chain": PENDING, "level": 0, "bucket": 0,
         "start_pos": 0, "end_pos": 0, "brief": None}
        for adv_id in ids
        if not event_shas(records[adv_id]) <= labels.keys()
    ]
    for i in range(0, len(rows), 500):
        db.execute(insert(AdvisorySpanRow.__table__), rows[i : i + 500])  # type: ignore[arg-type]
    return True


def index_new_advisory(db: Any, repo_id: str, record: Mapping[str, Any], sha: str, label: Label,
                       chains: Chains) -> None:
    """A new advisory introduced at the commit just stored: one open span (the common case)."""
    if git_events(record) == [[("introduced", sha.lower())]]:
        db.execute(insert(AdvisorySpanRow.__table__).values(  # type: ignore[arg-type]
            advisory_id=record["id"], repo_id=repo_id, chain=label[0], level=LONG, bucket=0,
            start_pos=label[1], end_pos=OPEN, brief=span_brief(record),
        ))
    else:
        index_advisories(db, repo_id, {str(record["id"]): record}, chains)


def reindex_repo(db: Any, repo_id: str, chains: Chains, *, pending_only: bool = False) -> bool:
    """Every advisory of a repo (after a commit started or merged a chain), or only those
    that name commits not stored when they were indexed; False when there were none."""
    q = select(A.id, A.record).where(A.repo_id == repo_id)
    if pending_only:
        q = q.where(col(A.id).in_(
            select(S.advisory_id).where(S.repo_id == repo_id, S.chain == PENDING).scalar_subquery()
        ))
    return index_advisories(db, repo_id, dict(db.execute(q).all()), chains)


# Raised in the transaction that rewrites a repo's spans or records, so that an API process
# that keeps answers in memory (storage.commit_answers) reads them again; never lowered.
_BUMP = text(
    "INSERT INTO commit_index_versions (repo_id, version) VALUES (:repo, 1)"
    " ON CONFLICT (repo_id) DO UPDATE SET version = commit_index_versions.version + 1"
)


def bump_index_version(db: Any, repo_ids: Iterable[str]) -> None:
    """Raise the index version of each repo (in sorted order: two writers lock rows alike)."""
    for repo_id in sorted(set(repo_ids)):
        db.execute(_BUMP, {"repo": repo_id})


def _levels() -> str:
    sizes = [(level, 8**level) for level in range(LEVELS)] + [(LONG, OPEN)]
    return " UNION ALL ".join(f"SELECT {level} AS lvl, {size} AS size" for level, size in sizes)


# One statement answers a whole batch: each commit's label, one index probe per level, the
# spans that hold it, their advisories (issue 17: no history walk, no per-commit round trip).
# CROSS JOIN fixes SQLite's join order (commit, level, probe), whatever its statistics say:
# stale ones (ANALYZE before the spans were written) made it scan a chain's spans per commit.
_PROBE = (
    " FROM revisions r"
    f" CROSS JOIN ({_levels()}) lv"
    " CROSS JOIN advisory_spans s{advisories}"
    " WHERE r.sha IN ({marks}) AND s.repo_id = r.repo_id AND s.chain = r.chain AND s.level = lv.lvl"
    " AND s.bucket = r.chain_pos / lv.size AND s.start_pos <= r.chain_pos AND s.end_pos > r.chain_pos"
)
_AFFECTING = "SELECT r.sha, a.id, {payload}" + _PROBE + " AND a.id = s.advisory_id{live}"
# Answered from ix_advisory_spans_answer alone (a "brief IS NOT NULL" here made SQLite read
# the table rows too): a span's brief is NULL while its record is withdrawn, skipped below.
_BRIEFS = "SELECT r.sha, s.advisory_id, s.brief" + _PROBE
_PAYLOAD = {
    ("sqlite", True): "a.record",
    ("postgresql", True): "a.record::text",
    ("sqlite", False): "json_extract(a.record, '$.modified'), a.withdrawn IS NOT NULL",
    ("postgresql", False): "a.record->>'modified', a.withdrawn IS NOT NULL",
}
_JOIN = " CROSS JOIN advisories a"
# The stored text itself: SQLite keeps JSON as text, PostgreSQL's json type keeps its input.
_TEXT = {"sqlite": "a.record", "postgresql": "a.record::text"}


def brief_of(record: Mapping[str, Any]) -> str:
    """``{"id","modified"}`` of a record, encoded as the OSV routes encode their answers."""
    return json.dumps({"id": record["id"], "modified": record["modified"]}, ensure_ascii=False,
                      separators=(",", ":"))


def span_brief(record: Mapping[str, Any]) -> str | None:
    """What a span of ``record`` answers a querybatch with: nothing while it is withdrawn."""
    return None if record.get("withdrawn") else brief_of(record)


def fill_briefs(db: Any) -> None:
    """Write ``advisories.brief`` of every advisory (migration 0006; 0007 moves it onto the spans)."""
    advisories = table("advisories", column("id"), column("record", JSON), column("brief"))
    c = advisories.c
    rows = [{"aid": adv_id, "b": brief_of(record if isinstance(record, Mapping) else json.loads(record))}
            for adv_id, record in db.execute(select(c.id, c.record)).all()]
    stmt = update(advisories).where(c.id == bindparam("aid")).values(brief=bindparam("b"))
    for i in range(0, len(rows), 5000):
        db.execute(stmt, rows[i : i + 5000])


def affecting_json(conn: Any, shas: Iterable[str], *, brief: bool) -> dict[str, list[str]]:
    """``sha -> JSON texts`` of the live (not withdrawn) records whose GIT ranges hold it,
    sorted by id, as stored: the whole record, or (``brief``) its ``{"id","modified"}``.

    What ``/v1/query`` and ``/v1/querybatch`` splice into their answers: one indexed
    statement per 400 commits and no record decoded or encoded; briefs come from the span
    index alone, no advisory row read (issue 17).
    """
    wanted = sorted({s.lower() for s in shas})
    found: dict[str, dict[str, str]] = {sha: {} for sha in wanted}
    dialect = conn.dialect.name
    mark = param_mark(conn)
    for i in range(0, len(wanted), _CHUNK):
        chunk = wanted[i : i + _CHUNK]
        marks = ", ".join([mark] * len(chunk))
        sql = (_BRIEFS.format(advisories="", marks=marks) if brief else
               _AFFECTING.format(payload=_TEXT[dialect], advisories=_JOIN, marks=marks, live=" AND a.withdrawn IS NULL"))
        cursor = conn.connection.cursor()  # the driver's own rows: tens of thousands per batch
        try:
            cursor.execute(sql, tuple(chunk))
            for sha, adv_id, text in cursor.fetchall():
                if text is not None:
                    found[sha][adv_id] = text
        finally:
            cursor.close()
    return {sha: [texts[k] for k in sorted(texts)] for sha, texts in found.items()}


def affecting(conn: Any, shas: Iterable[str], *, full: bool = True) -> dict[str, list[dict[str, Any]]]:
    """``sha -> records whose GIT ranges hold it``, in every repo that stored the commit.

    ``full=False``: each record only as ``{"id", "modified"}`` (plus ``"withdrawn": True``),
    what a querybatch answers, without reading the records themselves.
    """
    wanted = sorted({s.lower() for s in shas})
    out: dict[str, dict[str, dict[str, Any]]] = {sha: {} for sha in wanted}
    dialect = conn.dialect.name
    mark = param_mark(conn)
    for i in range(0, len(wanted), _CHUNK):
        chunk = wanted[i : i + _CHUNK]
        sql = _AFFECTING.format(payload=_PAYLOAD[(dialect, full)], advisories=_JOIN,
                                marks=", ".join([mark] * len(chunk)), live="")
        for row in conn.exec_driver_sql(sql, tuple(chunk)).all():
            sha, adv_id = row[0], row[1]
            if full:
                record = json.loads(row[2]) if isinstance(row[2], str) else row[2]
            else:
                record = {"id": adv_id, "modified": row[2]} | ({"withdrawn": True} if row[3] else {})
            out[sha][adv_id] = record
    return {sha: [found[k] for k in sorted(found)] for sha, found in out.items()}


def held_commits(db: Any, advisory_id: str, *, limit: int) -> list[str]:
    """The stored commits an advisory's ranges hold (at most ``limit``), from its spans."""
    spans = db.execute(
        select(S.repo_id, S.chain, S.start_pos, S.end_pos).where(S.advisory_id == advisory_id, S.chain >= 0).distinct()
    ).all()
    out: list[str] = []
    for repo_id, chain, start, end in spans:
        out += db.execute(
            select(R.sha).where(R.repo_id == repo_id, R.chain == chain, R.chain_pos >= start, R.chain_pos < end)
            .order_by(R.chain_pos).limit(limit - len(out))
        ).scalars().all()
        if len(out) >= limit:
            break
    return sorted(set(out))


def rebuild(db: Any) -> None:
    """Label every stored revision and index every advisory (the migrations that add and
    reshape the index): set-based, in :mod:`storage.commit_rebuild`."""
    from storage.commit_rebuild import rebuild as build_all

    build_all(db)
