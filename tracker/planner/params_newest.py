"""Parameter counts of the newest decoder families, module by module as transformers builds them.

Layer 1 (stage 5, plan), pure. Llama 4 (MoE with a shared expert on every
``interleave_moe_layer_step``-th layer, dense elsewhere; a parameter-free L2 QK norm),
Qwen3-Next and Qwen3.5 (dense and MoE) (Gated DeltaNet
layers beside gated full attention, routed plus gated shared experts), OLMoE, OLMo 3 and
GLM-4.5, GLM-4, SmolLM 3, Seed-OSS, MiniMax-M2, EXAONE 4. Returns the base model;
:mod:`tracker.planner.params` adds the head (the same Llama-style heads for every family
here); the multimodal classes are :mod:`tracker.planner.params_newest_multimodal`'s.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.tally import Tally

NEWEST_DECODERS = frozenset(["olmoe", "olmo3", "glm4_moe", "llama4_text", "qwen3_next",
                             "qwen3_5_moe_text", "qwen3_5_text", "smollm3", "glm4", "seed_oss",
                             "minimax_m2", "exaone4", "gemma4_text", "cohere2", "ernie4_5",
                             "ernie4_5_moe"])
#: DeepSeek-V3.2: counted by the DeepSeek (MLA) counter, plus its indexer.
NEWEST_MLA = frozenset(["deepseek_v32"])
#: Families with Gated DeltaNet layers (where ``layer_types`` says ``linear_attention``).
LINEAR_ATTENTION = frozenset(["qwen3_next", "qwen3_5_moe_text", "qwen3_5_text"])
#: How each family normalizes q and k: per head ("head", head_dim weights each), over the
#: whole projection ("full"), OLMoE's sizes from hidden_size, or not at all (absent).
_QK_NORM = {"olmoe": "olmoe", "olmo3": "full", "minimax_m2": "full", "qwen3_next": "head",
            "qwen3_5_moe_text": "head", "qwen3_5_text": "head", "exaone4": "head"}


def count_newest(cfg: ModelConfig, t: Tally) -> None:
    """Embeddings, every layer and the final norm of one of ``NEWEST_DECODERS``."""
    fam = cfg.family or ""
    h, n = cfg.hidden_size, cfg.num_layers
    t.add("embeddings", cfg.vocab_size * h)
    if fam == "gemma4_text":
        _gemma4(cfg, t)
        return
    # input and post-attention norms (OLMo 3, EXAONE 4: after attention and MLP), GLM-4 four,
    # Cohere 2 one (attention and MLP in parallel)
    t.norm(h, bias=False, times={"glm4": 4, "cohere2": 1}.get(fam, 2) * n + 1)
    moe = moe_layers(cfg)
    types = cfg.layer_types
    mlp_bias = cfg.get_bool("use_bias") if fam in ("ernie4_5", "ernie4_5_moe") else (
        fam in ("smollm3", "seed_oss") and cfg.get_bool("mlp_bias"))
    for i in range(n):
        if fam in LINEAR_ATTENTION and i < len(types) and types[i] == "linear_attention":
            _gated_delta_net(cfg, t)
        else:
            _attention(cfg, t, i)
        if i in moe:
            _moe(cfg, t)
        else:
            f = cfg.get_int("intermediate_size_mlp") if fam == "llama4_text" \
                else cfg.intermediate_size
            _gated_mlp(t, "mlp", h, f, bias=mlp_bias)


def moe_layers(cfg: ModelConfig) -> frozenset[int]:
    """The layers whose MLP is a mixture of experts, as each family's decoder layer decides."""
    fam, n, e = cfg.family or "", cfg.num_layers, cfg.num_experts
    if not e:
        return frozenset()
    if fam == "llama4_text":
        return frozenset(x for x in cfg.get_list("moe_layers") if isinstance(x, int))
    if fam == "glm4_moe":
        return frozenset(range(min(n, cfg.get_int("first_k_dense_replace")), n))
    if fam == "ernie4_5_moe":  # every interval-th layer from the start index to the end one
        step = max(1, cfg.get_int("moe_layer_interval", 1))
        start, end = cfg.get_int("moe_layer_start_index"), cfg.get_int("moe_layer_end_index", -1)
        end = n - 1 if end == -1 else end
        return frozenset(i for i in range(n) if (i + 1) % step == 0 and start <= i <= end)
    if fam == "qwen3_next":
        only = {x for x in cfg.get_list("mlp_only_layers") if isinstance(x, int)}
        step = max(1, cfg.get_int("decoder_sparse_step", 1))
        return frozenset(i for i in range(n) if i not in only and (i + 1) % step == 0)
    return frozenset(range(n))


def _attention(cfg: ModelConfig, t: Tally, layer: int) -> None:
    fam = cfg.family or ""
    h, hd, heads, kv = cfg.hidden_size, cfg.head_dim, cfg.num_heads, cfg.num_kv_heads
    q, k = heads * hd, kv * hd
    bias = cfg.get_bool("use_bias") if fam in ("ernie4_5", "ernie4_5_moe") else \
        cfg.get_bool("attention_bias") and fam not in ("minimax_m2", "exaone4")  # never biased
    o_bias = {"glm4_moe": False, "glm4": False,
              "seed_oss": cfg.get_bool("attention_out_bias")}.get(fam, bias)
    gated = fam in LINEAR_ATTENTION  # q_proj also yields the output gate
    t.linear("attention", h, 2 * q if gated else q, bias=bias)
    t.linear("attention", h, k, bias=bias, times=2)
    t.linear("attention", q, h, bias=o_bias)
    qk = _QK_NORM.get(fam, "head" if fam == "glm4_moe" and cfg.get_bool("use_qk_norm") else "")
    if qk == "olmoe":  # sized from hidden_size, whatever head_dim says
        t.norm(h, bias=False)
        t.norm(h // max(1, heads) * kv, bias=False)
    elif qk == "full":
        t.norm(q + k, bias=False)
    elif qk == "head":
        t.norm(hd, bias=False, times=2)


def _gated_delta_net(cfg: ModelConfig, t: Tally) -> None:
    """in_proj (q, k, v, the output gate z; b and a per value head), a depthwise causal
    convolution over q, k and v, dt_bias and A_log per value head, the gated norm, out_proj."""
    v = cfg.get_int
    h = cfg.hidden_size
    kh, vh = v("linear_num_key_heads"), v("linear_num_value_heads")
    key, value = kh * v("linear_key_head_dim"), vh * v("linear_value_head_dim")
    t.linear("attention", h, 2 * key + 2 * value)
    t.linear("attention", h, 2 * vh)
    t.add("attention", (2 * key + value) * v("linear_conv_kernel_dim"))
    t.add("attention", 2 * vh)
    t.norm(v("linear_value_head_dim"), bias=False)
    t.linear("attention", value, h)


def _gated_mlp(t: Tally, group: str, h: int, f: int, bias: bool = False) -> None:
    t.linear(group, h, f, bias=bias, times=2)
    t.linear(group, f, h, bias=bias)


def _moe(cfg: ModelConfig, t: Tally) -> None:
    fam = cfg.family or ""
    h, e, k = cfg.hidden_size, cfg.num_experts, cfg.experts_per_token
    t.linear("router", h, e, lora=False)
    inner = cfg.get_opt_int("moe_intermediate_size") or cfg.intermediate_size
    t.experts(h, inner, e, k)
    if fam == "llama4_text":
        _gated_mlp(t, "mlp", h, cfg.intermediate_size)
    elif fam == "glm4_moe":
        _gated_mlp(t, "mlp", h, inner * cfg.get_int("n_shared_experts"))
    elif fam in ("qwen3_next", "qwen3_5_moe_text"):
        _gated_mlp(t, "mlp", h, cfg.get_int("shared_expert_intermediate_size"))
        t.linear("router", h, 1, lora=False)  # the shared expert's sigmoid gate
    elif fam == "ernie4_5_moe":
        t.add("router", e)  # e_score_correction_bias, a (frozen) parameter here
        shared = cfg.get_int("moe_num_shared_experts")
        if shared:
            _gated_mlp(t, "mlp", h, inner * shared, bias=cfg.get_bool("use_bias"))


def _gemma4(cfg: ModelConfig, t: Tally) -> None:
    """Gemma 4's text model: per-layer embeddings (one packed table, a projection and a norm;
    a gate, a projection and a norm in every layer), per-layer head_dim and KV heads, layers
    that reuse another layer's KV (no K/V projections), K=V full layers, four norms per layer,
    an optional MoE block beside the dense MLP, a final norm."""
    v = cfg.get_int
    h, n, heads, f = cfg.hidden_size, cfg.num_layers, cfg.num_heads, cfg.intermediate_size
    per = v("hidden_size_per_layer_input")
    if per:
        t.add("embeddings", v("vocab_size_per_layer_input") * n * per)
        t.linear("other", h, n * per)
        t.norm(per, bias=False)
        t.linear("other", h, per, times=n)
        t.linear("other", per, h, times=n)
        t.norm(h, bias=False, times=n)
    t.norm(h, bias=False, times=4 * n + 1)
    dims, kvs = cfg.get_list("layer_head_dims"), cfg.get_list("layer_kv_heads")
    shared = {x for x in cfg.get_list("kv_shared_layers") if isinstance(x, int)}
    types, bias = cfg.layer_types, cfg.get_bool("attention_bias")
    wide = cfg.get_bool("use_double_wide_mlp")
    for i in range(n):
        hd = dims[i] if i < len(dims) else cfg.head_dim
        kv = kvs[i] if i < len(kvs) else cfg.num_kv_heads
        t.linear("attention", h, heads * hd, bias=bias)
        t.linear("attention", heads * hd, h, bias=bias)
        t.norm(hd, bias=False)  # q_norm
        if i not in shared:
            sliding = i < len(types) and types[i] == "sliding_attention"
            k_eq_v = cfg.get_bool("attention_k_eq_v") and not sliding
            t.linear("attention", h, kv * hd, bias=bias, times=1 if k_eq_v else 2)
            t.norm(hd, bias=False)  # k_norm (v_norm has no weight)
        _gated_mlp(t, "mlp", h, f * (2 if wide and i in shared else 1))
    e = cfg.num_experts
    if e:
        t.norm(h, bias=False, times=3 * n)
        t.linear("router", h, e, times=n, lora=False)
        t.add("router", (h + e) * n)  # the router's scale and per-expert scale
        t.experts(h, v("moe_intermediate_size"), e, cfg.experts_per_token, layers=n)
