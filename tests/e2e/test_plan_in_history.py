"""A revision whose config.json changed gets a plan, and the plan delta is a `config` change."""

from __future__ import annotations

import json
from pathlib import Path

from tests.corpus import CORPUS
from tests.e2e.cli_helpers import Cli
from tests.e2e.gitrepo import ModelRepo

LLAMA = json.loads((CORPUS / "configs" / "meta-llama__Llama-3.2-1B.json").read_text())


def test_plan_delta_in_history_and_plan_of_a_revision(tmp_path: Path) -> None:
    repo = ModelRepo(tmp_path / "up")
    first = repo.commit("initial", {"config.json": LLAMA})
    grown = {**LLAMA, "num_key_value_heads": LLAMA["num_attention_heads"]}  # GQA -> full MHA
    second = repo.commit("no more GQA", {"config.json": grown})
    repo.commit("readme", {"README.md": "x"})
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/llama")

    history = cli.ok("history", "org/llama", "--json").json()
    entry = next(e for e in history if e["sha"] == second)
    plan_changes = [c for c in entry["changes"] if c["kind"] == "config" and c["summary"].startswith("plan:")]
    assert len(plan_changes) == 1
    assert "KV cache" in plan_changes[0]["summary"] or "kv" in plan_changes[0]["summary"].lower()

    shown = cli.ok("show", "org/llama", second, "--json").json()
    assert shown["plan"]["params"]["total"] > 0
    assert shown["plan_delta"] is not None

    at_first = cli.ok("plan", f"org/llama@{first}", "--json").json()
    at_second = cli.ok("plan", f"org/llama@{second}", "--json").json()
    assert at_second["memory_bytes"]["kv_cache"] == 4 * at_first["memory_bytes"]["kv_cache"]
    assert at_second["params"]["total"] > at_first["params"]["total"]
    # plan of config files: one object for one file, an array in order for several
    path = CORPUS / "configs" / "meta-llama__Llama-3.2-1B.json"
    one = cli.ok("plan", str(path), "--json").json()
    assert one["params"]["total"] == at_first["params"]["total"]
    two = cli.ok("plan", str(path), str(CORPUS / "configs" / "openai__gpt-oss-20b.json"), "--json").json()
    assert isinstance(two, list) and len(two) == 2 and two[0] == one
    text = cli.ok("plan", str(path)).out
    assert "T4" in text and "H200" in text


def test_plan_method_and_tokens_flags(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    path = str(CORPUS / "configs" / "FacebookAI__xlm-roberta-base.json")
    seed = cli.ok("plan", path, "--method", "seed", "--json").json()
    traced = cli.ok("plan", path, "--json").json()
    assert (seed["method"], traced["method"]) == ("seed", "traced")
    assert seed["cards"]["t4"]["full_finetune"] == 52  # the seed page's table
    assert traced["cards"]["t4"]["full_finetune"] < 10  # its 250k-vocabulary loss counted
    short = cli.ok("plan", path, "--tokens", "128", "--json").json()
    assert short["training_tokens"] == 128 and short["serve_tokens"] == 128
    assert cli("plan", path, "--tokens", "0").code != 0
    assert cli("plan", path, "--method", "guess").code != 0
