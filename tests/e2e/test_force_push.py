"""A force-push upstream is a `history` change of severity CRITICAL; no stored revision is lost."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.cli_helpers import Cli
from tests.e2e.gitrepo import ModelRepo

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
          "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 256,
          "max_position_embeddings": 512, "eos_token_id": 2}


def test_force_push_is_critical_and_keeps_history(tmp_path: Path) -> None:
    repo = ModelRepo(tmp_path / "up")
    root = repo.commit("initial", {"README.md": "hi", "config.json": CONFIG})
    a = repo.commit("eos 3", {"config.json": {**CONFIG, "eos_token_id": 3}}, date="2024-01-02T00:00:00Z")
    b = repo.commit("readme", {"README.md": "hello"}, date="2024-01-03T00:00:00Z")
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/model")
    assert {e["sha"] for e in cli.ok("history", "org/model", "--json").json()} == {root, a, b}

    repo.reset_hard(root)  # squash a and b into one new commit
    c = repo.commit("squashed", {"README.md": "hello", "config.json": {**CONFIG, "eos_token_id": 3}},
                    date="2024-01-04T00:00:00Z")
    polled = cli.ok("poll", "org/model", "--json").json()
    assert polled[0]["status"] == "ok" and polled[0]["new_revisions"] == 1

    history = cli.ok("history", "org/model", "--json").json()
    assert {e["sha"] for e in history} == {root, a, b, c}  # nothing lost
    newest = history[0]
    assert newest["sha"] == c
    rewrite = [ch for ch in newest["changes"] if ch["kind"] == "history"]
    assert rewrite and rewrite[0]["severity"] == "CRITICAL"
    assert newest["severity"] == "CRITICAL"
    assert newest["advisory_id"] is not None
    shown = cli.ok("show", "org/model", a, "--json").json()
    assert shown["reachable"] is False


def test_branch_reset_to_an_older_commit_marks_lost_revisions(tmp_path: Path) -> None:
    repo = ModelRepo(tmp_path / "up")
    root = repo.commit("initial", {"config.json": CONFIG})
    a = repo.commit("eos 3", {"config.json": {**CONFIG, "eos_token_id": 3}})
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/model")
    repo.reset_hard(root)
    assert cli.ok("poll", "--json").json()[0]["status"] == "ok"
    assert cli.ok("repos", "--json").json()[0]["head"] == root
    assert cli.ok("show", "org/model", a, "--json").json()["reachable"] is False
    assert len(cli.ok("history", "org/model", "--json").json()) == 2
