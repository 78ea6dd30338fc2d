"""Config-class defaults and derived values of the newest decoder families.

Layer 1 (stage 3, extract): data and pure functions. Llama 4 (text and the multimodal
checkpoint class), Qwen3-Next and Qwen3.5-MoE (Gated DeltaNet linear attention beside gated
full attention), OLMo 3, OLMoE and GLM-4.5 (``glm4_moe``): their config classes' defaults
for the keys that decide the structure (transformers 5.24), their key aliases, and the
per-layer lists their ``__post_init__`` derives (which layers are MoE, which attend in
chunks or skip RoPE, which are linear attention), computed the same way.
"""

from __future__ import annotations

from typing import Any

from tracker.extract.model_config_decoders import DECODERS

#: Qwen3.5's vision tower (dense and MoE checkpoints alike), under the canonical key names.
_QWEN3_5_VISION: dict[str, Any] = {
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_size": 1152,
    "in_channels": 3,
    "intermediate_size": 4304,
    "is_encoder_decoder": False,
    "num_attention_heads": 16,
    "num_hidden_layers": 27,
    "num_position_embeddings": 2304,
    "out_hidden_size": 3584,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
}

#: What Qwen3-Next's and Qwen3.5's config classes share: Gated DeltaNet layers (16 key and
#: 32 value heads of 128, kernel 4) beside every 4th full-attention layer (head_dim 256).
_GATED_DELTANET: dict[str, Any] = {
    "attention_bias": False,
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_act": "silu",
    "is_encoder_decoder": False,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_value_head_dim": 128,
    "max_position_embeddings": 32768,
    "num_attention_heads": 16,
    "tie_word_embeddings": False,
}

NEWEST: dict[str, dict[str, Any]] = {
    "olmoe": {
        "attention_bias": False,
        "clip_qkv": None,
        "hidden_act": "silu",
        "hidden_size": 2048,
        "intermediate_size": 2048,
        "is_encoder_decoder": False,
        "max_position_embeddings": 4096,
        "num_attention_heads": 16,
        "num_experts": 64,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 16,
        "num_key_value_heads": None,
        "tie_word_embeddings": False,
        "vocab_size": 50304,
    },
    "olmo3": {**DECODERS["olmo2"], "sliding_window": 4096},  # OLMo 2's, plus the window
    "glm4_moe": {
        "attention_bias": False,
        "first_k_dense_replace": 1,
        "head_dim": None,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 10944,
        "is_encoder_decoder": False,
        "max_position_embeddings": 131072,
        "moe_intermediate_size": 1408,
        "n_routed_experts": 128,
        "n_shared_experts": 1,
        "num_attention_heads": 96,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 46,
        "num_key_value_heads": 8,
        "num_nextn_predict_layers": 1,
        "tie_word_embeddings": False,
        "use_qk_norm": False,
        "vocab_size": 151552,
    },
    "llama4_text": {
        "attention_bias": False,
        "attention_chunk_size": 8192,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 5120,
        "interleave_moe_layer_step": 1,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "is_encoder_decoder": False,
        "max_position_embeddings": 131072,
        "moe_layers": None,
        "no_rope_layer_interval": 4,
        "no_rope_layers": None,
        "num_attention_heads": 40,
        "num_experts_per_tok": 1,
        "num_hidden_layers": 48,
        "num_key_value_heads": 8,
        "num_local_experts": 16,
        "tie_word_embeddings": False,
        "use_qk_norm": True,
        "vocab_size": 202048,
    },
    "llama4_vision_model": {
        "hidden_size": 768,
        "image_size": 448,
        "intermediate_size": 5632,
        "is_encoder_decoder": False,
        "num_attention_heads": 16,
        "num_channels": 3,
        "num_hidden_layers": 34,
        "patch_size": 14,
        "projector_input_dim": 4096,
        "projector_output_dim": 4096,
        "vision_output_dim": 7680,
    },
    "llama4": {
        "is_encoder_decoder": False,
        "tie_word_embeddings": False,
    },
    "qwen3_next": {
        **_GATED_DELTANET,
        "decoder_sparse_step": 1,
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "mlp_only_layers": None,
        "moe_intermediate_size": 512,
        "num_experts": 512,
        "num_experts_per_tok": 10,
        "num_hidden_layers": 48,
        "num_key_value_heads": 2,
        "shared_expert_intermediate_size": 512,
        "vocab_size": 151936,
    },
    "qwen3_5_moe_text": {
        **_GATED_DELTANET,
        "hidden_size": 2048,
        "moe_intermediate_size": 512,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 40,
        "num_key_value_heads": 2,
        "shared_expert_intermediate_size": 512,
        "vocab_size": 248320,
    },
    "smollm3": {
        "attention_bias": False,
        "hidden_act": "silu",
        "hidden_size": 2048,
        "intermediate_size": 11008,
        "is_encoder_decoder": False,
        "max_position_embeddings": 32768,
        "mlp_bias": False,
        "no_rope_layer_interval": 4,
        "no_rope_layers": None,
        "num_attention_heads": 16,
        "num_hidden_layers": 36,
        "num_key_value_heads": 4,
        "sliding_window": None,
        "tie_word_embeddings": True,
        "use_sliding_window": False,
        "vocab_size": 128256,
    },
    "glm4": {
        "attention_bias": True,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 13696,
        "is_encoder_decoder": False,
        "max_position_embeddings": 131072,
        "num_attention_heads": 32,
        "num_hidden_layers": 40,
        "num_key_value_heads": 2,
        "tie_word_embeddings": False,
        "vocab_size": 151552,
    },
    "seed_oss": {
        "attention_bias": True,
        "attention_out_bias": False,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 27648,
        "is_encoder_decoder": False,
        "max_position_embeddings": 524288,
        "mlp_bias": False,
        "num_attention_heads": 80,
        "num_hidden_layers": 64,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
        "vocab_size": 155136,
    },
    "minimax_m2": {
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 3072,
        "intermediate_size": 1536,
        "is_encoder_decoder": False,
        "max_position_embeddings": 196608,
        "num_attention_heads": 48,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 62,
        "num_key_value_heads": 8,
        "num_local_experts": 256,
        "tie_word_embeddings": False,
        "vocab_size": 200064,
    },
    "exaone4": {
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 16384,
        "is_encoder_decoder": False,
        "max_position_embeddings": 2048,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 32,
        "sliding_window": 4096,
        "sliding_window_pattern": 4,
        "tie_word_embeddings": False,
        "vocab_size": 102400,
    },
    "qwen3_5_text": {
        **_GATED_DELTANET,
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 32,
        "num_key_value_heads": 4,
        "vocab_size": 248320,
    },
    "gemma4_text": {
        "attention_bias": False,
        "attention_k_eq_v": False,
        "enable_moe_block": False,
        "head_dim": 256,
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 2304,
        "hidden_size_per_layer_input": 256,
        "intermediate_size": 9216,
        "is_encoder_decoder": False,
        "max_position_embeddings": 131072,
        "moe_intermediate_size": None,
        "num_attention_heads": 8,
        "num_experts": None,
        "num_hidden_layers": 30,
        "num_key_value_heads": 4,
        "num_kv_shared_layers": 0,
        "sliding_window": 512,
        "tie_word_embeddings": True,
        "num_experts_per_tok": None,
        "use_double_wide_mlp": False,
        "vocab_size": 262144,
        "vocab_size_per_layer_input": 262144,
    },
    "cohere2": {
        "attention_bias": False,
        "head_dim": None,
        "hidden_act": "silu",
        "hidden_size": 8192,
        "intermediate_size": 22528,
        "is_encoder_decoder": False,
        "max_position_embeddings": 8192,
        "num_attention_heads": 64,
        "num_hidden_layers": 40,
        "num_key_value_heads": None,
        "sliding_window": 4096,
        "sliding_window_pattern": 4,
        "tie_word_embeddings": True,
        "vocab_size": 256000,
    },
    "ernie4_5": {
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 1024,
        "intermediate_size": 3072,
        "is_encoder_decoder": False,
        "max_position_embeddings": 131072,
        "num_attention_heads": 16,
        "num_hidden_layers": 18,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
        "use_bias": False,
        "vocab_size": 103424,
    },
    "ernie4_5_moe": {
        "head_dim": None,
        "hidden_act": "silu",
        "hidden_size": 2560,
        "intermediate_size": 12288,
        "is_encoder_decoder": False,
        "max_position_embeddings": 131072,
        "moe_intermediate_size": 1536,
        "num_experts_per_tok": 6,
        "moe_layer_end_index": -1,
        "moe_layer_interval": 1,
        "moe_layer_start_index": 1,
        "num_experts": 64,
        "moe_num_shared_experts": 2,
        "num_attention_heads": 20,
        "num_hidden_layers": 28,
        "num_key_value_heads": 4,
        "tie_word_embeddings": True,
        "use_bias": False,
        "vocab_size": 103424,
    },
    # DeepSeek-V3.2: V3's MLA and MoE, a sparse-attention indexer in every layer
    "deepseek_v32": {**DECODERS["deepseek_v3"], "index_head_dim": 128, "index_n_heads": 64,
                     "index_topk": 2048, "max_position_embeddings": 163840,
                     "mlp_layer_types": None},
    "qwen3_5_vision": _QWEN3_5_VISION,
    "qwen3_5_moe_vision": _QWEN3_5_VISION,
    "qwen3_5": {"is_encoder_decoder": False, "tie_word_embeddings": False},
    # Gemma 4's towers (Gemma4VisionConfig, Gemma4AudioConfig) and its composite config
    "gemma4_vision": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 16,
                      "num_attention_heads": 12, "num_key_value_heads": 12, "head_dim": 64,
                      "patch_size": 16, "position_embedding_size": 10240,
                      "is_encoder_decoder": False},
    "gemma4_audio": {"hidden_size": 1024, "num_hidden_layers": 12, "num_attention_heads": 8,
                     "subsampling_conv_channels": [128, 32], "conv_kernel_size": 5,
                     "output_proj_dims": 1536, "is_encoder_decoder": False},
    "gemma4": {"is_encoder_decoder": False, "tie_word_embeddings": True},
    "qwen3_5_moe": {"is_encoder_decoder": False, "tie_word_embeddings": False},
}

NEWEST_ALIASES: dict[str, dict[str, str]] = {
    "olmoe": {"num_local_experts": "num_experts"},
    "glm4_moe": {"num_local_experts": "n_routed_experts",
                 "num_mtp_layers": "num_nextn_predict_layers"},
    "qwen3_next": {"num_local_experts": "num_experts"},
    "qwen3_5_moe_text": {"num_local_experts": "num_experts"},
    "minimax_m2": {"num_experts": "num_local_experts"},
    "gemma4_text": {"top_k_experts": "num_experts_per_tok"},
    "ernie4_5_moe": {"moe_num_experts": "num_experts", "moe_k": "num_experts_per_tok"},
    "deepseek_v32": {"num_local_experts": "n_routed_experts",
                     "num_mtp_layers": "num_nextn_predict_layers"},
    "qwen3_5_vision": {"depth": "num_hidden_layers", "num_heads": "num_attention_heads"},
    "qwen3_5_moe_vision": {"depth": "num_hidden_layers", "num_heads": "num_attention_heads"},
}

#: Multimodal configs of these families: their towers, parsed as their own families.
NEWEST_COMPOSITES: dict[str, dict[str, str]] = {
    "llama4": {"text_config": "llama4_text", "vision_config": "llama4_vision_model"},
    "qwen3_5": {"text_config": "qwen3_5_text", "vision_config": "qwen3_5_vision"},
    "qwen3_5_moe": {"text_config": "qwen3_5_moe_text", "vision_config": "qwen3_5_moe_vision"},
    "gemma4": {"text_config": "gemma4_text", "vision_config": "gemma4_vision",
               "audio_config": "gemma4_audio"},
}
#: Towers a composite config may leave out (null or absent): then the model has none.
NEWEST_OPTIONAL_SUBS = frozenset([("gemma4", "vision_config"), ("gemma4", "audio_config")])

#: Their integer keys, checked for type and range like the others.
NEWEST_INT_KEYS = frozenset(["intermediate_size_mlp", "interleave_moe_layer_step", "attention_chunk_size", "no_rope_layer_interval", "vision_output_dim", "projector_input_dim", "projector_output_dim", "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads", "full_attention_interval", "num_nextn_predict_layers", "in_channels", "temporal_patch_size", "spatial_merge_size", "num_position_embeddings", "out_hidden_size", "depth", "hidden_size_per_layer_input", "vocab_size_per_layer_input", "num_kv_shared_layers", "global_head_dim", "num_global_key_value_heads", "top_k_experts", "moe_k", "moe_num_experts", "moe_num_shared_experts", "moe_layer_interval", "moe_layer_start_index", "index_head_dim", "index_n_heads", "index_topk", "position_embedding_size", "output_proj_dims"])
#: The families whose MLP is (partly) a mixture of experts.
NEWEST_MOE = frozenset(["olmoe", "glm4_moe", "llama4_text", "qwen3_next", "qwen3_5_moe_text",
                        "minimax_m2", "gemma4_text", "ernie4_5_moe", "deepseek_v32"])
#: Families with Gated DeltaNet linear-attention layers beside full attention.
LINEAR_ATTENTION = frozenset(["qwen3_next", "qwen3_5_moe_text", "qwen3_5_text"])


def derive_newest(family: str, v: dict[str, Any], user: dict[str, Any]) -> None:
    """The values the config classes' ``__post_init__`` derive, for the families above."""
    n = v.get("num_hidden_layers")
    if family not in NEWEST or not isinstance(n, int) or isinstance(n, bool) \
            or not 0 <= n <= 4096:
        return
    if v.get("num_key_value_heads") is None:
        v["num_key_value_heads"] = v.get("num_attention_heads")
    given = user.get("layer_types")
    has_types = isinstance(given, list) and all(isinstance(x, str) for x in given)
    if family in ("llama4_text", "smollm3"):
        _no_rope(family, v, n, has_types)
    elif family in LINEAR_ATTENTION:
        if not has_types:
            every = _pos(v.get("full_attention_interval"), 4)
            v["layer_types"] = ["full_attention" if (i + 1) % every == 0
                                else "linear_attention" for i in range(n)]
        if v.get("mlp_only_layers") is None:
            v["mlp_only_layers"] = []
    elif family == "olmo3" and not has_types:
        v["layer_types"] = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention"
                            for i in range(n)]
    elif family == "gemma4_text":
        _gemma4(v, n, has_types)
    elif family == "deepseek_v32":
        kinds = v.get("mlp_layer_types")
        if isinstance(kinds, list) and kinds:  # its dense layers come first, as in V3
            dense = next((i for i, x in enumerate(kinds) if x != "dense"), len(kinds))
            v["first_k_dense_replace"] = dense
    if family in ("exaone4", "cohere2") and not has_types:
        every = _pos(v.get("sliding_window_pattern"), 4) if v.get("sliding_window") else 0
        v["layer_types"] = ["sliding_attention" if every and (i + 1) % every else
                            "full_attention" for i in range(n)]


def _no_rope(family: str, v: dict[str, Any], n: int, has_types: bool) -> None:
    """Which layers use RoPE (all but every ``no_rope_layer_interval``-th) and which of those
    attend in chunks (Llama 4) or in a sliding window (SmolLM 3); Llama 4's MoE layers
    (every ``interleave_moe_layer_step``-th)."""
    no_rope = v.get("no_rope_layers")
    if not (isinstance(no_rope, list) and no_rope):
        every = _pos(v.get("no_rope_layer_interval"), 4)
        no_rope = [int((i + 1) % every != 0) for i in range(n)]
    v["no_rope_layers"] = no_rope
    if family == "smollm3":
        if not has_types:
            window = bool(v.get("use_sliding_window")) and v.get("sliding_window") is not None
            v["layer_types"] = ["sliding_attention" if window and not rope else
                                "full_attention" for rope in no_rope]
        if not v.get("use_sliding_window"):
            v["sliding_window"] = None  # the attention ignores the window unless it is on
        return
    if not isinstance(v.get("moe_layers"), list):
        step = _pos(v.get("interleave_moe_layer_step"), 1)
        v["moe_layers"] = list(range(step - 1, n, step))
    if v.get("head_dim") is None:
        heads, hidden = v.get("num_attention_heads"), v.get("hidden_size")
        if isinstance(heads, int) and isinstance(hidden, int) and heads > 0:
            v["head_dim"] = hidden // heads
    if not has_types:
        chunked = v.get("attention_chunk_size") is not None
        v["layer_types"] = ["chunked_attention" if rope and chunked else "full_attention"
                            for rope in no_rope]


def _gemma4(v: dict[str, Any], n: int, has_types: bool) -> None:
    """Gemma 4: five sliding layers to one full (the last always full), full layers with the
    global head_dim (and, with ``attention_k_eq_v``, their own KV heads) unless
    ``per_layer_config`` says otherwise, and the last ``num_kv_shared_layers`` layers reusing
    the KV of an earlier layer of their type (no K/V projections, no cache of their own)."""
    if not has_types:
        v["layer_types"] = ["sliding_attention" if (i + 1) % 6 else "full_attention"
                            for i in range(n)]
    types = v["layer_types"]
    if types and len(types) == n:
        v["layer_types"] = [*types[:-1], "full_attention"]
    types = v["layer_types"]
    head_dim, kv = v.get("head_dim"), v.get("num_key_value_heads")
    per_layer = v.get("per_layer_config")
    if not isinstance(per_layer, dict):
        full: dict[str, Any] = {"head_dim": _pos(v.get("global_head_dim"), 512)}
        global_kv = v.get("num_global_key_value_heads")
        if v.get("attention_k_eq_v") and _pos(global_kv, 0):
            full["num_key_value_heads"] = global_kv
        per_layer = {str(i): full for i, t in enumerate(types) if t == "full_attention"}
    over = {int(k): x for k, x in per_layer.items()
            if isinstance(k, str) and k.isdigit() and isinstance(x, dict)}
    v["layer_head_dims"] = [_pos(over.get(i, {}).get("head_dim"), _pos(head_dim, 1))
                            for i in range(n)]
    v["layer_kv_heads"] = [_pos(over.get(i, {}).get("num_key_value_heads"), _pos(kv, 1))
                           for i in range(n)]
    shared = min(n, max(0, v.get("num_kv_shared_layers") or 0))
    v["kv_shared_layers"] = list(range(n - shared, n))
    if not v.get("enable_moe_block"):
        v["num_experts"] = None


def _pos(x: Any, default: int) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) and x > 0 else default
