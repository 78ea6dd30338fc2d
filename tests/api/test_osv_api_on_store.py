"""The osv.dev-compatible routes over a real store: a commit query returns exactly the
advisories whose GIT range holds the commit (through the stored commit graph)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from storage import open_store
from tests.e2e.cli_helpers import Cli
from tests.e2e.test_advisory_lifecycle import _repo
from tracker.api.app import create_app
from tracker.config import load_settings


def test_commit_and_purl_queries(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path)
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    cli = Cli(tmp_path, url)
    cli.ok("track", str(repo.path), "--as", "org/model")
    by_sha = {e["sha"]: e["advisory_id"] for e in cli.ok("history", "org/model", "--json").json()}
    adv_id = by_sha[shas[1]]  # the revert fixes it and publishes nothing of its own (issue 11)
    assert adv_id and by_sha[shas[0]] is None and by_sha[shas[2]] is None and by_sha[shas[3]] is None
    store = open_store(url)
    try:
        client = TestClient(create_app(store, load_settings(cli.config, env={})))
        assert client.get(f"/v1/vulns/{adv_id}").json()["id"] == adv_id
        assert client.get("/v1/vulns/x_HUBWATCH-0000-0000-0000").status_code == 404

        def ids(body: dict) -> set[str]:  # type: ignore[type-arg]
            r = client.post("/v1/query", json=body)
            assert r.status_code == 200
            return {v["id"] for v in r.json().get("vulns", [])}

        assert ids({"commit": shas[0]}) == set()        # before the change
        assert ids({"commit": shas[1]}) == {adv_id}     # introduced here
        assert ids({"commit": shas[2]}) == {adv_id}     # still affected
        assert ids({"commit": shas[3]}) == set()        # the revert fixed it
        assert ids({"package": {"purl": f"pkg:huggingface/org/model@{shas[2]}"}}) == {adv_id}
        assert ids({"package": {"purl": "pkg:huggingface/org/model"}}) == {adv_id}
        batch = client.post("/v1/querybatch", content=f'{{"queries": [{{"commit": "{shas[2]}"}}, {{"commit": "{shas[0]}"}}]}}',
                            headers={"content-type": "text/plain"}).json()
        assert [[v["id"] for v in r.get("vulns", [])] for r in batch["results"]] == [[adv_id], []]
        assert {e["id"] for e in client.get("/osv/all.json").json()} == {adv_id}
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").status_code == 200
    finally:
        store.close()
