"""A history with a merge: containment and drift agree with git's own ancestry (computed apart)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.audit.conftest import write_lock
from tests.e2e.cli_helpers import Cli
from tests.e2e.gitrepo import ModelRepo

TOK = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ messages }}"}


def test_merge_history_against_git(tmp_path: Path) -> None:
    repo = ModelRepo(tmp_path / "up")
    base = repo.commit("initial", {"tokenizer_config.json": TOK, "README.md": "a"})
    repo.git("checkout", "-q", "-b", "side")
    side = repo.commit("eos on a side branch", {"tokenizer_config.json": {**TOK, "eos_token": "<eot>"}})
    repo.git("checkout", "-q", "main")
    readme = repo.commit("readme on main", {"README.md": "b"}, date="2024-01-02T00:00:00Z")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = repo.git("rev-parse", "HEAD")
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/merged")
    shas = [base, side, readme, merge]
    lock = write_lock(tmp_path / "models.lock", [("org/merged", s) for s in shas])
    r = cli("audit", "--offline", "--format", "json", "--fail-on", "none", str(lock))
    assert r.code == 0, r.err
    models = json.loads(r.out)["models"]
    advisories = {e["sha"]: e["advisory_id"] for e in cli.ok("history", "org/merged", "--json").json()}
    introduced = [(sha, adv) for sha, adv in advisories.items() if adv]

    def is_ancestor(a: str, b: str) -> bool:
        return subprocess.run(["git", "merge-base", "--is-ancestor", a, b], cwd=repo.path).returncode == 0

    for m in models:
        sha = m["revision"]
        expected = sorted(adv for start, adv in introduced if is_ancestor(start, sha))
        assert [a["id"] for a in m["advisories"]] == expected, sha
        assert m["behind"] == int(repo.git("rev-list", "--count", f"{sha}..{merge}")), sha
    assert any(adv for start, adv in introduced if start == side)
    assert models[2]["advisories"] == []  # readme: on main, before the merge brought side in
