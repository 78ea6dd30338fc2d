"""What a Mamba layer of a training step keeps for the backward pass (the ``traced`` method).

Layer 1 (stage 5, plan), pure. Without the optional ``mamba-ssm`` / ``causal-conv1d`` kernels
(and on CPU, where the benchmark traces it) transformers runs the mixers in PyTorch, and that
is what these terms follow, bytes per token of one layer under bf16 autocast with fp32 master
weights, at the step's peak (which falls in the scan's backward):

- Mamba-1 (Mamba, Jamba's Mamba layers): the scan's discretised A and B and every step's
  state in fp32 and its bf16 copy, 14 x inner x state_size in every layer; the projections,
  convolution, time step (fp32 around softplus), skip and gate tensors: 19 x inner; the
  block's residual and RMSNorm: 7 x hidden. The step peaks while one layer's scan runs
  backward: the gradients of A and B (accumulated, and one step's full-size temporary),
  16 x inner x state_size of that layer, with the logits' fp32 gradient still held (a phase
  of its own in :mod:`tracker.planner.traced`). Fitted on three shrunk Mamba models traced
  with benchmarks/trace_step.py (hidden 256/512, inner 512, state 4/16, 128 tokens), the
  code's saved tensors giving the form;
- Mamba-2 (Codestral Mamba, Falcon-H1's mixer): the chunked scan (SSD) in PyTorch keeps
  fp32 and bf16 copies of x and its outputs and the gated RMSNorm's saves (per inner
  channel), the convolution's channels, B and C repeated to every head (heads x state), the
  decay matrix L and C.B within a chunk (heads x chunk) and the chunk states (heads x
  head_dim x state / chunk); the coefficients come from the code's saved tensors, scaled to
  what two traced shrunk Mamba-2 models keep at the peak (``MAMBA2_SCALE``).

LoRA (base frozen in bf16) keeps the same mixer tensors (an adapted linear still needs its
input for the adapter's gradient) but a bf16 residual and no frozen projection's fp32 input:
6 x hidden + 3 x inner less per layer, measured. With the fused kernels installed the scan
keeps no per-step state, so these figures are an upper bound there.
"""

from __future__ import annotations

from tracker.model.plan import ModelConfig
from tracker.planner.layers import LayerSpec

MAMBA_MIXERS = frozenset({"Mamba", "Mamba-2"})
MAMBA1_PER_INNER = 19.0
MAMBA1_PER_STATE = 14.0  # x inner x state_size, kept by every Mamba-1 layer
#: While one layer's scan runs backward: the gradients of the discretised A and B, each
#: accumulated over the steps and one step's full-size temporary (fp32), x inner x state.
MAMBA1_BACKWARD_PER_STATE = 16.0
#: Mamba-2: bytes the code's saved tensors give per unit, times what the traces keep of them
#: at the peak (0.79: some are freed by then; two shrunk models, 0.78 and 0.80).
MAMBA2_SCALE = 0.79
MAMBA2_PER_INNER = 40.0 * MAMBA2_SCALE
MAMBA2_PER_CONV = 8.0 * MAMBA2_SCALE
MAMBA2_PER_HEAD = 30.0 * MAMBA2_SCALE
MAMBA2_PER_HEAD_STATE = 20.0 * MAMBA2_SCALE
MAMBA2_PER_HEAD_CHUNK = 8.0 * MAMBA2_SCALE
MAMBA2_PER_CHUNK_STATE = 10.0 * MAMBA2_SCALE  # x heads x head_dim x state / chunk
BLOCK_H = 7.1
#: LoRA keeps less per layer: a bf16 residual, no frozen projection's fp32 input (measured).
LORA_LESS_H = 6.0
LORA_LESS_INNER = 3.0


def mixer_bytes_per_token(cfg: ModelConfig, spec: LayerSpec, lora: bool) -> float:
    """A Mamba mixer's kept bytes per token (and, for a pure Mamba layer, its block's)."""
    from tracker.planner.layers_ssm import mamba_inner  # layers_ssm builds LayerSpecs

    v, fam = cfg.get_int, cfg.family or ""
    inner = mamba_inner(cfg)
    if spec.mixer == "Mamba":
        state = v("state_size") if fam == "mamba" else v("mamba_d_state")
        total = MAMBA1_PER_INNER * inner + MAMBA1_PER_STATE * inner * state
    else:
        if fam == "mamba2":
            groups, state, heads = v("n_groups"), v("state_size"), v("num_heads")
            head_dim, chunk = v("head_dim"), max(1, v("chunk_size", 256))
        else:  # falcon_h1
            groups, state, heads = v("mamba_n_groups", 1), v("mamba_d_state"), v("mamba_n_heads")
            head_dim, chunk = v("mamba_d_head"), max(1, v("mamba_chunk_size", 256))
        conv = inner + 2 * groups * state
        total = (MAMBA2_PER_INNER * inner + MAMBA2_PER_CONV * conv + MAMBA2_PER_HEAD * heads
                 + MAMBA2_PER_HEAD_STATE * heads * state + MAMBA2_PER_HEAD_CHUNK * heads * chunk
                 + MAMBA2_PER_CHUNK_STATE * heads * head_dim * state / chunk)
    if spec.attention == "recurrent" and spec.mlp == "none":  # Mamba / Mamba-2: the whole block
        total += BLOCK_H * spec.hidden
    if lora:
        total -= LORA_LESS_H * spec.hidden + LORA_LESS_INNER * inner
    return total


def scan_backward_bytes_per_token(cfg: ModelConfig, specs: tuple[LayerSpec, ...]) -> float:
    """What one Mamba-1 layer's scan backward adds per token at its peak (0 without one)."""
    from tracker.planner.layers_ssm import mamba_inner  # layers_ssm builds LayerSpecs

    if not any(spec.mixer == "Mamba" for spec in specs):
        return 0.0
    state = cfg.get_int("state_size") if cfg.family == "mamba" else cfg.get_int("mamba_d_state")
    return MAMBA1_BACKWARD_PER_STATE * mamba_inner(cfg) * state
