"""``hubwatch audit --server URL`` against served instances on 127.0.0.1: a hubwatch (same
answer as the local store, drift included) and a plain OSV API that only matches commits."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from storage import open_store
from tests.api.data import free_port, serve_app
from tests.audit.conftest import Tracked, write_lock
from tests.audit.sboms import cyclonedx_bom
from tests.e2e.cli_helpers import Cli
from tracker.api.app import create_app
from tracker.api.osv_routes import osv_router, parse_query, run_queries
from tracker.api.readers import MemoryAdvisoryReader
from tracker.config import load_settings


def test_ci_job_against_a_served_hubwatch(tracked: Tracked, tmp_path: Path) -> None:
    t = tracked
    # the CI side has no database: its config points at an empty one it never needs
    ci = Cli(tmp_path / "ci", f"sqlite:///{tmp_path / 'ci' / 'never.db'}")
    affected = cyclonedx_bom(tmp_path / "bom.json", [("org/model", t.shas[2]), ("org/model", "e" * 40)])
    clean = cyclonedx_bom(tmp_path / "clean.json", [("org/model", t.shas[0])])
    store = open_store(t.db_url)
    try:
        with serve_app(create_app(store, load_settings(t.cli.config, env={}))) as url:
            r = ci("audit", "--server", url, "--fail-on", "HIGH", "--format", "json", str(affected))
            assert r.code == 3, r.err
            remote = json.loads(r.out)
            local = json.loads(t.cli("audit", "--offline", "--format", "json", str(affected)).out)
            assert remote["answered_by"] == url and local["answered_by"] == "local store"
            assert remote["models"] == local["models"]  # same advisories, drift and unknowns
            by_rev = {m["revision"]: m for m in remote["models"]}
            assert by_rev[t.shas[2]]["behind"] == 1 and by_rev["e" * 40]["known"] is False
            assert [a["id"] for a in by_rev[t.shas[2]]["advisories"]] == [t.adv]
            assert ci("audit", "--server", url, "--fail-on", "HIGH", str(clean)).code == 0
            sarif = tmp_path / "audit.sarif"
            assert ci("audit", "--server", url, "--format", "sarif", "--output", str(sarif), str(affected)).code == 3
            results = json.loads(sarif.read_text())["runs"][0]["results"]
            assert {x["ruleId"] for x in results} == {t.adv, "hubwatch/unknown-revision"}
    finally:
        store.close()
    assert not (tmp_path / "ci" / "never.db").exists()


def test_plain_osv_api_matching_commits_only(tmp_path: Path) -> None:
    x, y, z, other = "1" * 40, "2" * 40, "3" * 40, "4" * 40
    mine = {"id": "OSV-MINE", "modified": "2026-01-01T00:00:00Z", "summary": "bad weights",
            "database_specific": {"severity": "CRITICAL"},
            "affected": [{"ranges": [{"type": "GIT", "repo": "https://hub.example/org/model",
                                      "events": [{"introduced": x}, {"fixed": z}]}]}]}
    theirs = {"id": "OSV-THEIRS", "modified": "2026-01-01T00:00:00Z", "summary": "another repo",
              "affected": [{"ranges": [{"type": "GIT", "repo": "https://hub.example/else/where",
                                        "events": [{"introduced": x}]}]}]}
    app = FastAPI()
    app.include_router(osv_router(MemoryAdvisoryReader([mine, theirs], {y: [x], z: [y], other: []})))
    lock = write_lock(tmp_path / "models.lock", [("org/model", y), ("org/model", z)])
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'none.db'}")
    with serve_app(app) as url:
        r = cli("audit", "--server", url, "--format", "json", str(lock))
    assert r.code == 3, r.err
    first, second = json.loads(r.out)["models"]
    assert first["advisories"] == [{"id": "OSV-MINE", "severity": "CRITICAL", "summary": "bad weights"}]
    assert second["advisories"] == []  # fixed at z
    assert first["known"] is None and first["behind"] is None  # a plain OSV API cannot say


def test_unreachable_server_is_one_line_exit_1(tmp_path: Path) -> None:
    lock = write_lock(tmp_path / "models.lock", [("org/model", "5" * 40)])
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'none.db'}")
    r = cli("audit", "--server", f"http://127.0.0.1:{free_port()}", str(lock))
    assert r.code == 1 and r.out == "" and r.err.count("\n") == 1 and "cannot reach" in r.err
    assert cli("audit", "--server", "ftp://x", str(lock)).code == 2


def test_server_refusing_huggingface_purls_is_asked_by_commit(tmp_path: Path) -> None:
    x, y = "6" * 40, "7" * 40
    record = {"id": "OSV-GIT", "modified": "2026-01-01T00:00:00Z", "summary": "s",
              "database_specific": {"severity": "HIGH"},
              "affected": [{"ranges": [{"type": "GIT", "repo": "https://huggingface.co/org/model",
                                        "events": [{"introduced": x}]}]}]}
    reader = MemoryAdvisoryReader([record], {y: [x]})
    app = FastAPI()
    asked: list[dict] = []  # type: ignore[type-arg]

    @app.post("/v1/querybatch")
    async def strict(request: Request) -> JSONResponse:  # osv.dev-like: unknown purl types are invalid
        body = await request.json()
        asked.append(body)
        if any("package" in q for q in body["queries"]):
            return JSONResponse({"code": 3, "message": "Invalid query."}, status_code=400)
        results = run_queries(reader, [parse_query(q) for q in body["queries"]])
        return JSONResponse({"results": [{"vulns": [{"id": v["id"]} for v in r]} if r else {} for r in results]})

    app.include_router(osv_router(reader))
    lock = write_lock(tmp_path / "models.lock", [("org/model", y)])
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'none.db'}")
    with serve_app(app) as url:
        r = cli("audit", "--server", url, "--format", "json", str(lock))
    assert r.code == 3, r.err
    assert [a["id"] for a in json.loads(r.out)["models"][0]["advisories"]] == ["OSV-GIT"]
    assert len(asked) == 2 and all("commit" in q for q in asked[1]["queries"])
