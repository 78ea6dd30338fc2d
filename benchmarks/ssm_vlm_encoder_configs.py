"""Configs of the state-space, hybrid, vision-language and ModernBERT/MPNet families.

Used by benchmarks/planner_ssm_vlm_encoders.py. ``PUBLISHED``: the structural keys of published
checkpoints' config.json files, written from the model cards' configs (the checkpoint named
beside each). ``variant(family, rng)``: a random small config of the family, with its switches
(biases, tying, norms, periods, feature layers) drawn at random, built so that transformers'
config validation accepts it.
"""

from __future__ import annotations

import random
from typing import Any

PUBLISHED: dict[str, dict[str, Any]] = {
    "state-spaces__mamba-130m-hf": {
        "architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768,
        "num_hidden_layers": 24, "vocab_size": 50280, "state_size": 16, "expand": 2,
        "conv_kernel": 4, "time_step_rank": 48, "use_bias": False, "use_conv_bias": True,
        "intermediate_size": 1536, "layer_norm_epsilon": 1e-5, "torch_dtype": "float32"},
    "mistralai__Mamba-Codestral-7B-v0.1": {
        "architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "chunk_size": 256,
        "conv_kernel": 4, "expand": 2, "head_dim": 64, "hidden_act": "silu",
        "hidden_size": 4096, "n_groups": 8, "norm_before_gate": True, "num_heads": 128,
        "num_hidden_layers": 64, "residual_in_fp32": True, "rms_norm": True,
        "state_size": 128, "tie_word_embeddings": False, "time_step_rank": 256,
        "use_bias": False, "use_conv_bias": True, "vocab_size": 32768,
        "torch_dtype": "bfloat16"},
    "ai21labs__Jamba-v0.1": {
        "architectures": ["JambaForCausalLM"], "model_type": "jamba", "attn_layer_offset": 4,
        "attn_layer_period": 8, "expert_layer_offset": 1, "expert_layer_period": 2,
        "hidden_size": 4096, "intermediate_size": 14336, "mamba_conv_bias": True,
        "mamba_d_conv": 4, "mamba_d_state": 16, "mamba_dt_rank": 256, "mamba_expand": 2,
        "mamba_proj_bias": False, "max_position_embeddings": 262144,
        "num_attention_heads": 32, "num_experts": 16, "num_experts_per_tok": 2,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False, "vocab_size": 65536, "torch_dtype": "bfloat16"},
    "tiiuae__Falcon-H1-0.5B-Instruct": {
        "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1",
        "attention_bias": False, "head_dim": 64, "hidden_size": 1024,
        "intermediate_size": 2048, "mamba_chunk_size": 128, "mamba_conv_bias": True,
        "mamba_d_conv": 4, "mamba_d_head": 64, "mamba_d_ssm": 1536, "mamba_d_state": 128,
        "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 24,
        "mamba_norm_before_gate": False, "mamba_proj_bias": False, "mamba_rms_norm": False,
        "max_position_embeddings": 16384, "mlp_bias": False, "num_attention_heads": 8,
        "num_hidden_layers": 36, "num_key_value_heads": 2, "projectors_bias": False,
        "tie_word_embeddings": False, "vocab_size": 32784, "torch_dtype": "bfloat16"},
    "answerdotai__ModernBERT-base": {
        "architectures": ["ModernBertForMaskedLM"], "model_type": "modernbert",
        "attention_bias": False, "classifier_bias": False, "decoder_bias": True,
        "global_attn_every_n_layers": 3, "hidden_activation": "gelu", "hidden_size": 768,
        "intermediate_size": 1152, "local_attention": 128, "max_position_embeddings": 8192,
        "mlp_bias": False, "norm_bias": False, "num_attention_heads": 12,
        "num_hidden_layers": 22, "vocab_size": 50368, "torch_dtype": "float32"},
    "sentence-transformers__all-mpnet-base-v2": {
        "architectures": ["MPNetModel"], "model_type": "mpnet", "hidden_size": 768,
        "intermediate_size": 3072, "max_position_embeddings": 514, "num_attention_heads": 12,
        "num_hidden_layers": 12, "relative_attention_num_buckets": 32, "vocab_size": 30527,
        "torch_dtype": "float32"},
    "llava-hf__llava-1.5-7b-hf": {
        "architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
        "image_token_index": 32000, "projector_hidden_act": "gelu",
        "vision_feature_layer": -2, "vision_feature_select_strategy": "default",
        "text_config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                        "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
                        "vocab_size": 32064},
        "vision_config": {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                          "model_type": "clip_vision_model", "num_attention_heads": 16,
                          "num_hidden_layers": 24, "patch_size": 14, "projection_dim": 768,
                          "vocab_size": 32000},
        "torch_dtype": "float16"},
    "mistralai__Mistral-Small-3.1-24B-Instruct-2503": {
        "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
        "image_token_index": 10, "multimodal_projector_bias": False, "tie_word_embeddings": False,
        "projector_hidden_act": "gelu", "spatial_merge_size": 2, "vision_feature_layer": -1,
        "text_config": {"head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
                        "intermediate_size": 32768, "max_position_embeddings": 131072,
                        "model_type": "mistral", "num_attention_heads": 32,
                        "num_hidden_layers": 40, "num_key_value_heads": 8,
                        "rms_norm_eps": 1e-5, "rope_theta": 1000000000.0,
                        "sliding_window": None, "vocab_size": 131072},
        "vision_config": {"head_dim": 64, "hidden_act": "silu", "hidden_size": 1024,
                          "image_size": 1540, "intermediate_size": 4096,
                          "model_type": "pixtral", "num_attention_heads": 16,
                          "num_channels": 3, "num_hidden_layers": 24, "patch_size": 14,
                          "rope_theta": 10000.0},
        "torch_dtype": "bfloat16"},
    "Qwen__Qwen3-VL-2B-Instruct": {
        "architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
        "image_token_id": 151655, "tie_word_embeddings": True,
        "text_config": {"attention_bias": False, "head_dim": 128, "hidden_act": "silu",
                        "hidden_size": 2048, "intermediate_size": 6144,
                        "max_position_embeddings": 262144, "model_type": "qwen3_vl_text",
                        "num_attention_heads": 16, "num_hidden_layers": 28,
                        "num_key_value_heads": 8, "rms_norm_eps": 1e-6,
                        "tie_word_embeddings": True, "vocab_size": 151936},
        "vision_config": {"deepstack_visual_indexes": [5, 11, 17], "depth": 24,
                          "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1024,
                          "in_channels": 3, "intermediate_size": 4096, "model_type": "qwen3_vl",
                          "num_heads": 16, "num_position_embeddings": 2304,
                          "out_hidden_size": 2048, "patch_size": 16, "spatial_merge_size": 2,
                          "temporal_patch_size": 2},
        "torch_dtype": "bfloat16"},
    "Qwen__Qwen3-VL-30B-A3B-Instruct": {
        "architectures": ["Qwen3VLMoeForConditionalGeneration"], "model_type": "qwen3_vl_moe",
        "image_token_id": 151655, "tie_word_embeddings": False,
        "text_config": {"attention_bias": False, "decoder_sparse_step": 1, "head_dim": 128,
                        "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 6144,
                        "max_position_embeddings": 262144, "mlp_only_layers": [],
                        "model_type": "qwen3_vl_moe_text", "moe_intermediate_size": 768,
                        "num_attention_heads": 32, "num_experts": 128,
                        "num_experts_per_tok": 8, "num_hidden_layers": 48,
                        "num_key_value_heads": 4, "rms_norm_eps": 1e-6, "vocab_size": 151936},
        "vision_config": {"deepstack_visual_indexes": [8, 16, 24], "depth": 27,
                          "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152,
                          "in_channels": 3, "intermediate_size": 4304,
                          "model_type": "qwen3_vl_moe", "num_heads": 16,
                          "num_position_embeddings": 2304, "out_hidden_size": 2048,
                          "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2},
        "torch_dtype": "bfloat16"},
}

#: Class-name prefix of each family (the heads are prefix + suffix).
PREFIX = {"mamba": "Mamba", "mamba2": "Mamba2", "jamba": "Jamba", "falcon_h1": "FalconH1",
          "modernbert": "ModernBert", "mpnet": "MPNet", "llava": "Llava",
          "llava_next": "LlavaNext", "mistral3": "Mistral3", "qwen3_vl": "Qwen3VL",
          "qwen3_vl_moe": "Qwen3VLMoe"}
FAMILIES = tuple(PREFIX)


def _b(rng: random.Random) -> bool:
    return rng.random() < 0.5


def _text(rng: random.Random, model_type: str) -> dict[str, Any]:
    heads = rng.choice([2, 4, 8])
    kv = rng.choice([k for k in (1, 2, heads) if heads % k == 0])
    hd = rng.choice([16, 32])
    return {"model_type": model_type, "hidden_size": heads * hd * rng.choice([1, 2]),
            "intermediate_size": rng.choice([96, 160, 256]), "num_hidden_layers": rng.randint(1, 3),
            "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": hd,
            "vocab_size": rng.randint(500, 3000), "tie_word_embeddings": _b(rng),
            "max_position_embeddings": 4096}


def variant(family: str, rng: random.Random) -> dict[str, Any]:
    """A random small config of ``family`` (architectures filled in by the caller)."""
    r, b = rng.randint, lambda: _b(rng)
    if family == "mamba":
        return {"model_type": "mamba", "hidden_size": r(2, 12) * 8, "num_hidden_layers": r(1, 3),
                "vocab_size": r(500, 3000), "state_size": r(4, 20), "expand": r(1, 3),
                "conv_kernel": r(2, 5), "use_bias": b(), "use_conv_bias": b(),
                "tie_word_embeddings": b(),
                **({"time_step_rank": r(2, 9)} if b() else {})}
    if family == "mamba2":
        hidden, expand, hd = r(2, 8) * 16, r(1, 2), rng.choice([8, 16])
        heads = hidden * expand // hd  # the config requires hidden x expand = heads x head_dim
        groups = rng.choice([g for g in (1, 2) if heads % g == 0])
        return {"model_type": "mamba2", "hidden_size": hidden, "num_heads": heads,
                "head_dim": hd, "expand": expand, "n_groups": groups,
                "num_hidden_layers": r(1, 3), "vocab_size": r(500, 3000),
                "state_size": r(4, 32), "conv_kernel": r(2, 5), "use_bias": b(),
                "use_conv_bias": b(), "tie_word_embeddings": b()}
    if family == "jamba":
        period = r(2, 4)
        e_period = r(1, 3)
        cfg = _text(rng, "jamba")
        cfg.pop("head_dim")
        cfg.update({"num_hidden_layers": r(2, 6), "attn_layer_period": period,
                    "attn_layer_offset": r(0, period - 1), "expert_layer_period": e_period,
                    "expert_layer_offset": r(0, e_period - 1), "num_experts": r(1, 6),
                    "num_experts_per_tok": 1, "mamba_d_state": r(4, 20), "mamba_d_conv": r(2, 5),
                    "mamba_expand": r(1, 3), "mamba_conv_bias": b(), "mamba_proj_bias": b(),
                    "use_mamba_kernels": False})
        if b():
            cfg["mamba_dt_rank"] = r(2, 9)
        return cfg
    if family == "falcon_h1":
        cfg = _text(rng, "falcon_h1")
        m_heads, m_hd = r(2, 6), rng.choice([8, 16])
        cfg.update({"mamba_n_heads": m_heads, "mamba_d_ssm": m_heads * m_hd,
                    "mamba_n_groups": rng.choice([g for g in (1, 2) if m_heads % g == 0]),
                    "mamba_d_state": r(4, 32), "mamba_d_conv": r(2, 5),
                    "mamba_rms_norm": b(), "mamba_conv_bias": b(), "mamba_proj_bias": b(),
                    "projectors_bias": b(), "attention_bias": b(), "mlp_bias": b()})
        if b():
            cfg.pop("mamba_d_ssm")
            cfg["mamba_expand"] = 2
            cfg["mamba_n_heads"] = rng.choice([h for h in (1, 2, 4) if cfg["hidden_size"] * 2 % h == 0])
            cfg["mamba_n_groups"] = 1
        return cfg
    if family in ("modernbert", "mpnet"):
        heads = rng.choice([2, 4])
        cfg = {"model_type": family, "hidden_size": heads * rng.choice([16, 32]),
               "intermediate_size": rng.choice([64, 96, 200]), "num_hidden_layers": r(1, 4),
               "num_attention_heads": heads, "vocab_size": r(500, 3000),
               "tie_word_embeddings": b(), "max_position_embeddings": r(64, 600),
               "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "cls_token_id": 1,
               "sep_token_id": 2}
        if family == "modernbert":
            cfg.update({"norm_bias": b(), "attention_bias": b(), "mlp_bias": b(),
                        "decoder_bias": b(), "classifier_bias": b(),
                        "global_attn_every_n_layers": r(1, 3), "local_attention": 16})
        else:
            cfg["relative_attention_num_buckets"] = r(8, 40)
        return cfg
    if family in ("llava", "llava_next", "mistral3"):
        text = _text(rng, rng.choice(["llama", "mistral", "qwen2"]))
        if family == "mistral3":
            text["model_type"] = "mistral"
            vision = {"model_type": "pixtral", "hidden_size": 64, "intermediate_size": r(64, 200),
                      "num_hidden_layers": r(1, 3), "num_attention_heads": 4,
                      "patch_size": rng.choice([8, 14]), "image_size": 224}
        elif b():
            vision = {"model_type": "clip_vision_model", "hidden_size": 64,
                      "intermediate_size": r(64, 200), "num_hidden_layers": r(1, 3),
                      "num_attention_heads": 4, "patch_size": rng.choice([14, 16]),
                      "image_size": rng.choice([224, 336])}
        else:
            vision = {"model_type": "siglip_vision_model", "hidden_size": 64,
                      "intermediate_size": r(64, 200), "num_hidden_layers": r(1, 3),
                      "num_attention_heads": 4, "patch_size": 16, "image_size": 224,
                      "vision_use_head": b()}
        layers = -1 if b() else [-2, -1][: r(1, 2)]
        cfg = {"model_type": family, "text_config": text, "vision_config": vision,
               "vision_feature_layer": layers, "multimodal_projector_bias": b(),
               "tie_word_embeddings": b()}
        if family == "mistral3":
            cfg["spatial_merge_size"] = r(1, 3)
        return cfg
    if family in ("qwen3_vl", "qwen3_vl_moe"):
        text = _text(rng, f"{family}_text")
        if family == "qwen3_vl_moe":
            n = text["num_hidden_layers"]
            text.update({"num_experts": r(2, 6), "num_experts_per_tok": 1,
                         "moe_intermediate_size": r(16, 64), "decoder_sparse_step": r(1, 2),
                         "mlp_only_layers": sorted(rng.sample(range(n), r(0, n)))})
        depth = r(2, 5)
        vision = {"model_type": f"{family}_vision", "depth": depth, "hidden_size": 64,
                  "intermediate_size": r(64, 200), "num_heads": 4,
                  "out_hidden_size": text["hidden_size"], "patch_size": rng.choice([8, 16]),
                  "spatial_merge_size": r(1, 2), "temporal_patch_size": r(1, 2),
                  "num_position_embeddings": rng.choice([64, 144]),
                  "deepstack_visual_indexes": sorted(rng.sample(range(depth), r(0, depth)))}
        return {"model_type": family, "text_config": text, "vision_config": vision,
                "tie_word_embeddings": b()}
    raise KeyError(family)
