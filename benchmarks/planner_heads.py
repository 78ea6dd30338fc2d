"""Benchmark: parameter counts of every task head of the corpus' families, against transformers.

Run from the repository root (reuses benchmarks/.venv-torch; build it with
``python benchmarks/planner_accuracy.py`` first):

    benchmarks/.venv-torch/bin/python benchmarks/planner_heads.py

For each corpus config, every head class transformers defines for its family
(``{Prefix}ForCausalLM``, ``ForMaskedLM``, ``ForSequenceClassification``,
``ForTokenClassification``, ``ForQuestionAnswering``, ``ForAudioClassification``,
``ForImageClassification`` and the bare ``Model`` with its pooler) is built on the meta device
from a variant of the config (2 layers, 12 labels given as id2label) and its unique
parameters counted; the planner counts the same config. Prints exact / total and the misses.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracker.extract.model_config import parse_model_config  # noqa: E402
from tracker.planner import plan  # noqa: E402

CONFIGS = ROOT.parent / "shared" / "hf-corpus" / "configs"
HEADS = ("ForCausalLM", "LMHeadModel", "ForMaskedLM", "ForSequenceClassification",
         "ForTokenClassification", "ForQuestionAnswering", "ForAudioClassification",
         "ForImageClassification", "Model")
LAYER_KEYS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_decoder_layers",
              "encoder_layers", "decoder_layers")


def count_unique(model: Any) -> int:
    """Unique parameters (tied weights once), as the planner counts them."""
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def main() -> int:
    import torch
    import transformers
    from transformers import AutoConfig

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    exact = total = 0
    misses = []
    for path in sorted(CONFIGS.glob("*.json")):
        if path.name == "params.json":
            continue
        base = json.loads(path.read_text())
        arch = (base.get("architectures") or [""])[0]
        prefix = next((arch[:arch.index(h)] for h in HEADS if h in arch), "")
        if not prefix or "auto_map" in base or parse_model_config(base).family is None:
            continue
        variant = {k: (2 if k in LAYER_KEYS and isinstance(v, int) else v) for k, v in base.items()}
        variant["id2label"] = {str(i): f"label_{i}" for i in range(12)}
        variant.pop("num_labels", None)
        for head in HEADS:
            cls = getattr(transformers, prefix + head, None)
            if cls is None:
                continue
            cfg = {**variant, "architectures": [prefix + head]}
            d = {k: v for k, v in cfg.items() if k not in ("transformers_version",)}
            try:
                conf = AutoConfig.for_model(d.pop("model_type"), **d)
                with torch.device("meta"):
                    theirs = count_unique(cls(conf))
            except Exception:  # a head that cannot be built from this config
                continue
            ours = plan(parse_model_config(cfg)).params.total
            total += 1
            if ours == theirs:
                exact += 1
            else:
                misses.append(f"{path.stem} {prefix + head}: planner {ours:,} vs {theirs:,} "
                              f"({ours - theirs:+,})")
    print(f"exact {exact} / {total}")
    for m in misses:
        print("  " + m)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
