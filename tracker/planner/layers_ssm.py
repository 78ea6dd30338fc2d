"""The layer stack of the state-space and hybrid families: Mamba mixers beside attention.

Layer 1 (stage 5, plan), pure. A Mamba layer is a recurrent spec (``attention="recurrent"``,
no KV per token, its fixed state in ``state_bytes``, sized by :mod:`tracker.planner.recurrent`);
Mamba and Mamba-2 layers have no MLP (``mlp="none"``). Jamba interleaves attention and Mamba
layers (and dense and MoE MLPs) by period and offset; Falcon-H1 runs attention and a Mamba-2
mixer side by side in every layer, so each of its layers caches keys and values and a state.
"""

from __future__ import annotations

from dataclasses import replace

from tracker.model.plan import ModelConfig
from tracker.planner.layers import LayerSpec
from tracker.planner.params_ssm import jamba_attention_layers, jamba_moe_layers
from tracker.planner.recurrent import FP32, mamba1, mamba2

#: The scan's final state is fp32 in transformers' Mamba caches (the convolution window is in
#: the model's dtype): measured on bf16 prefills of Mamba, Mamba-2, Jamba and Falcon-H1.
STATE_BYTES = FP32


def mamba_inner(cfg: ModelConfig) -> int:
    """The mixer's inner width (``d_inner``) as the family's mixer computes it."""
    fam, h = cfg.family, cfg.hidden_size
    if fam == "mamba":
        return cfg.intermediate_size
    if fam == "mamba2":
        return int(cfg.get_float("expand", 2) * h)
    if fam == "jamba":
        return cfg.get_int("mamba_expand", 2) * h
    return cfg.get_int("mamba_d_ssm") or cfg.get_int("mamba_expand", 2) * h  # falcon_h1


def ssm_specs(cfg: ModelConfig) -> tuple[LayerSpec, ...]:
    """Every layer of a Mamba, Mamba-2, Jamba or Falcon-H1 model."""
    fam, v, h, n = cfg.family or "", cfg.get_int, cfg.hidden_size, cfg.num_layers
    inner = mamba_inner(cfg)
    if fam == "mamba":
        state = mamba1(inner, v("state_size"), v("conv_kernel"), STATE_BYTES).bytes
        return (_recurrent(h, state, "Mamba"),) * n
    if fam == "mamba2":
        state = mamba2(inner, v("n_groups"), v("state_size"), v("num_heads"), v("head_dim"),
                       v("conv_kernel"), STATE_BYTES).bytes
        return (_recurrent(h, state, "Mamba-2"),) * n
    hd, heads, kv = cfg.head_dim, cfg.num_heads, cfg.num_kv_heads
    kind = "mha" if kv == heads else ("mqa" if kv == 1 else "gqa")
    attn = LayerSpec(stack="decoder", attention=kind, hidden=h, q_dim=heads * hd,
                     k_dim=kv * hd, v_dim=kv * hd, kv_per_token=2 * kv * hd, window=None,
                     mlp="gated", ffn=cfg.intermediate_size)
    if fam == "falcon_h1":
        state = mamba2(inner, v("mamba_n_groups", 1), v("mamba_d_state"), v("mamba_n_heads"),
                       v("mamba_d_head"), v("mamba_d_conv"), STATE_BYTES).bytes
        return (replace(attn, state_bytes=state, mixer="Mamba-2"),) * n
    state = mamba1(inner, v("mamba_d_state"), v("mamba_d_conv"), STATE_BYTES).bytes
    mamba = replace(_recurrent(h, state, "Mamba"), mlp="gated", ffn=cfg.intermediate_size,
                    norms=2)
    attention_at, moe_at = jamba_attention_layers(cfg), jamba_moe_layers(cfg)
    kinds = {(a, m): replace(attn if a else mamba, mlp="moe", experts=cfg.num_experts,
                             top_k=cfg.experts_per_token) if m else (attn if a else mamba)
             for a in (False, True) for m in (False, True)}
    return tuple(kinds[(i in attention_at, i in moe_at)] for i in range(n))


def _recurrent(h: int, state: int, mixer: str) -> LayerSpec:
    return LayerSpec(stack="decoder", attention="recurrent", hidden=h, q_dim=0, k_dim=0,
                     v_dim=0, kv_per_token=0, window=None, mlp="none", ffn=0, norms=1,
                     state_bytes=state, mixer=mixer)
