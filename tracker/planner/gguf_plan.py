"""Plan a GGUF file: the class's graph from its header, serving memory by its real quant types.

Layer 1 (stage 5, plan), pure. A GGUF-only repo has no config.json; its header has the
hyper-parameters (turned into a config by ``tracker.extract.gguf_config``) and every
tensor's quant type and shape. The plan is the config's plan with two things taken from the
file itself: the checkpoint's scalar count (compared with the class's, as for safetensors)
and the serving weights, the bytes of its tensors as quantised (Q4_K, Q8_0, ...), plus the
KV cache at the planner's usual length in f16 (llama.cpp's default cache type).
"""

from __future__ import annotations

from dataclasses import replace

from tracker.model.plan import CostAssumptions, Finding, Level, ModelConfig, Plan
from tracker.planner import cards
from tracker.planner.build import plan


def plan_gguf(
    config: ModelConfig,
    *,
    tensor_bytes: int,
    tensor_scalars: int,
    bytes_by_type: dict[str, int],
    assumptions: CostAssumptions | None = None,
) -> Plan:
    """The plan of a GGUF model: ``plan(config)`` with the file's own weights for serving."""
    base = plan(config, checkpoint_params=tensor_scalars or None, assumptions=assumptions)
    if not base.supported or tensor_bytes <= 0:
        return base
    mem = replace(base.memory, serve_weights=tensor_bytes, stored_weights=tensor_bytes)
    fits = cards.fit_cards(mem)
    total = base.params.total
    groups = base.params.groups
    edge = (groups.get("embeddings", 0) + groups.get("head", 0)) / total if total else 0.0
    split = cards.split_cards(mem, fits, config.num_layers, edge)
    mix = ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in sorted(bytes_by_type.items(), key=lambda kv: -kv[1]))
    note = Finding(
        "gguf-weights", Level.INFO,
        f"planned from the GGUF header: serving weights are the file's tensors as quantised ({mix}), "
        "the KV cache in f16; training modes assume the bf16 weights the file was converted from",
        "Nothing to do; a different quant file of the repo serves with its own bytes.",
    )
    return replace(base, memory=mem, cards=fits, split=split, findings=(*base.findings, note))
