"""Atom feeds: clean Atom 1.0 for feedparser, one entry per advisory with stable ids and links,
``updated`` = the record's ``modified``, and conditional GET for cheap polling."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta

import feedparser
import pytest
from fastapi.testclient import TestClient
from rfc3986_validator import validate_rfc3986

from advisories.atom import ALL_FEED_IRI, FeedInfo, entry_iri, render_feed, repo_feed_iri
from tests.api.data import START, seed_history, settings, withdraw_one
from tracker.api.app import create_app

NS = {"a": "http://www.w3.org/2005/Atom"}
# RFC 2141 URN syntax, as the W3C feed validator checks an atom:id that is a URN
URN = re.compile(r"urn:[A-Za-z0-9][A-Za-z0-9-]{1,31}:([A-Za-z0-9()+,\-.:=@;$_!*']|%[0-9A-Fa-f]{2})+")
ENTRY_PREFIX = "urn:hubwatch:advisory:"


def assert_iri(value: str) -> None:
    """RFC 4287 4.2.6: an atom:id is an absolute IRI (here a URN the W3C validator accepts)."""
    assert validate_rfc3986(value, rule="URI"), value
    assert URN.fullmatch(value), value


def adv(entry: feedparser.FeedParserDict) -> str:
    """The advisory id inside an entry's IRI."""
    assert entry.id.startswith(ENTRY_PREFIX), entry.id
    return str(entry.id[len(ENTRY_PREFIX):])


def check_atom(body: bytes) -> feedparser.FeedParserDict:
    """feedparser sees clean Atom 1.0, and every RFC 4287 required element is there."""
    parsed = feedparser.parse(body)
    assert parsed.bozo == 0, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    root = ET.fromstring(body)
    for elem in [root.find("a:id", NS), *root.findall("a:entry/a:id", NS)]:
        assert elem is not None and elem.text
        assert_iri(elem.text)
    assert root.tag == "{http://www.w3.org/2005/Atom}feed"
    for name in ("id", "title", "updated", "author/a:name"):
        assert root.find("a:" + name, NS) is not None, name
    assert root.find("a:link[@rel='self']", NS) is not None
    for entry in root.findall("a:entry", NS):
        for name in ("id", "title", "updated", "link[@rel='alternate']"):
            assert entry.find("a:" + name, NS) is not None, name
    return parsed


@pytest.fixture
def client(store):  # type: ignore[no-untyped-def]
    return TestClient(create_app(store, settings()))


def test_feeds_hold_one_entry_per_advisory(store, client) -> None:  # type: ignore[no-untyped-def]
    a = seed_history(store, "org/a", n=7)
    b = seed_history(store, "org/b", n=4)
    records = {r.advisory["id"]: r.advisory for r in a + b if r.advisory}
    every = check_atom(client.get("/feeds/all.atom").content)
    assert sorted(adv(e) for e in every.entries) == sorted(records)
    only_a = check_atom(client.get("/feeds/org/a.atom").content)
    assert sorted(adv(e) for e in only_a.entries) == sorted(r.advisory["id"] for r in a if r.advisory)
    for e in every.entries:
        rec = records[adv(e)]
        assert e.updated == rec["modified"] and e.published == rec["published"]
        assert e.title.endswith(rec["summary"]) and rec["database_specific"]["severity"] in e.title
        assert e.link == f"http://testserver/advisories/{adv(e)}"
        assert client.get(e.link).status_code == 200  # the entry's link is a page we serve
        json_link = next(x.href for x in e.links if x.type == "application/json")
        assert client.get(json_link).json()["id"] == adv(e)
    # newest first; the feed's updated is the newest entry's
    assert [e.updated for e in every.entries] == sorted((e.updated for e in every.entries), reverse=True)
    assert every.feed.updated == every.entries[0].updated


def test_ids_and_links_are_stable_and_edits_move_updated(store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(store, n=4)
    first = check_atom(client.get("/feeds/org/model.atom").content)
    target = next(r.advisory for r in revs if r.advisory)
    edited = withdraw_one(store, target, START + timedelta(days=2))
    again = check_atom(client.get("/feeds/org/model.atom").content)
    assert {adv(e) for e in first.entries} == {adv(e) for e in again.entries}
    assert {adv(e): e.link for e in first.entries} == {adv(e): e.link for e in again.entries}
    entry = next(e for e in again.entries if adv(e) == target["id"])
    assert entry.updated == edited["modified"] != target["modified"]
    assert entry.title.startswith("[withdrawn]")
    assert adv(again.entries[0]) == target["id"]  # the most recently modified comes first


def test_conditional_get(store, client) -> None:  # type: ignore[no-untyped-def]
    revs = seed_history(store, n=3)
    r = client.get("/feeds/org/model.atom")
    etag, last = r.headers["ETag"], r.headers["Last-Modified"]
    assert r.headers["content-type"].startswith("application/atom+xml")
    assert client.get("/feeds/org/model.atom", headers={"If-None-Match": etag}).status_code == 304
    assert client.get("/feeds/org/model.atom", headers={"If-None-Match": f'"x", W/{etag}'}).status_code == 304
    not_mod = client.get("/feeds/org/model.atom", headers={"If-Modified-Since": last})
    assert not_mod.status_code == 304 and not_mod.content == b"" and not_mod.headers["ETag"] == etag
    assert client.get("/feeds/org/model.atom", headers={"If-None-Match": '"other"'}).status_code == 200
    assert client.get("/feeds/org/model.atom", headers={"If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}
                      ).status_code == 200
    head = client.head("/feeds/org/model.atom")
    assert head.status_code == 200 and head.content == b"" and head.headers["ETag"] == etag
    withdraw_one(store, next(x.advisory for x in revs if x.advisory), START + timedelta(days=3))
    changed = client.get("/feeds/org/model.atom", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag
    assert client.get("/feeds/all.atom", headers={"If-None-Match": client.get("/feeds/all.atom").headers["ETag"]}
                      ).status_code == 304


def test_empty_and_unknown(store, client) -> None:  # type: ignore[no-untyped-def]
    store.add_repo("org/quiet", source="org/quiet", source_kind="hub", now=START)
    quiet = check_atom(client.get("/feeds/org/quiet.atom").content)
    assert quiet.entries == [] and quiet.feed.updated == "2025-03-01T12:00:00Z"
    check_atom(client.get("/feeds/all.atom").content)
    r = client.get("/feeds/org/none.atom")
    assert r.status_code == 404 and r.json()["code"] == 404


def test_rendering_is_deterministic_and_escaped() -> None:
    record = {
        "id": "x_HUBWATCH-aaaa-bbbb-cccc", "published": "2026-01-01T00:00:00Z", "modified": "2026-01-02T03:04:05Z",
        "summary": "a <b>bold</b> & \x07 sneaky\x00 summary", "details": "line 1\n<script>alert(1)</script>\n\x1b[0m",
        "database_specific": {"severity": "CRITICAL"}, "references": [{"type": "WEB", "url": "https://h/x?a=1&b=2"}],
        "affected": [{"database_specific": {"purl": "pkg:huggingface/org/m@abc"}}],
    }
    older = {**record, "id": "x_HUBWATCH-older", "modified": "2025-12-31T00:00:00Z"}
    info = FeedInfo(id=ALL_FEED_IRI, title="t & <t>", self_url="http://h/feeds/all.atom")
    link = lambda rid: f"http://h/advisories/{rid}"  # noqa: E731
    body = render_feed(info, [older, record], entry_link=link)
    assert body == render_feed(info, [record, older], entry_link=link)
    parsed = check_atom(body)
    assert [adv(e) for e in parsed.entries] == [record["id"], older["id"]]
    assert parsed.entries[0].id == entry_iri(record["id"]) == "urn:hubwatch:advisory:x_HUBWATCH-aaaa-bbbb-cccc"
    assert parsed.feed.title == "t & <t>" and parsed.feed.updated == "2026-01-02T03:04:05Z"
    assert parsed.entries[0].summary == "a <b>bold</b> &  sneaky summary"
    assert b"<script>" not in body and b"\x00" not in body and b"\x07" not in body
    assert "org/m" in [t.term for t in parsed.entries[0].tags]


def test_feed_ids_are_stable_iris_shared_by_every_feed(store, client) -> None:  # type: ignore[no-untyped-def]
    seed_history(store, "org/a.b_c-d", n=4)
    every = check_atom(client.get("/feeds/all.atom").content)
    mine = check_atom(client.get("/feeds/org/a.b_c-d.atom").content)
    assert every.feed.id == "urn:hubwatch:feed:all"
    assert mine.feed.id == repo_feed_iri("org/a.b_c-d") == "urn:hubwatch:feed:repo:org:a.b_c-d"
    assert {e.id for e in mine.entries} <= {e.id for e in every.entries}  # one id per advisory
    assert all(e.id == entry_iri(adv(e)) for e in every.entries)
    assert repo_feed_iri("o/ünï code") == "urn:hubwatch:feed:repo:o:%C3%BCn%C3%AF%20code"
    assert_iri(repo_feed_iri("o/ünï code"))
