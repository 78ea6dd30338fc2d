"""Model namespace reuse (issue 10 point 8): a Hub repo deleted and created again under the
same name, with another history, is its own CRITICAL change on a fresh baseline, never a
history rewrite diffed against the old repo's head. A squash of the same repo (no common
history, the same creation date) stays a history rewrite. Real huggingface_hub client
against the emulator, SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.cli_helpers import Cli
from tests.hubemu import HubEmulator, RepoBuilder, hf_test_env, safetensors_bytes

REPO = "acme/reused"
CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
          "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 256, "eos_token_id": 2}


def _config(**over: object) -> bytes:
    return json.dumps({**CONFIG, **over}).encode()


def _old_repo(path: Path) -> tuple[RepoBuilder, list[str]]:
    b = RepoBuilder.init(path)
    shas = [
        b.commit({"config.json": _config(), "model.safetensors": safetensors_bytes({"w": ("F16", [4, 4])})},
                 title="upload"),
        b.commit({"config.json": _config(max_position_embeddings=4096)}, title="longer context"),
        b.commit({"README.md": b"# old\n"}, title="card"),
    ]
    return b, shas


def _cli(tmp_path: Path, db_url: str, hub: HubEmulator) -> Cli:
    return Cli(tmp_path / "hw", db_url, extra_config=f'[hub]\nendpoint = "{hub.url}"\ntimeout_seconds = 10\n')


def test_deleted_and_recreated_repo_is_namespace_reuse_not_a_rewrite(tmp_path: Path, db_url: str) -> None:
    hf_test_env()
    old, old_shas = _old_repo(tmp_path / "old.git")
    new = RepoBuilder.init(tmp_path / "new.git")
    new_root = new.commit({"config.json": _config(hidden_size=128, auto_map={"AutoModel": "m.M"}),
                           "m.py": b"import os\n", "model.bin": b"pickle bytes"}, title="initial commit")
    new_head = new.commit({"config.json": _config(hidden_size=128, auto_map={"AutoModel": "m.M"},
                                                  eos_token_id=3)}, title="eos")
    with HubEmulator() as hub:
        hub.add_repo(REPO, old.path)
        cli = _cli(tmp_path, db_url, hub)
        cli.ok("track", REPO)
        before = {a["id"]: a for a in cli.ok("advisories", REPO, "--json").json()}
        assert before  # the context change is an advisory of the old repo

        hub.recreate_repo(REPO, new.path)
        polled = cli.ok("poll", REPO, "--json").json()
        assert hub.internal_errors == []
    assert polled[0]["status"] == "ok" and polled[0]["new_revisions"] == 2

    history = {e["sha"]: e for e in cli.ok("history", REPO, "--json").json()}
    assert set(history) == {*old_shas, new_root, new_head}  # nothing of the old repo is lost
    base = history[new_root]
    # the new repo's first commit is a fresh baseline: the reuse change first, then its files
    # as added (as on a first track), nothing diffed against the old head (no "old -> new")
    reuse, *files = base["changes"]
    assert (reuse["kind"], reuse["severity"]) == ("namespace_reuse", "CRITICAL")
    assert "deleted and created again" in reuse["summary"] and "not diffed" in reuse["summary"]
    assert {c["path"] for c in files} == {"config.json", "m.py", "model.bin"}
    assert all(" added" in c["summary"] or c["summary"].startswith("not read") for c in files), files
    assert not any("->" in c["summary"] for c in files)
    assert base["parent"] is None and base["severity"] == "CRITICAL" and base["advisory_id"]
    # later commits of the new repo are diffed within it
    assert history[new_head]["parent"] == new_root
    assert {c["path"] for c in history[new_head]["changes"]} == {"config.json"}
    assert not any(c["kind"] == "history" for e in history.values() for c in e["changes"])

    record = cli.ok("advisory", base["advisory_id"]).json()
    assert record["database_specific"]["severity"] == "CRITICAL"
    assert record["database_specific"]["parent"] is None
    assert record["summary"].startswith(f"{REPO} {new_root[:7]}: namespace reused")
    assert "deleted and created again" in record["details"]
    assert record["affected"][0]["ranges"][0]["events"] == [{"introduced": new_root}]

    # the old repo's commits are off the branch, and its advisories say why
    for sha in old_shas:
        assert cli.ok("show", REPO, sha, "--json").json()["reachable"] is False
    for adv_id in before:
        marked = cli.ok("advisory", adv_id).json()
        assert marked["database_specific"]["namespace_reused"]["baseline"] == new_root
        assert "namespace reused" in marked["details"]
        assert marked["modified"] >= before[adv_id]["modified"]


def test_a_squash_of_the_same_repo_stays_a_history_rewrite(tmp_path: Path, db_url: str) -> None:
    """No common history, but the Hub's creation date is the old one: a squash (e.g.
    super_squash_history), compared with what users had."""
    hf_test_env()
    old, _ = _old_repo(tmp_path / "old.git")
    with HubEmulator() as hub:
        hub.add_repo(REPO, old.path)
        cli = _cli(tmp_path, db_url, hub)
        cli.ok("track", REPO)
        squashed = old.commit({"config.json": _config(max_position_embeddings=8192),
                               "model.safetensors": safetensors_bytes({"w": ("F16", [4, 4])}),
                               "README.md": b"# old\n"}, title="squash", parents=[], replace=True)
        assert cli.ok("poll", REPO, "--json").json()[0]["new_revisions"] == 1
    entry = {e["sha"]: e for e in cli.ok("history", REPO, "--json").json()}[squashed]
    kinds = {c["kind"] for c in entry["changes"]}
    assert "history" in kinds and "namespace_reuse" not in kinds
    assert entry["parent"] is None and entry["severity"] == "CRITICAL"
    # diffed against the old head: only what differs from what users had
    assert {c["summary"] for c in entry["changes"] if c["kind"] == "config" and c["severity"]} == {
        "max_position_embeddings 4096 -> 8192"}
    assert {c["path"] for c in entry["changes"]} == {"", "config.json"}
