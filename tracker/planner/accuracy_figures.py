"""The planner's measured accuracy, written by benchmarks/planner_accuracy.py.

Layer 1 (stage 5, plan), data only: do not edit by hand; rerun
``python benchmarks/planner_accuracy.py`` to refresh it.
"""

#: Models traced.
MODELS = 24
#: Worst |estimate / traced - 1| in percent per component, by method.
WORST_ERROR_PCT: dict[str, dict[str, float]] = {"seed": {"activations": 92.7, "full_finetune": 43.5, "kv_cache": 0.2, "lora": 75.8, "lora_activations": 92.6, "weights": 0.1}, "traced": {"activations": 7.3, "full_finetune": 7.0, "kv_cache": 0.2, "lora": 7.5, "lora_activations": 9.3, "weights": 0.1}}
#: Models within +-10 % of the traced step per component, by method.
WITHIN_10_PCT: dict[str, dict[str, int]] = {"seed": {"activations": 0, "full_finetune": 16, "kv_cache": 18, "lora": 1, "lora_activations": 0, "weights": 24}, "traced": {"activations": 21, "full_finetune": 24, "kv_cache": 18, "lora": 24, "lora_activations": 24, "weights": 24}}
