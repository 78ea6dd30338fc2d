"""GPU memory of fine-tuning and serving, by the method of reference/planner.md.

Layer 1 (stage 5, plan), pure. Full fine-tune: 1.2 x 16 bytes per parameter plus
activations; LoRA r=16: the frozen base (bf16, or its quantized width) plus 1.2 x 16 bytes
per adapter parameter plus the same activations; serving: the weights plus the KV cache.
Activations follow Korthikanti et al. (2022) with SDPA (no score matrix), per sample.
"""

from __future__ import annotations

from tracker.model.plan import MemoryPlan, ModelConfig
from tracker.planner import traced
from tracker.planner.layers import ENCODER_ONLY, LayerSpec, layer_specs
from tracker.planner.tally import Tally

TRAIN_TOKENS_CAP = 2048
SERVE_TOKENS = 512
BYTES_PER_TRAINED_PARAM = 1.2 * 16  # weights, gradients, AdamW state, with overhead
BF16 = 2


METHODS = ("traced", "seed")


def training_tokens(cfg: ModelConfig, tokens: int | None = None) -> int:
    """Tokens per training sample: min(2048, the model's context), or ``tokens`` if given."""
    if tokens is not None and cfg.family != "vit":
        return tokens
    if cfg.family == "vit":
        return cfg.context or 197
    return min(TRAIN_TOKENS_CAP, cfg.context or TRAIN_TOKENS_CAP)


def serve_tokens(cfg: ModelConfig, tokens: int | None = None) -> int:
    """Tokens per served sequence: 512 (or the context when shorter) for generative models.

    An encoder serves whole sequences, so it is sized at its training length, as the seed
    pages do (xlm-roberta-base at 514).
    """
    if cfg.family in ENCODER_ONLY:
        return training_tokens(cfg, tokens)
    if tokens is not None:
        return tokens
    return min(SERVE_TOKENS, cfg.context or SERVE_TOKENS)


def is_generative(cfg: ModelConfig) -> bool:
    """Whether the class produces vocabulary logits for every position (a causal / seq2seq LM)."""
    arch = cfg.architecture or ""
    if cfg.family in ENCODER_ONLY:
        return False
    return not arch or arch.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration",
                                      "DoubleHeadsModel"))


def activations(cfg: ModelConfig, specs: tuple[LayerSpec, ...], s: int) -> int:
    """Activation bytes one training sample keeps for the backward pass."""
    per_spec: dict[int, int] = {}  # layers of one kind share their spec object
    total = 0
    for spec in specs:
        key = id(spec)
        if key not in per_spec:
            per_spec[key] = layer_activations(spec, s)
        total += per_spec[key]
    h = cfg.hidden_size
    total += 6 * s * h  # embeddings output, final norm
    if is_generative(cfg):
        total += s * cfg.vocab_size * (BF16 + 4)  # logits in bf16, and in fp32 for the loss
    return total


def layer_activations(spec: LayerSpec, s: int) -> int:
    """Bytes of one layer at ``s`` tokens (bf16 values, 1-byte dropout masks)."""
    h = spec.hidden
    attn = 3 * s * h + 2 * s * (spec.q_dim + spec.k_dim + spec.v_dim + spec.q_dim)
    if spec.cross:
        attn *= 2
    if spec.mlp == "plain":
        mlp = 3 * s * h + 4 * s * spec.ffn
    elif spec.mlp == "gated":
        mlp = 3 * s * h + 6 * s * spec.ffn
    elif spec.mlp == "none":  # a Mamba block: the mixer is its only sublayer
        mlp = 0
    else:
        mlp = 3 * s * h + 4 * s * spec.experts  # router logits in fp32
        mlp += spec.top_k * 6 * s * spec.ffn + 6 * s * spec.shared_ffn
    return attn + mlp + 2 * s * h * spec.norms


def kv_cache(specs: tuple[LayerSpec, ...], tokens: int, cross_tokens: int = 0) -> int:
    """KV cache bytes of one served sequence (bf16); sliding windows hold at most the window,
    a recurrent layer (linear attention, SSM) its fixed state whatever the length."""
    total = 0
    for spec in specs:
        if spec.stack == "encoder" and cross_tokens:
            continue  # an encoder-decoder caches only in its decoder
        total += spec.state_bytes
        held = min(tokens, spec.window) if spec.window else tokens
        total += spec.kv_per_token * held * BF16
        if spec.cross:
            total += spec.kv_per_token * cross_tokens * BF16
    return total


def recurrent_state(specs: tuple[LayerSpec, ...]) -> int:
    """The part of a sequence's cache that recurrent layers hold whatever its length."""
    return sum(spec.state_bytes for spec in specs)


def weight_bytes(cfg: ModelConfig, t: Tally) -> int:
    """Bytes of the weights as served: bf16, or the checkpoint's quantized width where it is."""
    total = t.total
    q = cfg.quantization
    if q is None:
        return total * BF16
    groups = ("experts",) if q.scope == "experts" else ("attention", "mixer", "mlp", "experts")
    narrow = sum(t.linear_weights.get(g, 0) for g in groups)
    return int((total - narrow) * BF16 + narrow * q.bits / 8)


DTYPE_BYTES = {"float32": 4.0, "float": 4.0, "float64": 8.0, "float16": 2.0, "half": 2.0,
               "bfloat16": 2.0, "int8": 1.0, "uint8": 1.0, "float8_e4m3fn": 1.0}


def stored_weight_bytes(cfg: ModelConfig, t: Tally) -> int:
    """Bytes of the weights as the checkpoint stores them (torch_dtype; bf16 when unstated)."""
    if cfg.quantization is not None:
        return weight_bytes(cfg, t)
    per = DTYPE_BYTES.get((cfg.torch_dtype or "bfloat16").removeprefix("torch."), 2.0)
    return int(t.total * per)


def memory_plan(cfg: ModelConfig, t: Tally, specs: tuple[LayerSpec, ...] | None = None,
                method: str = "traced", tokens: int | None = None) -> MemoryPlan:
    """Batch-1 memory of every mode, split into what is fixed and what grows per sample.

    ``method`` is ``traced`` (a traced step's terms, :mod:`tracker.planner.traced`) or
    ``seed`` (the seed pages' method, reproducing their tables); ``tokens`` overrides the
    training and serving length.
    """
    specs = layer_specs(cfg) if specs is None else specs
    s, serve = training_tokens(cfg, tokens), serve_tokens(cfg, tokens)
    cross = 0
    if cfg.family in ("t5", "mt5", "bart", "whisper"):
        cross = cfg.get_int("max_source_positions") if cfg.family == "whisper" else serve
    weights = weight_bytes(cfg, t)
    context = cfg.context or serve
    if method == "seed":
        return MemoryPlan(
            training_tokens=s, serve_tokens=serve,
            full_fixed=round(BYTES_PER_TRAINED_PARAM * t.total),
            lora_fixed=weights + round(BYTES_PER_TRAINED_PARAM * t.lora),
            serve_weights=weights, activations=activations(cfg, specs, s),
            kv_cache=kv_cache(specs, serve, cross), lora_params=t.lora,
            stored_weights=stored_weight_bytes(cfg, t), method="seed", context_tokens=context,
            kv_cache_full_context=kv_cache(specs, context, cross and context),
            recurrent_state=recurrent_state(specs),
        )
    full_fixed, full_act = traced.linear_fit(traced.full_phases(cfg, t, specs, s))
    lora_fixed, lora_act = traced.linear_fit(traced.lora_phases(cfg, t, specs, s, weights))
    encoder = cfg.family in ENCODER_ONLY
    kv = 0 if encoder else kv_cache(specs, serve, cross)
    return MemoryPlan(
        training_tokens=s, serve_tokens=serve, full_fixed=full_fixed, lora_fixed=lora_fixed,
        serve_weights=weights, activations=full_act, kv_cache=kv, lora_params=t.lora,
        stored_weights=stored_weight_bytes(cfg, t), method="traced", lora_activations=lora_act,
        serve_per_sequence=_encoder_prefill(cfg, specs, serve) if encoder else None,
        context_tokens=context,
        kv_cache_full_context=0 if encoder else kv_cache(specs, context, cross and context),
        recurrent_state=recurrent_state(specs),
    )


def _encoder_prefill(cfg: ModelConfig, specs: tuple[LayerSpec, ...], s: int) -> int:
    """What one more sequence adds to an encoder's bf16 forward (no KV cache to keep): the
    widest layer's live tensors, and the scores of an MLM head."""
    widest = max((4 * spec.hidden + 2 * spec.ffn for spec in specs), default=0)
    head = 2 * cfg.vocab_size if traced.vocab_logits(cfg, cfg.architecture or "") else 0
    return s * (widest + head)
