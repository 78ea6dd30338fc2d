"""A repo renamed on the Hub (issue 10 point 8): the emulator answers the old id with a 307
as the Hub does, hubwatch records the rename as its own HIGH change with an advisory, moves
the repo id with its history, and keeps the advisories findable under both names (CLI, OSV
query by either purl, the JSON, pages and feed by either id with a 307). Real huggingface_hub
client against the emulator, SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import httpx
from fastapi.testclient import TestClient

from storage import open_store, repairs
from tests.advisories.osv_helpers import assert_valid
from tests.api.data import settings
from tests.e2e.cli_helpers import Cli
from tests.hubemu import HubEmulator, RepoBuilder, hf_test_env
from tracker.api.app import create_app

OLD, NEW = "old-org/model", "new-org/model"
CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
          "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 256}


def _config(**over: object) -> bytes:
    return json.dumps({**CONFIG, **over}).encode()


def test_rename_moves_the_repo_and_keeps_both_names(tmp_path: Path, db_url: str) -> None:
    hf_test_env()
    b = RepoBuilder.init(tmp_path / "r.git")
    b.commit({"config.json": _config()}, title="upload")
    context = b.commit({"config.json": _config(max_position_embeddings=4096)}, title="longer context")
    with HubEmulator() as hub:
        hub.add_repo(OLD, b.path)
        cli = Cli(tmp_path / "hw", db_url, extra_config=f'[hub]\nendpoint = "{hub.url}"\ntimeout_seconds = 10\n')
        cli.ok("track", OLD)
        (old_adv,) = cli.ok("advisories", OLD, "--json").json()

        hub.rename_repo(OLD, NEW)
        assert httpx.get(f"{hub.url}/api/models/{OLD}").status_code == 307  # as the Hub answers
        polled = cli.ok("poll", "--json").json()
        assert [(p["repo"], p["status"]) for p in polled] == [(NEW, "unchanged")]
        later = b.commit({"config.json": _config(max_position_embeddings=8192)}, title="even longer")
        assert cli.ok("poll", "--json").json()[0]["new_revisions"] == 1
        assert hub.internal_errors == []

    assert [r["id"] for r in cli.ok("repos", "--json").json()] == [NEW]
    history = cli.ok("history", NEW, "--json").json()
    assert cli.ok("history", OLD, "--json").json() == history  # the old id still reads
    assert [e["sha"] for e in history][:2] == [later, context]
    renamed = history[1]
    rename = [c for c in renamed["changes"] if c["kind"] == "rename"]
    assert rename == [{"kind": "rename", "path": "", "summary": f"repo renamed on the Hub: {OLD} -> {NEW}",
                       "severity": "HIGH"}]

    records = {r["id"]: r for r in cli.ok("advisories", NEW, "--json").json()}
    rename_adv = [r for r in records.values() if r["summary"].startswith(f"{NEW} {context[:7]}: repo renamed")]
    assert len(rename_adv) == 1 and rename_adv[0]["database_specific"]["severity"] == "HIGH"
    assert rename_adv[0]["affected"][0]["ranges"][0]["repo"] == f"{hub.url}/{NEW}"
    # the old record names the repo under both ids now, and says so
    moved = records[old_adv["id"]]
    purls = [a["database_specific"]["purl"].split("?")[0] for a in moved["affected"]]
    assert purls == [f"pkg:huggingface/{OLD}@{context}", f"pkg:huggingface/{NEW}@{context}"]
    assert [a["ranges"][0]["repo"] for a in moved["affected"]] == [f"{hub.url}/{OLD}", f"{hub.url}/{NEW}"]
    assert "renamed" in moved["details"] and moved["modified"] > old_adv["modified"]
    # the commit after the rename is recorded under the new name and URL
    (newest,) = [r for r in records.values() if r["affected"][0]["ranges"][0]["events"][0]["introduced"] == later]
    assert [a["ranges"][0]["repo"] for a in newest["affected"]] == [f"{hub.url}/{NEW}", f"{hub.url}/{OLD}"]
    assert newest["database_specific"]["repo_names"] == [OLD, NEW]
    for record in records.values():  # every record, edited or new, still meets the OSV schema
        assert_valid(record)

    store = open_store(db_url)
    try:
        client = TestClient(create_app(store, settings()), follow_redirects=False)
        for path in (f"/api/v1/repos/{OLD}/revisions?limit=2", f"/repos/{OLD}", f"/feeds/{OLD}.atom"):
            r = client.get(path)
            assert r.status_code == 307, path
            assert r.headers["location"] == path.replace(OLD, NEW)
            assert client.get(r.headers["location"]).status_code == 200
        assert client.get(f"/api/v1/repos/{NEW}/revisions").status_code == 200
        for name in (OLD, NEW):  # OSV queries find the old record by either package name
            purl = f"pkg:huggingface/{name}?repository_url={quote(hub.url, safe=':/')}"  # the emulator's Hub
            found = client.post("/v1/query", json={"package": {"purl": purl}}).json()
            assert {old_adv["id"], newest["id"]} <= {v["id"] for v in found.get("vulns", [])}, name
        by_commit = client.post("/v1/query", json={"commit": context}).json()["vulns"]
        assert sorted(v["id"] for v in by_commit) == sorted({old_adv["id"], rename_adv[0]["id"]})
        # the rename's change is an amendment appended to the hash chain: everything verifies,
        # the revision after it included
        assert repairs.verify_chain(store, NEW) == []
    finally:
        store.close()
