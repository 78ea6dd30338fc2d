"""Weights over HTTP: safetensors headers by Range (never tensor bytes), tensor changes are
HIGH, and the plan compares the class's count with the checkpoint's own."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.cli_helpers import Cli
from tests.hubemu import HubEmulator, RepoBuilder, hf_test_env, safetensors_bytes

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8,
          "intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 2,
          "num_hidden_layers": 1, "vocab_size": 4096, "max_position_embeddings": 64,
          "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def llama_tensors(dtype: str, vocab: int = 4096) -> dict[str, tuple[str, list[int]]]:
    h, f = 8, 16
    return {
        "model.embed_tokens.weight": (dtype, [vocab, h]),
        "model.layers.0.self_attn.q_proj.weight": (dtype, [h, h]),
        "model.layers.0.self_attn.k_proj.weight": (dtype, [h, h]),
        "model.layers.0.self_attn.v_proj.weight": (dtype, [h, h]),
        "model.layers.0.self_attn.o_proj.weight": (dtype, [h, h]),
        "model.layers.0.mlp.gate_proj.weight": (dtype, [f, h]),
        "model.layers.0.mlp.up_proj.weight": (dtype, [f, h]),
        "model.layers.0.mlp.down_proj.weight": (dtype, [h, f]),
        "model.layers.0.input_layernorm.weight": (dtype, [h]),
        "model.layers.0.post_attention_layernorm.weight": (dtype, [h]),
        "model.norm.weight": (dtype, [h]),
        "lm_head.weight": (dtype, [vocab, h]),
    }


def test_tensor_dtype_change_is_high_and_no_tensor_bytes_are_read(tmp_path: Path) -> None:
    hf_test_env()
    b = RepoBuilder.init(tmp_path / "acme.git")
    first = safetensors_bytes(llama_tensors("BF16"))
    b.commit({"config.json": json.dumps(CONFIG).encode(), "model.safetensors": first}, title="initial")
    second = safetensors_bytes(llama_tensors("F32"))
    sha = b.commit({"model.safetensors": second,
                    "config.json": json.dumps({**CONFIG, "torch_dtype": "float32"}).encode()}, title="fp32")
    with HubEmulator() as hub:
        hub.add_repo("acme/tiny", tmp_path / "acme.git")
        cli = Cli(tmp_path / "w", f"sqlite:///{tmp_path / 'hw.db'}",
                  extra_config=f'[hub]\nendpoint = "{hub.url}"\ntimeout_seconds = 10\n')
        cli.ok("track", "acme/tiny")
        ranges = [r.headers.get("range", "") for r in hub.requests
                  if "/resolve/" in r.path and r.path.endswith(".safetensors")]
    history = {e["sha"]: e for e in cli.ok("history", "acme/tiny", "--json").json()}
    entry = history[sha]
    weights = [c for c in entry["changes"] if c["kind"] == "weights"]
    assert weights and max(c["severity"] for c in weights if c["severity"]) in ("HIGH", "CRITICAL")
    assert entry["severity"] in ("HIGH", "CRITICAL")
    # headers only: the 8-byte length, then exactly the header, of each new weights content
    import struct

    expected = []
    for blob in (first, second):
        (n,) = struct.unpack("<Q", blob[:8])
        expected += ["bytes=0-7", f"bytes=8-{8 + n - 1}"]
    assert sorted(ranges) == sorted(expected)
    shown = cli.ok("show", "acme/tiny", sha, "--json").json()
    params = shown["plan"]["params"]
    assert params["checkpoint"] == params["total"]  # the checkpoint holds exactly the class's parameters
