"""tracker.api.osv_routes: the osv.dev-compatible API and the served export.

The store is stood in for by MemoryAdvisoryReader over records built with build_record on a
real git repository holding the spec's example graph, plus OSV records seeded from the real
transformers advisory ids.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from advisories.export import index_bytes, record_bytes, zip_bytes
from advisories.osv import add_fixed, build_record, withdraw
from tests.advisories.osv_helpers import (
    NOW,
    PREFIX,
    SPEC_GRAPH,
    GitGraph,
    assert_valid,
    transformers_seeds,
)
from tracker.api.osv_routes import osv_router
from tracker.api.readers import MemoryAdvisoryReader
from tracker.model.core import Change, ChangeKind, CommitInfo, RevisionDiff, Severity

REPO = "org/spec-model"
URL = f"https://huggingface.co/{REPO}"


class World:
    """The graph, our records by name, the seeds and a client of the router."""

    def __init__(self, graph: GitGraph) -> None:
        self.graph = graph
        sha = graph.sha
        self.records: dict[str, dict[str, Any]] = {}
        for name in ("X", "E", "C", "D"):
            self.records[name] = self._record(name)
        self.records["X"] = add_fixed(self.records["X"], sha["Y"], NOW + timedelta(days=1))
        limited = json.loads(json.dumps(self.records["C"]))
        limited["affected"][0]["ranges"][0]["events"].append({"limit": sha["Y"]})
        self.records["C"] = limited
        self.records["D"] = withdraw(self.records["D"], "test: withdrawn", NOW + timedelta(days=2))
        for record in self.records.values():
            assert_valid(record)
        self.seeds = transformers_seeds()
        self.reader = MemoryAdvisoryReader(
            [*self.records.values(), *self.seeds], parents=graph.parents()
        )
        app = FastAPI()
        app.include_router(osv_router(self.reader, max_body_bytes=64 * 1024))
        self.client = TestClient(app)
        self.name_of = {r["id"]: n for n, r in self.records.items()}

    def _record(self, name: str) -> dict[str, Any]:
        sha = self.graph.sha[name]
        parent = self.graph.sha[SPEC_GRAPH[name][0]]
        change = Change(
            ChangeKind.CONFIG, "config.json", f"config of {name}", severity=Severity.HIGH
        )
        record = build_record(
            prefix=PREFIX,
            repo_id=REPO,
            repo_url=URL,
            commit_url=f"{URL}/commit/{sha}",
            branch="main",
            commit=CommitInfo(sha=sha, parents=(parent,), committed_at=NOW, title=name),
            parent=parent,
            diff=RevisionDiff(base=parent, head=sha, changes=(change,)),
            plan_delta=None,
            related=(),
            now=NOW,
        )
        assert record is not None
        return record

    def post(self, path: str, body: Any, **kw: Any) -> Any:
        return self.client.post(path, content=json.dumps(body), **kw)

    def names(self, vulns: list[dict[str, Any]]) -> str:
        return "".join(sorted(self.name_of[v["id"]] for v in vulns))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(GitGraph(tmp_path_factory.mktemp("graph")))


# Record X: introduced X, fixed Y; E: introduced E; C: introduced C, limit Y; D: withdrawn.
EXPECTED = {
    "W": "", "X": "X", "A": "X", "B": "X", "C": "CX", "Y": "", "Z": "",
    "D": "X", "E": "EX", "F": "EX", "M": "", "N": "EX",
}  # fmt: skip


@pytest.mark.parametrize("commit", sorted(SPEC_GRAPH))
def test_commit_query_returns_exactly_the_advisories_holding_it(world: World, commit: str) -> None:
    response = world.post("/v1/query", {"commit": world.graph.sha[commit]})
    assert response.status_code == 200
    body = response.json()
    assert world.names(body.get("vulns", [])) == EXPECTED[commit]
    if not EXPECTED[commit]:
        assert body == {}
    for vuln in body.get("vulns", []):
        assert vuln == world.reader.get(vuln["id"])  # full records


@pytest.mark.parametrize("commit", sorted(SPEC_GRAPH))
def test_a_commit_query_scoped_to_a_package_is_the_commit_answer_for_that_package(
    world: World, commit: str
) -> None:
    """Issue 15 point 1: osv.dev intersects the commit and the package."""
    sha = world.graph.sha[commit]
    ours = world.post("/v1/query", {"commit": sha, "package": {"purl": f"pkg:huggingface/{REPO}"}})
    assert ours.status_code == 200
    assert world.names(ours.json().get("vulns", [])) == EXPECTED[commit]
    for other in ({"purl": "pkg:huggingface/org/other"}, {"ecosystem": "PyPI", "name": "transformers"}):
        response = world.post("/v1/query", {"commit": sha, "package": other})
        assert response.status_code == 200 and response.json() == {}
    batch = world.post("/v1/querybatch", {"queries": [
        {"commit": sha, "package": {"purl": f"pkg:huggingface/{REPO}"}}, {"commit": sha},
    ]}).json()["results"]
    assert batch[0] == batch[1]
    both = world.post("/v1/query", {"commit": sha, "package": {"purl": f"pkg:huggingface/{REPO}@{sha}"}})
    assert both.status_code == 400


def test_get_by_id_serves_withdrawn_records_too(world: World) -> None:
    for record in world.records.values():
        response = world.client.get(f"/v1/vulns/{record['id']}")
        assert response.status_code == 200
        assert response.json() == record
    assert "withdrawn" in world.client.get(f"/v1/vulns/{world.records['D']['id']}").json()
    missing = world.client.get("/v1/vulns/x_HUBWATCH-0000-0000-0000")
    assert missing.status_code == 404
    assert missing.json() == {"code": 5, "message": "Vulnerability not found"}


def test_purl_queries(world: World) -> None:
    sha = world.graph.sha

    def names(purl: str) -> str:
        response = world.post("/v1/query", {"package": {"purl": purl}})
        assert response.status_code == 200
        return world.names(response.json().get("vulns", []))

    assert names(f"pkg:huggingface/{REPO}") == "CEX"  # D is withdrawn
    assert names(f"pkg:huggingface/{REPO}@{sha['F']}") == "EX"
    assert names(f"pkg:huggingface/{REPO}@{sha['C'].upper()}") == "CX"
    assert names(f"pkg:huggingface/{REPO}@{sha['Z']}") == ""
    assert names("pkg:huggingface/org/other-model") == ""
    assert names("pkg:cargo/unknown-crate") == ""
    version_apart = world.post(
        "/v1/query", {"package": {"purl": f"pkg:huggingface/{REPO}"}, "version": sha["E"]}
    )
    assert world.names(version_apart.json()["vulns"]) == "EX"


def _fixed(world: World) -> dict[str, str]:
    return {r["id"]: r["affected"][0]["ranges"][0]["events"][1]["fixed"] for r in world.seeds}


def test_package_queries_on_seeded_pypi_records(world: World) -> None:
    fixed = _fixed(world)
    after_450 = {i for i, f in fixed.items() if f in ("4.51.0", "4.52.1", "4.53.0")}
    by_name = world.post(
        "/v1/query", {"package": {"ecosystem": "PyPI", "name": "transformers"}, "version": "4.50.0"}
    ).json()
    assert {v["id"] for v in by_name["vulns"]} == after_450
    by_purl = world.post("/v1/query", {"package": {"purl": "pkg:pypi/transformers@4.50.0"}}).json()
    assert by_purl == by_name
    every = world.post("/v1/query", {"package": {"ecosystem": "PyPI", "name": "Transformers"}})
    assert {v["id"] for v in every.json()["vulns"]} == set(fixed)
    assert (
        world.post("/v1/query", {"package": {"purl": "pkg:pypi/transformers@5.0.0"}}).json() == {}
    )


@pytest.mark.parametrize(
    "headers",
    [{}, {"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"}],
)
def test_bodies_are_json_whatever_the_content_type(world: World, headers: dict[str, str]) -> None:
    body = json.dumps({"commit": world.graph.sha["A"]})
    response = world.client.post("/v1/query", content=body, headers=headers)
    assert response.status_code == 200
    assert world.names(response.json()["vulns"]) == "X"


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[1, 2]",
        "{}",
        '{"commit": "xyz"}',
        '{"commit": "aaaa", "version": "1.0"}',
        '{"version": "1.0"}',
        '{"package": {"ecosystem": "HuggingFace", "name": "x"}, "version": "1"}',
        '{"package": {"name": "x"}}',
        '{"package": {"purl": "pkg:pypi/x", "name": "x"}}',
        '{"package": {"purl": "pkg:pypi/x@1.0"}, "version": "2.0"}',
        '{"package": {"purl": "no purl"}}',
        '{"package": "pkg:pypi/x"}',
        '{"commit": 12}',
    ],
)
def test_invalid_queries_get_osv_errors(world: World, body: str) -> None:
    response = world.client.post("/v1/query", content=body)
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == 3 and isinstance(error["message"], str) and error["message"]


def test_querybatch_answers_ids_and_modified_in_order(world: World) -> None:
    sha = world.graph.sha
    queries = [
        {"commit": sha["F"]},
        {"commit": sha["W"]},
        {"package": {"ecosystem": "PyPI", "name": "transformers"}, "version": "4.52.0"},
        {"package": {"purl": f"pkg:huggingface/{REPO}"}, "page_token": "ignored"},
    ]
    response = world.post("/v1/querybatch", {"queries": queries})
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == 4
    assert results[1] == {}
    for result in (results[0], results[2], results[3]):
        assert all(set(v) == {"id", "modified"} for v in result["vulns"])
        for vuln in result["vulns"]:
            assert vuln["modified"] == world.reader.get(vuln["id"])["modified"]  # type: ignore[index]
    assert world.names(results[0]["vulns"]) == "EX"
    fixed = _fixed(world)
    assert {v["id"] for v in results[2]["vulns"]} == {
        i for i, f in fixed.items() if f in ("4.52.1", "4.53.0")
    }
    assert world.names(results[3]["vulns"]) == "CEX"


def test_a_batch_of_plain_commits_answers_as_the_general_path(world: World) -> None:
    """A scanner's batch ({"commit"} only) is answered in one pass; the same queries with a
    field that sends them through the general parser answer the same, in order."""
    sha = world.graph.sha
    commits = [sha["F"], sha["W"], sha["F"].upper(), "f" * 40, sha["F"], sha["C"], sha["X"][:12]]
    plain = world.post("/v1/querybatch", {"queries": [{"commit": c} for c in commits]})
    general = world.post("/v1/querybatch", {"queries": [{"commit": c, "page_token": "x"} for c in commits]})
    assert plain.status_code == general.status_code == 200
    assert plain.json() == general.json()
    results = plain.json()["results"]
    assert results[0] == results[2] == results[4] and results[0]["vulns"] and results[3] == {}


def test_querybatch_limits_and_errors(world: World) -> None:
    too_many = world.post("/v1/querybatch", {"queries": [{"commit": "ab" * 20}] * 1001})
    assert too_many.status_code == 400 and too_many.json()["code"] == 3
    one_bad = world.post("/v1/querybatch", {"queries": [{"commit": "ab" * 20}, {"commit": "zz"}]})
    assert one_bad.status_code == 400
    not_a_list = world.post("/v1/querybatch", {"queries": {"commit": "ab" * 20}})
    assert not_a_list.status_code == 400
    assert world.post("/v1/querybatch", {"queries": []}).json() == {"results": []}


def test_oversized_bodies_are_refused(world: World) -> None:
    big = {"queries": [{"commit": "ab" * 20}] * 2000}
    response = world.post("/v1/querybatch", big)
    assert response.status_code == 413 and response.json()["code"] == 8


def test_the_export_is_served_byte_for_byte(world: World) -> None:
    records = list(world.reader.all_records())
    index = world.client.get("/osv/all.json")
    assert index.status_code == 200 and index.content == index_bytes(records)
    assert index.headers["content-type"].startswith("application/json")
    newest = json.loads(index.content)[0]["modified"]
    assert index.headers["last-modified"] == "Wed, 02 Dec 2026 05:00:00 GMT"
    assert newest == "2026-12-02T05:00:00Z"
    archive = world.client.get("/osv/all.zip")
    assert archive.content == zip_bytes(records)
    with zipfile.ZipFile(io.BytesIO(archive.content)) as z:
        assert len(z.namelist()) == len(records)
    for record in records:
        one = world.client.get(f"/osv/{record['id']}.json")
        assert one.status_code == 200 and one.content == record_bytes(record)
    head = world.client.head("/osv/all.json")
    assert head.status_code == 200 and head.headers["last-modified"]
    assert world.client.get("/osv/x_HUBWATCH-0000-0000-0000.json").status_code == 404
    assert world.client.get("/osv/..%2Fetc.json").status_code == 404


def test_the_export_answers_conditional_gets(world: World) -> None:
    """Issue 15 point 6: mirrors poll /osv/* with ETag / If-Modified-Since, like the feeds."""
    record = next(iter(world.reader.all_records()))
    for path in ("/osv/all.json", "/osv/all.zip", f"/osv/{record['id']}.json"):
        first = world.client.get(path)
        etag, last = first.headers["etag"], first.headers["last-modified"]
        assert etag.startswith('"') and world.client.get(path).headers["etag"] == etag  # stable
        for headers in ({"If-None-Match": etag}, {"If-None-Match": f'"other", W/{etag}'},
                        {"If-Modified-Since": last}):
            cached = world.client.get(path, headers=headers)
            assert cached.status_code == 304 and cached.content == b"" and cached.headers["etag"] == etag
        assert world.client.head(path, headers={"If-None-Match": etag}).status_code == 304
        assert world.client.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
        stale = world.client.get(path, headers={"If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"})
        assert stale.status_code == 200 and stale.content == first.content
    edited = {**record, "modified": "2027-01-01T00:00:00Z"}
    world.reader.put(edited)  # type: ignore[attr-defined]
    changed = world.client.get(f"/osv/{record['id']}.json", headers={"If-Modified-Since": last})
    assert changed.status_code == 200 and changed.json()["modified"] == "2027-01-01T00:00:00Z"
