"""compare(a, b): what a revision's config change does to the plan, in one line and as data.

Layer 1 (stage 5, plan), pure. ``a`` is the old plan, ``b`` the new one; the summary reads
like "KV cache x8; no longer serves on T4".
"""

from __future__ import annotations

from tracker.model.plan import CARD_KEYS, MODES, CardChange, Plan, PlanDelta

_CARD_NAMES = {"t4": "T4", "l4": "L4", "a100-40": "A100 40GB", "a100-80": "A100 80GB",
               "h200": "H200"}
_MODE_VERBS = {"full_finetune": "full fine-tunes", "lora": "LoRA-trains", "serve": "serves"}


def _memory(p: Plan) -> dict[str, int]:
    m = p.memory
    return {"full_finetune": m.full_finetune, "lora": m.lora, "serve_weights": m.serve_weights,
            "kv_cache": m.kv_cache, "activations": m.activations}


def compare(a: Plan, b: Plan) -> PlanDelta:
    """The delta from plan ``a`` (old) to plan ``b`` (new)."""
    ma, mb = _memory(a), _memory(b)
    memory = {k: (ma[k], mb[k]) for k in ma if ma[k] != mb[k]}
    kv = None
    if a.memory.kv_cache and b.memory.kv_cache and a.memory.kv_cache != b.memory.kv_cache:
        kv = b.memory.kv_cache / a.memory.kv_cache
    changes = []
    for key in CARD_KEYS:
        ca, cb = a.card(key), b.card(key)
        for mode in MODES:
            before = ca.batch(mode) if ca else 0
            after = cb.batch(mode) if cb else 0
            if before != after:
                changes.append(CardChange(key, mode, before, after))
    fa = {f.id for f in a.findings}  # by id: a finding whose numbers moved is not new
    fb = {f.id for f in b.findings}
    added = tuple(f for f in b.findings if f.id not in fa)
    removed = tuple(f for f in a.findings if f.id not in fb)
    dims = {k: (a.dims.get(k), b.dims.get(k)) for k in sorted(set(a.dims) | set(b.dims))
            if a.dims.get(k) != b.dims.get(k)}
    if (a.model_type, a.architecture) != (b.model_type, b.architecture):
        dims["architecture"] = (a.architecture, b.architecture)
    delta = PlanDelta(
        params_total=(a.params.total, b.params.total),
        params_active=(a.params.active, b.params.active),
        memory=memory, kv_cache_factor=kv, cards=tuple(changes),
        findings_added=added, findings_removed=removed, dims=dims, summary="",
    )
    return PlanDelta(delta.params_total, delta.params_active, delta.memory, kv, delta.cards,
                     added, removed, dims, _summary(a, b, delta))


def _factor(x: float) -> str:
    return f"x{x:.0f}" if abs(x - round(x)) < 0.05 else f"x{x:.2f}"


def _summary(a: Plan, b: Plan, d: PlanDelta) -> str:
    parts: list[str] = []
    if a.supported != b.supported:
        parts.append("now plannable" if b.supported else "no longer plannable")
    pa, pb = d.params_total
    if pa != pb and pa and pb:
        parts.append(f"parameters {_human(pa)} -> {_human(pb)} ({(pb - pa) / pa * 100:+.1f}%)")
    if d.kv_cache_factor is not None:
        parts.append(f"KV cache {_factor(d.kv_cache_factor)}")
    ctx = d.dims.get("context")
    if ctx is not None:
        parts.append(f"context {ctx[0]} -> {ctx[1]}")
    parts += _fit_phrases(d.cards)
    parts += [f"new finding {f.id}" for f in d.findings_added if f.level.value != "info"]
    if not parts:  # nothing that moves memory or fit: say what did change
        parts += [f"{k} {a} -> {b}" for k, (a, b) in sorted(d.dims.items()) if k != "context"]
        parts += [f"finding {f.id} added" for f in d.findings_added]
        parts += [f"finding {f.id} gone" for f in d.findings_removed]
    return "; ".join(parts) if parts else "no change to the plan"


def _fit_phrases(changes: tuple[CardChange, ...]) -> list[str]:
    stops: dict[str, list[str]] = {}
    starts: dict[str, list[str]] = {}
    for c in changes:
        if c.stops_fitting:
            stops.setdefault(c.mode, []).append(_CARD_NAMES.get(c.card, c.card))
        elif c.starts_fitting:
            starts.setdefault(c.mode, []).append(_CARD_NAMES.get(c.card, c.card))
    out = [f"no longer {_MODE_VERBS[m]} on {', '.join(cs)}" for m, cs in stops.items()]
    out += [f"now {_MODE_VERBS[m]} on {', '.join(cs)}" for m, cs in starts.items()]
    return out


def _human(n: int) -> str:
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return str(n)

