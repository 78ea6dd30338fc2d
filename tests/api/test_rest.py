"""The JSON API of DESIGN.md's route table: repos, revisions (cursor pages), compare, plan, badge."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from tests.api.data import TOKEN, seed_history, settings, sha_of
from tracker.api.app import create_app
from tracker.config import ApiSettings

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(store):  # type: ignore[no-untyped-def]
    return TestClient(create_app(store, settings()))


def _error(resp, code: int) -> str:  # type: ignore[no-untyped-def]
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert set(body) == {"code", "message"} and body["code"] == code and body["message"]
    return str(body["message"])


def test_repo_writes_need_the_token(store, client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/repos").json() == []
    _error(client.post("/api/v1/repos", json={"source": "org/model"}), 401)
    _error(client.post("/api/v1/repos", json={"source": "org/model"}, headers={"Authorization": "Bearer nope"}), 401)
    assert store.list_repos() == []
    r = client.post("/api/v1/repos", json={"source": "org/model"}, headers=AUTH)
    assert r.status_code == 201
    assert r.json()["id"] == "org/model" and r.json()["source_kind"] == "hub" and r.json()["status"] == "new"
    assert client.post("/api/v1/repos", json={"source": "org/model"}, headers=AUTH).status_code == 200
    # a local path is never a source over the API (issue 16); git URLs only when allowed
    _error(client.post("/api/v1/repos", json={"source": "/srv/mirrors/llama", "as": "meta/llama"}, headers=AUTH), 403)
    git = TestClient(create_app(store, replace(settings(), api=ApiSettings(allow_git_sources=True))))
    r = git.post("/api/v1/repos", json={"source": "https://93.184.215.14/mirrors/llama.git", "as": "meta/llama"},
                 headers=AUTH)
    assert r.status_code == 201 and r.json()["source_kind"] == "git" and r.json()["id"] == "meta/llama"
    r = git.post("/api/v1/repos", json={"source": "https://93.184.215.14/google/gemma-2b-it.git"}, headers=AUTH)
    assert r.json()["id"] == "google/gemma-2b-it"
    assert [x["id"] for x in client.get("/api/v1/repos").json()] == ["google/gemma-2b-it", "meta/llama", "org/model"]
    assert store.get_repo("meta/llama").source == "https://93.184.215.14/mirrors/llama.git"
    _error(client.delete("/api/v1/repos/org/model"), 401)
    assert client.delete("/api/v1/repos/org/model", headers=AUTH).status_code == 204
    _error(client.delete("/api/v1/repos/org/model", headers=AUTH), 404)
    assert "org/model" not in [x["id"] for x in client.get("/api/v1/repos").json()]


def test_without_a_configured_token_writes_are_refused(store) -> None:  # type: ignore[no-untyped-def]
    c = TestClient(create_app(store, settings(token=None)))
    assert "HUBWATCH_API_TOKEN" in _error(c.post("/api/v1/repos", json={"source": "org/m"}, headers=AUTH), 403)
    _error(c.get("/api/v1/subscriptions", headers=AUTH), 403)
    assert store.list_repos() == []


@pytest.mark.parametrize("body", [
    {}, {"source": ""}, {"source": "org/model", "branch": "a b"}, {"source": "org/model", "backfill": "lots"},
    {"source": "org/model", "unknown": 1}, {"source": "org/model", "id": "other/name"}, [1, 2],
    {"source": "/srv/x", "as": "no-slash"},
])
def test_repo_input_is_validated(client, body) -> None:  # type: ignore[no-untyped-def]
    _error(client.post("/api/v1/repos", json=body, headers=AUTH), 400)


def test_paging_returns_every_revision_once_newest_first(store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(store, n=23)
    newest_first = [r.sha for r in reversed(revs)]
    cli_view = client.get("/api/v1/repos/org/model/revisions", params={"limit": 1000}).json()["revisions"]
    assert [e["sha"] for e in cli_view] == newest_first
    for size in (1, 2, 5, 7, 22, 23, 24, 100):
        seen, cursor, pages = [], None, 0
        while True:
            params = {"limit": size} | ({"cursor": cursor} if cursor else {})
            r = client.get("/api/v1/repos/org/model/revisions", params=params)
            assert r.status_code == 200
            page = r.json()
            assert len(page["revisions"]) <= size
            seen += [e["sha"] for e in page["revisions"]]
            pages += 1
            cursor = page["next_cursor"]
            assert ("Link" in r.headers) == (cursor is not None)
            if cursor is None:
                break
        assert seen == newest_first, size
        assert pages == -(-len(revs) // size)


def test_cursor_is_stable_under_new_arrivals(store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(store, n=10)
    first = client.get("/api/v1/repos/org/model/revisions", params={"limit": 4}).json()
    seed_history(store, n=5, first_index=10)  # five new revisions arrive while a client pages
    seen = [e["sha"] for e in first["revisions"]]
    link = None
    cursor = first["next_cursor"]
    while cursor:
        r = client.get("/api/v1/repos/org/model/revisions", params={"limit": 4, "cursor": cursor})
        link = link or r.headers.get("Link")
        seen += [e["sha"] for e in r.json()["revisions"]]
        cursor = r.json()["next_cursor"]
    assert seen == [r.sha for r in reversed(revs)]
    assert link and 'rel="next"' in link
    url = link.split(";")[0].strip("<>")
    assert client.get(url).status_code == 200


def test_revision_entries_have_the_history_json_shape(store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(store, n=3)
    entry = client.get("/api/v1/repos/org/model/revisions").json()["revisions"][0]
    assert set(entry) == {"sha", "parent", "committed_at", "title", "authors", "severity", "advisory_id", "changes"}
    assert entry["sha"] == revs[-1].sha and entry["parent"] == revs[-2].sha
    assert entry["committed_at"].endswith("Z") and entry["advisory_id"] == revs[-1].advisory["id"]
    for c in entry["changes"]:
        assert set(c) == {"kind", "path", "summary", "severity"}


HOSTILE = 'q"uo\\te </script> \x01\x1f\t\n é 漢 \U0001f600 \u2028'


def test_page_entries_are_the_revision_routes_json(store, client) -> None:  # type: ignore[no-untyped-def]
    """The database encodes a page's entries (issue 17): hostile text (quotes, backslashes,
    control characters, non-ASCII) and several changes in order read back as the one-revision
    route (``revision_json``) has them, on SQLite and PostgreSQL."""
    from storage.records import NewRevision
    from tracker.model import Change, ChangeKind, Severity

    revs = seed_history(store, n=2)
    sha = "e" * 40
    changes = tuple(Change(ChangeKind.CONFIG, f"{HOSTILE}/{i}.json", f"{HOSTILE} {i}", (), sev, {"i": i})
                    for i, sev in enumerate([Severity.LOW, None, Severity.HIGH, None]))
    when = datetime(2024, 3, 1, 12, 30, 45, 678901, tzinfo=UTC)
    assert store.record_revision(NewRevision(
        repo_id="org/model", sha=sha, parent=revs[-1].sha, parents=(revs[-1].sha,), committed_at=when,
        title=HOSTILE, message=HOSTILE, authors=(HOSTILE, "bob"), changes=changes, severity="HIGH", tree=None,
        plan=None, plan_delta=None, advisory=None, new_head=sha), now=when)
    page = client.get("/api/v1/repos/org/model/revisions", params={"limit": 3}).json()["revisions"]
    assert [e["sha"] for e in page] == [sha, revs[1].sha, revs[0].sha]
    assert page[0]["committed_at"] == "2024-03-01T12:30:45Z"
    assert all(s in page[0]["title"] for s in ('q"uo\\te </script>', "é 漢 \U0001f600 \u2028"))  # as stored (sanitised)
    assert [c["summary"][-1] for c in page[0]["changes"]] == ["0", "1", "2", "3"]
    for entry in page:
        full = client.get(f"/api/v1/repos/org/model/revisions/{entry['sha']}").json()
        assert entry == {k: full[k] for k in entry if k != "changes"} | {
            "changes": [{k: c[k] for k in ("kind", "path", "summary", "severity")} for c in full["changes"]]}


def test_a_kept_page_is_replaced_when_any_writer_adds_a_revision(store, db_url) -> None:  # type: ignore[no-untyped-def]
    """Pages are encoded once and kept (issue 17): a new revision stored through another
    store (another process's engine and pool) replaces them; the ETag answers 304 meanwhile."""
    from storage import open_store

    seed_history(store, n=5)
    client = TestClient(create_app(store, settings()))
    url, params = "/api/v1/repos/org/model/revisions", {"limit": 3}
    first = client.get(url, params=params)
    tag = first.headers["etag"]
    assert client.get(url, params=params, headers={"If-None-Match": tag}).status_code == 304
    assert client.get(url, params=params).content == first.content
    other = open_store(db_url)
    try:
        seed_history(other, n=2, first_index=5)
    finally:
        other.close()
    after = client.get(url, params=params, headers={"If-None-Match": tag})
    assert after.status_code == 200 and after.headers["etag"] != tag
    assert [e["sha"] for e in after.json()["revisions"]] == [sha_of("org/model", i) for i in (6, 5, 4)]
    fresh = TestClient(create_app(store, settings()))  # nothing kept: computed now
    for p in (params, {"limit": 3, "cursor": after.json()["next_cursor"]}, {"limit": 50}):
        kept, computed = client.get(url, params=p), fresh.get(url, params=p)
        assert kept.content == computed.content and kept.headers.get("link") == computed.headers.get("link")


def test_a_kept_page_is_replaced_after_a_rename_and_back(store) -> None:  # type: ignore[no-untyped-def]
    """A rename appends its change to the head revision; renamed back, the repo has its old
    id again and its kept pages must not come back with it."""
    from datetime import UTC, datetime

    from storage.renames import RenameEvent, rename_repo
    from tracker.model import Change, ChangeKind, Severity

    seed_history(store, n=3)
    client = TestClient(create_app(store, settings()))
    url = "/api/v1/repos/org/model/revisions"
    before = client.get(url).json()
    head = before["revisions"][0]["sha"]
    for i, (old, new) in enumerate([("org/model", "org/renamed"), ("org/renamed", "org/model")]):
        change = Change(ChangeKind.CONFIG, "", f"renamed {old} -> {new}", (), Severity.HIGH, {})
        rename_repo(store, old, new, now=datetime(2025, 1, 1, i, tzinfo=UTC), edit_record=lambda r: r,
                    event=RenameEvent(head, change, None))
    after = client.get(url)
    assert after.status_code == 200
    summaries = [c["summary"] for c in after.json()["revisions"][0]["changes"]]
    assert "renamed org/renamed -> org/model" in summaries
    assert after.content == TestClient(create_app(store, settings())).get(url).content


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": -3}, {"limit": "x"}, {"cursor": "abc"}, {"cursor": "-1"}])
def test_bad_page_parameters(store, client, params) -> None:  # type: ignore[no-untyped-def]
    seed_history(store, n=2)
    _error(client.get("/api/v1/repos/org/model/revisions", params=params), 400)


def test_one_revision(store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(store, n=4)
    full = client.get(f"/api/v1/repos/org/model/revisions/{revs[2].sha}").json()
    assert full["sha"] == revs[2].sha and full["plan"]["params"]["total"] == 1_000_002
    assert full["plan_delta"] == revs[2].plan_delta
    assert any(c["detail"] for c in full["changes"])
    short = client.get(f"/api/v1/repos/org/model/revisions/{revs[2].sha[:10]}").json()
    assert short["sha"] == revs[2].sha
    # a revision without its own plan shows the plan in force
    assert client.get(f"/api/v1/repos/org/model/revisions/{revs[3].sha}").json()["plan"]["params"]["total"] == 1_000_002
    _error(client.get("/api/v1/repos/org/model/revisions/" + "f" * 40), 404)
    _error(client.get("/api/v1/repos/org/model/revisions/not-hex"), 400)
    _error(client.get(f"/api/v1/repos/org/other/revisions/{revs[0].sha}"), 404)
    _error(client.get("/api/v1/repos/org/other/revisions"), 404)


def test_plan_of_a_repo(store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(store, n=4)
    head = client.get("/api/v1/repos/org/model/plan").json()
    assert head["revision"] == revs[-1].sha and head["params"]["total"] == 1_000_002
    first = client.get("/api/v1/repos/org/model/plan", params={"revision": revs[0].sha[:8]}).json()
    assert first["params"]["total"] == 1_000_000 and first["revision"] == revs[0].sha
    _error(client.get("/api/v1/repos/org/model/plan", params={"revision": "zz"}), 400)


def test_badge_is_a_shields_endpoint(store, client) -> None:  # type: ignore[no-untyped-def]
    store.add_repo("org/quiet", source="org/quiet", source_kind="hub")
    quiet = client.get("/api/v1/repos/org/quiet/badge.json").json()
    assert quiet == {"schemaVersion": 1, "label": "hubwatch", "message": "no advisories", "color": "brightgreen",
                     "cacheSeconds": 300}
    revs = seed_history(store, n=6)
    badge = client.get("/api/v1/repos/org/model/badge.json").json()
    n = sum(1 for r in revs if r.advisory)
    latest = [r for r in revs if r.advisory][-1].advisory["database_specific"]["severity"]
    assert badge["schemaVersion"] == 1 and badge["message"] == f"{n} advisories, latest {latest.lower()}"
    assert badge["color"] in {"critical", "orange", "yellow", "informational"}
    _error(client.get("/api/v1/repos/org/none/badge.json"), 404)


def test_openapi_lists_the_routes(client) -> None:  # type: ignore[no-untyped-def]
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/api/v1/repos", "/api/v1/repos/{org}/{name}/revisions", "/api/v1/repos/{org}/{name}/revisions/{sha}",
              "/api/v1/repos/{org}/{name}/compare/{spec}", "/api/v1/repos/{org}/{name}/plan", "/api/v1/plan",
              "/api/v1/repos/{org}/{name}/badge.json", "/api/v1/subscriptions", "/feeds/all.atom"):
        assert p in paths, p


def test_unknown_routes_use_the_error_shape(client) -> None:  # type: ignore[no-untyped-def]
    _error(client.get("/api/v1/nothing"), 404)
    assert sha_of("a", 1) != sha_of("a", 2)
