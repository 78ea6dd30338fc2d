"""Done-when of the foundation: every commit of each real history gets a history entry, and
every commit that changed config, tokenizer, chat template, generation config or weight
files shows a change for that path. Run through the CLI contract only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.corpus import CORPUS
from tests.e2e.cli_helpers import Cli
from tests.hubemu import clone_bundle
from tracker.extract.paths import weight_format

HISTORIES = sorted((CORPUS / "histories").glob("*.json"))
WATCHED = {
    "config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
    "tokenizer.json", "chat_template.jinja", "chat_template.json", "tokenizer.model", "added_tokens.json",
}


def _watched(path: str) -> bool:
    return path in WATCHED or weight_format(path) is not None


@pytest.mark.parametrize("listing", HISTORIES, ids=lambda p: p.stem)
def test_every_commit_and_every_watched_path(listing: Path, tmp_path: Path) -> None:
    meta = json.loads(listing.read_text())
    repo_id = meta["hf_repo_id"]
    src = clone_bundle(listing.stem, tmp_path)
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(src), "--as", repo_id)
    history = cli.ok("history", repo_id, "--json").json()

    expected = [c["sha"] for c in meta["commits"]]
    assert sorted(e["sha"] for e in history) == sorted(expected)
    assert len(history) == len(expected)
    by_sha = {e["sha"]: e for e in history}
    for commit in meta["commits"]:
        entry = by_sha[commit["sha"]]
        assert entry["title"] == commit["title"]
        assert entry["committed_at"][:10] == commit["date"][:10]
        assert entry["parent"] == (commit["parents"][0] if commit["parents"] else None)
        paths = {c["path"] for c in entry["changes"]}
        for f in commit["files_changed"]:
            if _watched(f["path"]):
                assert f["path"] in paths, f"{repo_id}@{commit['sha'][:8]} changed {f['path']} but shows {sorted(paths)}"
    # newest first, and the root commit is the baseline: no advisory
    assert history[-1]["sha"] == expected[0]
    assert history[-1]["advisory_id"] is None
    for e in history:
        for c in e["changes"]:
            assert c["kind"] in {"config", "generation_config", "tokenizer", "chat_template", "weights", "code",
                                 "history", "other"}
            assert c["severity"] in {None, "CRITICAL", "HIGH", "MODERATE", "LOW"}


def test_repoll_records_nothing_twice(tmp_path: Path) -> None:
    src = clone_bundle("google__gemma-2b-it", tmp_path)
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(src), "--as", "google/gemma-2b-it")
    first = cli.ok("history", "google/gemma-2b-it", "--json").json()
    polled = cli.ok("poll", "--json").json()
    assert polled == [{"repo": "google/gemma-2b-it", "status": "unchanged", "new_revisions": 0, "repaired": 0,
                      "error": None}]
    assert cli.ok("history", "google/gemma-2b-it", "--json").json() == first
