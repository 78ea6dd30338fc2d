"""Which batch fits on which GPU card, and a two-card pipeline split where one cannot hold one.

Layer 1 (stage 5, plan), pure. Usable memory is the card's decimal capacity over 1.15
headroom; the largest batch is floor((usable - fixed) / per-sample), 0 where batch 1 does
not fit. A split cuts the layer stack in two contiguous stages, one per card.
"""

from __future__ import annotations

import math

from tracker.model.plan import Card, CardFit, MemoryPlan, SplitPlan

#: Usable memory is capacity / 1.15. The 15 % covers what no trace of tensors shows: the CUDA
#: context and kernel images (0.3-0.5 GB), the caching allocator's rounding and fragmentation
#: (blocks of 512 bytes and 2 MB segments), cuBLAS / cuDNN workspaces and NCCL buffers. It
#: does not cover a data loader's pinned buffers, a second process on the card, activation
#: checkpointing turned off where the estimate assumed it, or sequences longer than planned.
HEADROOM = 1.15
CARDS: tuple[Card, ...] = (
    Card("t4", "T4 16 GB", 16 * 10**9),
    Card("l4", "L4 24 GB", 24 * 10**9),
    Card("a100-40", "A100 40 GB", 40 * 10**9),
    Card("a100-80", "A100 / H100 80 GB", 80 * 10**9),
    Card("h200", "H200 141 GB", 141 * 10**9),
)


def usable(card: Card) -> float:
    return card.capacity / HEADROOM


def largest_batch(capacity: float, fixed: float, per_sample: float) -> int:
    """floor((capacity - fixed) / per_sample), 0 where not even one sample fits."""
    if per_sample <= 0:
        per_sample = 1.0
    room = capacity - fixed
    if room < per_sample:
        return 0
    return math.floor(room / per_sample)


def modes(mem: MemoryPlan) -> dict[str, tuple[int, int]]:
    """(fixed, per-sample) bytes of each mode."""
    return {
        "full_finetune": (mem.full_fixed, mem.activations),
        "lora": (mem.lora_fixed, mem.lora_per_sample),
        "serve": (mem.serve_weights, mem.serve_per_sample),
    }


def fit_cards(mem: MemoryPlan) -> tuple[CardFit, ...]:
    per_mode = modes(mem)
    out = []
    for card in CARDS:
        b = {m: largest_batch(usable(card), f, p) for m, (f, p) in per_mode.items()}
        out.append(CardFit(card.key, b["full_finetune"], b["lora"], b["serve"]))
    return tuple(out)


def split_cards(mem: MemoryPlan, fits: tuple[CardFit, ...], layers: int,
                edge_fraction: float) -> tuple[SplitPlan, ...]:
    """Two-card splits for every card and mode where one card cannot hold batch 1.

    The layers are taken as equal; ``edge_fraction`` is the share of the fixed bytes that
    sits outside them (embeddings on the first card, the head on the last).
    """
    if layers < 2:
        return ()
    out = []
    for card, fit in zip(CARDS, fits, strict=True):
        for mode, (fixed, per_sample) in modes(mem).items():
            if fit.batch(mode) > 0:
                continue
            best: tuple[int, int] | None = None
            edge = fixed * edge_fraction / 2  # embeddings on the first card, head on the last
            body = fixed * (1 - edge_fraction)
            for cut in {layers // 2, (layers + 1) // 2}:  # equal layers: the middle is best
                share = cut / layers
                stages = ((edge + body * share, per_sample * share),
                          (edge + body * (1 - share), per_sample * (1 - share)))
                batch = min(largest_batch(usable(card), f, p) for f, p in stages)
                if best is None or batch > best[1]:
                    best = (cut, batch)
            if best is not None and best[1] > 0:
                out.append(SplitPlan(card.key, mode, best[0], best[1]))
    return tuple(out)
