"""State-space, hybrid, vision-language, ModernBERT and MPNet configs: exact counts, serving state.

The fixtures (tests/planner/fixtures/families.json) are published checkpoints' structural
config keys with the unique parameter count transformers builds for their class on the meta
device (written by ``benchmarks/planner_ssm_vlm_encoders.py --write-fixtures``, which also checks
random variants of every head class); the planner must match them without torch.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.planner.helpers import plan_of

FIXTURES = Path(__file__).parent / "fixtures" / "families.json"


@cache
def fixtures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURES.read_text())
    return data


@pytest.mark.parametrize("name", sorted(fixtures()))
def test_published_config_counts_as_transformers_builds_it(name: str) -> None:
    entry = fixtures()[name]
    p = plan_of(entry["config"])
    assert p.supported, [f.message for f in p.findings]
    assert p.params.total == entry["transformers_params"]
    assert not [f for f in p.findings if f.id in ("head-unknown", "unsupported-architecture")]


def _config(name: str, **changes: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads(json.dumps(fixtures()[name]["config"]))
    cfg.update(changes)
    return cfg


def test_jamba_active_parameters_are_its_published_twelve_billion() -> None:
    p = plan_of(_config("ai21labs__Jamba-v0.1"))
    assert 11.9e9 < p.params.active < 12.2e9  # "12B active / 52B total"
    assert p.params.groups["mixer"] > 0 and p.params.groups["experts"] > 0


def test_heads_of_the_encoders_follow_the_class() -> None:
    base = plan_of(_config("answerdotai__ModernBERT-base", architectures=["ModernBertModel"]))
    mlm = plan_of(_config("answerdotai__ModernBERT-base"))
    cls = plan_of(_config("answerdotai__ModernBERT-base", num_labels=7,
                          architectures=["ModernBertForSequenceClassification"]))
    h, vocab = 768, 50368
    assert mlm.params.total - base.params.total == h * h + h + vocab  # dense, norm, bias
    assert cls.params.total - base.params.total == h * h + h + h * 7 + 7
    mpnet = plan_of(_config("sentence-transformers__all-mpnet-base-v2",
                            architectures=["MPNetForTokenClassification"], num_labels=5))
    pooled = plan_of(_config("sentence-transformers__all-mpnet-base-v2"))
    assert pooled.params.total - mpnet.params.total == (h * h + h) - (h * 5 + 5)


def test_mamba_serves_a_fixed_state_not_a_kv_cache() -> None:
    p = plan_of(_config("mistralai__Mamba-Codestral-7B-v0.1"))
    m = p.memory
    # per layer: conv over x, B, C (8192 + 2 x 8 x 128 channels, 4 taps) in bf16 and the scan's
    # fp32 state of 128 heads x 64 x 128 (as a bf16 prefill's cache holds them)
    per_layer = (8192 + 2 * 8 * 128) * 4 * 2 + 128 * 64 * 128 * 4
    assert m.recurrent_state == 64 * per_layer
    assert m.kv_cache == m.recurrent_state == m.kv_cache_full_context
    longer = plan_of(_config("mistralai__Mamba-Codestral-7B-v0.1"), tokens=8192).memory
    assert longer.kv_cache == m.kv_cache  # the state does not grow with the sequence


def test_hybrids_cache_keys_and_values_only_in_attention_layers() -> None:
    jamba = plan_of(_config("ai21labs__Jamba-v0.1"), tokens=1000).memory
    attention = 4 * 2 * 8 * 128 * 1000 * 2  # 4 of 32 layers, GQA 8 x 128
    mamba = 28 * (8192 * 4 * 2 + 8192 * 16 * 4)
    assert jamba.recurrent_state == mamba
    assert jamba.kv_cache == attention + mamba
    falcon = plan_of(_config("tiiuae__Falcon-H1-0.5B-Instruct"), tokens=100).memory
    state = 36 * ((1536 + 2 * 128) * 4 * 2 + 24 * 64 * 128 * 4)
    assert falcon.kv_cache == 36 * 2 * 2 * 64 * 100 * 2 + state


def test_vision_language_models_plan_their_language_model() -> None:
    p = plan_of(_config("Qwen__Qwen3-VL-30B-A3B-Instruct"))
    assert p.dims["experts"] == 128 and p.dims["layers"] == 48
    # 120 of 128 routed experts idle per token in each of 48 layers (gate, up, down 2048 x 768)
    assert p.params.total - p.params.active == 120 * 48 * 3 * 2048 * 768
    assert p.memory.kv_cache == 48 * 2 * 4 * 128 * 512 * 2
    assert p.memory.recurrent_state == 0


def test_encoders_have_no_kv_cache() -> None:
    for name in ("answerdotai__ModernBERT-base", "sentence-transformers__all-mpnet-base-v2"):
        m = plan_of(_config(name)).memory
        assert m.kv_cache == 0 and m.recurrent_state == 0 and m.serve_per_sample > 0


def test_mamba_lora_leaves_out_proj_alone_as_peft_does() -> None:
    # peft refuses LoRA on a Mamba mixer's out_proj in mamba / mamba2 / falcon_h1 models:
    # in_proj (768 -> 3072), x_proj (1536 -> 48 + 32) and dt_proj (48 -> 1536) per layer
    p = plan_of(_config("state-spaces__mamba-130m-hf"))
    assert p.memory.lora_params == 24 * 16 * ((768 + 3072) + (1536 + 80) + (48 + 1536))


def test_mamba_training_keeps_the_scan_state_per_token() -> None:
    from tracker.planner.traced_mamba import MAMBA1_BACKWARD_PER_STATE, MAMBA1_PER_STATE

    small = plan_of(_config("state-spaces__mamba-130m-hf"), tokens=256).memory
    large = plan_of(_config("state-spaces__mamba-130m-hf", state_size=32), tokens=256).memory
    # 16 more state channels per inner channel (1536) kept in each of 24 layers at 256
    # tokens, and at most one layer's scan gradients more at the peak
    kept = 24 * 256 * MAMBA1_PER_STATE * 1536 * 16
    assert kept <= large.activations - small.activations
    assert large.activations - small.activations <= kept + 256 * MAMBA1_BACKWARD_PER_STATE * 1536 * 16
    assert 0 < small.lora_per_sample < small.activations
    assert small.kv_cache == plan_of(_config("state-spaces__mamba-130m-hf")).memory.kv_cache


@pytest.mark.parametrize("config", [
    {"model_type": "llava", "text_config": {"model_type": "nonexistent"}},
    {"model_type": "qwen3_vl", "vision_config": {"depth": 10**9}},
    {"model_type": "mamba", "hidden_size": 10**30},
])
def test_a_part_the_planner_cannot_build_makes_the_config_unplannable(
        config: dict[str, Any]) -> None:
    p = plan_of(config)
    assert not p.supported and p.params.total == 0


def test_a_language_model_that_is_no_decoder_is_said_not_counted() -> None:
    p = plan_of({"model_type": "llava", "text_config": {"model_type": "mamba"}})
    assert any(f.id == "head-unknown" and "mamba" in f.message for f in p.findings)
