"""What a recurrent layer holds per served sequence: a fixed-size state, not a KV cache.

Layer 1 (stage 5, plan), pure. Linear-attention and state-space layers (Qwen3-Next's Gated
DeltaNet, Mamba / Mamba-2, the SSM layers of Jamba or Falcon-H1) keep two tensors per
sequence whatever its length, as transformers' caches allocate them:

- the causal convolution's window: ``conv_channels x conv_kernel`` values, in the model's
  dtype (bf16 when served);
- the recurrent state: ``heads x key_dim x value_dim`` for a delta rule, ``heads x head_dim x
  state_size`` for Mamba-2 (``intermediate x state_size`` for Mamba-1), in the dtype its
  kernel keeps (Gated DeltaNet's chunked rule accumulates in fp32, and transformers' Mamba
  caches keep the SSM state in fp32 too).

A layer's :class:`~tracker.planner.layers.LayerSpec` carries the bytes in ``state_bytes``;
:func:`tracker.planner.memory.kv_cache` adds them once per sequence, beside the per-token
KV of the attention layers.
"""

from __future__ import annotations

from dataclasses import dataclass

BF16 = 2
FP32 = 4


@dataclass(frozen=True, slots=True)
class RecurrentState:
    """The per-sequence state of one recurrent layer, in elements and bytes per element."""

    conv_channels: int
    conv_kernel: int
    state_elements: int
    conv_bytes: int = BF16
    state_bytes: int = FP32

    @property
    def bytes(self) -> int:
        """Bytes one sequence holds in this layer (convolution window and recurrent state)."""
        return (self.conv_channels * self.conv_kernel * self.conv_bytes
                + self.state_elements * self.state_bytes)


def gated_delta_net(key_heads: int, value_heads: int, key_dim: int, value_dim: int,
                    conv_kernel: int) -> RecurrentState:
    """Gated DeltaNet (Qwen3-Next, Qwen3.5): a short convolution over q, k and v, and one
    ``key_dim x value_dim`` fp32 state per value head (the chunked rule's final state)."""
    channels = 2 * key_heads * key_dim + value_heads * value_dim
    return RecurrentState(channels, conv_kernel, value_heads * key_dim * value_dim)


def mamba2(intermediate: int, groups: int, state_size: int, heads: int, head_dim: int,
           conv_kernel: int, state_bytes: int = FP32) -> RecurrentState:
    """Mamba-2 (and the SSM layers of hybrids built on it): the convolution runs over x, B
    and C (``intermediate + 2 x groups x state_size`` channels); the SSM state is
    ``heads x head_dim x state_size``, kept in fp32 by transformers' cache."""
    channels = intermediate + 2 * groups * state_size
    return RecurrentState(channels, conv_kernel, heads * head_dim * state_size,
                          state_bytes=state_bytes)


def mamba1(intermediate: int, state_size: int, conv_kernel: int,
           state_bytes: int = FP32) -> RecurrentState:
    """Mamba-1 (and Jamba's Mamba layers): the convolution over the expanded input and an
    ``intermediate x state_size`` SSM state."""
    return RecurrentState(intermediate, conv_kernel, intermediate * state_size,
                          state_bytes=state_bytes)
