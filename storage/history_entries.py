"""Each revision's history entry, made when it is written and kept in ``history_entries``:
the revisions API's JSON entry (as the database encodes it, :data:`storage.history_rows.ENTRY`)
and the repo page's row (:func:`storage.history_markup.row_parts`).

A page at a random cursor encoded its 50 entries on every request: the statement's JSON
functions and the rows' markup were most of a page's CPU (issue 17). A page is now one
indexed statement over the kept entries (:func:`page_json`, :func:`page_rows`). Entries are
made by the same statements and markup the pages used, over the rows just written, so the
bytes are the same; every write that changes what a revision's entry shows makes it again in
its own transaction (a new revision, an amendment: :func:`storage.repairs.append_amendment`).
Reachability, the repo's URL and the root are not in them (a rewrite, a rename or a proxy
changes those): they are spliced in when a page is read. A page with any revision that has
no entry (a row written by a release before this table) is read as before (None here).

Imports: stdlib, sqlalchemy, sqlmodel, storage.history_markup, storage.history_rows, storage.records.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlmodel import Session

from storage import history_rows as H
from storage.history_markup import row_parts
from storage.records import RepoRecord

BACKFILL_BATCH = 1000  # revisions per statement of the backfill: memory bounded by this

_MARKS = {"sqlite": {"lo": ":lo", "hi": ":hi", "repo": ":repo", "before": ":before", "n": ":n"},
          "postgresql": {"lo": "%(lo)s", "hi": "%(hi)s", "repo": "%(repo)s", "before": "%(before)s", "n": "%(n)s"}}
_IDS = "id >= {lo} AND id <= {hi}"
_ENTRIES = {d: H.entries_sql(d, _IDS.format(**m)) for d, m in _MARKS.items()}
_ROWS = {d: H.page_sql(d, _IDS.format(**m)) for d, m in _MARKS.items()}
_INSERT = {d: "INSERT INTO history_entries (revision_id, entry, row_head, row_tail, row_advisory, row_option) "
              f"VALUES ({', '.join(f'%(p{i})s' if d == 'postgresql' else f':p{i}' for i in range(6))})"
           for d in _MARKS}
_DELETE = {d: "DELETE FROM history_entries WHERE revision_id >= {lo} AND revision_id <= {hi}".format(**m)
           for d, m in _MARKS.items()}
_BATCH = {"sqlite": "SELECT id FROM revisions WHERE id > :last ORDER BY id LIMIT :n",
          "postgresql": "SELECT id FROM revisions WHERE id > %(last)s ORDER BY id LIMIT %(n)s"}
_KEPT = ("SELECT r.seq, {columns} FROM revisions r LEFT JOIN history_entries e ON e.revision_id = r.id "
         "WHERE r.repo_id = {repo} AND r.seq < {before} ORDER BY r.seq DESC LIMIT {n}")
_PAGE_JSON = {d: _KEPT.format(columns="e.entry", **m) for d, m in _MARKS.items()}
_PAGE_ROWS = {d: _KEPT.format(columns="r.sha, r.reachable, e.row_head, e.row_tail, e.row_advisory, e.row_option", **m)
              for d, m in _MARKS.items()}


def write(db: Any, lo: int, hi: int, *, fresh: bool = False) -> int:
    """Make the entries of revisions ``lo`` to ``hi`` (ids) again, in ``db``'s transaction
    (a Connection or a Session); ``fresh``: none is kept yet (a new revision). Returns how many."""
    conn = db.connection() if isinstance(db, Session) else db
    dialect = conn.dialect.name
    bounds = {"lo": lo, "hi": hi}
    entries = dict(H.driver_rows(conn, _ENTRIES[dialect], bounds))
    rows = [{"p0": rid, "p1": entries[rid], "p2": p.head, "p3": p.tail, "p4": p.advisory, "p5": p.option}
            for rid, rev in H.page_revisions(H.driver_rows(conn, _ROWS[dialect], bounds), dialect == "sqlite")
            for p in (row_parts(rev),)]
    cur = conn.connection.cursor()
    try:
        if not fresh:
            cur.execute(_DELETE[dialect], bounds)
        if rows:
            cur.executemany(_INSERT[dialect], rows)
    finally:
        cur.close()
    return len(rows)


def backfill(conn: Any, batch: int | None = None) -> int:
    """Every stored revision's entries (migration 0014, the benchmark's seed), ``batch``
    (:data:`BACKFILL_BATCH`) revisions at a time; returns how many."""
    batch = batch or BACKFILL_BATCH
    last, done = 0, 0
    while True:
        found = [r[0] for r in H.driver_rows(conn, _BATCH[conn.dialect.name], {"last": last, "n": batch})]
        if not found:
            return done
        done += write(conn, found[0], found[-1])
        last = found[-1]


def page_json(conn: Any, repo_id: str, *, before_seq: int | None, limit: int) -> list[tuple[int, str]] | None:
    """``(seq, entry)`` of a page, newest first, from the kept entries; None when one is missing."""
    rows = H.driver_rows(conn, _PAGE_JSON[conn.dialect.name], H.page_params(repo_id, before_seq, limit))
    return None if any(entry is None for _, entry in rows) else rows


def page_rows(conn: Any, repo_id: str, *, before_seq: int | None, limit: int) -> list[Any] | None:
    """``(seq, sha, reachable, head, tail, advisory, option)`` of a page, newest first (see
    :class:`storage.history_markup.RowParts`); None when one is missing."""
    rows = H.driver_rows(conn, _PAGE_ROWS[conn.dialect.name], H.page_params(repo_id, before_seq, limit))
    return None if any(r[3] is None for r in rows) else rows


_JSON_WIDTH, _ROW_WIDTH = 2, 7  # the columns of :data:`_PAGE_JSON` and :data:`_PAGE_ROWS`
#: what :func:`storage.history_rows.probe` reads of a tracked repo: its history version
_VERSION_COLUMNS = ("history_version", "added_at")


@functools.cache
def _with_repo_row(dialect: str, columns: tuple[str, ...], page: str, page_width: int) -> str:
    """The repo's ``columns`` (part 0) and the ``page`` statement's rows (part 1, newest first)
    in one statement, each padded with NULLs to the other's columns: a page at a cursor not
    kept is read with its version (issue 17: on PostgreSQL the probe's own round trip was a
    third of what a random page's reads cost the server)."""
    pad = ", ".join(["NULL"] * page_width)
    return (f"SELECT 0, {', '.join(columns)}, {pad} FROM repos WHERE id = {_MARKS[dialect]['repo']} "
            f"UNION ALL SELECT 1, {', '.join(['NULL'] * len(columns))}, p.* FROM ({page}) AS p "
            f"ORDER BY 1, {len(columns) + 2} DESC")


def _read_with_repo_row(conn: Any, columns: tuple[str, ...], page: dict[str, str], page_width: int,
                        params: dict[str, Any]) -> tuple[Any, list[Any]]:
    """(the repo's values, or None when no repo is tracked under the id; the page's rows) of
    :func:`_with_repo_row`."""
    width = len(columns)
    rows = H.driver_rows(conn, _with_repo_row(conn.dialect.name, columns, page[conn.dialect.name], page_width), params)
    if not rows or rows[0][0] != 0:
        return None, []
    return rows[0][1:width + 1], [row[width + 1:] for row in rows[1:]]


class KeptReader(H.HistoryReader):
    """A page's reads from the kept entries, and as before where a page has a revision without one."""

    @property
    def reads_together(self) -> bool:
        """Whether a page not kept is read with its version in one statement: on PostgreSQL,
        where each statement is a round trip; on SQLite two statements cost less than the
        union (0.13-0.20 against 0.16-0.28 ms a JSON page, 0.28-0.37 against 0.45-0.64 a repo
        page's reads, in-process, 2026-12-03)."""
        return bool(self.conn.dialect.name == "postgresql")

    def page_json(self, repo_id: str, *, before_seq: int | None, limit: int) -> list[tuple[int, str]]:
        kept = page_json(self.conn, repo_id, before_seq=before_seq, limit=limit)
        return kept if kept is not None else H.page_json(self.conn, repo_id, before_seq=before_seq, limit=limit)

    def versioned_page_json(self, repo_id: str, *, before_seq: int | None, limit: int
                            ) -> tuple[tuple[Any, Any] | None, list[tuple[int, str]]]:
        """The repo's history version as :meth:`probe` reads it (None: no repo is tracked under
        this id, nor a page; a former id's look-up is the probe's) and :meth:`page_json`'s page,
        in one statement: the page is the one at that version."""
        version, page = _read_with_repo_row(self.conn, _VERSION_COLUMNS, _PAGE_JSON, _JSON_WIDTH,
                                            H.page_params(repo_id, before_seq, limit))
        if version is None:
            return None, []
        if any(entry is None for _, entry in page):  # a revision without its entry: made as before
            page = H.page_json(self.conn, repo_id, before_seq=before_seq, limit=limit)
        return tuple(version), page

    def repo_and_page_rows(self, repo_id: str, *, before_seq: int | None, limit: int
                           ) -> tuple[RepoRecord | None, H.RepoProbe, list[Any]]:
        """:meth:`repo_and_probe` and :meth:`page_rows` in one statement (a repo page at a cursor
        not kept: issue 17); a former id's look-up, and no rows, when no repo is tracked under it."""
        values, page = _read_with_repo_row(self.conn, self.repo.columns, _PAGE_ROWS, _ROW_WIDTH,
                                           H.page_params(repo_id, before_seq, limit))
        if values is None:
            return None, self.probe(repo_id), []
        repo, counter = self.repo.record(self.conn.dialect, values)
        if any(row[3] is None for row in page):  # a revision without its entry: made as before
            page = self.page_rows(repo_id, before_seq=before_seq, limit=limit)
        return repo, H.RepoProbe((counter, repo.added_at)), page

    def page_rows(self, repo_id: str, *, before_seq: int | None, limit: int) -> list[Any]:
        """As :func:`page_rows`; made here from :func:`storage.history_rows.page` where one is missing."""
        kept = page_rows(self.conn, repo_id, before_seq=before_seq, limit=limit)
        if kept is not None:
            return kept
        return [(r.seq, r.sha, r.reachable, p.head, p.tail, p.advisory, p.option)
                for r in H.page(self.conn, repo_id, before_seq=before_seq, limit=limit) for p in (row_parts(r),)]
