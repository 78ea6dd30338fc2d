"""Parameter counts of the decoder-only families, module by module as transformers builds them.

Layer 1 (stage 5, plan), pure. One generic block (attention, norms, dense or MoE MLP) is
described per family by a :class:`Block`; the families whose blocks differ (fused QKV with
biases, MLA, gpt-oss sinks) say so in their spec. Returns the base model; the head is added
by :mod:`tracker.planner.params`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracker.model.plan import ModelConfig
from tracker.planner.params_newest import NEWEST_DECODERS, count_newest
from tracker.planner.tally import Tally


@dataclass(frozen=True, slots=True)
class Block:
    """How one family lays out a decoder layer."""

    q_bias: bool = False
    kv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    gated: bool = True
    norms: int = 2  # per layer
    norm_bias: bool = False
    norm_params: bool = True
    final_norm: bool = True
    qk_norm: str = ""  # "", "head" (head_dim each), "full" (heads*head_dim), "perhead"
    qk_norm_bias: bool = False
    embed_norm: bool = False  # bloom's word_embeddings_layernorm
    positions: int = 0  # learned position embeddings (rows)


def count_decoder(cfg: ModelConfig, t: Tally) -> None:
    """The base model of a decoder-only family (embeddings, layers, final norm)."""
    fam = cfg.family or ""
    if fam in ("deepseek_v2", "deepseek_v3", "deepseek_v32"):
        _deepseek(cfg, t)
        return
    if fam in NEWEST_DECODERS:
        count_newest(cfg, t)
        return
    block = _block(cfg)
    h = cfg.hidden_size
    t.add("embeddings", cfg.vocab_size * h)
    if block.embed_norm:
        t.norm(h)
    t.add("embeddings", block.positions * h)
    n = cfg.num_layers
    _attention(cfg, block, t, n)
    if block.norm_params:
        t.norm(h, bias=block.norm_bias, times=block.norms * n)
        if block.final_norm:
            t.norm(h, bias=block.norm_bias)
    _mlp(cfg, block, t)


def _block(cfg: ModelConfig) -> Block:
    fam = cfg.family or ""
    g = cfg.get_bool
    if fam in ("llama", "granite"):
        ab = g("attention_bias")
        return Block(q_bias=ab, kv_bias=ab, o_bias=ab, mlp_bias=g("mlp_bias"))
    if fam in ("qwen2", "qwen2_moe"):
        qkv = g("qkv_bias", True) if fam == "qwen2_moe" else True
        return Block(q_bias=qkv, kv_bias=qkv)
    if fam in ("qwen3", "qwen3_moe"):
        ab = g("attention_bias")
        return Block(q_bias=ab, kv_bias=ab, o_bias=ab, qk_norm="head")
    if fam in ("gemma2", "gemma3_text"):
        ab = g("attention_bias")
        return Block(q_bias=ab, kv_bias=ab, o_bias=ab, norms=4,
                     qk_norm="head" if fam == "gemma3_text" else "")
    if fam in ("gemma", "olmo", "granitemoe", "mixtral", "mistral", "phi3"):
        ab = g("attention_bias")
        return Block(q_bias=ab, kv_bias=ab, o_bias=ab, norm_params=fam != "olmo")
    if fam == "olmo2":
        ab = g("attention_bias")
        return Block(q_bias=ab, kv_bias=ab, o_bias=ab, qk_norm="full")
    if fam == "cohere":
        ab = g("attention_bias")
        return Block(q_bias=ab, kv_bias=ab, o_bias=ab, norms=1,
                     qk_norm="head_matrix" if g("use_qk_norm") else "")
    if fam == "stablelm":
        qkv = g("use_qkv_bias")
        return Block(q_bias=qkv, kv_bias=qkv, norm_bias=True,
                     norms=1 if g("use_parallel_residual") else 2,
                     qk_norm="perhead" if g("qk_layernorm") else "")
    if fam == "starcoder2":
        b = g("use_bias", True)
        return Block(q_bias=b, kv_bias=b, o_bias=b, mlp_bias=b, gated=False, norm_bias=True)
    if fam == "phi":
        return Block(q_bias=True, kv_bias=True, o_bias=True, mlp_bias=True, gated=False,
                     norms=1, norm_bias=True, qk_norm="phi" if g("qk_layernorm") else "")
    if fam == "gpt_oss":
        return Block(q_bias=g("attention_bias", True), kv_bias=g("attention_bias", True),
                     o_bias=g("attention_bias", True))
    if fam in ("gpt2", "gpt_bigcode"):
        return Block(q_bias=True, kv_bias=True, o_bias=True, mlp_bias=True, gated=False,
                     norm_bias=True, positions=cfg.context or 0)
    if fam == "gpt_neox":
        ab = g("attention_bias", True)
        return Block(q_bias=ab, kv_bias=ab, o_bias=ab, mlp_bias=True, gated=False,
                     norm_bias=True)
    if fam == "gptj":
        return Block(mlp_bias=True, gated=False, norms=1, norm_bias=True)
    if fam == "bloom":
        return Block(q_bias=True, kv_bias=True, o_bias=True, mlp_bias=True, gated=False,
                     norm_bias=True, embed_norm=True)
    if fam == "falcon":
        return _falcon_block(cfg)
    if fam == "opt":  # enable_bias, affine norms and the final norm: params._opt_extras
        return Block(q_bias=True, kv_bias=True, o_bias=True, mlp_bias=True, gated=False,
                     norm_bias=True)
    if fam == "mpt":
        # transformers' MPT has no biases and no learned positions whatever the config says
        return Block(gated=False)
    return Block()


def _falcon_block(cfg: ModelConfig) -> Block:
    b = cfg.get_bool("bias")
    n_ln = cfg.get_opt_int("num_ln_in_parallel_attn")
    if n_ln is None and cfg.get_bool("new_decoder_architecture"):
        n_ln = 2
    norms = 2 if not cfg.get_bool("parallel_attn", True) or n_ln == 2 else 1
    return Block(q_bias=b, kv_bias=b, o_bias=b, mlp_bias=b, gated=False, norms=norms,
                 norm_bias=True)


def _attention(cfg: ModelConfig, b: Block, t: Tally, n: int) -> None:
    h, hd = cfg.hidden_size, cfg.head_dim
    q, kv = cfg.num_heads * hd, cfg.num_kv_heads * hd
    fam = cfg.family or ""
    if fam in ("gpt2", "bloom", "gpt_neox", "falcon", "mpt", "gpt_bigcode", "phi3"):
        # one fused QKV projection (a Conv1D for gpt2), biased as the block says
        if fam in ("gpt2", "bloom", "gpt_neox", "mpt"):
            kv = q = h
        t.linear("attention", h, q + 2 * kv, bias=b.q_bias, times=n)
    else:
        t.linear("attention", h, q, bias=b.q_bias, times=n)
        t.linear("attention", h, kv, bias=b.kv_bias, times=2 * n)
    t.linear("attention", q, h, bias=b.o_bias, times=n)
    if b.qk_norm == "head":
        t.norm(hd, bias=False, times=2 * n)
    elif b.qk_norm == "full":
        t.norm(q + kv, bias=False, times=n)
    elif b.qk_norm in ("head_matrix", "perhead"):
        t.add("norms", (cfg.num_heads + cfg.num_kv_heads) * hd, n)
    elif b.qk_norm == "phi":  # sized hidden // heads whatever head_dim says
        t.norm(h // max(1, cfg.num_heads), bias=True, times=2 * n)
    if fam == "gpt_oss":
        t.add("attention", cfg.num_heads, n)  # attention sinks


def _mlp(cfg: ModelConfig, b: Block, t: Tally) -> None:
    fam = cfg.family or ""
    h, f, n = cfg.hidden_size, cfg.intermediate_size, cfg.num_layers
    if fam in ("mixtral", "granitemoe", "qwen3_moe", "qwen2_moe", "gpt_oss"):
        _moe(cfg, t)
        return
    if fam == "mpt":
        f = 4 * h  # MptMLP ignores expansion_ratio
    if b.gated:
        t.linear("mlp", h, f, bias=b.mlp_bias, times=2 * n)
    else:
        t.linear("mlp", h, f, bias=b.mlp_bias, times=n)
    t.linear("mlp", f, h, bias=b.mlp_bias, times=n)


def _moe(cfg: ModelConfig, t: Tally) -> None:
    fam = cfg.family or ""
    h, n = cfg.hidden_size, cfg.num_layers
    e, k = cfg.num_experts, cfg.experts_per_token
    if fam in ("mixtral", "granitemoe"):
        t.linear("router", h, e, times=n, lora=False)
        t.experts(h, cfg.intermediate_size, e, k, layers=n)
        return
    if fam == "gpt_oss":
        t.linear("router", h, e, bias=True, times=n, lora=False)
        t.experts(h, cfg.intermediate_size, e, k, bias=True, layers=n)
        return
    only = {x for x in cfg.get_list("mlp_only_layers") if isinstance(x, int)}
    step = max(1, cfg.get_int("decoder_sparse_step", 1))
    sparse = sum(1 for i in range(n) if i not in only and e > 0 and (i + 1) % step == 0)
    dense = n - sparse
    t.linear("mlp", h, cfg.intermediate_size, times=2 * dense)
    t.linear("mlp", cfg.intermediate_size, h, times=dense)
    moe_f = cfg.get_int("moe_intermediate_size")
    t.linear("router", h, e, times=sparse, lora=False)
    t.experts(h, moe_f, e, k, layers=sparse)
    if fam == "qwen2_moe":
        sf = cfg.get_int("shared_expert_intermediate_size")
        t.linear("mlp", h, sf, times=2 * sparse)
        t.linear("mlp", sf, h, times=sparse)
        t.linear("mlp", h, 1, times=sparse, lora=False)


def _deepseek(cfg: ModelConfig, t: Tally) -> None:
    """MLA attention, first dense layers, then shared plus routed experts."""
    v = cfg.get_int
    h, n, heads = cfg.hidden_size, cfg.num_layers, cfg.num_heads
    ab = cfg.get_bool("attention_bias")
    qk = v("qk_nope_head_dim") + v("qk_rope_head_dim")
    q_rank, kv_rank = cfg.get_opt_int("q_lora_rank"), v("kv_lora_rank")
    t.add("embeddings", cfg.vocab_size * h)
    if q_rank:
        t.linear("attention", h, q_rank, bias=ab, times=n)
        t.norm(q_rank, bias=False, times=n)
        t.linear("attention", q_rank, heads * qk, times=n)
    else:
        t.linear("attention", h, heads * qk, times=n)
    t.linear("attention", h, kv_rank + v("qk_rope_head_dim"), bias=ab, times=n)
    t.norm(kv_rank, bias=False, times=n)
    t.linear("attention", kv_rank, heads * (v("qk_nope_head_dim") + v("v_head_dim")), times=n)
    t.linear("attention", heads * v("v_head_dim"), h, bias=ab, times=n)
    if cfg.family == "deepseek_v32":  # the sparse-attention indexer: q from the q latent, one k
        ih, idim = v("index_n_heads"), v("index_head_dim")
        t.linear("attention", q_rank or 0, ih * idim, times=n)
        t.linear("attention", h, idim, times=n)
        t.norm(idim, times=n)  # k_norm, a LayerNorm
        t.linear("attention", h, ih, times=n)  # weights_proj
    t.norm(h, bias=False, times=2 * n + 1)
    dense = min(n, v("first_k_dense_replace"))
    sparse = n - dense
    mb = cfg.get_bool("mlp_bias") and cfg.family == "deepseek_v2"
    t.linear("mlp", h, cfg.intermediate_size, bias=mb, times=2 * dense)
    t.linear("mlp", cfg.intermediate_size, h, bias=mb, times=dense)
    mf, e = v("moe_intermediate_size"), cfg.num_experts
    t.linear("router", h, e, times=sparse, lora=False)
    t.experts(h, mf, e, cfg.experts_per_token, layers=sparse)
    shared = cfg.get_opt_int("n_shared_experts")
    if shared:
        sf = mf * shared
        t.linear("mlp", h, sf, bias=mb, times=2 * sparse)
        t.linear("mlp", sf, h, bias=mb, times=sparse)
