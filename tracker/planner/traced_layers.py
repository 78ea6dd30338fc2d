"""What one layer of a training step keeps for the backward pass, as a traced step shows it.

Layer 1 (stage 5, plan), pure. The ``traced`` method's activation terms, calibrated against
PyTorch's MemTracker on a fake-tensor training step (benchmarks/planner_accuracy.py): fp32
master weights under bf16 autocast, so the residual stream is fp32 (4 bytes) and every
linear fed from it saves its own bf16 copy of the input (2 bytes); SDPA's flash kernel keeps
no score matrix, but it takes no attention dropout, so a config with attention dropout (or a
family whose attention is eager: T5's position bias, BLOOM's ALiBi, Gemma 2's soft-capping)
keeps the score matrix at the measured bytes per element. All sizes are bytes per token.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracker.model.plan import ModelConfig
from tracker.planner.layers import LayerSpec
from tracker.planner.traced_mamba import MAMBA_MIXERS, mixer_bytes_per_token
from tracker.planner.traced_recurrent import gated_delta_net_bytes, zero_centred_norm_bytes

#: Families whose attention is eager in transformers (no SDPA path), and the bytes each
#: score element keeps (scores, softmax output in fp32, dropout mask and output).
EAGER_SCORE_BYTES = {"t5": 12.8, "mt5": 12.8, "bloom": 6.0, "gemma2": 0.9, "deberta-v2": 12.8}
#: Per-token bytes (x hidden) a layer keeps beyond the terms below, measured: Gemma 2's
#: soft-capped eager attention keeps ~38 x hidden per token at 512 and 2048 tokens alike.
_EXTRA_H = {"gemma2": 38.2}
#: SDPA with attention dropout on: the math kernel, measured per score element.
MATH_SCORE_BYTES = 12.8
#: What an MoE layer's routing keeps besides the router's logits (one-hot expert masks, token
#: indices, the scatter's buffers), per token x hidden, measured on a shrunk Qwen3-MoE.
MOE_ROUTING_H = 16.7
#: What MLA's latent path keeps per token beyond q/k/v (kv_a and kv_b outputs, the latent's
#: norm, the nope/rope concatenations, v padded to the qk width), per element of heads x qk
#: width, measured on a shrunk DeepSeek-V2-Lite-shaped model (full fine-tune and LoRA).
MLA_PER_Q = 18.8
MLA_LORA_PER_Q = 14.8
#: Families whose MoE multiplies every token through every expert (a batched matmul over the
#: repeated input, non-chosen experts weighted zero): Llama 4's fused experts.
_DENSE_EXPERTS = frozenset(["llama4_text", "llama4"])
#: (attention dropout key, its default), (hidden dropout key, its default) per family.
_DROPOUT: dict[str, tuple[tuple[str, float], tuple[str, float]]] = {
    "bert": (("attention_probs_dropout_prob", 0.1), ("hidden_dropout_prob", 0.1)),
    "roberta": (("attention_probs_dropout_prob", 0.1), ("hidden_dropout_prob", 0.1)),
    "xlm-roberta": (("attention_probs_dropout_prob", 0.1), ("hidden_dropout_prob", 0.1)),
    "electra": (("attention_probs_dropout_prob", 0.1), ("hidden_dropout_prob", 0.1)),
    "deberta-v2": (("attention_probs_dropout_prob", 0.1), ("hidden_dropout_prob", 0.1)),
    "distilbert": (("attention_dropout", 0.1), ("dropout", 0.1)),
    "gpt2": (("attn_pdrop", 0.1), ("resid_pdrop", 0.1)),
    "gpt_bigcode": (("attn_pdrop", 0.1), ("resid_pdrop", 0.1)),
    "opt": (("attention_dropout", 0.0), ("dropout", 0.1)),
    "bart": (("attention_dropout", 0.0), ("dropout", 0.1)),
    "whisper": (("attention_dropout", 0.0), ("dropout", 0.0)),
    "t5": (("dropout_rate", 0.1), ("dropout_rate", 0.1)),
    "mt5": (("dropout_rate", 0.1), ("dropout_rate", 0.1)),
    "vit": (("attention_probs_dropout_prob", 0.0), ("hidden_dropout_prob", 0.0)),
    "bloom": (("attention_dropout", 0.0), ("hidden_dropout", 0.0)),
    "gpt_neox": (("attention_dropout", 0.0), ("hidden_dropout", 0.0)),
    "falcon": (("attention_dropout", 0.0), ("hidden_dropout", 0.0)),
    "phi": (("attention_dropout", 0.0), ("resid_pdrop", 0.0)),
    "gptj": (("attn_pdrop", 0.0), ("resid_pdrop", 0.0)),
}
#: Families with rotary positions (rotate_half and the rotated copy of q and k are kept).
_ROPE_FREE = frozenset(["gpt2", "gpt_bigcode", "opt", "bloom", "mpt", "bert", "roberta", "xlm-roberta", "electra", "deberta-v2", "distilbert", "bart", "whisper", "t5", "mt5", "vit", "clip", "clip_text_model", "clip_vision_model", "siglip_vision_model"])
_FUSED_QKV = frozenset(["gpt2", "gpt_bigcode", "bloom", "gpt_neox", "falcon", "phi3", "mpt"])
_POST_LN = frozenset(["bert", "roberta", "xlm-roberta", "electra", "deberta-v2", "distilbert", "bart"])
_LAYERNORM_PRE = frozenset(["gpt2", "gpt_bigcode", "opt", "bloom", "gpt_neox", "gptj", "falcon", "phi", "mpt", "stablelm", "starcoder2", "vit", "whisper", "cohere", "clip", "clip_text_model", "clip_vision_model", "siglip_vision_model"])
#: Norms applied to a layer's bf16 outputs (Gemma 2/3's post-norms): an fp32 copy and the
#: normalized value, 8 bytes per element.
_POST_NORMS = {"gemma2": 2, "gemma3_text": 2}
#: Bytes per element of q and k that a QK norm keeps: Gemma 3's norm on the bf16 heads keeps
#: an fp32 copy, the normalized value and the cast back; Qwen 3's keeps less.
_QK_NORM = {"qwen3": 2.0, "qwen3_moe": 2.0, "gemma3_text": 6.0, "olmo2": 2.0}
#: MLP activations whose Python composite keeps several intermediates (bytes per element of
#: the inner size, the fc1 output included).
_ACT_BYTES = {"gelu_new": 10.3, "gelu_fast": 10.3, "gelu_pytorch_tanh": 4.0, "gelu": 4.0,
              "relu": 2.0, "quick_gelu": 6.0, "silu": 4.0}


@dataclass(frozen=True, slots=True)
class Dropouts:
    """Whether attention probabilities and hidden states are dropped in training."""

    attention: bool
    hidden: bool


def dropouts(cfg: ModelConfig) -> Dropouts:
    fam = cfg.family or ""
    (ak, ad), (hk, hd) = _DROPOUT.get(fam, (("attention_dropout", 0.0), ("hidden_dropout", 0.0)))
    return Dropouts(cfg.get_float(ak, ad) > 0, cfg.get_float(hk, hd) > 0)


def score_bytes(cfg: ModelConfig) -> float:
    """Bytes a kept score matrix holds per element; 0 where flash attention keeps none."""
    fam = cfg.family or ""
    if fam in EAGER_SCORE_BYTES:
        return EAGER_SCORE_BYTES[fam]
    return MATH_SCORE_BYTES if dropouts(cfg).attention else 0.0


def _activation(cfg: ModelConfig, spec: LayerSpec) -> float:
    if spec.mlp != "plain":
        return 8.0  # gate, its activation, up and their product
    fam = cfg.family or ""
    act = cfg.get_str("activation_function") or cfg.get_str("hidden_act") or "gelu"
    if fam in ("t5", "mt5"):
        act = cfg.get_str("feed_forward_proj", "relu").split("-")[-1]
    if fam == "bloom":
        return 4.0  # its own autograd function saves the input only
    return _ACT_BYTES.get(act, 4.0)


def layer_bytes_per_token(cfg: ModelConfig, spec: LayerSpec, s: int, lora: bool) -> float:
    """One layer's kept activations per token at ``s`` tokens (full fine-tune or LoRA)."""
    mamba = mixer_bytes_per_token(cfg, spec, lora) if spec.mixer in MAMBA_MIXERS else 0.0
    if mamba and spec.mlp == "none":  # a Mamba / Mamba-2 block is its mixer
        return mamba
    return mamba + _transformer_layer(cfg, spec, s, lora)


def _transformer_layer(cfg: ModelConfig, spec: LayerSpec, s: int, lora: bool) -> float:
    fam = cfg.family or ""
    h, q, k, v, f = spec.hidden, spec.q_dim, spec.k_dim, spec.v_dim, spec.ffn
    drop = dropouts(cfg)
    rms = fam not in _LAYERNORM_PRE and fam not in _POST_LN
    norms = spec.norms if fam not in _POST_NORMS else 2
    total = 8.0 * h + (4.0 * h * norms if rms else 0.0)  # two fp32 residuals, rms saves
    total += 8.0 * h * _POST_NORMS.get(fam, 0)
    if spec.mixer == "Gated DeltaNet":
        total += gated_delta_net_bytes(cfg, spec)
    else:
        total += _attention(cfg, spec)
    if spec.attention == "mla":  # latent path: kv_a/kv_b outputs, its norm, q/k concatenations
        total += (MLA_LORA_PER_Q if lora else MLA_PER_Q) * q
    if spec.cross:  # a decoder layer: cross attention over the encoder's output
        total += 4.0 * h + 2.0 * h + 2.0 * (q + k + v) + 4.0 * q
    heads = max(1, q // max(1, _head_dim(cfg, spec)))
    attn_s = min(s, spec.window) if spec.window else s
    if spec.attention != "recurrent":
        total += score_bytes(cfg) * heads * attn_s * (2 if spec.cross else 1)
    if drop.hidden:
        total += h * (3 if spec.cross else 2)  # one-byte masks after attention and MLP
    total += _mlp(cfg, spec, h, f, drop) + zero_centred_norm_bytes(cfg, h, lora)
    if lora:
        total -= (11.0 if rms else 4.0) * h  # bf16 residual; frozen linears keep no input
        if spec.mlp == "moe":  # experts are fused tensors peft leaves frozen: no gathered copy
            total -= 8.0 * h * spec.top_k
    return total


def _attention(cfg: ModelConfig, spec: LayerSpec) -> float:
    """An attention sublayer's saves: bf16 input copies, q, k, v, output, RoPE, QK norms."""
    fam = cfg.family or ""
    h, q, k, v = spec.hidden, spec.q_dim, spec.k_dim, spec.v_dim
    total = 2.0 * h * (1 if fam in _FUSED_QKV else 3)  # bf16 copies of the inputs
    total += 2.0 * (q + k + v) + 2.0 * q  # q, k, v and the attention output
    if fam in _ROPE_FREE:
        total += 2.0 * q  # the output is copied back from the kernel's layout
    else:
        total += 4.0 * (q + k)  # rotate_half and the rotated q and k
    return total + _QK_NORM.get(fam, 0.0) * (q + k) + _EXTRA_H.get(fam, 0.0) * h


def _mlp(cfg: ModelConfig, spec: LayerSpec, h: int, f: int, drop: Dropouts) -> float:
    act = _activation(cfg, spec)
    if spec.mlp == "moe":
        e, k = spec.experts, spec.top_k
        if cfg.family in _DENSE_EXPERTS:  # every expert runs on every token (zero-weighted)
            k = e
            h_in = 4.0 * h * e  # the repeated, score-weighted inputs (bf16, and their product)
        else:
            h_in = 0.0
        routed = k * (act * f + 8.0 * h)  # gathered tokens (fp32 and bf16), weighted output
        shared = act * spec.shared_ffn + (2.0 * h if spec.shared_ffn else 0.0)
        # router logits and softmax in fp32; the routing's masks and index buffers, measured
        return 8.0 * e + (2.0 + MOE_ROUTING_H) * h + routed + shared + h_in
    casts = 2.0 if spec.mlp == "gated" else 1.0
    total = 2.0 * h * casts + act * f
    fam = cfg.family or ""
    if drop.hidden and fam in ("t5", "mt5"):
        total += 3.0 * f  # T5 drops the activation too: mask and dropped copy
    if cfg.get_float("activation_dropout") > 0:
        total += 1.0 * f
    return total


def _head_dim(cfg: ModelConfig, spec: LayerSpec) -> int:
    if spec.attention == "mla":
        return cfg.get_int("qk_nope_head_dim") + cfg.get_int("qk_rope_head_dim") or 1
    if cfg.family in ("t5", "mt5"):
        return cfg.get_int("d_kv", 64) or 64
    return cfg.head_dim or 1
