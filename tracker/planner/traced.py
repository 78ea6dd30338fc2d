"""The ``traced`` memory method: a training step's peak, phase by phase, as MemTracker sees it.

Layer 1 (stage 5, plan), pure. A step's memory peaks in one of three phases; each is a
fixed part plus what every sample adds, and the step's peak is the largest:

- the loss's backward starts: fp32 weights (4 bytes per parameter) and AdamW's two moments
  (8), autocast's bf16 copies of every linear weight (2, kept for the backward), every
  layer's kept activations, and the loss in fp32: log-softmax output and two gradients of
  vocabulary x tokens (12 bytes per logit);
- the LM head's backward: the same with the head's fp32 weight gradient allocated and the
  loss's tensors freed but one (4 bytes per logit);
- the optimizer step: weights, gradients, both moments and the foreach kernel's temporary of
  every parameter (20 bytes per parameter).

LoRA keeps the base frozen in bf16 (2 bytes per parameter), adapters in fp32 with AdamW
(16 bytes per adapter parameter, 20 in the step), and activations without the frozen
linears' inputs. Constants are per token unless named otherwise; see
benchmarks/planner_accuracy.py for the traces they are calibrated against.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracker.model.plan import ModelConfig
from tracker.planner.layers import ENCODER_ONLY, LayerSpec
from tracker.planner.tally import Tally
from tracker.planner.traced_layers import layer_bytes_per_token
from tracker.planner.traced_mamba import scan_backward_bytes_per_token

LOSS_BYTES_PER_LOGIT = 12  # log-softmax output, its gradient and the loss's, all fp32
HEAD_PHASE_BYTES_PER_LOGIT = 4  # the logits' fp32 gradient while the head's backward runs
SOFTCAP_BYTES_PER_LOGIT = {"loss": 4, "head": 1.7}  # Gemma 2's final tanh soft-capping
STEP_BYTES_PER_PARAM = 20  # weights, gradients, two moments, foreach's sqrt temporary
STATE_BYTES_PER_PARAM = 12  # weights and two moments outside the step
OUTSIDE_H = 10  # embeddings output, final norm, the head's bf16 input (per token, x hidden)
MLM_HEAD_H = 6  # an MLM head's transform: dense, activation and norm


@dataclass(frozen=True, slots=True)
class Phase:
    """A phase of the step: what it holds regardless of the batch, and per sample."""

    name: str
    fixed: int
    per_sample: int


def vocab_logits(cfg: ModelConfig, arch: str) -> bool:
    """Whether the class scores the vocabulary at every position (LM and MLM heads)."""
    if cfg.family == "vit":
        return False
    if cfg.family in ENCODER_ONLY:
        return arch.endswith(("ForMaskedLM", "ForPreTraining", "ForCausalLM", "LMHeadModel"))
    return not arch or arch.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration",
                                      "DoubleHeadsModel"))


def _layers(cfg: ModelConfig, specs: tuple[LayerSpec, ...], s: int, lora: bool) -> float:
    cache: dict[int, float] = {}
    total = 0.0
    for spec in specs:
        key = id(spec)
        if key not in cache:
            cache[key] = layer_bytes_per_token(cfg, spec, s, lora)
        total += cache[key]
    return total * s


def _outside(cfg: ModelConfig, s: int, logits: bool) -> float:
    extra = MLM_HEAD_H if logits and cfg.family in ENCODER_ONLY else 0
    return (OUTSIDE_H + extra) * s * cfg.hidden_size


def _softcap(cfg: ModelConfig, phase: str) -> float:
    return SOFTCAP_BYTES_PER_LOGIT[phase] if cfg.get_float("final_logit_softcapping") else 0.0


def full_phases(cfg: ModelConfig, t: Tally, specs: tuple[LayerSpec, ...],
                s: int) -> tuple[Phase, ...]:
    """The three phases of a full fine-tune step (fp32 master weights, AdamW foreach)."""
    arch = cfg.architecture or ""
    logits = vocab_logits(cfg, arch)
    p = t.total
    linear = sum(t.linear_weights.values()) + (_tied_head(cfg, t) if logits else 0)
    held = STATE_BYTES_PER_PARAM * p + 2 * linear
    acts = _layers(cfg, specs, s, lora=False) + _outside(cfg, s, logits)
    v = cfg.vocab_size * s if logits else 0
    out = [Phase("loss", held, round(acts + v * (LOSS_BYTES_PER_LOGIT + _softcap(cfg, "loss"))))]
    if logits:
        head_grad = 4 * cfg.vocab_size * _head_width(cfg)
        out.append(Phase("head", held + head_grad,
                         round(acts + v * (HEAD_PHASE_BYTES_PER_LOGIT + _softcap(cfg, "head")))))
    scan = scan_backward_bytes_per_token(cfg, specs) * s
    if scan:  # a Mamba scan's backward: its gradients beside every layer's saves
        out.append(Phase("scan", held + (4 * cfg.vocab_size * _head_width(cfg) if logits else 0),
                         round(acts + scan + v * HEAD_PHASE_BYTES_PER_LOGIT)))
    out.append(Phase("step", STEP_BYTES_PER_PARAM * p, 0))
    return tuple(out)


def lora_phases(cfg: ModelConfig, t: Tally, specs: tuple[LayerSpec, ...], s: int,
                base_bytes: int) -> tuple[Phase, ...]:
    """A LoRA step: the frozen base (bf16 or quantized), fp32 adapters with AdamW."""
    logits = vocab_logits(cfg, cfg.architecture or "")
    acts = _layers(cfg, specs, s, lora=True) + _outside(cfg, s, logits)
    v = cfg.vocab_size * s if logits else 0
    adapters = t.lora
    # fused MoE experts are frozen 3-D tensors: each routed expert's weight is copied (bf16)
    # for its matmul and kept for the backward, measured on a shrunk Qwen3-MoE
    base_bytes += 2 * t.groups.get("experts", 0)
    scan = scan_backward_bytes_per_token(cfg, specs) * s
    return (
        Phase("loss", base_bytes + 16 * adapters,
              round(acts + v * (LOSS_BYTES_PER_LOGIT + _softcap(cfg, "loss")))),
        *((Phase("scan", base_bytes + 16 * adapters,
                 round(acts + scan + v * HEAD_PHASE_BYTES_PER_LOGIT)),) if scan else ()),
        Phase("step", base_bytes + STEP_BYTES_PER_PARAM * adapters, 0),
    )


def peak(phases: tuple[Phase, ...], batch: int) -> int:
    """The step's peak at ``batch`` samples."""
    return max(ph.fixed + batch * ph.per_sample for ph in phases)


def linear_fit(phases: tuple[Phase, ...]) -> tuple[int, int]:
    """(fixed, per-sample) such that fixed + per-sample is the batch-1 peak and every further
    sample adds the steepest phase's bytes: never below the step's peak at any batch."""
    steep = max(phases, key=lambda ph: (ph.per_sample, ph.fixed))
    return peak(phases, 1) - steep.per_sample, steep.per_sample


def _head_width(cfg: ModelConfig) -> int:
    return cfg.get_int("word_embed_proj_dim", cfg.hidden_size) if cfg.family == "opt" \
        else cfg.hidden_size


def _tied_head(cfg: ModelConfig, t: Tally) -> int:
    """A tied LM head is a linear over the embedding matrix: autocast copies it too."""
    if t.linear_weights.get("head", 0):
        return 0
    return cfg.vocab_size * _head_width(cfg)
