"""What a Gated DeltaNet layer keeps for the backward pass, per token (the ``traced`` method).

Layer 1 (stage 5, plan), pure. A structural estimate, not yet calibrated against a trace:
the terms follow what the layer's autograd graph saves with the fused kernels transformers
uses on a GPU (flash-linear-attention's chunked delta rule and causal-conv1d), in bytes per
token of a training step under bf16 autocast:

- bf16 copies of the layer's input for ``in_proj_qkvz`` and ``in_proj_ba`` (2 x hidden each)
  and of the gated norm's output for ``out_proj`` (2 x value width);
- the convolution's input and output over q, k and v (bf16, 2 x 2 x conv channels);
- q, k, v into the kernel (bf16), beta (bf16) and the decay g with softplus's input (fp32)
  per value head, and the kernel's per-chunk WY matrix (fp32, 64 per value head);
- the output gate z (bf16) and the gated RMSNorm's fp32 saves (input, gate, silu of the
  gate, normalized value: 16 x value width).

Without those kernels transformers falls back to a pure-torch chunked rule that keeps every
chunk's fp32 state (heads x key_dim x value_dim per 64 tokens) and several fp32 chunk
matrices: several times more, and not what this estimate sizes.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.layers import LayerSpec

CHUNK = 64  # flash-linear-attention's chunk length


def gated_delta_net_bytes(cfg: ModelConfig, spec: LayerSpec) -> float:
    """Bytes per token a Gated DeltaNet mixer keeps beyond the residual stream and norms."""
    h, key, value = spec.hidden, spec.q_dim, spec.v_dim
    heads = cfg.get_int("linear_num_value_heads") or 1
    conv = 2 * key + value
    total = 2.0 * h * 2 + 2.0 * value  # bf16 inputs of in_proj_qkvz, in_proj_ba, out_proj
    total += 4.0 * conv  # the convolution's input and output
    total += 2.0 * conv + (2.0 + 8.0) * heads  # q, k, v; beta; g and softplus's input
    total += 4.0 * CHUNK * heads  # the chunked rule's WY matrix
    total += 2.0 * value + 16.0 * value  # z; the gated RMSNorm's fp32 saves
    return total
