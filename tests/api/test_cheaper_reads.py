"""The shortcuts history pages take (issue 17) answer exactly what the long way did: the
routers' prefix gate, the escape that skips plain text, the substring test for the plan's
note, SQLite's GLOB before its time CASE."""

from __future__ import annotations

import html
import json
import random
import sqlite3

import pytest
from starlette.routing import Match

from storage.history_rows import _TIME, _plan_in_topics, rfc3339
from tests.api.data import settings
from tracker.api.app import create_app
from tracker.api.dispatch import literal_parts
from tracker.api.history_views import _esc

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
