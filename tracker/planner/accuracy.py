"""The planner's measured accuracy, as the plan document and the model page quote it.

Layer 1 (stage 5, plan), pure: the figures are data that benchmarks/planner_accuracy.py
wrote into :mod:`tracker.planner.accuracy_figures`; nothing here measures anything.
"""

from __future__ import annotations

from typing import Any

from tracker.planner import accuracy_figures as figures

BENCHMARK = "benchmarks/planner_accuracy.py"
_NAMES = {"full_finetune": "full fine-tune peak", "activations": "per-sample activations",
          "lora": "LoRA peak"}


def accuracy(method: str) -> dict[str, Any]:
    """The benchmark's figures for ``method`` (``traced`` or ``seed``) and a sentence."""
    worst = figures.WORST_ERROR_PCT.get(method, {})
    within = figures.WITHIN_10_PCT.get(method, {})
    if not figures.MODELS or not worst:
        return {"method": method, "models": 0, "benchmark": BENCHMARK, "worst_error_pct": {},
                "within_10_pct": {}, "summary": f"The {method} method has not been measured "
                f"against a traced step in this build ({BENCHMARK})."}
    parts = [f"{label} within {worst[key]:g} %" for key, label in _NAMES.items() if key in worst]
    summary = (f"Against a traced training step on {figures.MODELS} models ({BENCHMARK}), "
               f"the {method} method's worst errors: " + ", ".join(parts) + "; weights "
               f"within {worst.get('weights', 0):g} %, KV cache within "
               f"{worst.get('kv_cache', 0):g} %.")
    return {"method": method, "models": figures.MODELS, "benchmark": BENCHMARK,
            "worst_error_pct": dict(worst), "within_10_pct": dict(within), "summary": summary}
