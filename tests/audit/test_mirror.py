"""A repo tracked from a mirror: its records carry ``?repository_url=``; audit still finds them
for inputs that name no Hub, and keeps a purl's own Hub apart from another one."""

from __future__ import annotations

import json
from pathlib import Path

from tests.audit.conftest import write_lock
from tests.e2e.cli_helpers import Cli
from tests.e2e.test_advisory_lifecycle import _repo

MIRROR = "https://mirror.example"


def test_mirror_records_match_by_repo_and_hub(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path)
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}", extra_config=f'[hub]\nendpoint = "{MIRROR}"\n')
    cli.ok("track", str(repo.path), "--as", "org/model", "--repo-url", f"{MIRROR}/org/model")
    records = cli.ok("advisories", "--json").json()
    record = next(r for r in records if {"introduced": shas[1]} in r["affected"][0]["ranges"][0]["events"])
    assert "repository_url=" in json.dumps(record)
    lock = write_lock(tmp_path / "models.lock", [("org/model", shas[2])])
    doc = json.loads(cli("audit", "--offline", "--format", "json", str(lock)).out)
    assert [a["id"] for a in doc["models"][0]["advisories"]] == [record["id"]]
    for hub, expected in ((MIRROR, [record["id"]]), ("https://other.example", [])):
        bom = tmp_path / "bom.json"
        bom.write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1, "components": [
            {"type": "machine-learning-model", "name": "model",
             "purl": f"pkg:huggingface/org/model@{shas[2]}?repository_url={hub}"}]}), encoding="utf-8")
        doc = json.loads(cli("audit", "--offline", "--format", "json", "--fail-on", "none", str(bom)).out)
        assert [a["id"] for a in doc["models"][0]["advisories"]] == expected, hub
