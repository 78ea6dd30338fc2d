"""Plans and deltas as JSON (the ``plan --json`` contract of DESIGN.md) and as readable text.

Layer 1 (stage 5, plan), pure: values in, dicts and strings out.
"""

from __future__ import annotations

from typing import Any

from tracker.model.plan import CARD_KEYS, Finding, Plan, PlanDelta
from tracker.planner.accuracy import accuracy
from tracker.planner.cards import CARDS


def _finding(f: Finding) -> dict[str, str]:
    return {"id": f.id, "level": f.level.value, "message": f.message, "fix": f.fix}


def plan_to_json(plan: Plan) -> dict[str, Any]:
    """The contract shape; memory at batch 1, cards the largest batch (0: batch 1 does not fit).

    An unsupported plan keeps every key, with null numbers: nothing is made up.
    """
    ok = plan.supported
    m, p = plan.memory, plan.params
    cards: dict[str, Any] = {}
    for key in CARD_KEYS:
        fit = plan.card(key)
        cards[key] = ({"full_finetune": fit.full_finetune, "lora": fit.lora, "serve": fit.serve}
                      if fit is not None else {"full_finetune": None, "lora": None, "serve": None})
    cost: dict[str, Any] = {}
    if plan.cost is not None:
        a = plan.cost.assumptions
        cost = {"usd": round(plan.cost.usd, 2), "hours": plan.cost.hours, "flops": plan.cost.flops,
                "card": a.card_name, "price_per_hour": a.price_per_hour,
                "peak_flops": a.peak_flops, "achievable_fraction": a.achievable_fraction,
                "epochs": a.epochs, "batch_size": a.batch_size, "samples": a.samples,
                "tokens_per_sample": plan.cost.tokens_per_sample}
    return {
        "params": {"total": p.total if ok else None, "active": p.active if ok else None,
                   "checkpoint": p.checkpoint,
                   "delta_pct": round(p.delta_pct, 4) if p.delta_pct is not None else None,
                   "explanation": p.explanation, "groups": dict(p.groups)},
        "training_tokens": m.training_tokens if ok else None,
        "serve_tokens": m.serve_tokens if ok else None,
        "memory_bytes": {
            "full_finetune": m.full_finetune if ok else None,
            "lora": m.lora if ok else None,
            "serve_weights": m.serve_weights if ok else None,
            "kv_cache": m.kv_cache if ok else None,
            "activations_per_sample": m.activations if ok else None,
            "lora_adapter_params": m.lora_params if ok else None,
            "checkpoint_weights": m.stored_weights if ok else None,
            "kv_cache_full_context": m.kv_cache_full_context if ok else None,
            "recurrent_state": m.recurrent_state if ok else None,
            # largest batch = floor((card / 1.15 - fixed) / per_sample), per mode
            "fixed": {"full_finetune": m.full_fixed if ok else None,
                      "lora": m.lora_fixed if ok else None,
                      "serve": m.serve_weights if ok else None},
            "per_sample": {"full_finetune": m.activations if ok else None,
                           "lora": m.lora_per_sample if ok else None,
                           "serve": m.serve_per_sample if ok else None},
        },
        "method": m.method,
        "accuracy": accuracy(m.method),
        "context_tokens": m.context_tokens if ok else None,
        "cards": cards,
        "split": [{"card": s.card, "mode": s.mode, "cut_after_layer": s.cut_after_layer,
                   "batch": s.batch} for s in plan.split],
        "structure": [{"index": n.index, "name": n.name, "type": n.type, "shape": list(n.shape)}
                      for n in plan.structure],
        "findings": [_finding(f) for f in plan.findings],
        "cost": cost,
        "architecture": plan.architecture,
        "model_type": plan.model_type,
        "supported": ok,
        "dims": dict(plan.dims),
    }


def delta_to_json(delta: PlanDelta) -> dict[str, Any]:
    return {
        "summary": delta.summary,
        "is_empty": delta.is_empty,
        "params": {"total": list(delta.params_total), "active": list(delta.params_active)},
        "memory_bytes": {k: list(v) for k, v in delta.memory.items()},
        "kv_cache_factor": delta.kv_cache_factor,
        "cards": [{"card": c.card, "mode": c.mode, "before": c.before, "after": c.after}
                  for c in delta.cards],
        "findings_added": [_finding(f) for f in delta.findings_added],
        "findings_removed": [_finding(f) for f in delta.findings_removed],
        "dims": {k: list(v) for k, v in delta.dims.items()},
    }


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 10**8 else f"{n / 1e6:.0f} MB"


def render_plan_text(plan: Plan) -> str:
    """A readable page: parameters, memory, cards, structure, findings."""
    title = plan.architecture or plan.model_type or "config"
    lines = [f"{title} ({plan.model_type})"]
    if not plan.supported:
        lines.append("Not plannable.")
    else:
        p, m = plan.params, plan.memory
        lines.append(f"Parameters: {p.total:,} (active {p.active:,})")
        if p.checkpoint is not None and p.delta_pct is not None:
            lines.append(f"Checkpoint: {p.checkpoint:,} scalars, {p.delta_pct:+.2f}%: "
                         f"{p.explanation}")
        lines += [
            "",
            f"Memory at batch 1 ({m.training_tokens} training tokens, {m.serve_tokens} served; "
            f"method {m.method}):",
            f"  full fine-tune   {_gb(m.full_finetune)}  ({_gb(m.full_fixed)} fixed + "
            f"{_gb(m.activations)} per sample)",
            f"  LoRA r=16        {_gb(m.lora)}  ({_gb(m.lora_fixed)} fixed + "
            f"{_gb(m.lora_per_sample)} per sample)",
            f"  serve weights    {_gb(m.serve_weights)}",
            f"  KV cache         {_gb(m.kv_cache)} at {m.serve_tokens} tokens, "
            f"{_gb(m.kv_cache_full_context)} at the full context ({m.context_tokens})",
            "",
            f"{'Card':<20}{'Full fine-tune':>16}{'LoRA r=16':>12}{'Serve':>10}",
        ]
        for card in CARDS:
            fit = plan.card(card.key)
            if fit is not None:
                lines.append(f"{card.name:<20}{fit.full_finetune:>16}{fit.lora:>12}"
                             f"{fit.serve:>10}")
        for s in plan.split:
            lines.append(f"  two-card split on {s.card} for {s.mode}: cut after layer "
                         f"{s.cut_after_layer}, batch {s.batch}")
        if plan.cost is not None:
            a = plan.cost.assumptions
            lines.append(f"\nCost: ${plan.cost.usd:.2f} on {a.card_name} ({a.epochs} epochs, "
                         f"batch {a.batch_size}, {plan.cost.tokens_per_sample} tokens, "
                         f"{a.samples:,} samples; ${a.price_per_hour}/h, "
                         f"{a.achievable_fraction:g} of {a.peak_flops / 1e12:g} TFLOP/s)")
        lines += ["", f"Structure ({len(plan.structure)} nodes):"]
        for n in plan.structure:
            shape = " × ".join(str(d) for d in n.shape)
            lines.append(f"  {n.index:>4}  {n.name:<28}{n.type:<40}{shape}")
    lines += ["", "Findings:" if plan.findings else "Findings: none"]
    for f in plan.findings:
        lines.append(f"  [{f.level.value}] {f.id}: {f.message}")
        if f.fix:
            lines.append(f"      fix: {f.fix}")
    return "\n".join(lines) + "\n"


def render_delta_text(delta: PlanDelta) -> str:
    lines = [delta.summary]
    pa, pb = delta.params_total
    if pa != pb:
        lines.append(f"  parameters: {pa:,} -> {pb:,}")
    for k, (x, y) in delta.memory.items():
        lines.append(f"  {k}: {_gb(x)} -> {_gb(y)}")
    for c in delta.cards:
        lines.append(f"  {c.card} {c.mode}: batch {c.before} -> {c.after}")
    for k, (x, y) in delta.dims.items():
        lines.append(f"  {k}: {x} -> {y}")
    for f in delta.findings_added:
        lines.append(f"  + [{f.level.value}] {f.id}")
    for f in delta.findings_removed:
        lines.append(f"  - [{f.level.value}] {f.id}")
    return "\n".join(lines) + "\n"
