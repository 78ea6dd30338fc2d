"""tracker.api.osv_fast: a plain commit query answered before the FastAPI stack gives the
route's own bytes and headers, kept or not; anything else still reaches the route."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient

from tests.storage.test_commit_answers import _record, _store
from tracker.api import osv_fast
from tracker.api.app import create_app
from tracker.config import Settings

REPO = "org/fast"
SHAS = [f"{i:040x}" for i in range(1, 5)]


def _seeded(store: Any) -> None:
    store.add_repo(REPO, source=REPO, source_kind="hub")
    for i, sha in enumerate(SHAS):
        advisory = _record(f"x_T-F{i}", [{"introduced": sha}]) if i < 2 else None
        _store(store, REPO, sha, (SHAS[i - 1],) if i else (), advisory)


def _answers(client: TestClient, commit: str) -> tuple[Any, Any]:
    """The lean path's answer and the route's to the same query (a second field, ignored by
    the route, sends it past the lean path)."""
    lean = client.post("/v1/query", content=f'{{"commit": "{commit}"}}')
    route = client.post("/v1/query", json={"commit": commit, "page_token": ""})
    return lean, route


def test_plain_commit_queries_answer_as_the_route(store: Any, monkeypatch: Any) -> None:
    _seeded(store)
    asked: list[str] = []
    real = osv_fast._plain_commit
    monkeypatch.setattr(osv_fast, "_plain_commit", lambda body: asked.append(body) or real(body))
    with TestClient(create_app(store, Settings())) as client:  # the lifespan warms the answers
        deadline = time.monotonic() + 30
        while client.get("/readyz").json()["warm_up"]["commit_answers"]["state"] != "warm":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        for commit in [*SHAS, SHAS[1].upper(), "f" * 40]:
            lean, route = _answers(client, commit)
            assert lean.status_code == route.status_code == 200
            assert lean.content == route.content
            for header in ("content-type", "content-length", "x-content-type-options"):
                assert lean.headers[header] == route.headers[header]
        assert len(lean.json()) == 0 and len(_answers(client, SHAS[2])[0].json()["vulns"]) == 2
    assert len(asked) >= 6  # the lean path did read the plain ones


def test_everything_else_reaches_the_route(store: Any) -> None:
    """Errors keep the route's shapes; a cold answer (no warm-up: no lifespan) is the route's."""
    _seeded(store)
    client = TestClient(create_app(store, Settings()))
    cold, route = _answers(client, SHAS[1])
    assert cold.status_code == 200 and cold.content == route.content and len(cold.json()["vulns"]) == 2
    bad = client.post("/v1/query", content='{"commit": "zz"}')
    assert bad.status_code == 400 and bad.json()["code"] == 3
    assert client.post("/v1/query", content="{").json()["code"] == 3
    assert client.post("/v1/query", content='{"commit": ""}').status_code == 400
    big = client.post("/v1/query", content='{"commit": "' + "a" * 5000 + '"}')  # past the lean path's size
    assert big.status_code == 400 and big.json()["code"] == 3
    nul = client.post("/v1/query?x=%00", content=f'{{"commit": "{SHAS[0]}"}}')  # the guard still sees it
    assert nul.status_code == 400
