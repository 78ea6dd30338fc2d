"""Config-class defaults of the state-space and hybrid families (Mamba, Mamba-2, Jamba, Falcon-H1).

Layer 1 (stage 3, extract), pure: the config classes' own defaults for the keys that decide
a model's structure (transformers 5.24), and the values their ``__post_init__`` derives
(Mamba's inner width, the time-step rank, Falcon-H1's Mamba head width), so that the planner
sees what transformers builds. Assembled into ``DEFAULTS`` by
:mod:`tracker.extract.model_config_families`.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

SSM: dict[str, dict[str, Any]] = {
    "mamba": {
        "conv_kernel": 4,
        "expand": 2,
        "hidden_act": "silu",
        "hidden_size": 768,
        "num_hidden_layers": 32,
        "residual_in_fp32": True,
        "state_size": 16,
        "tie_word_embeddings": True,
        "time_step_rank": "auto",
        "use_bias": False,
        "use_conv_bias": True,
        "vocab_size": 50280,
    },
    "mamba2": {
        "chunk_size": 256,
        "conv_kernel": 4,
        "expand": 2,
        "head_dim": 64,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "n_groups": 8,
        "num_heads": 128,
        "num_hidden_layers": 64,
        "residual_in_fp32": True,
        "state_size": 128,
        "tie_word_embeddings": False,
        "time_step_rank": "auto",
        "use_bias": False,
        "use_conv_bias": True,
        "vocab_size": 32768,
    },
    "jamba": {
        "attention_dropout": 0.0,
        "attn_layer_offset": 4,
        "attn_layer_period": 8,
        "expert_layer_offset": 1,
        "expert_layer_period": 2,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "mamba_conv_bias": True,
        "mamba_d_conv": 4,
        "mamba_d_state": 16,
        "mamba_dt_rank": "auto",
        "mamba_expand": 2,
        "mamba_proj_bias": False,
        "max_position_embeddings": 262144,
        "num_attention_heads": 32,
        "num_experts": 16,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
        "vocab_size": 65536,
    },
    "falcon_h1": {
        "attention_bias": False,
        "attention_dropout": 0.0,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "mamba_chunk_size": 256,
        "mamba_conv_bias": True,
        "mamba_d_conv": 4,
        "mamba_d_head": "auto",
        "mamba_d_ssm": 1024,
        "mamba_d_state": 256,
        "mamba_expand": 2,
        "mamba_n_groups": 1,
        "mamba_n_heads": 128,
        "mamba_norm_before_gate": True,
        "mamba_proj_bias": False,
        "mamba_rms_norm": False,
        "max_position_embeddings": 8192,
        "mlp_bias": False,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "projectors_bias": False,
        "tie_word_embeddings": False,
        "vocab_size": 128000,
    },
}

#: Families without attention: no heads, no KV cache, only the recurrent state.
ATTENTION_FREE = frozenset({"mamba", "mamba2"})

#: Integer keys of these configs, checked like the other structural integers.
SSM_INT_KEYS = frozenset(
    ["state_size", "conv_kernel", "n_groups", "mamba_d_state", "mamba_d_conv", "mamba_expand",
     "mamba_n_heads", "mamba_n_groups", "attn_layer_period", "attn_layer_offset",
     "expert_layer_period", "expert_layer_offset", "chunk_size", "mamba_chunk_size"]
)

ALIASES_SSM: dict[str, dict[str, str]] = {
    "jamba": {"num_local_experts": "num_experts"},
}


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def derive_ssm(family: str, v: dict[str, Any]) -> None:
    """The values the config class computes in ``__post_init__`` (in place)."""
    hidden = v.get("hidden_size")
    if not _is_int(hidden):
        return
    if family == "mamba":
        expand = v.get("expand")
        if isinstance(expand, int | float) and not isinstance(expand, bool):
            v["intermediate_size"] = int(expand * hidden)
        else:
            v["intermediate_size"] = 2 * hidden
    if family in ("mamba", "mamba2") and not _is_int(v.get("time_step_rank")):
        v["time_step_rank"] = math.ceil(hidden / 16)
    if family == "jamba" and not _is_int(v.get("mamba_dt_rank")):
        v["mamba_dt_rank"] = math.ceil(hidden / 16)
    if family == "falcon_h1":
        inner = v.get("mamba_d_ssm")
        if not _is_int(inner):
            expand = v.get("mamba_expand")
            inner = (expand if _is_int(expand) else 2) * hidden
            v["mamba_d_ssm"] = inner
        heads = v.get("mamba_n_heads")
        if not _is_int(v.get("mamba_d_head")) and _is_int(heads) and heads:
            v["mamba_d_head"] = inner // heads
