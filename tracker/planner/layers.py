"""The layer stack of a config as the memory model and the graph see it: one spec per layer.

Layer 1 (stage 5, plan), pure. Attention shape (MHA / GQA / MQA / MLA, sliding window),
MLP kind (plain, gated, MoE with top-k and shared experts) and norms per layer, for every
family, so that activations, KV cache and the structure table come from one description.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracker.model.plan import ModelConfig
from tracker.planner.params import BERTS
from tracker.planner.params_modernbert_mpnet import ROPE_ENCODERS
from tracker.planner.params_multimodal import MULTIMODAL_FAMILIES
from tracker.planner.params_ssm import SSM_FAMILIES

GATED = frozenset(
    ["llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "phi3", "stablelm", "olmo", "olmo2", "cohere", "granite", "granitemoe", "deepseek_v2", "deepseek_v3", "gpt_oss"]
) | {"modernbert"}
ENCODER_ONLY = BERTS | {"distilbert", "deberta-v2", "electra", "vit", "clip"} | ROPE_ENCODERS
SEQ2SEQ = frozenset({"t5", "mt5", "bart", "whisper"})
LAYERNORM = frozenset(
    ["gpt2", "gpt_neox", "gptj", "gpt_bigcode", "falcon", "bloom", "opt", "mpt", "stablelm", "starcoder2", "phi", "cohere", "bert", "roberta", "xlm-roberta", "distilbert", "deberta-v2", "electra", "bart", "whisper", "vit", "clip"]
) | ROPE_ENCODERS


@dataclass(frozen=True, slots=True)
class LayerSpec:
    """One transformer layer: widths of Q, K, V, its cache per token, MLP and norms."""

    stack: str  # "encoder" | "decoder"
    attention: str  # "mha" | "gqa" | "mqa" | "mla" | "recurrent" (linear attention, SSM)
    hidden: int
    q_dim: int
    k_dim: int
    v_dim: int
    kv_per_token: int  # cached values per token (K and V, or MLA's latent), not bytes
    window: int | None
    mlp: str  # "plain" | "gated" | "moe"
    ffn: int  # inner size; per expert for MoE
    experts: int = 0
    top_k: int = 0
    shared_ffn: int = 0
    norms: int = 2
    cross: bool = False
    state_bytes: int = 0  # a recurrent layer's per-sequence state (tracker.planner.recurrent)
    mixer: str = ""  # the recurrent mixer's name for the structure table ("Gated DeltaNet")


def layer_specs(cfg: ModelConfig) -> tuple[LayerSpec, ...]:
    """Every layer of the model, encoder first for encoder-decoders."""
    fam = cfg.family or ""
    if fam in SSM_FAMILIES:
        from tracker.planner.layers_ssm import ssm_specs  # it builds LayerSpecs: imported late

        return ssm_specs(cfg)
    if fam == "gemma3" or fam in MULTIMODAL_FAMILIES:
        text = cfg.sub.get("text")
        return layer_specs(text) if text is not None else ()
    from tracker.planner import layers_newest  # it builds on LayerSpec: imported when used
    if fam in layers_newest.NEWEST_STACKS:
        return layers_newest.newest_layer_specs(cfg)
    if fam in SEQ2SEQ:
        return _seq2seq(cfg)
    stack = "encoder" if fam in ENCODER_ONLY else "decoder"
    h, hd = cfg.hidden_size, cfg.head_dim
    heads, kv = cfg.num_heads, cfg.num_kv_heads
    if fam in ("deepseek_v2", "deepseek_v3", "deepseek_v32"):
        return _mla(cfg)
    kind = "mha" if kv == heads else ("mqa" if kv == 1 else "gqa")
    mlp = "gated" if fam in GATED else "plain"
    ffn = 4 * h if fam == "mpt" else cfg.intermediate_size
    norms = {"gemma2": 4, "gemma3_text": 4, "gptj": 1, "phi": 1, "cohere": 1}.get(fam, 2)
    sparse = _sparse_layers(cfg)
    kinds: dict[tuple[int | None, bool], LayerSpec] = {}  # layers of one kind share a spec
    out: list[LayerSpec] = []
    types, n_types = cfg.layer_types, len(cfg.layer_types)
    for i in range(cfg.num_layers):
        window = None
        if cfg.sliding_window and (not types or (
                i < n_types and types[i] == "sliding_attention")):
            window = cfg.sliding_window
        moe = i in sparse
        spec = kinds.get((window, moe))
        if spec is None:
            spec = kinds[(window, moe)] = LayerSpec(
                stack=stack, attention=kind, hidden=h, q_dim=heads * hd, k_dim=kv * hd,
                v_dim=kv * hd, kv_per_token=2 * kv * hd, window=window,
                mlp="moe" if moe else mlp,
                ffn=_moe_ffn(cfg) if moe else ffn, experts=cfg.num_experts if moe else 0,
                top_k=cfg.experts_per_token if moe else 0,
                shared_ffn=cfg.get_int("shared_expert_intermediate_size") if moe else 0,
                norms=norms)
        out.append(spec)
    return tuple(out)


def _sparse_layers(cfg: ModelConfig) -> set[int]:
    fam, n, e = cfg.family or "", cfg.num_layers, cfg.num_experts
    if not e:
        return set()
    if fam in ("qwen2_moe", "qwen3_moe"):
        only = {x for x in cfg.get_list("mlp_only_layers") if isinstance(x, int)}
        step = max(1, cfg.get_int("decoder_sparse_step", 1))
        return {i for i in range(n) if i not in only and (i + 1) % step == 0}
    if fam in ("deepseek_v2", "deepseek_v3", "deepseek_v32"):
        return set(range(min(n, cfg.get_int("first_k_dense_replace")), n))
    return set(range(n))


def _moe_ffn(cfg: ModelConfig) -> int:
    return cfg.get_opt_int("moe_intermediate_size") or cfg.intermediate_size


def _mla(cfg: ModelConfig) -> tuple[LayerSpec, ...]:
    v = cfg.get_int
    heads, h = cfg.num_heads, cfg.hidden_size
    qk = v("qk_nope_head_dim") + v("qk_rope_head_dim")
    sparse = _sparse_layers(cfg)
    shared = _moe_ffn(cfg) * (cfg.get_opt_int("n_shared_experts") or 0)
    specs = {moe: LayerSpec(stack="decoder", attention="mla", hidden=h, q_dim=heads * qk,
                            k_dim=heads * qk, v_dim=heads * v("v_head_dim"),
                            kv_per_token=v("kv_lora_rank") + v("qk_rope_head_dim")
                            + v("index_head_dim"), window=None,  # V3.2: the indexer's keys
                            mlp="moe" if moe else "gated",
                            ffn=_moe_ffn(cfg) if moe else cfg.intermediate_size,
                            experts=cfg.num_experts if moe else 0,
                            top_k=cfg.experts_per_token if moe else 0,
                            shared_ffn=shared if moe else 0)
             for moe in (False, True)}
    return tuple(specs[i in sparse] for i in range(cfg.num_layers))


def _seq2seq(cfg: ModelConfig) -> tuple[LayerSpec, ...]:
    fam, v = cfg.family or "", cfg.get_int
    h = cfg.hidden_size
    if fam in ("t5", "mt5"):
        inner = v("num_heads") * v("d_kv")
        mlp = "gated" if cfg.get_bool("is_gated_act") else "plain"
        enc_n, dec_n, f_enc, f_dec = v("num_layers"), v("num_decoder_layers"), v("d_ff"), v("d_ff")
    else:
        inner = h
        mlp = "plain"
        enc_n, dec_n = v("encoder_layers"), v("decoder_layers")
        f_enc, f_dec = v("encoder_ffn_dim"), v("decoder_ffn_dim")
    enc = [LayerSpec("encoder", "mha", h, inner, inner, inner, 2 * inner, None, mlp, f_enc)
           for _ in range(enc_n)]
    dec = [LayerSpec("decoder", "mha", h, inner, inner, inner, 2 * inner, None, mlp, f_dec,
                     norms=3, cross=True) for _ in range(dec_n)]
    return tuple(enc + dec)


def attention_label(spec: LayerSpec) -> str:
    """The structure table's name for a layer's attention."""
    if spec.attention == "recurrent":
        return f"{spec.mixer or 'Recurrent'} (fixed state)"
    name = {"mha": "Multi-Head Attention", "gqa": "Grouped-Query Attention",
            "mqa": "Multi-Query Attention", "mla": "Multi-head Latent Attention"}[spec.attention]
    if spec.mixer:  # a hybrid layer running a recurrent mixer beside its attention
        name = f"{name} + {spec.mixer}"
    return f"{name} (sliding {spec.window})" if spec.window else name


def mlp_label(spec: LayerSpec) -> str:
    if spec.mlp == "moe":
        shared = " + shared" if spec.shared_ffn else ""
        return f"Mixture of Experts ({spec.experts}, top-{spec.top_k}{shared})"
    return "Gated Feed Forward" if spec.mlp == "gated" else "Feed Forward"
