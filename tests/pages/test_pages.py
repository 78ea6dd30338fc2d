"""HTML pages rendered by the app: content, escaping, paging, 404s (Chromium checks are in test_browser)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from tests.api.data import seed_history, settings, sha_of
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


INTERNAL_NAMES = ("rendered_changed", "old_error", "new_error", "is_empty", "truncated", "fields_total",
                  "content_id", "tensors_added", "params_by_dtype", "topics", "plan_delta", "&#34;op&#34;")


def test_pages_render_and_every_internal_link_answers(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(sqlite_store, n=8)
    adv = next(r.advisory for r in revs if r.advisory)
    pages = ["/", "/repos/org/model", f"/repos/org/model/{revs[4].sha}", f"/advisories/{adv['id']}",
             "/repos/org/model/plan", f"/repos/org/model/{revs[5].sha}/plan", "/plan", "/docs",
             f"/repos/org/model/compare/{revs[1].sha}...{revs[6].sha}"]
    for path in pages:
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), path
        found = links(r.text)
        assert found.scripts == 0  # no JavaScript
        internal = [h for h in found.hrefs if h.startswith("/")]
        assert internal
        for href in internal:
            if href.startswith("/api/v1/repos/org/model/compare/"):
                continue  # the JSON compare reads stored trees, which this seeded history has none of
            assert client.get(href).status_code == 200, f"{path} links to {href}"
        assert not [n for n in INTERNAL_NAMES if n in r.text], f"{path} shows internal names"


def test_history_page_shows_severities_and_pages(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(sqlite_store, n=9)
    html = client.get("/repos/org/model", params={"limit": 4}).text
    shown = re.findall(r'href="/repos/org/model/([0-9a-f]{40})"', html)
    assert shown == [r.sha for r in reversed(revs)][:4]
    assert 'class="sev sev-HIGH"' in html
    assert "1 other change (no severity): README.md modified." in html
    assert 'form class="pick" method="get" action="/repos/org/model/compare"' in html
    seen = list(shown)
    older = re.search(r'id="older" href="([^"]+)"', html)
    while older:
        html = client.get(older.group(1).replace("&amp;", "&")).text
        seen += re.findall(r'href="/repos/org/model/([0-9a-f]{40})"', html)
        older = re.search(r'id="older" href="([^"]+)"', html)
    assert seen == [r.sha for r in reversed(revs)]


def test_the_repo_page_compares_any_two_revisions(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    """The compare form takes any stored sha (issue 17: no 300-revision picker in every page):
    filled with the page's oldest and newest, suggesting the page's own revisions, on an older
    page too; a pasted sha with spaces around it is compared; a bad page size is a 400 page."""
    revs = seed_history(sqlite_store, n=9)
    newest = [r.sha for r in reversed(revs)]
    first = client.get("/repos/org/model", params={"limit": 4}).text
    older = client.get(re.search(r'id="older" href="([^"]+)"', first).group(1).replace("&amp;", "&")).text
    for html, shown in ((first, newest[:4]), (older, newest[4:8])):
        assert re.findall(r'<input name="(base|head)" list="page-revisions" value="([0-9a-f]{40})"', html) == [
            ("base", shown[-1]), ("head", shown[0])]
        datalist = html.split('<datalist id="page-revisions">', 1)[1].split("</datalist>", 1)[0]
        assert re.findall(r'<option value="([0-9a-f]{40})">', datalist) == shown
    picked = client.get("/repos/org/model/compare", params={"base": f"  {revs[0].sha[:8]}\n", "head": revs[8].sha},
                        follow_redirects=False)
    assert picked.status_code == 303
    assert picked.headers["location"] == f"/repos/org/model/compare/{revs[0].sha[:8]}...{revs[8].sha}"
    assert client.get(picked.headers["location"]).status_code == 200
    for limit in ("0", "x", "-2"):
        bad = client.get("/repos/org/model", params={"limit": limit})
        assert bad.status_code == 400 and "text/html" in bad.headers["content-type"]


def test_revision_page_is_written_for_people(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(sqlite_store, n=6)
    template_rev = revs[4]  # index 4: chat template + generation config
    html = client.get(f"/repos/org/model/{template_rev.sha}").text
    # the rendered prompt diff comes first, then the template text, both coloured
    assert html.index("What prompts become") < html.index("Template text")
    assert '<div class="add">+&lt;|user|&gt;</div>' in html and '<div class="del">-&lt;s&gt;&lt;|user|&gt;Hi</div>' in html
    assert "a/old/user" not in html  # the probe is named in words instead
    assert "Same prompt as before for a tool call." in html
    # the severity rule's reason beside the change, and a key / before / after table
    assert "A chat template&#39;s text changed (see its rendered diff)." in html
    assert re.search(r'<td class="mono">temperature</td><td class="mono old">0.9</td><td class="mono new">0.6</td>', html)
    assert "Chat template changed (bos dropped)." in html  # a sentence
    assert f'id="prev" href="/repos/org/model/{revs[3].sha}"' in html
    assert f'id="next" href="/repos/org/model/{revs[5].sha}"' in html
    assert f'href="https://huggingface.co/org/model/commit/{template_rev.sha}"' in html
    assert f'href="/api/v1/repos/org/model/revisions/{template_rev.sha}">This revision as JSON' in html
    weights = client.get(f"/repos/org/model/{revs[5].sha}").text
    assert "lm_head.weight" in weights and "BF16 [32000 × 4096]" in weights  # the tensor table
    assert "2.10 GB" in weights and "1.05 GB" in weights  # the file's sizes
    assert "Memory plan" in weights and "1,000,005" in weights  # the plan delta of that revision


def test_like_weight_files_are_grouped(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    from storage.records import NewRevision
    from tests.api.data import START, sha_of
    from tracker.model import Change, ChangeKind, Severity

    seed_history(sqlite_store, n=1)
    shards = tuple(Change(ChangeKind.WEIGHTS, f"model-{i:05d}-of-00019.safetensors",
                          f"weights replaced: model-{i:05d}-of-00019.safetensors (4.98 GB -> 4.98 GB)",
                          ("weights.replaced",), Severity.HIGH,
                          {"op": "changed", "format": "safetensors", "old": {"size": 4_980_000_000},
                           "new": {"size": 4_980_000_000}}) for i in range(1, 20))
    rev = NewRevision(repo_id="org/model", sha=sha_of("shards", 1), parent=sha_of("org/model", 0),
                      parents=(sha_of("org/model", 0),), committed_at=START, title="re-upload", message="",
                      authors=(), changes=shards, severity="HIGH", tree=None)
    sqlite_store.record_revision(rev)
    html = client.get(f"/repos/org/model/{rev.sha}").text
    assert "19 safetensors weight files replaced (94.62 GB in all)." in html
    assert html.count('<section class="change"') == 1 and "<summary>The 19 files</summary>" in html


def test_advisory_page_renders_markdown_safely(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(sqlite_store, n=3)
    adv = revs[1].advisory
    assert adv is not None
    html = client.get(f"/advisories/{adv['id']}").text
    assert "<strong>HIGH</strong>" in html and "**HIGH**" not in html  # Markdown rendered, not shown as source
    assert 'id="affected"' in html and f"pkg:huggingface/org/model@{revs[1].sha}" in html
    assert f'href="/repos/org/model/{revs[1].sha}">{revs[1].sha[:12]}</a>' in html  # introduced, linked
    assert f'href="/v1/vulns/{adv["id"]}"' in html and "Published" in html and "Modified" in html
    assert "A chat template&#39;s text changed" in html  # severity with its reason
    from tracker.api.markdown import render_markdown

    hostile = render_markdown("<script>x</script> [a](javascript:alert(1)) <img src=x onerror=y> **b**")
    assert "<script" not in hostile and "javascript:" not in hostile.replace("[a](javascript:", "") \
        and "<img" not in hostile and "<strong>b</strong>" in hostile


def test_compare_page_lists_stored_changes(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(sqlite_store, n=7)
    r = client.get(f"/repos/org/model/compare/{revs[1].sha[:10]}...{revs[5].sha[:10]}")
    assert r.status_code == 200
    steps = re.findall(r'<h2><a class="mono" href="/repos/org/model/([0-9a-f]{40})"', r.text)
    assert steps == [revs[i].sha for i in (5, 4, 3, 2)]
    assert "4 revisions from" in r.text and "the highest severity is HIGH" in r.text
    back = client.get(f"/repos/org/model/compare/{revs[5].sha}...{revs[1].sha}")
    assert back.status_code == 400 and "instead" in back.text
    picked = client.get("/repos/org/model/compare", params={"base": revs[1].sha, "head": revs[5].sha},
                        follow_redirects=False)
    assert picked.status_code == 303 and picked.headers["location"] == f"/repos/org/model/compare/{revs[1].sha}...{revs[5].sha}"


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
    for path in ("/repos/org/none", "/repos/org/model/" + "e" * 40, "/repos/org/model/zz", "/advisories/x_HUBWATCH-no",
                 "/repos/org/none/plan", "/repos/org/model/" + "e" * 40 + "/plan",
                 "/repos/org/model/compare/" + "e" * 40 + "..." + sha_of("org/model", 1)):
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html") and "404" in r.text


def test_index_lists_repos_and_recent_advisories(sqlite_store, client) -> None:  # type: ignore[no-untyped-def]
    assert "No repos tracked yet" in client.get("/").text
    seed_history(sqlite_store, "org/a", n=3)
    seed_history(sqlite_store, "org/b", n=3)
    html = client.get("/").text
    assert 'href="/repos/org/a"' in html and 'href="/repos/org/b"' in html
    assert 'href="/feeds/org/a.atom"' in html and "/advisories/x_HUBWATCH-" in html


def test_the_compare_picker_follows_revisions_stored_by_another_writer(store, db_url) -> None:  # type: ignore[no-untyped-def]
    """The picker's revisions are kept per repo version (issue 17): a revision stored through
    another store (another process's engine) shows at once, on SQLite and PostgreSQL."""
    from storage import open_store

    seed_history(store, n=3)
    client = TestClient(create_app(store, settings()))
    newest = sha_of("org/model", 3)
    assert newest[:12] not in client.get("/repos/org/model").text
    other = open_store(db_url)
    try:
        seed_history(other, n=1, first_index=3)
    finally:
        other.close()
    for page in ("/repos/org/model", f"/repos/org/model/{sha_of('org/model', 1)}"):
        html = client.get(page).text
        assert f'value="{newest}"' in html, page
