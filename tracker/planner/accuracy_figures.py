"""The planner's measured accuracy, written by benchmarks/planner_accuracy.py.

Layer 1 (stage 5, plan), data only: do not edit by hand; rerun
``python benchmarks/planner_accuracy.py`` to refresh it.
"""

#: Models traced.
MODELS = 0
#: Worst |estimate / traced - 1| in percent per component, by method.
WORST_ERROR_PCT: dict[str, dict[str, float]] = {"seed": {}, "traced": {}}
#: Models within +-10 % of the traced step per component, by method.
WITHIN_10_PCT: dict[str, dict[str, int]] = {"seed": {"activations": 0, "full_finetune": 0, "kv_cache": 0, "lora": 0, "lora_activations": 0, "weights": 0}, "traced": {"activations": 0, "full_finetune": 0, "kv_cache": 0, "lora": 0, "lora_activations": 0, "weights": 0}}
