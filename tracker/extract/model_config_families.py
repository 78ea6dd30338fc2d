"""Family defaults and key aliases of the model configs the planner knows.

Layer 1 (stage 3, extract): data only. ``DEFAULTS`` are the config classes' own defaults for
the keys that decide a model's structure (transformers 5.24), before any derived value is
computed; ``ALIASES`` map a family's alternative key names onto the canonical one, as the
config classes do (``attribute_map`` and backward-compatible keyword arguments).
"""

from __future__ import annotations

from typing import Any

from tracker.extract.model_config_decoders import DECODERS
from tracker.extract.model_config_encoders import ENCODERS
from tracker.extract.model_config_multimodal import ALIASES_MULTIMODAL, MULTIMODAL
from tracker.extract.model_config_newest import NEWEST, NEWEST_ALIASES
from tracker.extract.model_config_seq2seq import SEQ2SEQ
from tracker.extract.model_config_ssm import ALIASES_SSM, SSM

DEFAULTS: dict[str, dict[str, Any]] = {**DECODERS, **ENCODERS, **SEQ2SEQ, **NEWEST, **SSM,
                                       **MULTIMODAL}

ALIASES: dict[str, dict[str, str]] = {
    "bart": {'hidden_size': 'd_model', 'num_attention_heads': 'encoder_attention_heads', 'num_hidden_layers': 'encoder_layers'},
    "bloom": {'num_attention_heads': 'n_head', 'num_hidden_layers': 'n_layer'},
    "deepseek_v2": {'num_experts': 'n_routed_experts'},
    "deepseek_v3": {'num_local_experts': 'n_routed_experts', 'num_mtp_layers': 'num_nextn_predict_layers'},
    "distilbert": {'hidden_size': 'dim', 'num_attention_heads': 'n_heads', 'num_hidden_layers': 'n_layers'},
    "gemma3": {'boi_token_id': 'boi_token_index', 'eoi_token_id': 'eoi_token_index', 'image_token_id': 'image_token_index'},
    "gpt2": {'hidden_size': 'n_embd', 'max_position_embeddings': 'n_positions', 'num_attention_heads': 'n_head', 'num_hidden_layers': 'n_layer'},
    "gpt_bigcode": {'hidden_size': 'n_embd', 'max_position_embeddings': 'n_positions', 'num_attention_heads': 'n_head', 'num_hidden_layers': 'n_layer'},
    "gpt_oss": {'num_experts': 'num_local_experts'},
    "gptj": {'hidden_size': 'n_embd', 'max_position_embeddings': 'n_positions', 'num_attention_heads': 'n_head', 'num_hidden_layers': 'n_layer'},
    "mixtral": {'num_experts': 'num_local_experts'},
    "mpt": {'hidden_size': 'd_model', 'num_attention_heads': 'n_heads', 'num_hidden_layers': 'n_layers'},
    "mt5": {'head_dim': 'd_kv', 'hidden_size': 'd_model', 'num_attention_heads': 'num_heads', 'num_hidden_layers': 'num_layers'},
    "qwen3_moe": {'num_experts': 'num_local_experts'},
    "t5": {'head_dim': 'd_kv', 'hidden_size': 'd_model', 'num_attention_heads': 'num_heads', 'num_hidden_layers': 'num_layers'},
    "whisper": {'hidden_size': 'd_model', 'num_attention_heads': 'encoder_attention_heads', 'num_hidden_layers': 'encoder_layers', 'num_key_value_heads': 'encoder_attention_heads'},
    **NEWEST_ALIASES, **ALIASES_SSM, **ALIASES_MULTIMODAL,
}

#: Remote-code model types (``auto_map``) whose published modelling code builds the same
#: modules as an in-library family: planned as that family, read with their own key names.
REMOTE_FAMILIES: dict[str, str] = {
    "RefinedWebModel": "falcon",
    "RefinedWeb": "falcon",
    "mixformer-sequential": "phi",
    "phi-msft": "phi",
    "stablelm_epoch": "stablelm",
}

#: Key names of those remote-code configs, mapped onto the in-library family's names.
REMOTE_ALIASES: dict[str, dict[str, str]] = {
    "RefinedWebModel": {
        "n_head": "num_attention_heads",
        "n_layer": "num_hidden_layers",
        "n_head_kv": "num_kv_heads",
        "n_embed": "hidden_size",
    },
    "RefinedWeb": {
        "n_head": "num_attention_heads",
        "n_layer": "num_hidden_layers",
        "n_head_kv": "num_kv_heads",
        "n_embed": "hidden_size",
    },
    "mixformer-sequential": {
        "n_embd": "hidden_size",
        "n_layer": "num_hidden_layers",
        "n_head": "num_attention_heads",
        "n_head_kv": "num_key_value_heads",
        "n_inner": "intermediate_size",
        "n_positions": "max_position_embeddings",
        "activation_function": "hidden_act",
    },
    "phi-msft": {
        "n_embd": "hidden_size",
        "n_layer": "num_hidden_layers",
        "n_head": "num_attention_heads",
        "n_head_kv": "num_key_value_heads",
        "n_inner": "intermediate_size",
        "n_positions": "max_position_embeddings",
        "activation_function": "hidden_act",
    },
    "stablelm_epoch": {"rope_pct": "partial_rotary_factor", "num_heads": "num_attention_heads"},
}

#: Extra keyword arguments the config classes accept for backward compatibility.
EXTRA_ALIASES: dict[str, dict[str, str]] = {
    "falcon": {"n_embed": "hidden_size"},
    "bloom": {"n_embed": "hidden_size"},
}

#: model_type spellings that name a family under another key.
MODEL_TYPE_ALIASES: dict[str, str] = {
    "xlm_roberta": "xlm-roberta",
    "deberta_v2": "deberta-v2",
}
