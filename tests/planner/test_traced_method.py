"""The default ``traced`` memory method, ``--tokens``, and the config fixes found with it."""

from __future__ import annotations

import math
from typing import Any

from tests.planner.helpers import load, plan_of
from tracker.extract.model_config import parse_model_config
from tracker.planner import plan_to_json
from tracker.planner.cards import CARDS, usable
from tracker.planner.layers import layer_specs
from tracker.planner.params import count_params
from tracker.planner.traced import full_phases, peak


def test_xlm_roberta_logits_and_their_fp32_loss_shrink_the_batch() -> None:
    """The seed page says batch 52 on a T4; the 250k vocabulary's fp32 loss leaves 4-5."""
    cfg = load("FacebookAI__xlm-roberta-base.json")
    seed, traced = plan_of(cfg, method="seed"), plan_of(cfg)
    assert seed.card("t4").full_finetune == 52  # type: ignore[union-attr]
    t4 = traced.card("t4").full_finetune  # type: ignore[union-attr]
    assert 3 <= t4 <= 6
    vocab_loss = 12 * 250002 * 514  # fp32 log-softmax and two gradients per logit
    assert traced.memory.activations > vocab_loss


def test_json_fixed_and_per_sample_give_the_cards_batches() -> None:
    for name in ("meta-llama__Llama-3.2-1B.json", "distilbert__distilbert-base-uncased.json",
                 "google__flan-t5-large.json"):
        doc = plan_to_json(plan_of(load(name)))
        m = doc["memory_bytes"]
        assert doc["method"] == "traced"
        for card in CARDS:
            for mode in ("full_finetune", "lora", "serve"):
                room = usable(card) - m["fixed"][mode]
                per = m["per_sample"][mode]
                expect = math.floor(room / per) if room >= per else 0
                assert doc["cards"][card.key][mode] == expect, (name, card.key, mode)
        assert m["per_sample"]["full_finetune"] == m["activations_per_sample"]
        assert m["fixed"]["full_finetune"] + m["activations_per_sample"] == m["full_finetune"]


def test_batch_one_peak_is_the_largest_phase_and_never_below_any() -> None:
    cfg = parse_model_config(load("meta-llama__Llama-3.2-1B.json"))
    t = count_params(cfg).tally
    phases = full_phases(cfg, t, layer_specs(cfg), 2048)
    mem = plan_of(load("meta-llama__Llama-3.2-1B.json")).memory
    assert mem.full_finetune == peak(phases, 1)
    for b in (1, 2, 8, 64):
        assert mem.full_fixed + b * mem.activations >= peak(phases, b)
    assert {p.name for p in phases} == {"loss", "head", "step"}


def test_attention_dropout_keeps_the_score_matrix_flash_does_not() -> None:
    cfg = load("google-bert__bert-base-uncased.json")
    with_drop = plan_of(cfg).memory.activations
    no_drop = plan_of({**cfg, "attention_probs_dropout_prob": 0.0}).memory.activations
    heads, s, layers = 12, 512, 12
    assert with_drop - no_drop == round(12.8 * heads * s * s * layers)


def test_encoders_keep_no_kv_cache_in_the_traced_method() -> None:
    cfg = load("FacebookAI__xlm-roberta-base.json")
    assert plan_of(cfg).memory.kv_cache == 0
    assert plan_of(cfg).memory.serve_per_sample > 0
    assert plan_of(cfg, method="seed").memory.kv_cache == 12 * 2 * 768 * 514 * 2  # the page's


def test_tokens_sets_training_and_serving_length_and_kv_scales() -> None:
    cfg = load("meta-llama__Llama-3.2-1B.json")
    short, long = plan_of(cfg).memory, plan_of(cfg, tokens=8192).memory
    assert (short.training_tokens, short.serve_tokens) == (2048, 512)
    assert (long.training_tokens, long.serve_tokens) == (8192, 8192)
    per_token = 16 * 2 * 8 * 64 * 2  # layers x K,V x kv heads x head_dim x bf16
    assert short.kv_cache == 512 * per_token and long.kv_cache == 8192 * per_token
    assert short.kv_cache_full_context == 131072 * per_token
    assert long.activations > 4 * short.activations * 0.9


def test_sliding_windows_hold_at_most_the_window_at_full_context() -> None:
    cfg: dict[str, Any] = load("mistralai__Mistral-7B-Instruct-v0.1.json")
    m = plan_of(cfg).memory
    assert cfg["sliding_window"] == 4096 and m.context_tokens == 32768
    assert m.kv_cache_full_context == m.kv_cache * 4096 // 512


def test_more_than_256_labels_size_the_head() -> None:
    cfg = {"architectures": ["ViTForImageClassification"], "model_type": "vit",
           "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
           "num_attention_heads": 12, "image_size": 224, "patch_size": 16, "qkv_bias": True,
           "id2label": {str(i): f"c{i}" for i in range(1000)}}
    parsed = parse_model_config(cfg)
    assert parsed.get_int("num_labels") == 1000
    assert plan_of(cfg).params.total == 86_567_656  # ViTForImageClassification, ImageNet-1k


def test_compressed_tensors_and_quanto_widths_come_from_the_config() -> None:
    base = load("meta-llama__Meta-Llama-3-8B.json")
    fp8 = {**base, "quantization_config": {
        "quant_method": "compressed-tensors", "format": "float-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"],
                                      "weights": {"num_bits": 8, "type": "float"},
                                      "input_activations": {"num_bits": 8, "type": "float"}}}}}
    q = parse_model_config(fp8).quantization
    assert q is not None and (q.method, q.bits) == ("compressed-tensors", 8.0)
    for weights, bits in (("qint8", 8.0), ("qint4", 4.0), ("float8", 8.0)):
        qq = parse_model_config({**base, "quantization_config": {
            "quant_method": "quanto", "weights": weights}}).quantization
        assert qq is not None and qq.bits == bits
    unknown = parse_model_config({**base, "quantization_config": {"quant_method": "quanto"}})
    assert unknown.quantization is not None and unknown.quantization.bits == 4.0
    assert any("no bit width" in i for i in unknown.issues)


def test_an_unknown_decoder_with_the_usual_keys_is_sized_approximately() -> None:
    llama = load("meta-llama__Llama-3.2-1B.json")
    novel = {**llama, "model_type": "brand_new_lm", "architectures": ["BrandNewForCausalLM"]}
    p, ref = plan_of(novel), plan_of(llama)
    assert p.supported and p.dims["approximate"] is True and ref.dims["approximate"] is False
    assert p.params.total == ref.params.total  # a Llama-style layout is counted exactly
    assert p.findings[0].id == "approximate-architecture" and "approximate" in p.findings[0].message
    no_keys = {"model_type": "brand_new_lm", "hidden_size": 64}
    assert not plan_of(no_keys).supported
