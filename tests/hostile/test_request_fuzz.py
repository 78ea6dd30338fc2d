"""Every route against hostile values (issue 16, fresh review): path segments, query values,
JSON bodies of the wrong shape, raw bodies that are no JSON (invalid UTF-8, 100,000 open
braces, NaN, a 5,000-digit integer), odd content types, hostile subscriptions and Hub hooks.
None may answer 5xx: each is refused (4xx) or answered. Found here: a NUL character in a
path, query value or OSV query string was a 500 on PostgreSQL (it refuses such strings)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from storage.store import Store
from tests.api.data import TOKEN, seed_history, settings
from tracker.api.app import create_app

AUTH = {"Authorization": f"Bearer {TOKEN}"}
VALUES = ["%00", "x%00y", "%ff", "..", "a" * 5000, "%E2%80%AE", "%0d%0aX:1", "😀", "-1", "99999999999999999999999",
          "1e400", "null", "%25", "\\"]
GETS = ["/api/v1/repos/{v}/{v}", "/api/v1/repos/org/model/revisions/{v}", "/api/v1/repos/org/model/revisions?cursor={v}",
        "/api/v1/repos/org/model/revisions?limit={v}", "/api/v1/repos/org/model/compare/{v}...{v}",
        "/api/v1/repos/org/model/plan?revision={v}", "/feeds/{v}/{v}.atom", "/v1/vulns/{v}", "/osv/{v}.json",
        "/repos/{v}/{v}", "/repos/org/model/{v}", "/advisories/{v}", "/api/v1/subscriptions/{v}", "/?cursor={v}",
        "/repos/org/model?base={v}&head={v}"]
BODIES: list[Any] = [None, 1, "x", [], {}, {"commit": 1}, {"commit": "a" * 100_000}, {"package": "x"},
                     {"package": {"purl": 5}}, {"package": {"name": 1, "ecosystem": []}}, {"version": {"a": 1}},
                     {"page_token": 5}, {"package": {"purl": "pkg:huggingface/%ZZ"}}, {"package": {"purl": "pkg:"}},
                     {"commit": "%"}, {"queries": 5}, {"queries": [1, "x", None, {"commit": []}]},
                     {"url": ["x"]}, {"url": "https://example.com", "repos": "org/model"},
                     {"url": "https://example.com", "secret": 5}, {"url": "https://example.com", "repos": [None]},
                     {"event": "x", "repo": "y"}, {"repo": {"name": "../../etc", "type": "model", "headSha": 5}},
                     {"commit": "\u0000" * 40}, {"queries": [{"package": {"purl": "pkg:huggingface/o/m@\u0000"}}]}, {"package": {"purl": "pkg:huggingface/org/model@\u0000"}},
                     {"package": {"name": "org/\u0000", "ecosystem": "x"}, "version": "\u0000"},
                     {"source": "org/\u0000", "id": "org/\u0000x"}, {"url": "https://example.com/\u0000"},
                     {"event": {"action": "update", "scope": "repo.content"},
                      "repo": {"type": "model", "name": "org/\u0000", "headSha": "\u0000"}}]
RAW = [b"\xff\xfe", b"{" * 100_000, b"[" * 5000 + b"]" * 5000, b'{"a": NaN}', b'{"a": 1e999999}',
       b'{"a":' + b"9" * 5000 + b"}", b"\x00"]
POSTS = ["/v1/query", "/v1/querybatch", "/api/v1/plan", "/hooks/huggingface", "/api/v1/repos", "/api/v1/subscriptions"]


@pytest.fixture
def client(store: Store) -> TestClient:
    seed_history(store)
    return TestClient(create_app(store, settings()), raise_server_exceptions=False)


def _no_5xx(r: Any, what: str) -> None:
    assert r.status_code < 500, (what[:200], r.status_code, r.text[:300])


@pytest.mark.parametrize("route", GETS)
def test_hostile_path_and_query_values(client: TestClient, route: str) -> None:
    for v in VALUES:
        _no_5xx(client.get(route.format(v=v)), route.format(v=v))


def test_hostile_deletes_and_patches(client: TestClient) -> None:
    for v in VALUES:
        _no_5xx(client.delete(f"/api/v1/repos/{v}/{v}", headers=AUTH), v)
        _no_5xx(client.delete(f"/api/v1/subscriptions/{v}", headers=AUTH), v)
        _no_5xx(client.patch(f"/api/v1/subscriptions/{v}", headers=AUTH, json={"enabled": True}), v)


@pytest.mark.parametrize("route", POSTS)
def test_hostile_bodies(client: TestClient, route: str) -> None:
    for body in BODIES:
        _no_5xx(client.post(route, json=body, headers=AUTH), f"{route} {body!r}")
    for raw in RAW:
        _no_5xx(client.post(route, content=raw, headers={**AUTH, "content-type": "application/json"}),
                f"{route} {raw[:40]!r}")
    for kind in ("application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"):
        _no_5xx(client.post(route, content=b"{}", headers={**AUTH, "content-type": kind}), f"{route} {kind}")
