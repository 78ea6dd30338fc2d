"""Parameter counts of the state-space and hybrid families, module by module.

Layer 1 (stage 5, plan), pure. Mamba (and Jamba's Mamba layers): in_proj to twice the inner
width, a depthwise causal convolution, x_proj to the time-step rank and B, C, dt_proj, A_log
and D per inner channel, out_proj. Mamba-2 (Codestral Mamba, Falcon-H1): one in_proj to
z, x, B, C and dt, a convolution over x, B and C, dt_bias, A_log and D per head, a gated
RMSNorm (optional in Falcon-H1), out_proj. Mixer linears are in the ``mixer`` group (LoRA
targets them: peft's all-linear takes every ``nn.Linear`` but refuses a Mamba out_proj in
mamba, mamba2 and falcon_h1 models; the convolution is not a linear).
Jamba interleaves attention and Mamba layers and dense and MoE MLPs by period and offset;
Falcon-H1 runs attention and a Mamba-2 mixer side by side in every layer.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.tally import Tally

SSM_FAMILIES = frozenset({"mamba", "mamba2", "jamba", "falcon_h1"})


def mamba1_mixer(t: Tally, h: int, inner: int, d_state: int, d_conv: int, rank: int, *,
                 bias: bool, conv_bias: bool, bcdt_norms: bool = False, lora_out: bool = False,
                 times: int = 1) -> None:
    """One Mamba-1 mixer (``times`` of them); Jamba adds RMSNorms on dt, B and C.

    ``lora_out``: whether LoRA adapts out_proj (peft refuses it for ``mamba``, ``mamba2`` and
    ``falcon_h1`` models; Jamba's is adapted)."""
    t.linear("mixer", h, 2 * inner, bias=bias, times=times)
    t.add("mixer", inner * d_conv + (inner if conv_bias else 0), times)  # depthwise conv1d
    t.linear("mixer", inner, rank + 2 * d_state, times=times)
    t.linear("mixer", rank, inner, bias=True, times=times)
    t.add("mixer", inner * d_state + inner, times)  # A_log, D
    t.linear("mixer", inner, h, bias=bias, times=times, lora=lora_out)
    if bcdt_norms:
        t.norm(rank + 2 * d_state, bias=False, times=times)


def mamba2_mixer(t: Tally, h: int, inner: int, groups: int, d_state: int, d_conv: int,
                 heads: int, *, bias: bool, out_bias: bool, conv_bias: bool, gated_norm: bool,
                 times: int = 1) -> None:
    """One Mamba-2 mixer (``times`` of them)."""
    conv = inner + 2 * groups * d_state
    t.linear("mixer", h, inner + conv + heads, bias=bias, times=times)
    t.add("mixer", conv * d_conv + (conv if conv_bias else 0), times)
    t.add("mixer", 3 * heads, times)  # dt_bias, A_log, D
    if gated_norm:
        t.norm(inner, bias=False, times=times)
    t.linear("mixer", inner, h, bias=out_bias, times=times, lora=False)  # peft refuses it


def count_ssm(cfg: ModelConfig, t: Tally) -> None:
    """The base model (embeddings, layers, final norm) of a state-space or hybrid family."""
    fam, v = cfg.family or "", cfg.get_int
    h, n = cfg.hidden_size, cfg.num_layers
    t.add("embeddings", cfg.vocab_size * h)
    t.norm(h, bias=False)  # final norm
    if fam == "mamba":
        mamba1_mixer(t, h, cfg.intermediate_size, v("state_size"), v("conv_kernel"),
                     v("time_step_rank"), bias=cfg.get_bool("use_bias"),
                     conv_bias=cfg.get_bool("use_conv_bias", True), times=n)
        t.norm(h, bias=False, times=n)
    elif fam == "mamba2":
        inner = int(cfg.get_float("expand", 2) * h)
        mamba2_mixer(t, h, inner, v("n_groups"), v("state_size"), v("conv_kernel"),
                     v("num_heads"), bias=cfg.get_bool("use_bias"),
                     out_bias=cfg.get_bool("use_bias"),
                     conv_bias=cfg.get_bool("use_conv_bias", True), gated_norm=True, times=n)
        t.norm(h, bias=False, times=n)
    elif fam == "jamba":
        _jamba(cfg, t)
    elif fam == "falcon_h1":
        _falcon_h1(cfg, t)


def jamba_attention_layers(cfg: ModelConfig) -> set[int]:
    """Jamba's attention layers: i % attn_layer_period == attn_layer_offset; the rest Mamba."""
    period = max(1, cfg.get_int("attn_layer_period", 8))
    offset = cfg.get_int("attn_layer_offset", 4)
    return {i for i in range(cfg.num_layers) if i % period == offset}


def jamba_moe_layers(cfg: ModelConfig) -> set[int]:
    """Jamba's MoE layers: i % expert_layer_period == expert_layer_offset (with > 1 expert)."""
    period = max(1, cfg.get_int("expert_layer_period", 2))
    offset = cfg.get_int("expert_layer_offset", 1)
    if cfg.num_experts <= 1:
        return set()
    return {i for i in range(cfg.num_layers) if i % period == offset}


def _attention(cfg: ModelConfig, t: Tally, times: int, bias: bool = False) -> None:
    h, hd = cfg.hidden_size, cfg.head_dim
    q, kv = cfg.num_heads * hd, cfg.num_kv_heads * hd
    t.linear("attention", h, q, bias=bias, times=times)
    t.linear("attention", h, kv, bias=bias, times=2 * times)
    t.linear("attention", q, h, bias=bias, times=times)


def _jamba(cfg: ModelConfig, t: Tally) -> None:
    v = cfg.get_int
    h, n, f = cfg.hidden_size, cfg.num_layers, cfg.intermediate_size
    attn = len(jamba_attention_layers(cfg))
    _attention(cfg, t, attn)
    inner = v("mamba_expand", 2) * h
    mamba1_mixer(t, h, inner, v("mamba_d_state"), v("mamba_d_conv"), v("mamba_dt_rank"),
                 bias=cfg.get_bool("mamba_proj_bias"),
                 conv_bias=cfg.get_bool("mamba_conv_bias", True), bcdt_norms=True,
                 lora_out=True, times=n - attn)
    t.norm(h, bias=False, times=2 * n)  # input and pre-feed-forward norms
    sparse = len(jamba_moe_layers(cfg))
    t.linear("mlp", h, f, times=2 * (n - sparse))
    t.linear("mlp", f, h, times=n - sparse)
    e = cfg.num_experts
    t.linear("router", h, e, times=sparse, lora=False)
    t.experts(h, f, e, cfg.experts_per_token, layers=sparse)


def _falcon_h1(cfg: ModelConfig, t: Tally) -> None:
    v, g = cfg.get_int, cfg.get_bool
    h, n, f = cfg.hidden_size, cfg.num_layers, cfg.intermediate_size
    _attention(cfg, t, n, bias=g("attention_bias"))
    inner = v("mamba_d_ssm") or v("mamba_expand", 2) * h
    mamba2_mixer(t, h, inner, v("mamba_n_groups", 1), v("mamba_d_state"), v("mamba_d_conv"),
                 v("mamba_n_heads"), bias=g("mamba_proj_bias"), out_bias=g("projectors_bias"),
                 conv_bias=g("mamba_conv_bias", True), gated_norm=g("mamba_rms_norm"), times=n)
    mb = g("mlp_bias")
    t.linear("mlp", h, f, bias=mb, times=2 * n)
    t.linear("mlp", f, h, bias=mb, times=n)
    t.norm(h, bias=False, times=2 * n)


def ssm_head(cfg: ModelConfig, arch: str, t: Tally, notes: list[str]) -> None:
    """The class's head: a (tied) LM head, Jamba's sequence classifier, or none."""
    if not arch or arch.endswith("ForCausalLM"):
        if not cfg.tie_word_embeddings:
            t.linear("head", cfg.hidden_size, cfg.vocab_size, lora=False)
    elif arch.endswith("ForSequenceClassification"):
        t.linear("head", cfg.hidden_size, cfg.get_int("num_labels", 2), lora=False)
    elif not arch.endswith("Model"):
        notes.append(f"head of {arch} unknown; counted the base model only")
