"""Plan values: the parsed model config, the planner's results and the delta between two plans.

Layer 0 (stage 5, plan). Frozen dataclasses only; produced by ``tracker.extract.model_config``
(the :class:`ModelConfig`) and ``tracker.planner`` (everything else). Mappings are plain dicts
by convention and are never mutated after construction.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

JsonScalar = int | float | bool | str | None

#: Card keys of the ``plan --json`` contract, in display order.
CARD_KEYS: tuple[str, ...] = ("t4", "l4", "a100-40", "a100-80", "h200")
#: The three ways a model is run, as the ``cards`` contract names them.
MODES: tuple[str, ...] = ("full_finetune", "lora", "serve")


@dataclass(frozen=True, slots=True)
class RopeScaling:
    """``rope_scaling`` / ``rope_parameters`` of a config: the context extension it declares."""

    rope_type: str
    factor: float | None = None
    original_max_positions: int | None = None


@dataclass(frozen=True, slots=True)
class Quantization:
    """``quantization_config``: how the published weights are stored.

    ``bits`` is the storage width of a quantized weight (4.25 for mxfp4's scales included);
    ``scope`` names which weights are quantized: ``linear`` (every linear layer in the blocks)
    or ``experts`` (the MoE experts only, e.g. gpt-oss's mxfp4).
    """

    method: str
    bits: float
    scope: str = "linear"


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """A config.json, typed: the family's effective values with its defaults filled in.

    ``values`` is the effective config as the family's config class sees it (defaults from
    the class, key aliases resolved, derived values computed), limited to JSON scalars and
    lists of scalars; the typed fields are the family-independent view the planner sizes
    memory with. ``family`` is None when the model_type is not one the planner knows.
    ``issues`` are problems found while parsing (wrong types, out-of-range values); a config
    with a ``fatal`` issue cannot be sized.
    """

    model_type: str | None
    architecture: str | None
    family: str | None
    values: Mapping[str, Any] = field(default_factory=dict)
    vocab_size: int = 0
    hidden_size: int = 0
    num_layers: int = 0
    num_heads: int = 0
    num_kv_heads: int = 0
    head_dim: int = 0
    intermediate_size: int = 0
    context: int | None = None
    tie_word_embeddings: bool = False
    torch_dtype: str | None = None
    sliding_window: int | None = None
    layer_types: tuple[str, ...] = ()
    num_experts: int = 0
    experts_per_token: int = 0
    rope_scaling: RopeScaling | None = None
    quantization: Quantization | None = None
    remote_code: bool = False
    head_dim_explicit: bool = False
    sub: Mapping[str, ModelConfig] = field(default_factory=dict)
    issues: tuple[str, ...] = ()
    fatal: bool = False
    approximate: bool = False  # an unknown model_type sized as a generic (Llama-style) decoder

    def get_int(self, key: str, default: int = 0) -> int:
        """An integer value of ``values`` (bools and non-integers give ``default``)."""
        v = self.values.get(key)
        if isinstance(v, bool) or not isinstance(v, int):
            return default
        return v

    def get_opt_int(self, key: str) -> int | None:
        v = self.values.get(key)
        if isinstance(v, bool) or not isinstance(v, int):
            return None
        return v

    def get_bool(self, key: str, default: bool = False) -> bool:
        v = self.values.get(key)
        return v if isinstance(v, bool) else default

    def get_str(self, key: str, default: str = "") -> str:
        v = self.values.get(key)
        return v if isinstance(v, str) else default

    def get_float(self, key: str, default: float = 0.0) -> float:
        v = self.values.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float):
            return default
        return float(v)

    def get_list(self, key: str) -> tuple[Any, ...]:
        v = self.values.get(key)
        return tuple(v) if isinstance(v, list | tuple) else ()


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One node of the reconstructed layer graph, as the structure table shows it.

    ``shape`` is the output shape at batch 1, as the seed pages' tables write it
    (``1 × s × h``).
    """

    index: int
    name: str
    type: str
    shape: tuple[int, ...]


class Level(enum.Enum):
    """How much a finding matters."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Finding:
    """A verifier finding: a stable ``id``, its level, what is wrong and how to fix it."""

    id: str
    level: Level
    message: str
    fix: str = ""


@dataclass(frozen=True, slots=True)
class ParamCount:
    """Parameters of the checkpoint's class, and the checkpoint's own count when known.

    ``groups`` splits ``total`` by kind (embeddings, attention, mlp, experts, norms, head,
    other) for the memory model and the explanation of a checkpoint delta.
    """

    total: int
    active: int
    checkpoint: int | None = None
    delta_pct: float | None = None
    explanation: str = ""
    groups: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    """Bytes at batch 1 and what a further sample adds, per mode.

    ``*_fixed`` is what does not grow with the batch (weights, gradients, optimizer state),
    ``activations`` what one training sample adds, ``kv_cache`` what one served sequence adds.
    """

    training_tokens: int
    serve_tokens: int
    full_fixed: int
    lora_fixed: int
    serve_weights: int
    activations: int
    kv_cache: int
    lora_params: int
    stored_weights: int = 0  # the weights in the checkpoint's own dtype (torch_dtype)
    method: str = "seed"  # "seed" (the seed pages' method) or "traced" (a traced step's)
    lora_activations: int | None = None  # LoRA's own per-sample bytes; None: ``activations``
    serve_per_sequence: int | None = None  # what a served sequence adds; None: ``kv_cache``
    context_tokens: int = 0  # the model's full context
    kv_cache_full_context: int = 0  # the KV cache of one sequence at the full context
    recurrent_state: int = 0  # of ``kv_cache``: recurrent layers' fixed state (Mamba, DeltaNet)

    @property
    def full_finetune(self) -> int:
        return self.full_fixed + self.activations

    @property
    def lora_per_sample(self) -> int:
        return self.activations if self.lora_activations is None else self.lora_activations

    @property
    def lora(self) -> int:
        return self.lora_fixed + self.lora_per_sample

    @property
    def serve_per_sample(self) -> int:
        return self.kv_cache if self.serve_per_sequence is None else self.serve_per_sequence


@dataclass(frozen=True, slots=True)
class Card:
    """A GPU card: contract key, display name and capacity in decimal bytes."""

    key: str
    name: str
    capacity: int


@dataclass(frozen=True, slots=True)
class CardFit:
    """Largest batch per mode on one card; 0 where batch 1 does not fit."""

    card: str
    full_finetune: int
    lora: int
    serve: int

    def batch(self, mode: str) -> int:
        return int(getattr(self, mode))


@dataclass(frozen=True, slots=True)
class SplitPlan:
    """A two-card pipeline split (contiguous layer cut) for a mode one card cannot hold."""

    card: str
    mode: str
    cut_after_layer: int
    batch: int


@dataclass(frozen=True, slots=True)
class CostAssumptions:
    """The priced card and the run the cost estimate is for (config.toml ``[planner]``).

    The defaults reproduce the seed page's figure: xlm-roberta-base on an A10G, $1.77.
    """

    card_name: str = "A10G (24GB)"
    price_per_hour: float = 1.006
    peak_flops: float = 125e12
    achievable_fraction: float = 0.56
    epochs: int = 10
    batch_size: int = 32
    samples: int = 50_000


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """A roofline estimate: FLOPs of the run over the achievable FLOP/s, times the price."""

    assumptions: CostAssumptions
    tokens_per_sample: int
    flops: float
    hours: float
    usd: float


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the planner says about one config."""

    model_type: str | None
    architecture: str | None
    supported: bool
    params: ParamCount
    memory: MemoryPlan
    cards: tuple[CardFit, ...]
    split: tuple[SplitPlan, ...]
    structure: tuple[GraphNode, ...]
    findings: tuple[Finding, ...]
    cost: CostEstimate | None
    dims: Mapping[str, Any] = field(default_factory=dict)

    def card(self, key: str) -> CardFit | None:
        for c in self.cards:
            if c.card == key:
                return c
        return None


@dataclass(frozen=True, slots=True)
class CardChange:
    """A card/mode whose largest batch changed between two plans."""

    card: str
    mode: str
    before: int
    after: int

    @property
    def stops_fitting(self) -> bool:
        return self.before > 0 and self.after == 0

    @property
    def starts_fitting(self) -> bool:
        return self.before == 0 and self.after > 0


@dataclass(frozen=True, slots=True)
class PlanDelta:
    """What changed between two plans (old ``a`` to new ``b``)."""

    params_total: tuple[int, int]
    params_active: tuple[int, int]
    memory: Mapping[str, tuple[int, int]]
    kv_cache_factor: float | None
    cards: tuple[CardChange, ...]
    findings_added: tuple[Finding, ...]
    findings_removed: tuple[Finding, ...]
    dims: Mapping[str, tuple[Any, Any]]
    summary: str

    @property
    def is_empty(self) -> bool:
        return (
            self.params_total[0] == self.params_total[1]
            and self.params_active[0] == self.params_active[1]
            and all(a == b for a, b in self.memory.values())
            and not self.cards
            and not self.findings_added
            and not self.findings_removed
            and not self.dims
        )


__all__ = [
    "CARD_KEYS",
    "MODES",
    "Card",
    "CardChange",
    "CardFit",
    "CostAssumptions",
    "CostEstimate",
    "Finding",
    "GraphNode",
    "JsonScalar",
    "Level",
    "MemoryPlan",
    "ModelConfig",
    "ParamCount",
    "Plan",
    "PlanDelta",
    "Quantization",
    "RopeScaling",
    "SplitPlan",
]
