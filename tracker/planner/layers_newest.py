"""The layer stacks of the newest decoder families, one :class:`LayerSpec` per layer.

Layer 1 (stage 5, plan), pure. What the generic stack in :mod:`tracker.planner.layers` does
not know about these families: Llama 4's chunked-attention layers (their cache holds one
chunk, like a sliding window) and its interleaved dense / MoE layers with a shared expert;
GLM-4.5's dense first layers and shared experts; Qwen3-Next's and Qwen3.5's Gated DeltaNet
layers, which keep a fixed recurrent state per sequence (:mod:`tracker.planner.recurrent`)
instead of a KV cache; OLMo 3's sliding-window layers.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.layers import LayerSpec
from tracker.planner.params_newest import NEWEST_DECODERS, moe_layers
from tracker.planner.recurrent import gated_delta_net

NEWEST_STACKS = NEWEST_DECODERS | {"llama4", "qwen3_5", "qwen3_5_moe", "gemma4"}


def newest_layer_specs(cfg: ModelConfig) -> tuple[LayerSpec, ...]:
    """Every decoder layer of one of ``NEWEST_STACKS`` (a multimodal one: its text model)."""
    if cfg.family in ("llama4", "qwen3_5", "qwen3_5_moe", "gemma4"):
        text = cfg.sub.get("text")
        return newest_layer_specs(text) if text is not None else ()
    if cfg.family == "gemma4_text":
        return _gemma4(cfg)
    moe = moe_layers(cfg)
    types, n_types = cfg.layer_types, len(cfg.layer_types)
    kinds: dict[tuple[str, bool], LayerSpec] = {}  # layers of one kind share a spec
    out: list[LayerSpec] = []
    for i in range(cfg.num_layers):
        kind = types[i] if i < n_types else "full_attention"
        key = (kind, i in moe)
        spec = kinds.get(key)
        if spec is None:
            spec = kinds[key] = _spec(cfg, kind, i in moe)
        out.append(spec)
    return tuple(out)


def _spec(cfg: ModelConfig, kind: str, moe: bool) -> LayerSpec:
    fam = cfg.family or ""
    h, hd, heads, kv = cfg.hidden_size, cfg.head_dim, cfg.num_heads, cfg.num_kv_heads
    shared = 0
    if moe:
        ffn = _expert_ffn(cfg)
        shared = {"llama4_text": cfg.intermediate_size,
                  "glm4_moe": ffn * cfg.get_int("n_shared_experts"),
                  "ernie4_5_moe": ffn * cfg.get_int("moe_num_shared_experts")}.get(
                      fam, cfg.get_int("shared_expert_intermediate_size"))
    else:
        ffn = cfg.get_int("intermediate_size_mlp") if fam == "llama4_text" \
            else cfg.intermediate_size
    mlp = "moe" if moe else "gated"
    experts, top_k = (cfg.num_experts, cfg.experts_per_token) if moe else (0, 0)
    if kind == "linear_attention":
        v = cfg.get_int
        kh, vh = v("linear_num_key_heads"), v("linear_num_value_heads")
        kd, vd = v("linear_key_head_dim"), v("linear_value_head_dim")
        state = gated_delta_net(kh, vh, kd, vd, v("linear_conv_kernel_dim"))
        return LayerSpec(stack="decoder", attention="recurrent", hidden=h, q_dim=kh * kd,
                         k_dim=kh * kd, v_dim=vh * vd, kv_per_token=0, window=None,
                         mlp=mlp, ffn=ffn, experts=experts, top_k=top_k, shared_ffn=shared,
                         state_bytes=state.bytes, mixer="Gated DeltaNet")
    window = None
    if kind == "sliding_attention":
        window = cfg.sliding_window
    elif kind == "chunked_attention":
        window = cfg.get_opt_int("attention_chunk_size")
    attention = "mha" if kv == heads else ("mqa" if kv == 1 else "gqa")
    return LayerSpec(stack="decoder", attention=attention, hidden=h, q_dim=heads * hd,
                     k_dim=kv * hd, v_dim=kv * hd, kv_per_token=2 * kv * hd, window=window,
                     mlp=mlp, ffn=ffn, experts=experts, top_k=top_k, shared_ffn=shared)


def _gemma4(cfg: ModelConfig) -> tuple[LayerSpec, ...]:
    """Gemma 4: per-layer head_dim and KV heads; a layer reusing another's KV caches nothing;
    a full layer with K = V caches its keys once; the MoE block runs beside the dense MLP."""
    h, heads, n = cfg.hidden_size, cfg.num_heads, cfg.num_layers
    dims, kvs = cfg.get_list("layer_head_dims"), cfg.get_list("layer_kv_heads")
    shared = {x for x in cfg.get_list("kv_shared_layers") if isinstance(x, int)}
    types, e = cfg.layer_types, cfg.num_experts
    wide = 2 if cfg.get_bool("use_double_wide_mlp") else 1
    out: list[LayerSpec] = []
    kinds: dict[tuple[int, int, bool, bool], LayerSpec] = {}
    for i in range(n):
        hd = dims[i] if i < len(dims) else cfg.head_dim
        kv = kvs[i] if i < len(kvs) else cfg.num_kv_heads
        sliding = i < len(types) and types[i] == "sliding_attention"
        key = (hd, kv, sliding, i in shared)
        spec = kinds.get(key)
        if spec is None:
            dense = cfg.intermediate_size * (wide if i in shared else 1)
            k_eq_v = cfg.get_bool("attention_k_eq_v") and not sliding
            cached = 0 if i in shared else (1 if k_eq_v else 2) * kv * hd
            attention = "mha" if kv == heads else ("mqa" if kv == 1 else "gqa")
            spec = kinds[key] = LayerSpec(
                stack="decoder", attention=attention, hidden=h, q_dim=heads * hd,
                k_dim=kv * hd, v_dim=kv * hd, kv_per_token=cached,
                window=cfg.sliding_window if sliding else None,
                mlp="moe" if e else "gated", ffn=cfg.get_int("moe_intermediate_size") if e else dense,
                experts=e, top_k=cfg.experts_per_token if e else 0,
                shared_ffn=dense if e else 0, norms=4)
        out.append(spec)
    return tuple(out)


def _expert_ffn(cfg: ModelConfig) -> int:
    return cfg.get_opt_int("moe_intermediate_size") or cfg.intermediate_size
