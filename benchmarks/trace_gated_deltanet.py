"""Benchmark: traced training steps of shrunk Qwen3-Next stacks, Gated DeltaNet against attention.

Run from the repository root with the torch virtualenv (see benchmarks/planner_accuracy.py):

    benchmarks/.venv-torch/bin/python benchmarks/trace_gated_deltanet.py [--write]

Three 4-layer stacks of one config (hidden 512, dense MLP): all Gated DeltaNet with 8 value
heads of 64 (A), all full attention (A-full), all Gated DeltaNet with 16 value heads of 32
and keys of 128 (B); each traced by benchmarks/trace_step.py (MemTracker on fake tensors,
bf16 autocast, AdamW foreach; LoRA through peft) at 2048 tokens, batch 2 and 4. Prints the
planner's per-sample activations and peaks over the traced ones; ``--write`` stores the
traces in benchmarks/planner_gdn_traces.json, which tests/planner/test_newest_families.py
checks the planner against.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "benchmarks" / "planner_gdn_traces.json"
BASE: dict[str, Any] = {
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 512,
    "intermediate_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_key_value_heads": 2, "head_dim": 64, "num_experts": 0, "linear_num_key_heads": 4,
    "linear_num_value_heads": 8, "linear_key_head_dim": 64, "linear_value_head_dim": 64,
    "linear_conv_kernel_dim": 4, "vocab_size": 4096, "max_position_embeddings": 4096,
    "tie_word_embeddings": False, "use_cache": False}
STACKS: dict[str, dict[str, Any]] = {
    "A": {**BASE, "layer_types": ["linear_attention"] * 4},
    "A-full": {**BASE, "layer_types": ["full_attention"] * 4},
    "B": {**BASE, "linear_num_key_heads": 2, "linear_num_value_heads": 16,
          "linear_key_head_dim": 128, "linear_value_head_dim": 32,
          "layer_types": ["linear_attention"] * 4},
}
TOKENS = 2048


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import trace_step

    out = {}
    for name, cfg in STACKS.items():
        t0 = time.process_time()
        tr = trace_step.trace_train(cfg, "causal", TOKENS, False, batches=(2, 4))
        out[name] = {"config": cfg, "tokens": TOKENS, "full": tr["full"], "lora": tr["lora"],
                     "cpu_seconds": round(time.process_time() - t0, 1)}
        print(name, out[name]["full"], out[name]["lora"], flush=True)
    if args.write:
        TRACES.write_text(json.dumps(out, indent=1) + "\n")
    report(out)
    return 0


def report(traces: dict[str, Any]) -> None:
    sys.path.insert(0, str(ROOT))
    from tracker.extract.model_config import parse_model_config
    from tracker.planner import plan

    for name, row in traces.items():
        m = plan(parse_model_config(row["config"]), tokens=row["tokens"]).memory
        full, lora = ({int(k): v for k, v in row[x].items()} for x in ("full", "lora"))
        per_full, per_lora = (full[4] - full[2]) / 2, (lora[4] - lora[2]) / 2
        print(f"{name:7} per-sample full {m.activations / per_full:.3f} "
              f"LoRA {m.lora_per_sample / per_lora:.3f}; peak at 4: full "
              f"{(m.full_fixed + 4 * m.activations) / full[4]:.3f} "
              f"LoRA {(m.lora_fixed + 4 * m.lora_per_sample) / lora[4]:.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
