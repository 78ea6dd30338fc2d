"""Unknown architectures and hostile config.json files: a plan with findings, never a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.planner.helpers import load, plan_of
from tracker.extract.model_config import parse_model_config
from tracker.planner import plan_to_json, render_plan_text


def test_unknown_model_type_gets_a_clear_finding_and_no_numbers() -> None:
    p = plan_of({"model_type": "rwkv", "architectures": ["RwkvForCausalLM"],
                 "hidden_size": 2560, "num_hidden_layers": 64, "vocab_size": 50280})
    assert not p.supported
    assert p.findings[0].id == "unsupported-architecture"
    assert p.findings[0].level.value == "error" and "rwkv" in p.findings[0].message
    j = plan_to_json(p)
    assert j["params"]["total"] is None and j["memory_bytes"]["full_finetune"] is None
    assert all(v == {"full_finetune": None, "lora": None, "serve": None}
               for v in j["cards"].values())
    json.dumps(j)
    assert "Not plannable" in render_plan_text(p)


@pytest.mark.parametrize("config", [
    None, [], "llama", 42, {}, {"model_type": None}, {"model_type": ["llama"]},
    {"model_type": "llama", "hidden_size": "4096"},
    {"model_type": "llama", "hidden_size": -5},
    {"model_type": "llama", "hidden_size": 10**30},
    {"model_type": "llama", "num_hidden_layers": 2**39},  # walked layer by layer: refused
    {"model_type": "t5", "num_decoder_layers": 10**9},
    {"model_type": "llama", "num_attention_heads": 0},
    {"model_type": "llama", "num_hidden_layers": True},
    {"model_type": "llama", "hidden_size": float("nan")},
    {"model_type": "llama", "architectures": "LlamaForCausalLM"},
    {"model_type": "llama", "rope_scaling": {"factor": "big", "rope_type": "yarn"}},
    {"model_type": "llama", "quantization_config": {"quant_method": "gptq"}},
    {"model_type": "llama", "quantization_config": "4bit"},
    {"model_type": "gemma3", "text_config": "oops", "vision_config": None},
    {"model_type": "mixtral", "num_local_experts": 0},
    {"model_type": "deepseek_v3", "kv_lora_rank": None, "q_lora_rank": "x"},
    {"model_type": "llama", "layer_types": [[[[[[1]]]]]]},
    {"model_type": "bert", "id2label": {str(i): "x" for i in range(300)}},
    {"model_type": "t5", "feed_forward_proj": 7},
])
def test_hostile_configs_never_crash(config: Any) -> None:
    p = plan_of(config)
    json.dumps(plan_to_json(p))
    render_plan_text(p)
    if p.supported:
        assert p.params.total >= 0


def test_bad_values_are_recorded_as_findings() -> None:
    cfg = parse_model_config({"model_type": "llama", "hidden_size": "4096"})
    assert any("hidden_size" in i for i in cfg.issues)
    p = plan_of({"model_type": "llama", "hidden_size": "4096"})
    assert any(f.id == "config-invalid-value" for f in p.findings)
    huge = plan_of({"model_type": "llama", "hidden_size": 10**30})
    assert not huge.supported and any(f.id == "config-invalid-value" for f in huge.findings)


def test_non_object_config_is_refused() -> None:
    p = plan_of(["not", "a", "config"])
    assert not p.supported
    assert {f.id for f in p.findings} >= {"config-invalid-value", "unsupported-architecture"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12,
)
KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "vocab_size", "intermediate_size", "head_dim", "tie_word_embeddings", "rope_scaling",
        "quantization_config", "layer_types", "sliding_window", "num_local_experts",
        "max_position_embeddings", "text_config", "n_embd", "d_model", "architectures"]


@settings(max_examples=400, deadline=None)
@given(base=st.sampled_from(["llama", "mixtral", "gpt2", "bert", "t5", "gemma3", "falcon",
                             "deepseek_v3", "whisper", "clip", "opt", "qwen2_moe"]),
       junk=st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6))
def test_fuzzed_configs_never_crash(base: str, junk: dict[str, Any]) -> None:
    p = plan_of({"model_type": base, **junk})
    json.dumps(plan_to_json(p))
    render_plan_text(p)
    # the safety nets stay unused: every hostile shape is handled on purpose
    assert not any(f.id == "planner-error" or "could not be read" in f.message
                   for f in p.findings), p.findings


def test_corpus_configs_with_a_field_corrupted_still_plan() -> None:
    config = load("meta-llama__Meta-Llama-3-8B.json")
    config["num_key_value_heads"] = "eight"
    p = plan_of(config)
    assert p.supported and any(f.id == "config-invalid-value" for f in p.findings)
