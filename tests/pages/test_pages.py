"""HTML pages rendered by the app: content, escaping, paging, 404s (Chromium checks are in test_browser)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from tests.api.data import seed_history, settings
from tracker.api.app import create_app


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]
        if tag == "script":
            self.scripts += 1


def links(html: str) -> Links:
    p = Links()
    p.feed(html)
    return p


@pytest.fixture
def client(sqlite_store):  # type: ignore[no-untyped-def]
    return TestClient(create_app(sqlite_store, settings()))


def test_pages_render_and_every_internal_link_answers(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(sqlite_store, n=8)
    adv = next(r.advisory for r in revs if r.advisory)
    pages = ["/", "/repos/org/model", f"/repos/org/model/{revs[4].sha}", f"/advisories/{adv['id']}"]
    for path in pages:
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        found = links(r.text)
        assert found.scripts == 0  # no JavaScript
        internal = [h for h in found.hrefs if h.startswith("/")]
        assert internal
        for href in internal:
            if href == "/docs":
                continue  # Swagger UI, served by FastAPI
            assert client.get(href).status_code == 200, f"{path} links to {href}"


def test_history_page_shows_severities_and_pages(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(sqlite_store, n=9)
    html = client.get("/repos/org/model", params={"limit": 4}).text
    shown = re.findall(r'href="/repos/org/model/([0-9a-f]{40})"', html)
    assert shown == [r.sha for r in reversed(revs)][:4]
    assert 'class="sev sev-HIGH"' in html
    assert "1 other change (no severity)" in html  # README-only revisions: listed, not detailed
    seen = list(shown)
    older = re.search(r'id="older" href="([^"]+)"', html)
    while older:
        html = client.get(older.group(1).replace("&amp;", "&")).text
        seen += re.findall(r'href="/repos/org/model/([0-9a-f]{40})"', html)
        older = re.search(r'id="older" href="([^"]+)"', html)
    assert seen == [r.sha for r in reversed(revs)]


def test_revision_page_shows_diffs_weights_and_plan(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(sqlite_store, n=6)
    template_rev = revs[4]  # index 4: chat template + generation config
    html = client.get(f"/repos/org/model/{template_rev.sha}").text
    assert '<div class="add">+&lt;|user|&gt;</div>' in html  # the rendered chat-template diff, escaped
    assert '<div class="del">-&lt;s&gt;&lt;|user|&gt;Hi</div>' in html
    assert "temperature" in html and f'id="parent" href="/repos/org/model/{revs[3].sha}"' in html
    weights = client.get(f"/repos/org/model/{revs[5].sha}").text
    assert "lm_head.weight" in weights and "BF16 [32000, 4096]" in weights  # the tensor table
    assert "Plan delta" in weights and "1000005" in weights  # the plan delta of that revision
    assert 'id="plan-cards"' in weights and "1,000,005" in weights


def test_user_text_is_escaped(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from storage.records import NewRevision
    from tests.api.data import START, changes_for, sha_of
    from tracker.model import Change, ChangeKind

    seed_history(sqlite_store, n=1)
    evil = "<script>alert('x')</script><img src=x onerror=alert(1)>"
    rev = NewRevision(
        repo_id="org/model", sha=sha_of("evil", 1), parent=sha_of("org/model", 0), parents=(sha_of("org/model", 0),),
        committed_at=START, title=evil, message=evil, authors=(evil,),
        changes=(Change(ChangeKind.CONFIG, evil, evil, (), None, {"k": evil, "diff": f"--- a\n+++ b\n+{evil}"}),
                 *changes_for(1)), severity=None, tree=None,
    )
    sqlite_store.record_revision(replace(rev))
    html = client.get(f"/repos/org/model/{rev.sha}").text
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert "<script>" not in client.get("/repos/org/model").text


def test_unknown_things_are_html_404s(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    seed_history(sqlite_store, n=2)
    for path in ("/repos/org/none", "/repos/org/model/" + "e" * 40, "/repos/org/model/zz", "/advisories/x_HUBWATCH-no"):
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html") and "404" in r.text


def test_index_lists_repos_and_recent_advisories(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    assert "No repos tracked yet" in client.get("/").text
    seed_history(sqlite_store, "org/a", n=3)
    seed_history(sqlite_store, "org/b", n=3)
    html = client.get("/").text
    assert 'href="/repos/org/a"' in html and 'href="/repos/org/b"' in html
    assert 'href="/feeds/org/a.atom"' in html and "/advisories/x_HUBWATCH-" in html
