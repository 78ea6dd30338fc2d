"""Config-class defaults of the vision-language families (LLaVA, LLaVA-NeXT, Mistral 3, Qwen3-VL).

Layer 1 (stage 3, extract), pure. A multimodal config nests a vision tower's and a language
model's configs; the checkpoint class builds both and a projector between them. Here: the
outer classes' defaults (transformers 5.24), the model type a nested config gets when it names
none (``sub_configs_defaults``), the values it gets when it is absent altogether, and the
towers these families add (Pixtral, Qwen3-VL's vision and text models).
"""

from __future__ import annotations

from typing import Any

_CLIP_336 = {"model_type": "clip_vision_model", "intermediate_size": 4096, "hidden_size": 1024,
             "patch_size": 14, "image_size": 336, "num_hidden_layers": 24,
             "num_attention_heads": 16, "vocab_size": 32000, "projection_dim": 768}

MULTIMODAL: dict[str, dict[str, Any]] = {
    "llava": {
        "multimodal_projector_bias": True,
        "projector_hidden_act": "gelu",
        "tie_word_embeddings": False,
        "vision_feature_layer": -2,
    },
    "llava_next": {
        "multimodal_projector_bias": True,
        "projector_hidden_act": "gelu",
        "tie_word_embeddings": False,
        "vision_feature_layer": -2,
    },
    "mistral3": {
        "multimodal_projector_bias": False,
        "projector_hidden_act": "gelu",
        "spatial_merge_size": 2,
        "tie_word_embeddings": True,
        "vision_feature_layer": -1,
    },
    "qwen3_vl": {"tie_word_embeddings": False},
    "qwen3_vl_moe": {"tie_word_embeddings": False},
    "pixtral": {
        "hidden_act": "gelu",
        "hidden_size": 1024,
        "image_size": 1024,
        "intermediate_size": 4096,
        "num_attention_heads": 16,
        "num_channels": 3,
        "num_hidden_layers": 24,
        "patch_size": 16,
    },
    "qwen3_vl_vision": {
        "deepstack_visual_indexes": [8, 16, 24],
        "hidden_act": "gelu_pytorch_tanh",
        "hidden_size": 1152,
        "in_channels": 3,
        "intermediate_size": 4304,
        "num_attention_heads": 16,
        "num_hidden_layers": 27,
        "num_position_embeddings": 2304,
        "out_hidden_size": 3584,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    },
    "qwen3_vl_text": {
        "attention_bias": False,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "max_position_embeddings": 128000,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 32,
        "tie_word_embeddings": True,
        "vocab_size": 151936,
    },
    "qwen3_vl_moe_text": {
        "attention_bias": False,
        "decoder_sparse_step": 1,
        "head_dim": None,
        "hidden_act": "silu",
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "max_position_embeddings": 128000,
        "mlp_only_layers": None,
        "moe_intermediate_size": 1408,
        "num_attention_heads": 16,
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "num_hidden_layers": 24,
        "num_key_value_heads": 16,
        "tie_word_embeddings": True,
        "vocab_size": 151936,
    },
}
MULTIMODAL["qwen3_vl_moe_vision"] = dict(MULTIMODAL["qwen3_vl_vision"])

#: Outer families: nested config key -> (model type when it names none, its values when absent).
COMPOSITES: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {
    "llava": {"text_config": ("llama", {}), "vision_config": ("clip_vision_model", _CLIP_336)},
    "llava_next": {"text_config": ("llama", {}),
                   "vision_config": ("clip_vision_model", _CLIP_336)},
    "mistral3": {
        "text_config": ("mistral", {
            "model_type": "mistral", "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
            "intermediate_size": 32768, "max_position_embeddings": 131072,
            "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
            "sliding_window": None, "vocab_size": 131072}),
        "vision_config": ("pixtral", {
            "model_type": "pixtral", "intermediate_size": 4096, "hidden_size": 1024,
            "patch_size": 14, "image_size": 1540, "num_hidden_layers": 24,
            "num_attention_heads": 16, "hidden_act": "gelu"}),
    },
}
#: Qwen3-VL's nested configs are always its own classes, whatever model type they name.
_FIXED = {"qwen3_vl": ("qwen3_vl_text", "qwen3_vl_vision"),
          "qwen3_vl_moe": ("qwen3_vl_moe_text", "qwen3_vl_moe_vision")}
for _outer, (_text, _vision) in _FIXED.items():
    COMPOSITES[_outer] = {"text_config": (_text, {}), "vision_config": (_vision, {})}

#: Towers whose modules are an existing family's: planned as that family, read with their
#: own defaults (Qwen3-VL's language models are Qwen3 and Qwen3-MoE decoders).
PLANNED_AS = {"qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe"}

ALIASES_MULTIMODAL: dict[str, dict[str, str]] = {
    "qwen3_vl_vision": {"depth": "num_hidden_layers", "num_heads": "num_attention_heads"},
    "qwen3_vl_moe_vision": {"depth": "num_hidden_layers", "num_heads": "num_attention_heads"},
    "qwen3_vl_moe_text": {"num_local_experts": "num_experts"},
}

MULTIMODAL_INT_KEYS = frozenset(["spatial_merge_size", "temporal_patch_size", "in_channels",
                                 "out_hidden_size", "num_position_embeddings", "depth"])


def sub_config(outer: str, key: str, raw: Any) -> dict[str, Any]:
    """The nested config ``key`` of an ``outer`` config, as its config class resolves it."""
    default_type, absent = COMPOSITES[outer][key]
    if not isinstance(raw, dict):
        return dict(absent) if absent else {"model_type": default_type}
    sub = dict(raw)
    if outer in _FIXED or not isinstance(sub.get("model_type"), str):
        sub["model_type"] = default_type
    return sub
