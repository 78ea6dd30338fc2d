"""The shortcuts history pages take (issue 17) answer exactly what the long way did: the
routers' prefix gate, the lean path of the revisions route, the escape that skips plain
text, the substring test for the plan's note, SQLite's GLOB before its time CASE."""

from __future__ import annotations

import asyncio
import html
import json
import random
import sqlite3

import pytest
from fastapi.testclient import TestClient
from starlette.routing import Match

from storage.history_markup import _esc
from storage.history_rows import _TIME, _plan_in_topics, rfc3339
from storage.renames import RenameEvent, rename_repo
from tests.api.data import START, seed_history, settings
from tracker.api.app import create_app
from tracker.api.dispatch import literal_parts
from tracker.api.history_fast import HistoryPageFastPath
from tracker.model import Change, ChangeKind, Severity

HOSTILE = ["a", "<", ">", "&", '"', "'", " ", "\\", "\n", "é", "🤗", "plan.delta", '"plan.delta"', "\\u0070", "/", "%2F"]


def _paths(app) -> list[str]:  # type: ignore[no-untyped-def]
    """Every route's path with its parameters filled, near misses of them, and strangers."""
    out = ["/", "", "/x", "/api", "/api/v1", "/api/v1/", "/repos", "/repos/", "/feeds", "/v1", "/osv/", "//repos/a/b"]
    for route in app.routes:
        for ctx in getattr(route, "effective_route_contexts", lambda: [])():
            path = ctx.path_format
            filled = path
            while "{" in filled:
                start, end = filled.index("{"), filled.index("}")
                filled = filled[:start] + "a" + filled[end + 1:]
            out += [path, filled, filled + "/", filled[:-1], "/x" + filled, filled.replace("/a", "/a/b")]
    return out


def test_a_gated_router_matches_every_path_and_method_as_ungated(sqlite_store) -> None:  # type: ignore[no-untyped-def]
    app = create_app(sqlite_store, settings())
    gated = [r for r in app.router.routes if "matches" in vars(r)]
    assert len(gated) >= 5  # the OSV, hooks, JSON API, drift, feeds and pages routers
    for path in sorted(set(_paths(app))):
        for method in ("GET", "POST"):  # a route of either is a partial match (405) of the other
            for root in ("", "/mounted"):
                scope = {"type": "http", "method": method, "path": root + path, "root_path": root, "headers": []}
                for route in gated:
                    got, want = route.matches(dict(scope)), type(route).matches(route, dict(scope))
                    assert got[0] == want[0], (path, method, root, got, want)
    pages = next(r for r in gated if "/repos/" in literal_parts(r.effective_route_contexts)[1]
                 and "/docs" in literal_parts(r.effective_route_contexts)[0])
    miss = {"type": "http", "method": "GET", "path": "/api/v1/repos/a/b/revisions", "root_path": "", "headers": []}
    assert pages.matches(miss) == (Match.NONE, {})  # the point: the pages router is not asked at all


def test_escape_skips_only_text_with_nothing_to_escape() -> None:
    rng = random.Random(17)
    for _ in range(5000):
        text = "".join(rng.choice(HOSTILE) for _ in range(rng.randint(0, 8)))
        assert _esc(text) == html.escape(text)


def test_the_plans_note_is_found_in_topics_as_json_finds_it() -> None:
    rng = random.Random(18)
    for _ in range(5000):
        topics = ["".join(rng.choice(HOSTILE) for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.3:
            topics.insert(rng.randint(0, len(topics)), "plan.delta")
        for text in (json.dumps(topics), json.dumps(topics, ensure_ascii=False), json.dumps(topics, separators=(",", ":"))):
            assert _plan_in_topics(text) == ("plan.delta" in json.loads(text)), text


@pytest.mark.parametrize("stored", ["2024-01-01 00:01:00.000000", "2024-01-01 00:01:00.999999", "2024-01-01T00:01:00.000000",
                                    "2024-01-01 00:01:00", "2024-01-01 00:01:00+00:00", "2024-01-01 00:01:00.250000+00:00",
                                    "2024-01-01T02:01:00+02:00", "2024-01-01 00:01:00Z", "2024-01-01 00:01:00.123456Z"])
def test_sqlites_time_expression_reads_every_stored_form_as_rfc3339(stored) -> None:  # type: ignore[no-untyped-def]
    with sqlite3.connect(":memory:") as db:
        (got,) = db.execute("SELECT " + _TIME["sqlite"].format(t=":t"), {"t": stored}).fetchone()
    assert got == rfc3339(stored) == "2024-01-01T00:01:00Z"


def _without_lean_path(app):  # type: ignore[no-untyped-def]
    app.user_middleware = [m for m in app.user_middleware if m.cls is not HistoryPageFastPath]
    return app


@pytest.mark.parametrize("root", ["", "/hubwatch"])
def test_the_lean_history_path_answers_every_request_as_the_route(store, root) -> None:  # type: ignore[no-untyped-def]
    """Status, headers in their order and bytes: with the lean path in front and without it,
    for plain pages (JSON and HTML) and for everything it leaves to the routes (400s, 404s,
    307s, 304, 405)."""
    seed_history(store, n=5)
    seed_history(store, "org/old", n=2)
    rename_repo(store, "org/old", "org/new", now=START, edit_record=lambda r: r,
                event=RenameEvent(store.get_repo("org/old").head_sha,
                                  Change(ChangeKind.RENAME, "", "renamed", (), Severity.HIGH, {}), None))
    lean = TestClient(create_app(store, settings()), root_path=root, follow_redirects=False)
    route = TestClient(_without_lean_path(create_app(store, settings())), root_path=root, follow_redirects=False)
    page = "/api/v1/repos/org/model/revisions"
    etag = route.get(page).headers["etag"]
    cases = [(page, {}), (page + "?limit=2", {}), (page + "?limit=2&cursor=4", {}), (page + "?cursor=&limit=1", {}),
             (page + "?limit=5000", {}), (page + "?limit=0", {}), (page + "?limit=x", {}), (page + "?cursor=abc", {}),
             (page + "?cursor=" + "1" * 21, {}), (page + "?cursor=%00", {}), (page + "?limit=2&limit=3", {}),
             ("/api/v1/repos/org/none/revisions", {}), ("/api/v1/repos/org/old/revisions?limit=1", {}),
             ("/api/v1/repos/org/new/revisions", {}), (page, {"if-none-match": etag}), (page, {"if-none-match": '"x"'}),
             ("/api/v1/repos/org/model/revisions/", {}), ("/api/v1/repos/org%2Fmodel/x/revisions", {}),
             ("/repos/org/model", {}), ("/repos/org/model?limit=2&cursor=4", {}), ("/repos/org/model?cursor=abc", {}),
             ("/repos/org/model?limit=0", {}), ("/repos/org/model?limit=x", {}), ("/repos/org/none", {}),
             ("/repos/org/old?limit=1", {}), ("/repos/org/new", {}), ("/repos/org/model?cursor=%00", {}),
             ("/repos/org/model/", {}), ("/repos/org/model", {"if-none-match": etag})]
    for url, headers in cases:
        got, want = lean.get(url, headers=headers), route.get(url, headers=headers)
        assert (got.status_code, got.headers.raw, got.content) == (want.status_code, want.headers.raw, want.content), url
    assert lean.head(page).status_code == route.head(page).status_code


def test_the_lean_history_path_answers_plain_pages_itself(store) -> None:  # type: ignore[no-untyped-def]
    seed_history(store, n=3)
    asked: list[str] = []

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        asked.append(scope["path"])

    lean = HistoryPageFastPath(app, store=store)
    sent: list[dict] = []  # type: ignore[type-arg]

    async def send(message):  # type: ignore[no-untyped-def]
        sent.append(message)

    def get(path: str, query: bytes = b"") -> None:
        scope = {"type": "http", "method": "GET", "path": path, "root_path": "", "query_string": query, "headers": []}
        asyncio.run(lean(scope, None, send))  # type: ignore[arg-type]

    get("/api/v1/repos/org/model/revisions", b"limit=2")
    assert asked == [] and sent[0]["status"] == 200 and len(json.loads(sent[1]["body"])["revisions"]) == 2
    get("/repos/org/model", b"limit=2")
    assert asked == [] and sent[2]["status"] == 200 and sent[3]["body"].count(b"<tr>") == 3  # a header and 2 rows
    get("/api/v1/repos/org/none/revisions")
    get("/api/v1/repos/org/model/revisions", b"limit=0")
    get("/api/v1/repos/org/model")
    get("/repos/org/none")
    assert asked == ["/api/v1/repos/org/none/revisions", "/api/v1/repos/org/model/revisions", "/api/v1/repos/org/model",
                     "/repos/org/none"]
