"""Benchmark: parameter counts of the newest decoder families against transformers.

Run from the repository root (reuses benchmarks/.venv-torch; build it with
``python benchmarks/planner_accuracy.py`` first, which installs ``torch==2.13.0`` CPU,
transformers and peft):

    benchmarks/.venv-torch/bin/python benchmarks/planner_families.py [--variants N] [--seed S]
    benchmarks/.venv-torch/bin/python benchmarks/planner_families.py --write-fixtures

For every family of tracker/planner/params_newest.py (and Llama 4's multimodal class), N
random variants of its config (dimensions, head and KV-head counts, explicit head_dim,
biases, tied embeddings, expert counts and the per-layer patterns: MoE interleaving, dense
prefixes, linear/full attention, sliding and chunked layers, labels) are built on the meta
device with every head class transformers defines for the family (``ForCausalLM``,
``ForSequenceClassification``, ``ForTokenClassification``, ``ForQuestionAnswering``, the
bare ``Model``, ``ForConditionalGeneration``), their unique parameters counted and compared
with the planner's count of the same config. Prints exact / total and every miss.

``--write-fixtures`` counts the published-shape configs of tests/fixtures/newest/ the same
way (the checkpoint's class and every other head class of its family, with the config's
labels) and writes their counts to tests/fixtures/newest/params.json, which the CI test
tests/planner/test_newest_families.py checks without torch.
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

from planner_heads import count_unique  # noqa: E402

from tracker.extract.model_config import parse_model_config  # noqa: E402
from tracker.planner import plan  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "newest"
HEADS = ("ForCausalLM", "ForSequenceClassification", "ForTokenClassification",
         "ForQuestionAnswering", "Model", "TextModel", "ForConditionalGeneration")
#: model_type -> the class-name prefix transformers uses for it.
PREFIX = {"olmoe": "Olmoe", "olmo3": "Olmo3", "glm4_moe": "Glm4Moe", "llama4_text": "Llama4",
          "qwen3_next": "Qwen3Next", "qwen3_5_moe_text": "Qwen3_5Moe", "llama4": "Llama4",
          "smollm3": "SmolLM3", "glm4": "Glm4", "seed_oss": "SeedOss", "minimax_m2": "MiniMaxM2",
          "exaone4": "Exaone4", "qwen3_5_text": "Qwen3_5", "qwen3_5": "Qwen3_5",
          "qwen3_5_moe": "Qwen3_5Moe", "gemma4_text": "Gemma4",
          "cohere2": "Cohere2", "ernie4_5": "Ernie4_5", "ernie4_5_moe": "Ernie4_5_Moe",
          "deepseek_v32": "DeepseekV32", "gemma4": "Gemma4"}
#: Classes whose config is the composite one (the others take the text config).
COMPOSITE_HEADS = {"llama4": ("ForConditionalGeneration",),
                   "qwen3_5": ("ForConditionalGeneration", "ForSequenceClassification",
                               "ForTokenClassification", "Model"),
                   "qwen3_5_moe": ("ForConditionalGeneration", "Model"),
                   "gemma4": ("ForConditionalGeneration", "Model")}


def _attn(r: random.Random) -> dict[str, Any]:
    heads = r.choice([2, 4, 8])
    kv = r.choice([k for k in (1, 2, 4, 8) if heads % k == 0])
    hidden = heads * r.choice([8, 16, 24])
    cfg: dict[str, Any] = {"hidden_size": hidden, "num_attention_heads": heads,
                           "num_key_value_heads": kv, "vocab_size": r.randint(100, 700),
                           "intermediate_size": r.choice([32, 48, 96]),
                           "num_hidden_layers": r.randint(2, 6),
                           "tie_word_embeddings": r.random() < 0.3,
                           "attention_bias": r.random() < 0.4,
                           "max_position_embeddings": 512, "pad_token_id": 0}
    if r.random() < 0.5:
        cfg["head_dim"] = r.choice([8, 16, 32])
    return cfg


def variant(model_type: str, r: random.Random) -> dict[str, Any]:
    """A random small config of ``model_type`` that transformers can build."""
    cfg = _attn(r)
    e = r.randint(2, 8)
    if model_type == "olmoe":
        cfg.pop("head_dim", None)  # OLMoE sizes q_norm from hidden_size: keep them consistent
        cfg |= {"num_experts": e, "num_experts_per_tok": r.randint(1, e)}
    elif model_type == "olmo3":
        cfg |= {"sliding_window": r.choice([16, 64])}
        if r.random() < 0.5:
            cfg["layer_types"] = [r.choice(["sliding_attention", "full_attention"])
                                  for _ in range(cfg["num_hidden_layers"])]
    elif model_type == "glm4_moe":
        cfg |= {"n_routed_experts": e, "num_experts_per_tok": r.randint(1, e),
                "moe_intermediate_size": r.choice([16, 24]), "n_shared_experts": r.randint(1, 2),
                "first_k_dense_replace": r.randint(0, 2), "use_qk_norm": r.random() < 0.5,
                "n_group": 1, "topk_group": 1, "partial_rotary_factor": 0.5}
    elif model_type == "llama4_text":
        cfg |= {"num_local_experts": e, "num_experts_per_tok": 1,
                "intermediate_size_mlp": r.choice([64, 128]),
                "interleave_moe_layer_step": r.randint(1, 2),
                "no_rope_layer_interval": r.randint(2, 4), "use_qk_norm": r.random() < 0.7,
                "attention_chunk_size": r.choice([None, 32])}
        cfg.setdefault("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    elif model_type in ("qwen3_next", "qwen3_5_moe_text", "qwen3_5_text"):
        cfg |= {"num_experts": e, "num_experts_per_tok": r.randint(1, e),
                "moe_intermediate_size": r.choice([16, 24]),
                "shared_expert_intermediate_size": r.choice([16, 32]),
                "linear_num_key_heads": r.choice([1, 2]), "linear_num_value_heads": r.choice([2, 4]),
                "linear_key_head_dim": r.choice([8, 16]), "linear_value_head_dim": r.choice([8, 16]),
                "linear_conv_kernel_dim": r.choice([2, 4]), "full_attention_interval": r.randint(2, 3)}
        cfg.setdefault("head_dim", r.choice([8, 16]))
        if model_type == "qwen3_5_text":
            for k in ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
                      "shared_expert_intermediate_size"):
                cfg.pop(k)
        if model_type == "qwen3_next":
            cfg |= {"decoder_sparse_step": r.randint(1, 2),
                    "mlp_only_layers": r.sample(range(cfg["num_hidden_layers"]), r.randint(0, 1))}
    elif model_type == "smollm3":
        cfg |= {"mlp_bias": r.random() < 0.4, "no_rope_layer_interval": r.randint(2, 4),
                "use_sliding_window": r.random() < 0.5, "sliding_window": r.choice([None, 32])}
    elif model_type == "seed_oss":
        cfg |= {"mlp_bias": r.random() < 0.4, "attention_out_bias": r.random() < 0.5}
        cfg.setdefault("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    elif model_type == "minimax_m2":
        cfg |= {"num_local_experts": e, "num_experts_per_tok": r.randint(1, e)}
        cfg.setdefault("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    elif model_type == "cohere2":
        cfg |= {"sliding_window": r.choice([16, 64]), "sliding_window_pattern": r.randint(2, 4)}
    elif model_type == "ernie4_5":
        cfg |= {"use_bias": r.random() < 0.5}
    elif model_type == "ernie4_5_moe":
        cfg |= {"use_bias": r.random() < 0.5, "moe_num_experts": e, "moe_k": r.randint(1, e),
                "moe_intermediate_size": r.choice([16, 24]), "moe_num_shared_experts": r.randint(0, 2),
                "moe_layer_start_index": r.randint(0, 1), "moe_layer_interval": r.randint(1, 2)}
    elif model_type == "deepseek_v32":
        heads = cfg["num_attention_heads"]
        cfg |= {"n_routed_experts": e, "num_experts_per_tok": r.randint(1, e), "n_group": 1,
                "topk_group": 1, "n_shared_experts": r.randint(1, 2),
                "moe_intermediate_size": r.choice([16, 24]), "first_k_dense_replace": r.randint(0, 2),
                "q_lora_rank": r.choice([16, 32]), "kv_lora_rank": r.choice([16, 32]),
                "qk_nope_head_dim": r.choice([8, 16]), "qk_rope_head_dim": 8,
                "v_head_dim": r.choice([8, 16]), "num_key_value_heads": heads,
                "index_n_heads": r.choice([2, 4]), "index_head_dim": r.choice([8, 16]),
                "index_topk": 16}
        cfg.pop("head_dim", None)
    elif model_type == "exaone4":
        cfg |= {"sliding_window": r.choice([16, 64]), "sliding_window_pattern": r.randint(2, 4)}
    elif model_type in ("qwen3_5", "qwen3_5_moe"):
        text = variant(model_type + "_text", r)
        vh = r.choice([2, 4]) * 8
        labels = text.pop("id2label")
        return {"model_type": model_type, "tie_word_embeddings": r.random() < 0.3, "id2label": labels,
                "text_config": text,
                "vision_config": {"model_type": model_type + "_vision", "hidden_size": vh,
                                  "num_heads": vh // 8, "depth": r.randint(1, 2),
                                  "intermediate_size": r.choice([32, 64]), "patch_size": 4,
                                  "temporal_patch_size": r.choice([1, 2]),
                                  "spatial_merge_size": r.choice([1, 2]),
                                  "num_position_embeddings": r.choice([16, 64]),
                                  "out_hidden_size": text["hidden_size"]}}
    elif model_type == "gemma4_text":
        n = cfg["num_hidden_layers"] = r.randint(3, 8)
        cfg |= {"sliding_window": r.choice([16, 64]), "hidden_size_per_layer_input": r.choice([0, 8]),
                "vocab_size_per_layer_input": cfg["vocab_size"],
                "attention_k_eq_v": r.random() < 0.5, "num_kv_shared_layers": r.randint(0, 1),
                "use_double_wide_mlp": r.random() < 0.5, "enable_moe_block": r.random() < 0.5,
                "num_experts": e, "top_k_experts": r.randint(1, e),
                "moe_intermediate_size": r.choice([16, 24]),
                "global_head_dim": r.choice([16, 32]),
                "layer_types": [r.choice(["sliding_attention", "full_attention"])
                                for _ in range(n - 1)] + ["full_attention"]}
        if r.random() < 0.5:
            cfg["num_global_key_value_heads"] = 1
        if cfg["num_kv_shared_layers"] and cfg["layer_types"][0] != "sliding_attention":
            cfg["layer_types"][0] = "sliding_attention"  # a producer of each shared type
        cfg["layer_types"][-2] = "full_attention"
        cfg["layer_types"][-3] = "sliding_attention"
    elif model_type == "gemma4":
        return _gemma4(r)
    elif model_type == "llama4":
        text = variant("llama4_text", r)
        vh = r.choice([2, 4]) * 8
        return {"model_type": "llama4", "tie_word_embeddings": r.random() < 0.3,
                "text_config": {**text, "model_type": "llama4_text"},
                "vision_config": {"model_type": "llama4_vision_model", "hidden_size": vh,
                                  "num_attention_heads": vh // 8, "num_hidden_layers": r.randint(1, 2),
                                  "intermediate_size": r.choice([32, 64]), "image_size": 56,
                                  "patch_size": r.choice([14, 28]), "vision_output_dim": 48,
                                  "projector_input_dim": 48, "projector_output_dim": 48,
                                  "pixel_shuffle_ratio": 0.5}}
    cfg["model_type"] = model_type
    labels = r.randint(2, 20)
    cfg["id2label"] = {str(i): f"label_{i}" for i in range(labels)}
    return cfg


def _gemma4(r: random.Random) -> dict[str, Any]:
    """Gemma 4's composite config: its text model, a vision and an audio tower, either absent."""
    text = variant("gemma4_text", r)
    text.pop("id2label")
    cfg: dict[str, Any] = {"model_type": "gemma4", "tie_word_embeddings": r.random() < 0.7,
                           "text_config": text}
    if r.random() < 0.7:
        heads = r.choice([2, 4])
        cfg["vision_config"] = {
            "hidden_size": heads * r.choice([8, 16]), "num_attention_heads": heads,
            "num_key_value_heads": r.choice([k for k in (1, 2, 4) if heads % k == 0]),
            "head_dim": r.choice([8, 16]), "num_hidden_layers": r.randint(1, 3),
            "intermediate_size": r.choice([32, 64]), "patch_size": r.choice([2, 4]),
            "position_embedding_size": r.choice([16, 64]), "pooling_kernel_size": 2,
            "use_clipped_linears": r.random() < 0.5, "standardize": r.random() < 0.5}
    if r.random() < 0.6:
        heads = r.choice([2, 4])
        cfg["audio_config"] = {
            "hidden_size": heads * r.choice([8, 12]), "num_attention_heads": heads,
            "num_hidden_layers": r.randint(1, 3), "conv_kernel_size": r.choice([3, 5]),
            "subsampling_conv_channels": [r.choice([8, 12, 16]), r.choice([4, 8])],
            "output_proj_dims": r.choice([16, 24]), "use_clipped_linears": r.random() < 0.5}
    return cfg


def theirs(cfg: dict[str, Any], cls_name: str) -> int | None:
    """transformers' count of ``cls_name`` built on the meta device; None where undefined."""
    import torch
    import transformers
    from transformers import AutoConfig

    cls = getattr(transformers, cls_name, None)
    if cls is None:
        return None
    d = {k: v for k, v in cfg.items() if k not in ("transformers_version", "architectures")}
    conf = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device("meta"):
        return count_unique(cls(conf))


def ours(cfg: dict[str, Any], cls_name: str) -> int:
    return plan(parse_model_config({**cfg, "architectures": [cls_name]})).params.total


def head_classes(model_type: str) -> list[str]:
    import transformers

    heads = COMPOSITE_HEADS.get(model_type, HEADS)
    names = [PREFIX[model_type] + h for h in heads]
    if model_type == "llama4_text":  # the text model's classes; the multimodal one is "llama4"
        names = [n for n in names if not n.endswith(("ForConditionalGeneration", "Model"))
                 or n.endswith("TextModel")]
    if model_type == "qwen3_5_moe_text":
        names = [n for n in names if not n.endswith(("ForConditionalGeneration", "5MoeModel"))]
    if model_type == "gemma4_text":
        names = ["Gemma4ForCausalLM", "Gemma4TextModel"]
    if model_type == "qwen3_5_text":  # the text config's classes (the others take the composite)
        names = ["Qwen3_5ForCausalLM", "Qwen3_5TextModel", "Qwen3_5TextForSequenceClassification"]
    return [n for n in names if getattr(transformers, n, None) is not None]


def run_variants(n: int, seed: int) -> int:
    r = random.Random(seed)
    exact = total = 0
    misses: list[str] = []
    per_family: dict[str, list[int]] = {}
    for model_type in PREFIX:
        for _ in range(n):
            cfg = variant(model_type, r)
            for cls_name in head_classes(model_type):
                want = theirs(cfg, cls_name)
                if want is None:
                    continue
                got = ours(cfg, cls_name)
                total += 1
                fam = per_family.setdefault(model_type, [0, 0])
                fam[1] += 1
                if got == want:
                    exact += 1
                    fam[0] += 1
                else:
                    misses.append(f"{cls_name} {json.dumps(cfg, sort_keys=True)[:300]}: planner "
                                  f"{got:,} vs {want:,} ({got - want:+,})")
    for model_type, (ok, all_) in per_family.items():
        print(f"  {model_type:18} {ok} / {all_}")
    print(f"exact {exact} / {total}")
    for m in misses[:40]:
        print("  MISS " + m)
    return 0 if exact == total else 1


def write_fixtures() -> int:
    table: dict[str, Any] = {}
    for path in sorted(FIXTURES.glob("*.json")):
        if path.name == "params.json":
            continue
        cfg = json.loads(path.read_text())
        arch = cfg["architectures"][0]
        want = theirs(cfg, arch)
        heads: dict[str, int] = {}
        for cls_name in head_classes(cfg["model_type"]):
            if cls_name != arch:
                heads[cls_name] = theirs(cfg, cls_name) or 0
        table[path.name] = {"architecture": arch, "params": want, "heads": heads}
        for name, count in [(arch, want), *heads.items()]:
            got = ours(cfg, name)
            print(f"{path.name[:44]:44} {name:38} transformers {count:>16,}  planner "
                  f"{got:>16,}  {'exact' if count == got else f'{got - count:+,}'}")
    (FIXTURES / "params.json").write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", type=int, default=12, help="random configs per family")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--write-fixtures", action="store_true")
    args = ap.parse_args()
    import transformers

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    print(f"transformers {transformers.__version__}")
    if args.write_fixtures:
        return write_fixtures()
    return run_variants(args.variants, args.seed)


if __name__ == "__main__":
    raise SystemExit(main())
