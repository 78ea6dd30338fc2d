"""What a Gated DeltaNet layer keeps for the backward pass, per token (the ``traced`` method).

Layer 1 (stage 5, plan), pure. Structural terms for what the layer's autograd graph saves
(bytes per token of a training step under bf16 autocast), plus two terms measured on traced
steps of shrunk Qwen3-Next models (MemTracker on fake tensors at 2048 tokens, two Gated
DeltaNet shapes and one all-attention stack; /work/notes/h14a.md has the figures):

- bf16 copies of the layer's input for ``in_proj_qkvz`` and ``in_proj_ba`` (2 x hidden each)
  and of the gated norm's output for ``out_proj`` (2 x value width);
- the convolution's input and output over q, k and v (bf16, 2 x 2 x conv channels);
- q, k, v into the rule (bf16), beta (bf16) and the decay g with softplus's input (fp32)
  per value head, the per-chunk WY matrix (fp32, 64 per value head);
- the output gate z (bf16) and the gated RMSNorm's fp32 saves (16 x value width);
- measured: the chunked rule as transformers runs it without the fused kernels (q and k
  repeated to every value head, l2-normalized and chunked in fp32): 22 bytes per element of
  the repeated q and k (2 x value heads x key_dim), full fine-tune and LoRA alike.

The Qwen3-Next / Qwen3.5 zero-centred RMSNorms (computed in fp32 with ``1 + weight``) keep
more than Llama's in every layer, attention or linear: ``ZERO_CENTRED_NORM_H`` per token x
hidden, measured the same way. With flash-linear-attention's fused kernels a GPU step keeps
less than the measured chunked rule: the estimate errs on the safe side there.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.layers import LayerSpec

CHUNK = 64  # the chunked rule's chunk length
#: Bytes per element of q and k repeated to every value head, kept by the chunked rule.
REPEATED_QK_BYTES = 22.0
#: What the zero-centred fp32 RMSNorms of every layer keep beyond the generic norm saves,
#: per token x hidden (full fine-tune, LoRA); measured on attention and linear layers alike.
ZERO_CENTRED_NORM_H = {"full": 21.2, "lora": 9.4}
ZERO_CENTRED_NORM_FAMILIES = frozenset(["qwen3_next", "qwen3_5_moe_text", "qwen3_5_text"])


def gated_delta_net_bytes(cfg: ModelConfig, spec: LayerSpec) -> float:
    """Bytes per token a Gated DeltaNet mixer keeps beyond the residual stream and norms."""
    h, key, value = spec.hidden, spec.q_dim, spec.v_dim
    heads = cfg.get_int("linear_num_value_heads") or 1
    key_dim = cfg.get_int("linear_key_head_dim")
    conv = 2 * key + value
    total = 2.0 * h * 2 + 2.0 * value  # bf16 inputs of in_proj_qkvz, in_proj_ba, out_proj
    total += 4.0 * conv  # the convolution's input and output
    total += 2.0 * conv + (2.0 + 8.0) * heads  # q, k, v; beta; g and softplus's input
    total += 4.0 * CHUNK * heads  # the chunked rule's WY matrix
    total += 2.0 * value + 16.0 * value  # z; the gated RMSNorm's fp32 saves
    return total + REPEATED_QK_BYTES * 2 * heads * key_dim


def zero_centred_norm_bytes(cfg: ModelConfig, hidden: int, lora: bool) -> float:
    """The extra bytes per token the zero-centred fp32 norms of one layer keep (0 elsewhere)."""
    if cfg.family not in ZERO_CENTRED_NORM_FAMILIES:
        return 0.0
    return ZERO_CENTRED_NORM_H["lora" if lora else "full"] * hidden
