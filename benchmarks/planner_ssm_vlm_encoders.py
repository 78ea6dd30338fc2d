"""Benchmark: parameter counts of the state-space, hybrid, vision-language, ModernBERT and MPNet
families, every head class included, against transformers on the meta device.

Run from the repository root (reuses benchmarks/.venv-torch; build it with
``python benchmarks/planner_accuracy.py`` first):

    benchmarks/.venv-torch/bin/python benchmarks/planner_ssm_vlm_encoders.py [--variants N] [--seed S]
    benchmarks/.venv-torch/bin/python benchmarks/planner_ssm_vlm_encoders.py --write-fixtures

For each family of benchmarks/ssm_vlm_encoder_configs.py: its published config and N random variants
(switches drawn at random), each built as every head class transformers defines for the family
(``{Prefix}Model``, ``ForCausalLM``, ``ForConditionalGeneration``, ``ForMaskedLM``,
``ForSequenceClassification``, ``ForTokenClassification``, ``ForQuestionAnswering``,
``ForMultipleChoice``) on the meta device, unique parameters counted; the planner counts the
same config. Prints exact / total per family and the misses. ``--write-fixtures`` writes the
published configs with transformers' counts to tests/planner/fixtures/families.json, which the
test suite checks without torch.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from planner_families import count_unique  # noqa: E402
from ssm_vlm_encoder_configs import FAMILIES, PREFIX, PUBLISHED, variant  # noqa: E402

from tracker.extract.model_config import parse_model_config  # noqa: E402
from tracker.planner import plan  # noqa: E402

HEADS = ("Model", "ForCausalLM", "ForConditionalGeneration", "ForMaskedLM",
         "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering",
         "ForMultipleChoice")
FIXTURES = ROOT / "tests" / "planner" / "fixtures" / "families.json"


def theirs(cfg: dict[str, Any], cls_name: str) -> int | None:
    """transformers' unique parameter count of ``cls_name`` built from ``cfg`` (meta device)."""
    import torch
    import transformers
    from transformers import AutoConfig

    cls = getattr(transformers, cls_name, None)
    if cls is None:
        return None
    d = {k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version")}
    conf = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device("meta"):
        return count_unique(cls(conf))


def heads_of(family: str) -> list[str]:
    import transformers

    return [PREFIX[family] + h for h in HEADS if hasattr(transformers, PREFIX[family] + h)]


def main() -> int:
    import transformers

    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", type=int, default=12)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--write-fixtures", action="store_true")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    rng = random.Random(args.seed)
    if args.write_fixtures:
        out = {}
        for name, cfg in PUBLISHED.items():
            arch = cfg["architectures"][0]
            out[name] = {"config": cfg, "transformers_params": theirs(cfg, arch),
                         "transformers_version": transformers.__version__}
            print(f"{name}: {out[name]['transformers_params']:,}")
        FIXTURES.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        return 0
    grand = [0, 0]
    for family in FAMILIES:
        configs = [c for c in PUBLISHED.values() if c["model_type"] == family]
        configs += [variant(family, rng) for _ in range(args.variants)]
        exact = total = 0
        misses = []
        for i, base in enumerate(configs):
            labels = rng.randint(2, 300)
            base = {**base, "id2label": {str(j): f"l{j}" for j in range(labels)}}
            for cls_name in heads_of(family):
                cfg = {**base, "architectures": [cls_name]}
                try:
                    ref = theirs(cfg, cls_name)
                except Exception as exc:  # a head this config cannot build
                    misses.append(f"  {family}#{i} {cls_name}: not built ({exc})"[:200])
                    continue
                if ref is None:
                    continue
                p = plan(parse_model_config(cfg))
                ours = p.params.total if p.supported else None
                total += 1
                if ours == ref:
                    exact += 1
                else:
                    diff = f"{ours - ref:+,}" if ours is not None else "unsupported"
                    misses.append(f"  {family}#{i} {cls_name}: planner {ours} vs {ref:,} ({diff})")
        grand[0] += exact
        grand[1] += total
        print(f"{family:<14} exact {exact} / {total}")
        for m in misses[:8]:
            print(m)
    print(f"all            exact {grand[0]} / {grand[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
