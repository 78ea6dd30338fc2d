"""plan(config): count, size, fit and verify one model config.

Layer 1 (stage 5, plan), pure: values in, a :class:`Plan` out, no I/O. An unknown family
or a config whose core dimensions are unusable gives a plan with ``supported=False``, zero
numbers and a finding saying why, never an exception or a made-up number.
"""

from __future__ import annotations

from tracker.model.plan import (
    CostAssumptions,
    Finding,
    Level,
    MemoryPlan,
    ModelConfig,
    ParamCount,
    Plan,
)
from tracker.planner import cards, checkpoint, cost, verify
from tracker.planner.graph import build_graph
from tracker.planner.layers import layer_specs
from tracker.planner.memory import METHODS, memory_plan
from tracker.planner.params import SUPPORTED, count_params


def plan(config: ModelConfig, *, checkpoint_params: int | None = None,
         assumptions: CostAssumptions | None = None, method: str = "traced",
         tokens: int | None = None) -> Plan:
    """The plan of one parsed config.json (``parse_model_config``'s result).

    ``method`` names the memory method: ``traced`` (the default, calibrated against a traced
    training step) or ``seed`` (the seed pages' method, which reproduces their tables);
    ``tokens`` sets the training and serving length instead of the config's defaults.
    """
    if method not in METHODS:
        raise ValueError(f"unknown planner method {method!r}; one of {', '.join(METHODS)}")
    if tokens is not None and tokens < 1:
        raise ValueError("tokens must be a positive number")
    findings = verify.config_findings(config)
    if config.approximate:
        findings.insert(0, verify.approximate(config))
    if config.family not in SUPPORTED or config.fatal:
        if config.family not in SUPPORTED:
            findings.insert(0, verify.unsupported(config))
        return _empty(config, findings, checkpoint_params)
    try:
        return _plan(config, findings, checkpoint_params, assumptions or CostAssumptions(),
                     method, tokens)
    except Exception as exc:  # hostile values not foreseen: a finding, never an exception
        findings.append(Finding("planner-error", Level.ERROR,
                                f"the config could not be sized: {type(exc).__name__}: {exc}",
                                "Check config.json's dimensions."))
        return _empty(config, findings, checkpoint_params)


def _plan(cfg: ModelConfig, findings: list[Finding], ckpt: int | None,
          a: CostAssumptions, method: str, tokens: int | None) -> Plan:
    counted = count_params(cfg)
    t = counted.tally
    for note in counted.notes:
        findings.append(Finding("head-unknown", Level.WARNING, note,
                                "Use a standard class name in architectures[0]."))
    total, active = t.total, t.total - t.inactive
    pct: float | None = None
    why = ""
    if ckpt is not None and ckpt > 0:
        pct, why = checkpoint.explain(cfg, t, ckpt)
        f = checkpoint.finding(pct, why)
        if f is not None:
            findings.append(f)
    specs = layer_specs(cfg)
    mem = memory_plan(cfg, t, specs, method, tokens)
    fits = cards.fit_cards(mem)
    edge = (t.groups.get("embeddings", 0) + t.groups.get("head", 0)) / total if total else 0.0
    split = cards.split_cards(mem, fits, cfg.num_layers, edge)
    findings += verify.fit_findings(cfg, [f.serve for f in fits],
                                    any(s.mode == "serve" for s in split))
    width = max((s.q_dim for s in specs), default=cfg.hidden_size)
    estimate = cost.estimate(active, len(specs), width, mem.serve_tokens, a)
    return Plan(
        model_type=cfg.model_type, architecture=cfg.architecture, supported=True,
        params=ParamCount(total, active, ckpt, pct, why,
                          {k: v for k, v in sorted(t.groups.items()) if v}),
        memory=mem, cards=fits, split=split, structure=build_graph(cfg, specs),
        findings=tuple(findings), cost=estimate, dims=_dims(cfg, specs),
    )


def _dims(cfg: ModelConfig, specs: tuple[object, ...]) -> dict[str, object]:
    return {
        "family": cfg.family, "layers": cfg.num_layers, "hidden": cfg.hidden_size,
        "heads": cfg.num_heads, "kv_heads": cfg.num_kv_heads, "head_dim": cfg.head_dim,
        "intermediate": cfg.intermediate_size, "vocab": cfg.vocab_size, "context": cfg.context,
        "experts": cfg.num_experts, "experts_per_token": cfg.experts_per_token,
        "sliding_window": cfg.sliding_window, "tied_embeddings": cfg.tie_word_embeddings,
        "quantization": cfg.quantization.method if cfg.quantization else None,
        "approximate": cfg.approximate,
    }


def _empty(cfg: ModelConfig, findings: list[Finding], ckpt: int | None) -> Plan:
    return Plan(
        model_type=cfg.model_type, architecture=cfg.architecture, supported=False,
        params=ParamCount(0, 0, ckpt, None, ""),
        memory=MemoryPlan(0, 0, 0, 0, 0, 0, 0, 0), cards=(), split=(), structure=(),
        findings=tuple(findings), cost=None, dims={"family": cfg.family},
    )
