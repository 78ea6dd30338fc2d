"""History entries kept per revision (issue 17, migration 0014): a page read from them is
byte for byte the page made from the revisions and changes as before, on SQLite and
PostgreSQL, with hostile repo content, after a rewrite, a rename and an upgrade; a page with
a revision that has no entry is made as before."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from html import escape as _e
from urllib.parse import quote, urlencode

import pytest
from markupsafe import Markup
from sqlalchemy import event, text

from storage import history_entries
from storage import history_rows as H
from storage.engine import migrate
from storage.history_markup import cut, sentence
from storage.renames import RenameEvent, rename_repo
from tests.api.data import START, seed_history
from tracker.api import pages, rest
from tracker.api.page_cache import PageCache
from tracker.api.page_models import Urls
from tracker.model import Change, ChangeKind, Severity

HOSTILE = ["<script>alert(1)</script>", 'a "quoted" & \'single\'', "tab\there  two  spaces", "line\nbreak",
           "ünïcödé → ✓", "x" * 90, "&amp; already", "/../%2e?#frag", ""]


# -- the repo page's history as it was made before 0014 (tracker/api/history_views.py at c2aa785) --
def _quiet(c: H.PageChange) -> str:
    return f"{c.path}: {sentence(c.summary)}" if c.path and c.path not in c.summary else sentence(c.summary)


def _badge(severity: str | None) -> str:
    if severity is None:
        return '<span class="sev sev-NONE">no severity</span>'
    sev = _e(severity)
    return f'<span class="sev sev-{sev}">{sev}</span>'


def _plain(value: str) -> bool:
    return all(ch.isascii() and (ch.isalnum() or ch in "_.~-") for ch in value)


def _reference_row(base: str, advisories: str, r: H.PageRevision) -> tuple[str, str]:
    sha, adv, when = r.sha, r.advisory_id, r.committed_at
    link, short = (sha, sha[:12]) if _plain(sha) else (quote(sha), _e(sha[:12]))
    day = _e(when[:10]) if when else "—"
    committed = f"{day} {_e(when[11:16])} UTC" if when else "—"
    cell = [_e(r.title)]
    if not r.reachable:
        cell.append(' <span class="muted">(no longer on the branch)</span>')
    quiet = [c for c in r.changes if c.severity is None]
    flagged = [f"<li>{_badge(c.severity)} {_e(sentence(c.summary))}</li>" for c in r.changes if c.severity is not None]
    if flagged:
        cell.append(f"\n    <ul>{''.join(flagged)}</ul>")
    counted = sum(1 for c in quiet if not c.plan_delta)
    if counted:
        said = " ".join(_e(_quiet(c)) for c in quiet[:3])
        cell.append(f'\n    <div class="muted">{counted} other change{"s" if counted > 1 else ""} (no severity)'
                    f'{": " + said if said else ""}</div>')
    advisory = "—" if adv is None else f'<a href="{advisories}/{quote(adv)}">{_e(adv)}</a>'
    label = _e(r.title) if len(r.title) <= 60 and "\n" not in r.title and "  " not in r.title else _e(cut(r.title, 60))
    return (f'<tr>\n  <td class="mono"><a href="{base}/{link}">{short}</a></td>\n'
            f'  <td class="nowrap">{committed}</td>\n  <td>{_badge(r.severity)}</td>\n'
            f'  <td>{"".join(cell)}\n  </td>\n  <td>{advisory}</td>\n</tr>\n',
            f'<option value="{_e(sha)}">{day} · {label}</option>')


_FIELD = ('<label>{label}<input name="{name}" list="page-revisions" value="{sha}" required size="42" '
          'maxlength="64" pattern="\\s*[0-9a-fA-F]{{4,64}}\\s*" autocomplete="off" spellcheck="false"></label>\n')


def _reference_html(u: Urls, repo_id: str, revs: Sequence[H.PageRevision], before: int | None, size: int) -> str:
    next_url = u.repo(repo_id) + "?" + urlencode({"cursor": revs[size - 1].seq, "limit": size}) \
        if len(revs) > size else None
    revs = revs[:size]
    base, advisories = _e(u.repo(repo_id)), _e(f"{u.root}/advisories")
    made = [_reference_row(base, advisories, r) for r in revs]
    out = []
    if len(revs) > 1:
        out.append(f'<h2>Compare two revisions</h2>\n<form class="pick" method="get" action="{base}/compare">\n'
                   + _FIELD.format(label="Base (older)", name="base", sha=_e(revs[-1].sha))
                   + _FIELD.format(label="Head (newer)", name="head", sha=_e(revs[0].sha))
                   + '<button type="submit">Compare</button>\n</form>\n'
                   '<p class="muted">Any stored revision: paste its sha (or its first 4 or more digits).</p>\n'
                   f'<datalist id="page-revisions">{"".join(o for _, o in made)}</datalist>\n')
    out.append("<h2>History</h2>\n")
    if not revs:
        out.append(f'<p class="muted">No revisions stored{" before this point" if before else ""}.</p>\n')
    else:
        out.append('<table id="history">\n<tr><th>Revision</th><th>Committed</th><th>Severity</th>'
                   "<th>What changed</th><th>Advisory</th></tr>\n")
        out += [row for row, _ in made]
        out.append("</table>\n")
    out.append('<nav class="pager">\n')
    if before:
        out.append(f'<a href="{_e(u.repo(repo_id))}">newest</a>\n')
    if next_url:
        out.append(f'<a id="older" href="{_e(next_url)}">older revisions →</a>\n')
    out.append("</nav>\n")
    return "".join(out)


def _hostile_history(store, repo_id: str = "org/model") -> None:  # type: ignore[no-untyped-def]
    """Revisions whose titles, paths, summaries, severities, shas and advisory ids hold what HTML
    and URLs treat specially, some changes noted by the plan only."""
    revs = seed_history(store, repo_id, n=4)
    parent = revs[-1].sha
    for i, title in enumerate(HOSTILE):
        sha = f"{i:x}" * 40 if i % 3 else f"e{i}<&\"'>/?#%x"
        changes = (Change(ChangeKind.CONFIG, f"<{title}>.json", f"{title} 1 -> 2", ("config.x",),
                          [Severity.HIGH, None, Severity.LOW][i % 3], {}),
                   Change(ChangeKind.OTHER, title, f"{title} modified", ("plan.delta",) if i % 2 else (), None, {}),
                   Change(ChangeKind.OTHER, "README.md", "readme & <notes>", (), None, {}))
        record = None
        if i % 2 == 0:
            [base] = [r for r in revs if r.advisory is not None][:1]
            record = {**base.advisory, "id": f"X-{i}\"<b>&'/?#%" if i % 4 == 0 else f"X-HUBWATCH-{i}"}  # type: ignore[dict-item]
        rev = replace(revs[-1], sha=sha, parent=parent, parents=(parent,), title=title or "(untitled)",
                      committed_at=START + timedelta(days=1, hours=i), changes=changes[: 1 + i % 3],
                      severity=["HIGH", None, "LOW"][i % 3], advisory=record, advisory_updates=(), plan=None,
                      plan_delta=None, new_head=sha)
        assert store.record_revision(rev, now=START + timedelta(days=2))
        parent = sha


def _same_pages(store, repo_id: str, roots: Sequence[str] = ("", "/hub")) -> int:  # type: ignore[no-untyped-def]
    """Every page (sizes 1, 2, 3, 50; every cursor) kept and made as before: the same bytes."""
    newest = store.history(repo_id, limit=1, with_changes=False)[0].seq
    checked = 0
    for size in (1, 2, 3, 50):
        for before in [None, *range(1, newest + 2)]:
            with store.history_reader() as reader:
                kept_json = reader.page_json(repo_id, before_seq=before, limit=size + 1)
                assert kept_json == H.page_json(reader.conn, repo_id, before_seq=before, limit=size + 1)
                together = reader.versioned_page_json(repo_id, before_seq=before, limit=size + 1)
                assert together == (reader.probe(repo_id).version, kept_json), (size, before)
                rows = reader.page_rows(repo_id, before_seq=before, limit=size + 1)
                assert reader.repo_and_page_rows(repo_id, before_seq=before, limit=size + 1) == (
                    *reader.repo_and_probe(repo_id), rows), (size, before)
                revs = H.page(reader.conn, repo_id, before_seq=before, limit=size + 1)
                for root in roots:
                    u = Urls(root)
                    got = pages._history_html(reader, u, repo_id, before, size)
                    assert isinstance(got, Markup)
                    assert str(got) == _reference_html(u, repo_id, revs, before, size), (size, before, root)
            checked += 1
    return checked


def test_kept_entries_make_the_pages_made_before(store) -> None:  # type: ignore[no-untyped-def]
    _hostile_history(store)
    assert _same_pages(store, "org/model") > 50
    body = rest._kept_page(store, PageCache(), ("org/model", None, 50, "/p"), "/p").body  # type: ignore[union-attr]
    assert b"<script>" in body and b"&lt;script&gt;" not in body  # JSON is JSON: escaped by the HTML only
    html, _ = pages.repo_page_html(store, PageCache(), "org/model", None, 50, "")
    assert html is not None and "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_kept_entries_follow_a_rewrite_a_rename_and_an_amendment(store) -> None:  # type: ignore[no-untyped-def]
    _hostile_history(store)
    shas = [r.sha for r in store.history("org/model", limit=None, with_changes=False)]
    store.mark_unreachable("org/model", shas[1:4])
    _same_pages(store, "org/model", roots=("",))
    head = store.get_repo("org/model").head_sha
    change = Change(ChangeKind.RENAME, "", "renamed org/model -> org/<new>", (), Severity.HIGH, {})
    rename_repo(store, "org/model", "org/<new>", now=START + timedelta(days=3), edit_record=lambda r: r,
                event=RenameEvent(head, change, None))  # the head revision amended: a change and a severity more
    with store.history_reader() as reader:  # the former id: not tracked under it (the probe says where it went)
        assert reader.versioned_page_json("org/model", before_seq=None, limit=5) == (None, [])
        assert reader.probe("org/model").moved_to == "org/<new>"
        assert reader.repo_and_page_rows("org/model", before_seq=None, limit=5) == (None, H.RepoProbe(None, "org/<new>"), [])
    newest = H.page(store.reads.connect(), "org/<new>", before_seq=None, limit=1)[0]
    assert newest.severity == "HIGH" and newest.changes[-1].kind == "rename"
    _same_pages(store, "org/<new>")


def test_a_page_with_a_revision_without_an_entry_is_made_as_before(store) -> None:  # type: ignore[no-untyped-def]
    _hostile_history(store)
    ids = [r[0] for r in store.reads.connect().execute(text("SELECT id FROM revisions ORDER BY id"))]
    with store.engine.begin() as c:
        c.execute(text("DELETE FROM history_entries WHERE revision_id IN (:a, :b)"), {"a": ids[2], "b": ids[-1]})
    with store.history_reader() as reader:
        assert history_entries.page_json(reader.conn, "org/model", before_seq=None, limit=50) is None
        assert history_entries.page_rows(reader.conn, "org/model", before_seq=None, limit=50) is None
        assert history_entries.page_json(reader.conn, "org/model", before_seq=ids[2] - ids[0] + 1, limit=1) is not None
    _same_pages(store, "org/model", roots=("",))


def test_an_upgraded_database_gets_every_revisions_entry(store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Migration 0014 on a store whose revisions have no entries (as a release before it left
    it), a few revisions per batch: every revision's entry, the pages as before."""
    _hostile_history(store)
    seed_history(store, "org/other", n=5)
    with store.engine.begin() as c:
        want = sorted(c.execute(text("SELECT * FROM history_entries")).all())
        c.execute(text("DROP TABLE history_entries"))
        c.execute(text("UPDATE alembic_version SET version_num = '0013'"))
    monkeypatch.setattr(history_entries, "BACKFILL_BATCH", 3)
    migrate(store.engine)
    with store.engine.connect() as c:
        assert sorted(c.execute(text("SELECT * FROM history_entries")).all()) == want
        assert c.execute(text("SELECT count(*) FROM revisions")).scalar() == len(want)
    _same_pages(store, "org/model", roots=("",))


@pytest.mark.parametrize("batch", [1, 2, 1000])
def test_the_backfill_makes_the_entries_a_write_makes(store, batch) -> None:  # type: ignore[no-untyped-def]
    """Batches by id hold several repos' revisions (the same arrival orders): each its own entry."""
    _hostile_history(store)
    seed_history(store, "org/other", n=5)
    with store.engine.begin() as c:
        want = sorted(c.execute(text("SELECT * FROM history_entries")).all())
        c.execute(text("DELETE FROM history_entries"))
        assert history_entries.backfill(c, batch) == len(want)
        assert sorted(c.execute(text("SELECT * FROM history_entries")).all()) == want
        assert history_entries.backfill(c, batch) == len(want)  # again: the same rows, none twice
        assert sorted(c.execute(text("SELECT * FROM history_entries")).all()) == want


def test_a_new_revision_on_a_store_written_before_keeps_its_entry(store) -> None:  # type: ignore[no-untyped-def]
    seed_history(store, n=2)
    with store.engine.begin() as c:
        c.execute(text("DELETE FROM history_entries"))
    seed_history(store, n=1, first_index=2)
    with store.history_reader() as reader:
        assert history_entries.page_json(reader.conn, "org/model", before_seq=None, limit=1) is not None
        assert history_entries.page_json(reader.conn, "org/model", before_seq=None, limit=2) is None
    _same_pages(store, "org/model", roots=("",))


def test_a_page_at_a_cursor_not_kept_is_read_with_its_version_in_one_statement(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """On PostgreSQL the probe (the repo, for a repo page) and the page together where the page
    is not kept (a random cursor's is rarely: issue 17), the probe alone where it is; on SQLite,
    where a statement is no round trip, the two as before. Statements counted by the drivers'
    own tracing: SQLite's trace callback, libpq's protocol trace (each Bind message)."""
    seed_history(store, n=6)
    engine = store.page_reads.engine
    traced: list[str] = []
    trace_file = tmp_path / "libpq.trace"

    def trace(dbapi_conn, _record, _proxy) -> None:  # type: ignore[no-untyped-def]
        if store.dialect == "sqlite":
            dbapi_conn.set_trace_callback(lambda sql: traced.append(sql) if sql.lstrip().startswith("SELECT") else None)
        else:
            dbapi_conn.pgconn.trace(out.fileno())

    def untrace(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
        if store.dialect == "postgresql":
            dbapi_conn.pgconn.untrace()

    kept: PageCache[rest.Kept] = PageCache()
    fragments: PageCache[Markup] = PageCache()

    def counted(read) -> int:  # type: ignore[no-untyped-def]
        traced.clear()
        out.seek(0)
        out.truncate()
        read()
        out.flush()
        if store.dialect == "sqlite":
            return len(traced)
        messages = [line.split("\t")[1:4] for line in trace_file.read_text().splitlines()]  # time, F/B, length, type
        return sum(sender == "F" and kind == "Bind" for sender, _length, kind in messages)

    def statements(before: int | None) -> tuple[int, int]:
        def json_page() -> None:
            page = rest._kept_page(store, kept, ("org/model", before, 2, "/p"), "/p")
            assert isinstance(page, rest.Kept) and page.body.count(b'"sha"') == 2

        def repo_page() -> None:
            html, _moved = pages.repo_page_html(store, fragments, "org/model", before, 2, "")
            assert html is not None and html.count("<tr>") == 3  # a header and 2 rows

        return counted(json_page), counted(repo_page)

    together = store.dialect == "postgresql"
    with trace_file.open("w+") as out:
        event.listen(engine, "checkout", trace)
        event.listen(engine, "checkin", untrace)
        try:
            new = (1, 1) if together else (2, 2)
            assert [statements(4), statements(4), statements(3), statements(None)] == [new, (1, 1), new, new]
            seed_history(store, n=1, first_index=6)  # the version moves: the kept page is a miss
            assert statements(4) == (2, 2)
        finally:
            event.remove(engine, "checkout", trace)
            event.remove(engine, "checkin", untrace)


def test_the_repo_pages_read_of_a_repo_is_what_the_orm_reads(store) -> None:  # type: ignore[no-untyped-def]
    """The repo page's look-up on the driver's cursor gives every field as :meth:`Store.get_repo`
    does (times as the ORM's UTC type makes them, booleans), in each state a repo can be in."""
    seed_history(store, n=3)
    store.add_repo("org/new", source="/srv/git/new", source_kind="git", now=START, repo_url="https://example.org/new")
    store.add_repo("org/failing", source="org/failing", source_kind="hub", now=START)
    store.record_poll("org/failing", now=START + timedelta(hours=1), error="503 from the Hub", error_kind="unavailable",
                      next_check_at=START + timedelta(hours=2))
    store.record_poll("org/model", now=START + timedelta(minutes=5), next_check_at=START + timedelta(minutes=20),
                      changed=True)
    store.add_repo("org/gone", source="org/gone", source_kind="hub", now=START)
    store.untrack("org/gone")
    for repo_id in ("org/model", "org/new", "org/failing", "org/gone"):
        with store.history_reader() as reader:
            repo, probe = reader.repo_and_probe(repo_id)
        assert repo == store.get_repo(repo_id), repo_id
        assert repo is not None and probe.version == (probe.version[0], repo.added_at)
        assert repo.added_at.tzinfo is not None and isinstance(repo.active, bool)
    with store.history_reader() as reader:
        assert reader.repo_and_probe("org/none") == (None, H.RepoProbe(None))


def test_postgresql_page_statements_are_planned_once_per_connection(pg_url) -> None:  # type: ignore[no-untyped-def]
    """The pages' pool plans each prepared statement once (PostgreSQL's own choice planned the
    repo page's statement anew at every execution: over half its server CPU at a million
    revisions, issue 17); the store's other connections keep PostgreSQL's default."""
    from storage import open_store

    store = open_store(pg_url)
    try:
        seed_history(store, n=12)
        with store.history_reader() as reader:
            for before in range(2, 13):  # prepared by psycopg at its fifth execution
                _repo, _probe, rows = reader.repo_and_page_rows("org/model", before_seq=before, limit=3)
                assert [row[0] for row in rows] == list(range(before - 1, max(before - 4, 0), -1))
            plans = reader.conn.exec_driver_sql(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %(page)s",
                {"page": "%UNION ALL%"}).all()
            mode = reader.conn.exec_driver_sql("SHOW plan_cache_mode").scalar()
        assert mode == "force_generic_plan"
        assert plans and all(generic >= 6 and custom == 0 for generic, custom in plans), plans
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "auto"
    finally:
        store.close()
