"""Compare the class's parameter count with the checkpoint's own (safetensors header totals).

Layer 1 (stage 5, plan), pure. A difference is explained when it is exactly made of known
parts a checkpoint stores beside the class's parameters: a pooler the class does not use,
position-id buffers, an LM head saved although tied, a logits bias buffer, rotary tables,
extra layers (DeepSeek's multi-token-prediction layers).
"""

from __future__ import annotations

from itertools import combinations

from tracker.model.core import WeightManifest
from tracker.model.plan import Finding, Level, ModelConfig
from tracker.planner.params import BERTS, DECODERS
from tracker.planner.tally import Tally


def checkpoint_scalars(manifest: WeightManifest) -> int | None:
    """Scalars in the safetensors files the loader reads, from their headers; None when incomplete.

    Only top-level weights count: the shards a top-level ``*.safetensors.index.json`` names,
    else the top-level ``*.safetensors`` files (copies under ``original/`` and the like are
    left out). None when there is no such file or a header was not read, so that a partial
    sum is never compared with the class's count.
    """
    shards: set[str] = set()
    for index_path, weight_map in manifest.index_weight_maps.items():
        if index_path.endswith(".safetensors.index.json") and "/" not in index_path:
            shards.update(weight_map.values())
    files = [f for f in manifest.files if f.format == "safetensors" and "/" not in f.path]
    if shards:
        files = [f for f in files if f.path in shards]
    if not files or any(f.tensors is None for f in files):
        return None
    return sum(t.numel for f in files for t in f.tensors or ())


def _candidates(cfg: ModelConfig, t: Tally) -> list[tuple[str, int]]:
    h, v = cfg.hidden_size, cfg.vocab_size
    out: list[tuple[str, int]] = []
    if cfg.family in BERTS | {"electra"}:
        out.append(("the pooler (dense + bias) that the class does not use", h * h + h))
    if cfg.context:
        out.append(("the position_ids buffer", cfg.context))
    if cfg.tie_word_embeddings and v and h:
        out.append(("the LM head stored although tied to the embeddings", v * h))
    if cfg.family == "bart":
        out.append(("the final_logits_bias buffer", v))
    if cfg.family in DECODERS and cfg.num_layers and cfg.head_dim:
        out.append(("rotary inv_freq buffers", cfg.num_layers * cfg.head_dim // 2))
    return [(name, n) for name, n in out if n > 0]


def explain(cfg: ModelConfig, t: Tally, checkpoint: int) -> tuple[float, str]:
    """(delta %, explanation) of ``t.total`` against the checkpoint's scalar count."""
    total = t.total
    delta = checkpoint - total
    pct = (total - checkpoint) / checkpoint * 100.0 if checkpoint else 0.0
    if delta == 0:
        return pct, "the checkpoint holds exactly the class's parameters"
    cands = _candidates(cfg, t)
    for k in (1, 2, 3):
        for combo in combinations(cands, k):
            if sum(n for _, n in combo) == delta:
                return pct, "the checkpoint also stores " + " and ".join(n for n, _ in combo)
    per_layer = _per_layer(cfg, t)
    if delta > 0 and per_layer and delta % per_layer == 0 and delta // per_layer <= 4:
        extra = delta // per_layer
        return pct, (f"the checkpoint stores {extra} more layer(s) than the class builds "
                     "(e.g. multi-token-prediction layers)")
    side = "more" if delta > 0 else "fewer"
    return pct, f"unexplained: the checkpoint has {abs(delta):,} {side} scalars than the class"


def _per_layer(cfg: ModelConfig, t: Tally) -> int:
    n = cfg.num_layers
    if not n:
        return 0
    body = t.total - t.groups.get("embeddings", 0) - t.groups.get("head", 0)
    return body // n if body % n == 0 else 0


def finding(pct: float, explanation: str) -> Finding | None:
    if explanation.startswith("the checkpoint holds exactly"):
        return None
    level = Level.WARNING if explanation.startswith("unexplained") else Level.INFO
    return Finding("checkpoint-param-delta", level,
                   f"Parameter count {pct:+.2f}% against the checkpoint: {explanation}.",
                   "Nothing to do when explained; otherwise compare the checkpoint's tensor "
                   "names with the class's state_dict.")
