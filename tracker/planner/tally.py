"""A running count of a model's parameters, by group, as the counters walk its modules.

Layer 1 (stage 5, plan), pure. Every linear layer is recorded once, so the same walk gives
the exact total, the MoE active count, the LoRA adapter count (r x (in + out) per linear, the
head excluded) and the weights a quantized checkpoint stores narrow.
"""

from __future__ import annotations

from collections import defaultdict

LORA_RANK = 16
GROUPS = ("embeddings", "attention", "mixer", "mlp", "experts", "router", "norms", "head", "other")


class Tally:
    """Mutable accumulator, local to one count; the result is read off as plain ints."""

    def __init__(self) -> None:
        self.groups: dict[str, int] = defaultdict(int)
        self.inactive = 0  # parameters of routed experts a token does not use
        self.lora = 0  # LoRA r=16 adapter parameters over every linear but the head
        self.linear_weights: dict[str, int] = defaultdict(int)  # weight matrices per group

    @property
    def total(self) -> int:
        return sum(self.groups.values())

    def add(self, group: str, count: int, times: int = 1) -> None:
        """Plain parameters: embeddings, norms, biases outside a linear, scalars."""
        self.groups[group] += count * times

    def linear(self, group: str, fan_in: int, fan_out: int, bias: bool = False,
               times: int = 1, lora: bool = True) -> None:
        """``times`` linear layers of ``fan_in`` x ``fan_out`` (plus a bias of ``fan_out``)."""
        self.groups[group] += (fan_in * fan_out + (fan_out if bias else 0)) * times
        self.linear_weights[group] += fan_in * fan_out * times
        if lora and group != "head":
            self.lora += LORA_RANK * (fan_in + fan_out) * times

    def norm(self, size: int, bias: bool = True, times: int = 1) -> None:
        """LayerNorm (weight and bias) or, with ``bias=False``, RMSNorm."""
        self.groups["norms"] += size * (2 if bias else 1) * times

    def experts(self, hidden: int, inner: int, n_experts: int, top_k: int, *, gated: bool = True,
                bias: bool = False, layers: int = 1) -> None:
        """``n_experts`` MLPs per layer of which ``top_k`` run per token."""
        before = self.groups["experts"]
        mats = 3 if gated else 2
        self.linear("experts", hidden, inner, times=(mats - 1) * n_experts * layers)
        self.linear("experts", inner, hidden, times=n_experts * layers)
        if bias:
            self.add("experts", ((mats - 1) * inner + hidden) * n_experts * layers)
        per_expert = (self.groups["experts"] - before) // max(1, n_experts * layers)
        self.inactive += per_expert * max(0, n_experts - top_k) * layers
