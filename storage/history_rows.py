"""A repo's history read with core selects (no ORM objects), and its version.

A history page is read often and never written: loading ORM rows (identity map, change
tracking) cost more than the query itself (issue 17). :func:`probe` is one primary-key
look-up that names what a page of history shows, so readers in any process can keep pages:
``repos.history_version`` is bumped in the transaction of every write that changes a page
(a revision, a rename, a repair's amendment, a rewrite's reachability), and ``added_at``
tells a repo tracked anew under an id from the one that had it before. The same look-up says
where a former id went.
:func:`page` reads only what a history page shows, in one statement, nothing decoded.

Imports: stdlib, sqlalchemy, storage.tables, tracker.model.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, text

from storage.records import RepoRecord, RevisionRecord
from storage.tables import ChangeRow, RevisionRow
from tracker.model import Change, ChangeKind, Severity

R = RevisionRow.__table__.c  # type: ignore[attr-defined]
C = ChangeRow.__table__.c  # type: ignore[attr-defined]

_REVISION_COLUMNS = (R.id, R.repo_id, R.sha, R.seq, R.parent, R.parents, R.committed_at, R.title, R.message,
                     R.authors, R.severity, R.advisory_id, R.reachable, R.error, R.chain_hash, R.recorded_at,
                     R.tree_key)


@dataclass(frozen=True, slots=True)
class RepoProbe:
    """What one look-up of an id found: the repo's history version, or where the id moved."""

    version: tuple[Any, ...] | None  # None: no repo is tracked under this id
    moved_to: str | None = None  # a renamed repo's id now, when this id is a former one


_PROBE = "SELECT history_version, added_at, NULL AS moved_to FROM repos WHERE id = {id} " \
    "UNION ALL SELECT NULL, NULL, repo_id FROM repo_aliases WHERE old_id = {id}"
_PROBES = {"sqlite": _PROBE.format(id=":id"), "postgresql": _PROBE.format(id="%(id)s")}


def probe(conn: Any, repo_id: str) -> RepoProbe:
    """The version of ``repo_id``'s history pages (one probe of each primary key, on the
    driver's cursor: every page request makes it)."""
    version, moved_to = None, None
    for counter, added_at, alias in driver_rows(conn, _PROBES[conn.dialect.name], {"id": repo_id}):
        if alias is None:
            version = (counter, added_at)
        else:
            moved_to = alias
    return RepoProbe(version, None if version is not None else moved_to)


@dataclass(frozen=True)
class RepoLookup:
    """How a page's reader reads the repo (a repo page shows it): ``columns``, the select list
    over ``repos``, the history counter last; ``record`` makes ``(record, counter)`` of a row's
    values on a dialect (the store's: :data:`storage.store.REPO_LOOKUP`)."""

    columns: tuple[str, ...]
    record: Callable[[Any, Sequence[Any]], tuple[RepoRecord, int]]

    def sql(self, dialect: str) -> str:
        return _lookup_sql(self.columns, dialect)


@functools.cache
def _lookup_sql(columns: tuple[str, ...], dialect: str) -> str:
    return f"SELECT {', '.join(columns)} FROM repos WHERE id = {_MARKS[dialect]['repo']}"


class HistoryReader:
    """A page's reads on one connection: :func:`probe`, the repo with it, :func:`page_json`, :func:`page`."""

    def __init__(self, conn: Any, repo: RepoLookup):
        self.conn, self.repo = conn, repo

    def probe(self, repo_id: str) -> RepoProbe:
        return probe(self.conn, repo_id)

    def repo_and_probe(self, repo_id: str) -> tuple[RepoRecord | None, RepoProbe]:
        """The repo and what :func:`probe` says of it, in one statement when it is tracked
        (a repo page needs both); a former id's look-up only when it is not."""
        rows = driver_rows(self.conn, self.repo.sql(self.conn.dialect.name), {"repo": repo_id})
        if not rows:
            return None, self.probe(repo_id)
        repo, counter = self.repo.record(self.conn.dialect, rows[0])
        return repo, RepoProbe((counter, repo.added_at))

    def page_json(self, repo_id: str, *, before_seq: int | None, limit: int) -> list[tuple[int, str]]:
        return page_json(self.conn, repo_id, before_seq=before_seq, limit=limit)

    def page(self, repo_id: str, *, before_seq: int | None, limit: int) -> list[PageRevision]:
        return page(self.conn, repo_id, before_seq=before_seq, limit=limit)


def history_version(conn: Any, repo_id: str) -> tuple[Any, ...] | None:
    """What a page of ``repo_id``'s history depends on; None when it is not tracked."""
    return probe(conn, repo_id).version


@dataclass(frozen=True, slots=True)
class PageChange:
    kind: str
    path: str
    summary: str
    severity: str | None
    plan_delta: bool  # topics name "plan.delta": the plan's own note, which pages do not count


@dataclass(frozen=True, slots=True)
class PageRevision:
    """One history entry as the repo page shows it, the time in RFC 3339."""

    seq: int
    sha: str
    committed_at: str | None  # 2024-01-01T00:01:00Z
    title: str
    severity: str | None
    advisory_id: str | None
    reachable: bool
    changes: list[PageChange]


NO_CURSOR = 2**31  # past every arrival order (revisions.seq is a 32-bit INTEGER on PostgreSQL)

# A stored time as :func:`rfc3339` writes it: on SQLite the stored text sliced when it is in the
# form written, else strftime; on PostgreSQL the timestamptz in UTC. The form the ORM writes
# (2024-01-01 00:01:00.000000) is told by one GLOB first: the CASE's string functions on
# every row were a third of the JSON statement (issue 17).
_TIME = {
    "sqlite": "CASE WHEN {t} GLOB '????-??-?? ??:??:??.??????' THEN substr({t}, 1, 10) || 'T' || substr({t}, 12, 8) "
              "|| 'Z' WHEN length({t}) >= 19 AND substr({t}, 11, 1) IN (' ', 'T') AND (substr({t}, 20) IN "
              "('', '+00:00', 'Z') OR (substr({t}, 20, 1) = '.' AND substr({t}, 27) IN ('', '+00:00', 'Z'))) "
              "THEN substr({t}, 1, 10) || 'T' || substr({t}, 12, 8) || 'Z' "
              "ELSE strftime('%Y-%m-%dT%H:%M:%SZ', {t}) END",
    "postgresql": "to_char({t} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
}
_PAGE_COLUMNS = "id, seq, sha, parent, committed_at, title, authors, severity, advisory_id, reachable"
_CURSOR = "repo_id = {repo} AND seq < {before}"
_MARKS = {"sqlite": {"repo": ":repo", "before": ":before", "n": ":n"},
          "postgresql": {"repo": "%(repo)s", "before": "%(before)s", "n": "%(n)s"}}
# The page's times and plan notes: on PostgreSQL worked out by the database, once per
# revision; on SQLite the stored text and topics as they are, read here (:func:`rfc3339`'s
# slices, a substring test): SQLite's string functions on every joined row were over half of
# the statement (issue 17).
_PAGE_TIME = {"sqlite": "page.committed_at", "postgresql": "page.committed"}
_PAGE_PLAN = {"sqlite": "c.topics", "postgresql": "CAST(c.topics AS jsonb) ? 'plan.delta'"}


def _head(dialect: str, where: str, limit: str | None, *, committed: bool = False) -> str:
    """The revisions of a page (``where``, newest first, at most ``limit``) as ``page``."""
    columns = _PAGE_COLUMNS + (", " + _TIME["postgresql"].format(t="committed_at") + " AS committed"
                               if committed and dialect == "postgresql" else "")
    return (f"WITH page AS (SELECT {columns} FROM revisions WHERE {where}"
            + (f" ORDER BY seq DESC LIMIT {limit}) " if limit else ") "))


def page_sql(dialect: str, where: str, limit: str | None = None) -> str:
    """What :func:`page` reads (``id`` first) of the revisions ``where`` selects: newest first
    (one repo's, at most ``limit``), or by id (a batch of entries to keep, any repos)."""
    return (_head(dialect, where, limit, committed=True)
            + f"SELECT page.id, page.seq, page.sha, {_PAGE_TIME[dialect]}, page.title, page.severity, "
            f"page.advisory_id, page.reachable, c.kind, c.path, c.summary, c.severity, {_PAGE_PLAN[dialect]} "
            f"FROM page LEFT JOIN changes c ON c.revision_id = page.id ORDER BY {'page.seq DESC' if limit else 'page.id'}, c.idx")


_PAGE = {d: page_sql(d, _CURSOR.format(**m), m["n"]) for d, m in _MARKS.items()}


def _plan_in_topics(topics: str) -> bool:
    """Whether stored topics (a JSON array of strings, as the JSON type wrote it) name
    ``plan.delta``: without a backslash no string in it is escaped, so the quoted name is
    in the text exactly when it is one of the strings."""
    if "\\" in topics:
        return "plan.delta" in json.loads(topics)
    return '"plan.delta"' in topics


def page(conn: Any, repo_id: str, *, before_seq: int | None, limit: int) -> list[PageRevision]:
    """Up to ``limit`` revisions newest first, ``before_seq`` exclusive, each with the part of
    its changes pages show (never their details): one statement, on the driver's cursor."""
    rows = driver_rows(conn, _PAGE[conn.dialect.name], page_params(repo_id, before_seq, limit))
    return [rev for _, rev in page_revisions(rows, conn.dialect.name == "sqlite")]


def page_revisions(rows: Sequence[Any], sqlite: bool) -> list[tuple[int, PageRevision]]:
    """The ``(id, revision)`` of the rows :func:`page_sql` reads."""
    out: list[tuple[int, PageRevision]] = []
    last = None
    for rid, seq, sha, committed, title, sev, adv, reachable, kind, path, summary, csev, plan in rows:
        if rid != last:
            last = rid
            out.append((rid, PageRevision(seq, sha, rfc3339(committed) if sqlite else committed, title, sev, adv,
                                          bool(reachable), [])))
        if kind is not None:
            out[-1][1].changes.append(PageChange(kind, path, summary, csev,
                                                 _plan_in_topics(plan) if sqlite else bool(plan)))
    return out


def page_params(repo_id: str, before_seq: int | None, limit: int) -> dict[str, Any]:
    return {"repo": repo_id, "before": NO_CURSOR if before_seq is None else before_seq, "n": limit}


# A page's entries encoded by the database, one row each (issue 17): building 50 objects and
# their changes out of ~130 joined rows in Python cost more than the statement. The stored
# authors are spliced; changes in their order.
_ENTRY_OF = {
    "sqlite": "json_object('sha', sha, 'parent', parent, 'committed_at', {time}, 'title', title, "
              "'authors', json(coalesce(authors, '[]')), 'severity', severity, 'advisory_id', advisory_id, "
              "'changes', json((SELECT json_group_array(json_object('kind', c.kind, 'path', c.path, "
              "'summary', c.summary, 'severity', c.severity)) FROM (SELECT kind, path, summary, severity "
              "FROM changes WHERE revision_id = page.id ORDER BY idx) AS c)))",
    "postgresql": "CAST(json_build_object('sha', sha, 'parent', parent, 'committed_at', {time}, 'title', title, "
                  "'authors', coalesce(authors, '[]'::json), 'severity', severity, 'advisory_id', advisory_id, "
                  "'changes', coalesce((SELECT json_agg(json_build_object('kind', c.kind, 'path', c.path, "
                  "'summary', c.summary, 'severity', c.severity) ORDER BY c.idx) FROM changes c "
                  "WHERE c.revision_id = page.id), '[]'::json)) AS TEXT)",
}
#: one revision's entry (``revision_json`` without detail) over ``page``'s row, as the database encodes it
ENTRY = {d: e.format(time=_TIME[d].format(t="committed_at")) for d, e in _ENTRY_OF.items()}


def entries_sql(dialect: str, where: str, limit: str | None = None) -> str:
    """``(seq, entry)`` (``id`` for ``seq`` when no ``limit``: a batch of entries to keep) of
    the revisions ``where`` selects, newest first."""
    return (_head(dialect, where, limit) + ("SELECT seq, " if limit else "SELECT id, ")
            + ENTRY[dialect] + (" FROM page ORDER BY seq DESC" if limit else " FROM page"))


_PAGE_JSON = {d: entries_sql(d, _CURSOR.format(**m), m["n"]) for d, m in _MARKS.items()}


def page_json(conn: Any, repo_id: str, *, before_seq: int | None, limit: int) -> list[tuple[int, str]]:
    """The same page as the revisions API's entries (``revision_json`` without detail), each
    ``(seq, JSON text)``, encoded by the database in the one statement (no row decoded here)."""
    return driver_rows(conn, _PAGE_JSON[conn.dialect.name], page_params(repo_id, before_seq, limit))


def driver_rows(conn: Any, sql: str, params: dict[str, Any]) -> list[Any]:
    """``sql`` (the driver's own named parameter marks) on the driver's cursor: a page read
    many times a second skips the engine's per-statement work (issue 17)."""
    cur = conn.connection.cursor()
    try:
        cur.execute(sql, params)
        return cur.fetchall()
    finally:
        cur.close()


_CHOICES = text("SELECT sha, committed_at, title FROM revisions WHERE repo_id = :repo ORDER BY seq DESC LIMIT :n")


def choices(conn: Any, repo_id: str, *, limit: int) -> list[tuple[str, str | None, str]]:
    """The newest ``limit`` revisions as a compare picker lists them: (sha, RFC 3339 time, title)."""
    return [(sha, rfc3339(committed), title) for sha, committed, title in
            conn.execute(_CHOICES, {"repo": repo_id, "n": limit})]


_UTC = ("", "+00:00", "Z")


def rfc3339(value: Any) -> str | None:
    """A stored time as ``2024-01-01T00:01:00Z``: SQLite hands back its UTC text (sliced, not
    parsed, when it is in the form written), PostgreSQL a datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        tail = value[19:]
        if len(value) >= 19 and value[10] in " T" and (tail in _UTC or (tail[:1] == "." and tail[7:] in _UTC)):
            return f"{value[:10]}T{value[11:19]}Z"
        value = datetime.fromisoformat(value)
    if value.utcoffset():  # naive (stored UTC) or UTC already: no conversion
        value = value.astimezone(UTC)
    return value.isoformat(timespec="seconds")[:19] + "Z"  # a tenth of strftime's cost


def history(conn: Any, repo_id: str, *, limit: int | None, before_seq: int | None,
            with_changes: bool) -> list[RevisionRecord]:
    """Revisions newest first, ``before_seq`` exclusive, each with its changes."""
    q = select(*_REVISION_COLUMNS).where(R.repo_id == repo_id)
    if before_seq is not None:
        q = q.where(R.seq < before_seq)
    q = q.order_by(R.seq.desc())
    if limit is not None:
        q = q.limit(limit)
    rows = conn.execute(q).all()
    changes = changes_of(conn, [r.id for r in rows]) if with_changes else {}
    return [revision_record(r, changes.get(r.id, ())) for r in rows]


def changes_of(conn: Any, revision_ids: Sequence[int]) -> dict[int, tuple[Change, ...]]:
    if not revision_ids:
        return {}
    out: dict[int, list[Change]] = {}
    rows = conn.execute(
        select(C.revision_id, C.kind, C.path, C.summary, C.topics, C.severity, C.detail)
        .where(C.revision_id.in_(list(revision_ids))).order_by(C.revision_id, C.idx)
    ).all()
    for r in rows:
        out.setdefault(r.revision_id, []).append(Change(
            kind=ChangeKind(r.kind), path=r.path, summary=r.summary, topics=tuple(r.topics or ()),
            severity=Severity(r.severity) if r.severity else None, detail=r.detail or {},
        ))
    return {k: tuple(v) for k, v in out.items()}


def revision_record(row: Any, changes: tuple[Change, ...] = (), *, plan: dict[str, Any] | None = None,
                    delta: dict[str, Any] | None = None) -> RevisionRecord:
    """A stored revision (an ORM row or a core row: the same attribute names)."""
    return RevisionRecord(
        repo_id=row.repo_id, sha=row.sha, seq=row.seq, parent=row.parent, parents=tuple(row.parents or ()),
        committed_at=row.committed_at, title=row.title, message=row.message, authors=tuple(row.authors or ()),
        severity=row.severity, advisory_id=row.advisory_id, reachable=row.reachable, error=row.error,
        chain_hash=row.chain_hash, recorded_at=row.recorded_at, tree_key=row.tree_key, changes=changes,
        plan=plan, plan_delta=delta,
    )
