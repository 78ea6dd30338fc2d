"""The history version pages are kept by (issue 17): ``repos.history_version``, bumped in the
transaction of every write that changes a history page, read with one primary-key probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient

from storage.history_rows import rfc3339
from storage.records import NewRevision
from storage.renames import RenameEvent, rename_repo
from tests.api.data import START, changes_for, seed_history, settings, sha_of
from tests.corpus import REPO_ROOT
from tracker.api.app import create_app
from tracker.api.views import revision_json
from tracker.model import Change, ChangeKind, Severity


def _rename(store, old: str, new: str, hour: int) -> None:  # type: ignore[no-untyped-def]
    head = store.get_repo(old).head_sha
    change = Change(ChangeKind.RENAME, "", f"renamed {old} -> {new}", (), Severity.HIGH, {})
    rename_repo(store, old, new, now=datetime(2025, 1, 1, hour, tzinfo=UTC), edit_record=lambda r: r,
                event=RenameEvent(head, change, None))


def test_every_write_that_changes_a_page_moves_the_version_and_no_other_does(store) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(store, n=3)
    seen = [store.history_version("org/model")]
    assert seen[0] is not None and store.history_version("org/none") is None
    store.record_poll("org/model", now=START, next_check_at=START)  # polls, errors, leases: pages unchanged
    store.mark_unreachable("org/model", [], head=revs[-1].sha)
    assert store.history_version("org/model") == seen[-1]
    seed_history(store, n=1, first_index=3)  # a revision
    seen.append(store.history_version("org/model"))
    store.mark_unreachable("org/model", [revs[0].sha])  # a rewrite: the page shows reachability
    seen.append(store.history_version("org/model"))
    _rename(store, "org/model", "org/renamed", 1)
    assert store.history_version("org/model") is None
    seen.append(store.history_version("org/renamed"))
    _rename(store, "org/renamed", "org/model", 2)  # back: the old id again, not its old pages
    seen.append(store.history_version("org/model"))
    assert len(set(seen)) == len(seen), seen
    probe = store.probe_repo("org/renamed")
    assert probe.version is None and probe.moved_to == "org/model"
    _rename(store, "org/model", "org/renamed", 3)  # a repo tracked anew under the former id
    seed_history(store, "org/model", n=3, start=START.replace(year=2026))
    assert store.history_version("org/model") not in seen


WRITER = textwrap.dedent("""
    import sys
    from storage import open_store
    from tests.api.data import seed_history, sha_of
    store = open_store(sys.argv[1])
    if sys.argv[2] == "revision":
        seed_history(store, n=1, first_index=3)
    else:
        store.mark_unreachable("org/model", [sha_of("org/model", 0)])
    store.close()
""")


def _write_in_a_child(db_url: str, what: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", WRITER, db_url, what], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_pages_kept_by_one_process_follow_writes_of_another(store, db_url) -> None:  # type: ignore[no-untyped-def]
    """JSON and HTML pages kept in this process, a revision and then a rewrite written by a
    child process (its own engine and pool): the kept pages are replaced, on SQLite and PostgreSQL."""
    seed_history(store, n=3)
    client = TestClient(create_app(store, settings()))
    api, html = "/api/v1/repos/org/model/revisions", "/repos/org/model"
    first = client.get(api, params={"limit": 2})
    tag = first.headers["etag"]
    assert client.get(api, params={"limit": 2}, headers={"If-None-Match": tag}).status_code == 304
    page = client.get(html).text
    assert sha_of("org/model", 3)[:12] not in page
    _write_in_a_child(db_url, "revision")
    after = client.get(api, params={"limit": 2}, headers={"If-None-Match": tag})
    assert after.status_code == 200 and after.headers["etag"] != tag
    assert [e["sha"] for e in after.json()["revisions"]] == [sha_of("org/model", i) for i in (3, 2)]
    page = client.get(html).text
    assert sha_of("org/model", 3)[:12] in page and f'value="{sha_of("org/model", 3)}"' in page  # the picker too
    assert "no longer on the branch" not in page
    _write_in_a_child(db_url, "rewrite")
    assert "no longer on the branch" in client.get(html).text
    fresh = TestClient(create_app(store, settings()))  # nothing kept: what a new process answers
    for url, params in ((api, {"limit": 2}), (api, {"limit": 50}), (html, {})):
        assert client.get(url, params=params).content == fresh.get(url, params=params).content


def test_entries_are_what_revision_json_says_for_hostile_text(store) -> None:  # type: ignore[no-untyped-def]
    """The store encodes entries itself (no records): the same JSON values as ``revision_json``,
    for text with quotes, backslashes, control and non-ASCII characters."""
    seed_history(store, n=2)
    odd = 'q"uo\\te \n\t\x01 \u2028 é 🤗 </script>'
    rev = NewRevision(
        repo_id="org/model", sha=sha_of("odd", 1), parent=sha_of("org/model", 1), parents=(sha_of("org/model", 1),),
        committed_at=START.replace(microsecond=123456), title=odd, message=odd, authors=(odd, "bob"),
        changes=(Change(ChangeKind.OTHER, odd, odd, (odd,), None, {"k": odd}), *changes_for(1)), severity=None,
        tree=None,
    )
    assert store.record_revision(replace(rev))
    client = TestClient(create_app(store, settings()))
    for params in ({"limit": 1}, {"limit": 50}, {"limit": 2, "cursor": "3"}):
        got = client.get("/api/v1/repos/org/model/revisions", params=params)
        cursor = params.get("cursor")
        want = [revision_json(r) for r in store.history("org/model", limit=params["limit"],
                                                         before_seq=int(cursor) if cursor else None)]
        assert got.json()["revisions"] == want
        json.loads(got.content.decode("utf-8"))  # strict UTF-8 and JSON


@pytest.mark.parametrize("stored", ["2024-01-01 00:01:00", "2024-01-01 00:01:00.000000", "2024-01-01 00:01:00+00:00",
                                    "2024-01-01 00:01:00.250000+00:00", "2024-01-01T02:01:00+02:00",
                                    datetime(2024, 1, 1, 0, 1, tzinfo=UTC), datetime(2024, 1, 1, 0, 1),
                                    datetime(2024, 1, 1, 0, 1, 0, 999999),
                                    datetime(2024, 1, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))])
def test_stored_times_in_every_form_read_as_rfc3339_utc(stored) -> None:  # type: ignore[no-untyped-def]
    assert rfc3339(stored) == "2024-01-01T00:01:00Z"


def test_a_repair_amending_a_revision_replaces_its_kept_pages(store) -> None:  # type: ignore[no-untyped-def]
    """A revision recorded with a file unreadable for now is amended later (storage.repairs):
    its entry shows the new changes at once, though no revision arrived."""
    from storage import repairs
    from storage.records import Amendment

    revs = seed_history(store, n=2)
    rev = NewRevision(
        repo_id="org/model", sha=sha_of("org/model", 2), parent=revs[-1].sha, parents=(revs[-1].sha,),
        committed_at=START, title="Update 2", message="", authors=("alice",), severity=None, tree=None,
        changes=(Change(ChangeKind.CONFIG, "config.json", "config.json could not be read", (), None, {}),),
        unreadable=("config.json",), base_sha=revs[-1].sha,
    )
    assert store.record_revision(rev, now=START)
    client = TestClient(create_app(store, settings()))
    url = "/api/v1/repos/org/model/revisions"
    before = client.get(url)
    assert before.json()["revisions"][0]["changes"][0]["summary"] == "config.json could not be read"
    html = client.get("/repos/org/model").text
    version = store.history_version("org/model")
    [pending] = repairs.due(store, "org/model", now=START.replace(year=2030), limit=5)
    fixed = Change(ChangeKind.CONFIG, "config.json", "max_position_embeddings 512 -> 4096", (), Severity.MODERATE, {})
    assert repairs.amend(store, pending, [Amendment(rev.sha, (fixed,), "MODERATE", None, "repaired")],
                         now=START.replace(year=2030))
    assert store.history_version("org/model") != version
    after = client.get(url, headers={"If-None-Match": before.headers["etag"]})
    assert after.status_code == 200 and after.json()["revisions"][0]["changes"][0]["summary"] == fixed.summary
    assert after.json()["revisions"][0]["severity"] == "MODERATE"
    page = client.get("/repos/org/model").text
    assert "max_position_embeddings 512 -&gt; 4096." in page and "max_position_embeddings" not in html


def test_the_kept_history_table_escapes_what_the_repo_wrote(store) -> None:  # type: ignore[no-untyped-def]
    """The repo page's history table is written without a template: every stored string in it
    (title, flagged and quiet changes, paths) is escaped, computed and kept alike."""
    from html.parser import HTMLParser

    seed_history(store, n=1)
    evil = "<script>alert('x')</script><img src=x onerror=alert(1)>\"&"
    rev = NewRevision(
        repo_id="org/model", sha=sha_of("evil", 1), parent=sha_of("org/model", 0), parents=(sha_of("org/model", 0),),
        committed_at=START, title=evil, message=evil, authors=(evil,), severity="HIGH", tree=None,
        changes=(Change(ChangeKind.CONFIG, evil, evil, (), Severity.HIGH, {}),
                 Change(ChangeKind.OTHER, evil + ".md", evil, (), None, {})),
    )
    assert store.record_revision(rev)
    client = TestClient(create_app(store, settings()))

    class Tags(HTMLParser):
        seen: set[str] = set()

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.seen.add(tag)

    for _ in range(2):  # computed, then kept
        page = client.get("/repos/org/model").text
        tags = Tags()
        tags.feed(page)
        assert "script" not in tags.seen and "img" not in tags.seen
        assert page.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") >= 3  # title, flagged, quiet


@pytest.mark.parametrize("root", ["", "/hubwatch"])
def test_a_former_id_is_answered_307_by_the_routes_that_follow_renames_themselves(store, root) -> None:  # type: ignore[no-untyped-def]
    """The revisions route and the repo page make the rename look-up themselves: a former id
    answers 307 to the same path and query under the new id, the server's root path kept."""
    seed_history(store, n=2)
    _rename(store, "org/model", "org/renamed", 1)
    client = TestClient(create_app(store, settings()), root_path=root, follow_redirects=False)
    for path in ("/api/v1/repos/org/model/revisions?limit=1&cursor=2", "/repos/org/model?limit=1"):
        r = client.get(path)
        assert r.status_code == 307, (path, r.text[:200])
        assert r.headers["location"] == root + path.replace("org/model", "org/renamed")
        assert client.get(path.replace("org/model", "org/renamed")).status_code == 200
    assert client.get("/api/v1/repos/org/none/revisions").status_code == 404
    assert client.get("/repos/org/none").status_code == 404


def test_a_former_id_under_a_root_path_the_server_puts_in_the_path(store) -> None:  # type: ignore[no-untyped-def]
    """uvicorn's ``--root-path`` puts the root in ``scope["path"]`` too (the ASGI spec's form):
    redirects are built from the route's own path, not from the whole one (the rename
    middleware did not follow renames under a root path at all)."""
    import asyncio

    import httpx

    seed_history(store, n=2)
    _rename(store, "org/model", "org/renamed", 1)
    app = create_app(store, settings())

    async def get(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app, root_path="/hubwatch")
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            return await c.get("/hubwatch" + path)

    for path in ("/api/v1/repos/org/model/revisions?limit=1", "/repos/org/model",  # these two and the
                 "/feeds/org/model.atom", f"/repos/org/model/{sha_of('org/model', 1)}"):  # middleware's
        r = asyncio.run(get(path))
        assert r.status_code == 307, (path, r.status_code, r.text[:200])
        assert r.headers["location"] == "/hubwatch" + path.replace("org/model", "org/renamed")
