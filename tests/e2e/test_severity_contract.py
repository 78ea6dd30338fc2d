"""DESIGN.md's severity table through the CLI contract, one commit per row, on a git repo."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.cli_helpers import Cli
from tests.e2e.gitrepo import ModelRepo

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
          "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4,
          "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 512,
          "rope_theta": 10000.0, "torch_dtype": "bfloat16"}
TOKENIZER = {"bos_token": "<s>", "eos_token": "</s>", "model_max_length": 512,
             "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"}
GENERATION = {"bos_token_id": 1, "eos_token_id": 2, "temperature": 0.7, "top_p": 0.9}
LFS = "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize {}\n"
REMOTE = {**CONFIG, "auto_map": {"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}}


def test_each_row_of_the_severity_table(tmp_path: Path) -> None:
    repo = ModelRepo(tmp_path / "up")
    base = repo.commit("initial", {"config.json": CONFIG, "tokenizer_config.json": TOKENIZER,
                                   "generation_config.json": GENERATION, "README.md": "v1"})
    steps = {
        "readme": (repo.commit("readme", {"README.md": "v2"}), None),
        "sampling": (repo.commit("sampling", {"generation_config.json": {**GENERATION, "temperature": 0.6}}), "LOW"),
        "context": (repo.commit("context", {"config.json": {**CONFIG, "max_position_embeddings": 4096}}), "MODERATE"),
        "rope": (repo.commit("rope", {"config.json": {**CONFIG, "max_position_embeddings": 4096,
                                                       "rope_scaling": {"rope_type": "linear", "factor": 4.0}}}),
                 "MODERATE"),
        "eos_gen": (repo.commit("eos", {"generation_config.json": {**GENERATION, "temperature": 0.6,
                                                                    "eos_token_id": 3}}), "MODERATE"),
        "template": (repo.commit("template", {"tokenizer_config.json": {
            **TOKENIZER, "chat_template": "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"}}),
            "HIGH"),
        "special": (repo.commit("special", {"tokenizer_config.json": {
            **TOKENIZER, "eos_token": "<|eot|>",
            "chat_template": "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"}}), "HIGH"),
        "pickle": (repo.commit("pickle", {"pytorch_model.bin": LFS.format("a" * 64, 1000)}), "CRITICAL"),
        "auto_map": (repo.commit("remote code", {
            "config.json": {**REMOTE, "max_position_embeddings": 4096,
                            "rope_scaling": {"rope_type": "linear", "factor": 4.0}},
            "modeling_custom.py": "class CustomForCausalLM: pass\n"}), "CRITICAL"),
        "code": (repo.commit("code change", {"modeling_custom.py": "import os\nclass CustomForCausalLM: pass\n"}),
                 "CRITICAL"),
    }
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'hw.db'}")
    cli.ok("track", str(repo.path), "--as", "org/model")
    history = {e["sha"]: e for e in cli.ok("history", "org/model", "--json").json()}
    assert history[base]["advisory_id"] is None
    for name, (sha, severity) in steps.items():
        entry = history[sha]
        assert entry["severity"] == severity, (name, json.dumps(entry["changes"], indent=1))
        assert (entry["advisory_id"] is None) == (severity is None), name
    kinds = {c["kind"] for c in history[steps["code"][0]]["changes"]}
    assert "code" in kinds
