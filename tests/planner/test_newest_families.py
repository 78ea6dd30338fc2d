"""The newest decoder families, on configs written from their published config.json shapes
(and, for Gemma 4, its config classes' defaults, the text model alone and with its vision
and audio towers, and written MoE variants, one of them with a vision tower and no audio).

The counts in tests/fixtures/newest/params.json are transformers' own (every class built on
the meta device by ``benchmarks/planner_families.py --write-fixtures``); the planner must
match each one exactly, heads included, and size what the layers hold when serving.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.planner.helpers import plan_of
from tracker.extract.model_config import parse_model_config
from tracker.planner import plan_to_json
from tracker.planner.layers import layer_specs
from tracker.planner.memory import kv_cache
from tracker.planner.recurrent import gated_delta_net

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "newest"


@cache
def table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "params.json").read_text())
    return data


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


CASES = sorted((name, arch, count) for name, row in table().items()
               for arch, count in [(row["architecture"], row["params"]), *row["heads"].items()])


def test_every_fixture_is_counted() -> None:
    names = {p.name for p in FIXTURES.glob("*.json")} - {"params.json"}
    assert names == set(table())
    families = {parse_model_config(load(n)).family for n in names}
    assert families == {"llama4", "qwen3_next", "olmoe", "olmo3", "glm4_moe", "smollm3", "glm4",
                        "seed_oss", "minimax_m2", "exaone4", "qwen3_5", "qwen3_5_moe", "gemma4_text", "cohere2", "ernie4_5", "ernie4_5_moe", "deepseek_v32",
                        "gemma4"}
    assert len(CASES) >= 64


@pytest.mark.parametrize(("name", "arch", "count"), CASES)
def test_exact_count(name: str, arch: str, count: int) -> None:
    cfg = load(name)
    cfg["architectures"] = [arch]
    p = plan_of(cfg)
    assert p.supported and not p.dims["approximate"]
    assert p.params.total == count
    assert not [f for f in p.findings if f.id in ("head-unknown", "unsupported-architecture")]


@pytest.mark.parametrize(("name", "low", "high"), [
    ("meta-llama__Llama-4-Scout-17B-16E-Instruct.json", 16.5e9, 17.5e9),  # "17B active"
    ("meta-llama__Llama-4-Maverick-17B-128E-Instruct.json", 16.5e9, 17.5e9),
    ("Qwen__Qwen3-Next-80B-A3B-Instruct.json", 2.9e9, 3.9e9),  # "A3B"
    ("allenai__OLMoE-1B-7B-0924.json", 1.1e9, 1.4e9),  # "1B active" (1.3B)
    ("zai-org__GLM-4.5-Air.json", 11.5e9, 13e9),  # "12B active"
    ("zai-org__GLM-4.5.json", 31e9, 33e9),  # "32B active"
    ("MiniMaxAI__MiniMax-M2.json", 9.5e9, 10.5e9),  # "10B active"
    ("Qwen__Qwen3.5-35B-A3B.json", 2.9e9, 3.9e9),  # "A3B" (the vision tower included)
    ("Qwen__Qwen3.5-397B-A17B.json", 16.5e9, 17.5e9),  # "A17B"
    ("baidu__ERNIE-4.5-21B-A3B-PT.json", 2.5e9, 3.5e9),  # "A3B"
    ("deepseek-ai__DeepSeek-V3.2-Exp.json", 36.5e9, 38.5e9),  # "37B activated", as V3
])
def test_active_parameters_match_the_published_figure(name: str, low: float,
                                                      high: float) -> None:
    # the model cards' active counts leave out the input embedding (a lookup, not a matmul)
    p = plan_of(load(name)).params
    assert low < p.active - p.groups["embeddings"] < high


def test_qwen3_next_serves_a_fixed_recurrent_state_in_its_linear_layers() -> None:
    cfg = parse_model_config(load("Qwen__Qwen3-Next-80B-A3B-Instruct.json"))
    specs = layer_specs(cfg)
    linear = [s for s in specs if s.attention == "recurrent"]
    full = [s for s in specs if s.attention != "recurrent"]
    assert (len(linear), len(full)) == (36, 12)
    state = gated_delta_net(16, 32, 128, 128, 4).bytes
    assert all(s.state_bytes == state and s.kv_per_token == 0 for s in linear)
    kv_per_token = 12 * 2 * 2 * 256 * 2  # full layers: K and V, 2 heads of 256, bf16
    m = plan_of(load("Qwen__Qwen3-Next-80B-A3B-Instruct.json")).memory
    assert m.kv_cache == 36 * state + 512 * kv_per_token
    assert m.kv_cache_full_context == 36 * state + 262144 * kv_per_token
    as_if_attention = 48 * 2 * 2 * 256 * 2 * 262144  # what a KV cache in every layer would be
    assert m.kv_cache_full_context < as_if_attention / 3.9


def test_llama4_chunked_layers_hold_one_chunk_and_every_fourth_layer_skips_rope() -> None:
    raw = load("meta-llama__Llama-4-Scout-17B-16E-Instruct.json")
    cfg = parse_model_config(raw)
    text = cfg.sub["text"]
    assert text.values["no_rope_layers"][:4] == [1, 1, 1, 0]
    assert text.layer_types[:4] == ("chunked_attention",) * 3 + ("full_attention",)
    specs = layer_specs(cfg)
    assert [s.window for s in specs[:4]] == [8192, 8192, 8192, None]
    per_token = 2 * 8 * 128 * 2
    context = 10485760
    assert kv_cache(specs, context) == (36 * 8192 + 12 * context) * per_token
    assert plan_of(raw).memory.kv_cache_full_context == (36 * 8192 + 12 * context) * per_token
    maverick = layer_specs(parse_model_config(load(
        "meta-llama__Llama-4-Maverick-17B-128E-Instruct.json")))
    assert [s.mlp for s in maverick[:4]] == ["gated", "moe", "gated", "moe"]
    assert maverick[1].experts == 128 and maverick[1].shared_ffn == 8192
    assert maverick[0].ffn == 16384


def test_glm45_dense_prefix_and_olmo3_sliding_layers() -> None:
    glm = layer_specs(parse_model_config(load("zai-org__GLM-4.5.json")))
    assert [s.mlp for s in glm[:4]] == ["gated", "gated", "gated", "moe"]
    assert glm[3].shared_ffn == 1536 and glm[3].experts == 160 and glm[3].top_k == 8
    for name in ("allenai__Olmo-3-1025-7B.json", "LGAI-EXAONE__EXAONE-4.0-32B.json"):
        specs = layer_specs(parse_model_config(load(name)))
        assert [s.window for s in specs[:4]] == [4096, 4096, 4096, None]
    command = layer_specs(parse_model_config(load("CohereLabs__c4ai-command-r7b-12-2024.json")))
    assert [s.window for s in command[:4]] == [4096, 4096, 4096, None]  # sliding_window_pattern
    smol = layer_specs(parse_model_config(load("HuggingFaceTB__SmolLM3-3B.json")))
    assert {s.window for s in smol} == {None}  # use_sliding_window is off


def test_qwen3_5_multimodal_counts_the_vision_tower_and_sizes_the_text_layers() -> None:
    raw = load("Qwen__Qwen3.5-27B.json")
    p = plan_of(raw)
    assert p.params.groups["other"] > 0.4e9  # the 27-block vision tower and its merger
    specs = layer_specs(parse_model_config(raw))
    assert len(specs) == 64 and sum(s.attention == "recurrent" for s in specs) == 48
    state = gated_delta_net(16, 48, 128, 128, 4).bytes
    assert p.memory.kv_cache == 48 * state + 16 * 2 * 4 * 256 * 2 * 512


def test_gemma4_layers_that_reuse_kv_cache_nothing_and_k_eq_v_caches_keys_once() -> None:
    cfg = parse_model_config(load("written__gemma4_text-moe-kv-shared.json"))
    specs = layer_specs(cfg)
    assert cfg.values["kv_shared_layers"] == [8, 9, 10, 11]
    assert [s.kv_per_token for s in specs[8:]] == [0, 0, 0, 0]
    assert specs[5].window is None and specs[5].kv_per_token == 2 * 512  # K = V, 2 heads of 512
    assert specs[0].window == 1024 and specs[0].kv_per_token == 2 * 8 * 256
    assert specs[9].mlp == "moe" and specs[9].shared_ffn == 2 * 2112  # double-wide MLP
    default = layer_specs(parse_model_config(load("transformers-defaults__gemma4_text.json")))
    assert [s.q_dim for s in default[4:6]] == [8 * 256, 8 * 512]  # full layers' global head_dim


def test_gemma4_multimodal_has_the_towers_its_config_names_and_the_text_models_layers() -> None:
    full = parse_model_config(load("transformers-defaults__gemma4.json"))
    vision_only = parse_model_config(load("written__gemma4-moe-vision-no-audio.json"))
    assert set(full.sub) == {"text", "vision", "audio"} and set(vision_only.sub) == {"text", "vision"}
    text = parse_model_config(load("written__gemma4_text-moe-kv-shared.json"))
    assert layer_specs(vision_only) == layer_specs(text)  # serving: the text model's layers
    # the towers and projectors are what the composite adds to the text model
    assert plan_of(load("written__gemma4-moe-vision-no-audio.json")).params.total > \
        plan_of(load("written__gemma4_text-moe-kv-shared.json")).params.total


def test_gemma4_towers_left_out_are_not_built() -> None:
    # Gemma4Config leaves an absent vision or audio config None: the model has no such tower
    text_only = table()["transformers-defaults__gemma4_text.json"]["params"]
    bare = plan_of({"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"]})
    assert bare.supported and bare.params.total == text_only
    audio = plan_of({"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"],
                     "vision_config": None, "audio_config": {}})
    assert audio.params.total > text_only


def test_deepseek_v32_caches_the_indexer_keys_beside_the_latent() -> None:
    specs = layer_specs(parse_model_config(load("deepseek-ai__DeepSeek-V3.2-Exp.json")))
    assert {s.kv_per_token for s in specs} == {512 + 64 + 128}
    assert [s.mlp for s in specs[:4]] == ["gated", "gated", "gated", "moe"]


def test_structure_and_json_name_the_linear_attention() -> None:
    doc = plan_to_json(plan_of(load("Qwen__Qwen3-Next-80B-A3B-Instruct.json")))
    text = json.dumps(doc["structure"])
    assert "Gated DeltaNet (fixed state)" in text and "Mixture of Experts (512, top-10" in text
    assert doc["memory_bytes"]["kv_cache"] > 0


def test_defaults_of_the_config_classes_give_their_default_model() -> None:
    # a bare model_type is sized with the config class's defaults (Qwen3-Next: the 80B)
    p = plan_of({"model_type": "qwen3_next"})
    assert p.supported and 79e9 < p.params.total < 80e9
    p = plan_of({"model_type": "llama4_text", "num_hidden_layers": 4})
    assert p.supported and p.params.total > 0


def test_llama4_experts_run_on_every_token_so_activations_grow_with_the_expert_count() -> None:
    def per_sample(experts: int, family: str) -> int:
        cfg = {"model_type": family, "num_hidden_layers": 2, "hidden_size": 512,
               "intermediate_size": 256, "num_attention_heads": 8, "num_key_value_heads": 2,
               "head_dim": 64, "vocab_size": 1000, "num_experts_per_tok": 1}
        if family == "llama4_text":
            cfg |= {"num_local_experts": experts, "intermediate_size_mlp": 512}
        else:
            cfg |= {"num_experts": experts, "moe_intermediate_size": 256}
        return plan_of(cfg, tokens=1024).memory.activations

    # Llama 4's fused experts multiply the repeated input by every expert (zero-weighted
    # where not chosen); Qwen3-MoE gathers each expert's tokens, so only the router grows
    llama = per_sample(32, "llama4_text") - per_sample(8, "llama4_text")
    qwen = per_sample(32, "qwen3_moe") - per_sample(8, "qwen3_moe")
    assert llama > 24 * 1024 * 2 * 2 * 256 * 2  # 24 more experts' gate/up outputs per token
    assert qwen < llama / 20


def test_linear_attention_layers_keep_no_score_matrix_and_grow_linearly() -> None:
    cfg = load("Qwen__Qwen3-Next-80B-A3B-Instruct.json")
    cfg["layer_types"] = ["linear_attention"] * 48
    short = plan_of(cfg, tokens=1024).memory.activations
    long = plan_of(cfg, tokens=4096).memory.activations
    assert long == pytest.approx(4 * short, rel=1e-6)
    cfg["attention_dropout"] = 0.1  # would force a score matrix on attention layers
    assert plan_of(cfg, tokens=4096).memory.activations == long


def test_gated_deltanet_stacks_within_ten_percent_of_their_traced_steps() -> None:
    # traces recorded by benchmarks/trace_gated_deltanet.py (MemTracker, fake tensors)
    traces = json.loads((Path(__file__).resolve().parents[2] / "benchmarks"
                         / "planner_gdn_traces.json").read_text())
    assert set(traces) == {"A", "A-full", "B"}
    for row in traces.values():
        m = plan_of(row["config"], tokens=row["tokens"]).memory
        full = {int(k): v for k, v in row["full"].items()}
        lora = {int(k): v for k, v in row["lora"].items()}
        assert m.activations == pytest.approx((full[4] - full[2]) / 2, rel=0.1)
        assert m.lora_per_sample == pytest.approx((lora[4] - lora[2]) / 2, rel=0.1)
        assert m.full_fixed + 4 * m.activations == pytest.approx(full[4], rel=0.1)
        assert m.lora_fixed + 4 * m.lora_per_sample == pytest.approx(lora[4], rel=0.1)
