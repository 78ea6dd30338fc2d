"""Verifier findings on a config and its plan: data (id, level, message, fix), never exceptions.

Layer 1 (stage 5, plan), pure. Ids are stable and documented here; the messages name the
values that triggered them.
"""

from __future__ import annotations

from tracker.model.plan import Finding, Level, ModelConfig
from tracker.planner.layers import SEQ2SEQ

DEPTH_SCALED_INIT = frozenset({"gpt2", "gpt_bigcode"})
DEEP_STACK = 12
_HEAD_DIM_FROM_HIDDEN = frozenset(
    ["gpt2", "gpt_neox", "gptj", "gpt_bigcode", "bloom", "opt", "mpt", "falcon", "bert", "roberta", "xlm-roberta", "distilbert", "deberta-v2", "electra", "bart", "whisper", "vit", "stablelm", "clip"]
)


def unsupported(cfg: ModelConfig) -> Finding:
    kind = f"model_type {cfg.model_type!r}" if cfg.model_type else "a config without model_type"
    return Finding(
        "unsupported-architecture", Level.ERROR,
        f"{kind} is not an architecture the planner knows; no parameter count, memory or "
        "cost is estimated for it.",
        "Plan a config of a supported family, or add this family's layer layout to the planner.",
    )


#: What the generic decoder misses on a family that is not Llama-style (biases, QK norms,
#: fused or extra projections): a few per cent of the count, more for hybrids and MoE.
GENERIC_EXPECTED_ERROR = "within about 5 % for a Llama-style decoder, more for MoE or hybrids"


def approximate(cfg: ModelConfig) -> Finding:
    """An unknown model_type sized as a generic Llama-style decoder."""
    return Finding(
        "approximate-architecture", Level.WARNING,
        f"model_type {cfg.model_type!r} is not a family the planner knows; it is sized as a "
        f"generic decoder (gated MLP, RMSNorm, rotary attention, no biases): counts and memory "
        f"are approximate, {GENERIC_EXPECTED_ERROR}.",
        "Treat the numbers as a rough guide, or add this family's layer layout to the planner.",
    )


def config_findings(cfg: ModelConfig) -> list[Finding]:
    """Findings that need only the config."""
    out: list[Finding] = []
    for issue in cfg.issues:
        out.append(Finding("config-invalid-value", Level.ERROR if cfg.fatal else Level.WARNING,
                           f"config.json: {issue}.",
                           "Fix the value in config.json; the planner used the family default."))
    if cfg.remote_code:
        out.append(Finding(
            "remote-code", Level.WARNING,
            "config.json has auto_map: loading it with trust_remote_code=True runs the repo's own "
            f"Python code. Planned as the in-library family {cfg.family!r}.",
            "Review the custom code, or use the in-library class without trust_remote_code."))
    if cfg.family is None or cfg.fatal:
        return out
    out += _shape_findings(cfg)
    out += _rope_findings(cfg)
    if cfg.vocab_size and cfg.vocab_size % 64:
        out.append(Finding(
            "vocab-not-multiple-of-64", Level.INFO,
            f"vocab_size {cfg.vocab_size} is not a multiple of 64: the embedding and LM-head "
            "matmuls fall off the tensor-core tile sizes.",
            "Pad the vocabulary: model.resize_token_embeddings(len(tokenizer), "
            "pad_to_multiple_of=64)."))
    if cfg.num_layers >= DEEP_STACK and cfg.family not in DEPTH_SCALED_INIT:
        out.append(Finding(
            "deep-attention-default-init", Level.INFO,
            f"At {cfg.num_layers} stacked attention layers, residual-branch outputs add up; "
            "unscaled init lets activation variance grow with depth. GPT-2/LLaMA-family models "
            "scale the residual projections by depth (N(0, 0.02 / √(2L))).",
            "Scale residual output projections by depth: nn.init.normal_(w, std=0.02 / "
            "math.sqrt(2 * n_layers))"))
    if cfg.context is None and cfg.family not in ("vit", "clip"):
        out.append(Finding(
            "no-context-length", Level.INFO,
            "config.json declares no maximum context; training is sized at 2048 tokens and "
            "serving at 512.", "Set max_position_embeddings (or the family's key) in config.json."))
    if cfg.quantization is not None:
        q = cfg.quantization
        out.append(Finding(
            "quantized-weights", Level.INFO,
            f"Weights are stored {q.method} at {q.bits:g} bits ({q.scope}); LoRA and serving are "
            "sized at that width, a full fine-tune at bf16 master weights.",
            "Dequantize before a full fine-tune; LoRA on the quantized base is QLoRA."))
    if cfg.family == "falcon" and cfg.model_type == "falcon":
        old = [k for k in ("n_head", "n_layer", "n_head_kv") if k in cfg.values]
        if old:
            out.append(Finding(
                "falcon-old-keys-ignored", Level.WARNING,
                f"model_type 'falcon' with the RefinedWeb key names {', '.join(old)}: the "
                "in-library FalconConfig ignores them and builds its defaults instead.",
                "Rename them to num_attention_heads / num_hidden_layers / num_kv_heads."))
    return out


def _shape_findings(cfg: ModelConfig) -> list[Finding]:
    out: list[Finding] = []
    h, heads, kv = cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads
    computes = cfg.family in _HEAD_DIM_FROM_HIDDEN or not cfg.head_dim_explicit
    if heads and h % heads and computes and cfg.family not in SEQ2SEQ:
        out.append(Finding(
            "heads-not-dividing-hidden", Level.ERROR,
            f"hidden size {h} is not a multiple of {heads} attention heads: head_dim "
            f"{h // heads} leaves {h % heads} channels out (the model will not build).",
            "Choose num_attention_heads dividing hidden_size, or set head_dim explicitly."))
    if kv and heads % kv:
        out.append(Finding(
            "kv-heads-not-dividing-heads", Level.ERROR,
            f"{heads} attention heads do not split into groups over {kv} key/value heads.",
            "Choose num_key_value_heads dividing num_attention_heads."))
    return out


def _rope_findings(cfg: ModelConfig) -> list[Finding]:
    r, ctx = cfg.rope_scaling, cfg.context
    if r is None or ctx is None or not r.factor or not r.original_max_positions:
        return []
    reach = int(r.factor * r.original_max_positions)
    if reach > ctx:
        return [Finding(
            "rope-scaling-beyond-context", Level.WARNING,
            f"rope_scaling ({r.rope_type}, factor {r.factor:g} over "
            f"{r.original_max_positions} positions) reaches {reach} tokens, beyond the declared "
            f"context of {ctx}: positions are compressed more than the context needs.",
            f"Set the factor to {ctx / r.original_max_positions:g} or raise "
            "max_position_embeddings to what the scaling was trained for.")]
    if reach < ctx and r.rope_type in ("linear", "dynamic", "yarn"):
        return [Finding(
            "context-beyond-rope-scaling", Level.WARNING,
            f"max_position_embeddings {ctx} exceeds what rope_scaling covers ({reach} tokens).",
            "Lower max_position_embeddings or raise the rope scaling factor.")]
    return []


def fit_findings(cfg: ModelConfig, serve_batches: list[int], split_any: bool) -> list[Finding]:
    """Findings on the card fits."""
    if serve_batches and max(serve_batches) == 0:
        how = "a two-card split" if split_any else "more than two cards (tensor parallel)"
        return [Finding(
            "does-not-serve-on-one-card", Level.WARNING,
            "No card in the table holds the weights and one 512-token sequence; serving "
            f"needs {how}.", "Quantize the weights or shard them across cards.")]
    return []
