"""Benchmark: the planner's memory estimates against a traced training step, model by model.

Run from the repository root (it builds its own virtualenv on the first run):

    python benchmarks/planner_accuracy.py [--only NAME ...] [--no-write]

The virtualenv is benchmarks/.venv-torch (git-ignored) with ``torch==2.13.0`` (exactly that
pin: the CPU build this machine's wheel directory holds; an open range would fetch a CUDA
build of several GB), transformers and peft. For every model of
benchmarks/accuracy_models.py it traces, with torch.distributed._tools.mem_tracker.MemTracker
(benchmarks/trace_step.py): a full fine-tune step and a LoRA step at batch 1, 2 and 4, and a
bf16 prefill; then compares the planner's default (``traced``) and ``seed`` methods:

- full fine-tune and LoRA peak at batch 1;
- per-sample activations: what a sample adds at the peak, (peak at 4 - peak at 2) / 2;
- bf16 weights and the KV cache one prefill returns.

It writes the table into benchmarks/RESULTS.md (between its markers) and the worst error
per component into tracker/planner/accuracy_figures.py, which the model page quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "benchmarks" / ".venv-torch"
PINS = ("torch==2.13.0", "transformers", "peft")
BEGIN, END = "<!-- planner-accuracy:begin -->", "<!-- planner-accuracy:end -->"
FIGURES = ROOT / "tracker" / "planner" / "accuracy_figures.py"
TRACES = ROOT / "benchmarks" / "planner_accuracy_traces.json"


def _in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def _ensure_venv() -> None:
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = subprocess.run([str(py), "-c", "import torch, transformers, peft"],
                           capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PINS], check=True)
    os.execv(str(py), [str(py), *sys.argv])


def _ratio(est: float, traced: float) -> float | None:
    return est / traced if traced else None


def trace(name: str, cfg: dict[str, Any], task: str, real: bool) -> dict[str, Any]:
    """The traced figures of one model (needs the torch virtualenv)."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import trace_step
    from accuracy_models import TOKENS

    from tracker.extract.model_config import parse_model_config
    from tracker.planner import plan

    m = plan(parse_model_config(cfg), tokens=TOKENS.get(name)).memory
    s, serve = m.training_tokens, m.serve_tokens
    t0 = time.perf_counter()
    tr = trace_step.trace_train(cfg, task, s, real)
    sv = trace_step.trace_serve(cfg, task, serve, real)
    full, lora = tr["full"], tr["lora"]
    return {"name": name, "tokens": s, "serve_tokens": serve, "attention": tr["attention"],
            "real": real, "seconds": round(time.perf_counter() - t0, 1),
            "peaks": {"full": full, "lora": lora},
            "traced": {
                "full_finetune": full[1], "activations": (full[4] - full[2]) / 2,
                "lora": lora[1], "lora_activations": (lora[4] - lora[2]) / 2,
                "weights": sv["weights"], "kv_cache": sv["kv_cache"]}}


def estimate(row: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    """Both methods' estimates beside a model's traced figures (pure: no torch)."""
    sys.path.insert(0, str(ROOT))
    from accuracy_models import TOKENS

    from tracker.extract.model_config import parse_model_config
    from tracker.planner import plan

    parsed = parse_model_config(cfg)
    tokens = TOKENS.get(row["name"])
    traced_plan = plan(parsed, tokens=tokens)
    seed_plan = plan(parsed, method="seed", tokens=tokens)
    m, sm = traced_plan.memory, seed_plan.memory
    est = {"full_finetune": m.full_finetune, "activations": m.activations, "lora": m.lora,
           "lora_activations": m.lora_per_sample, "weights": m.serve_weights,
           "kv_cache": m.kv_cache}
    seed = {"full_finetune": sm.full_finetune, "activations": sm.activations, "lora": sm.lora,
            "lora_activations": sm.activations, "weights": sm.serve_weights,
            "kv_cache": sm.kv_cache}
    peaks = {int(k): v for k, v in row["peaks"]["full"].items()}
    row = _mask_unmeasured(row)
    t4_traced, t4_seed = traced_plan.card("t4"), seed_plan.card("t4")
    return {**row, "estimate": est, "seed": seed,
            "t4": {"traced_method": t4_traced.full_finetune if t4_traced else 0,
                   "seed_method": t4_seed.full_finetune if t4_seed else 0,
                   "traced_step": _largest_batch(peaks, 16e9 / 1.15)}}


def _mask_unmeasured(row: dict[str, Any]) -> dict[str, Any]:
    """A per-sample slope only where batch 2 is already past the optimizer step's peak (the
    step's peak does not grow with the batch, so while it is the peak no slope shows)."""
    traced = dict(row["traced"])
    for mode, key in (("full", "activations"), ("lora", "lora_activations")):
        p = {int(k): v for k, v in row["peaks"][mode].items()}
        if p[2] <= p[1] * 1.001:
            traced[key] = 0
    return {**row, "traced": traced}


def _largest_batch(peaks: dict[int, int], usable: float) -> int | str:
    """The traced step's largest batch: its peaks at 2 and 4 extended linearly ("-" where the
    optimizer step is the peak up to batch 4, so that no per-sample slope shows)."""
    per = (peaks[4] - peaks[2]) / 2
    fixed = peaks[2] - 2 * per
    if peaks[1] > usable:
        return 0
    if per <= 0:
        return "-"
    return int((usable - fixed) // per)


COMPONENTS = ("full_finetune", "activations", "lora", "lora_activations", "weights", "kv_cache")
LABELS = {"full_finetune": "full FT peak", "activations": "per-sample activations",
          "lora": "LoRA peak", "lora_activations": "LoRA per-sample", "weights": "bf16 weights",
          "kv_cache": "KV cache"}


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def render(rows: list[dict[str, Any]]) -> str:
    lines = [BEGIN, "", "## Planner accuracy against a traced step (benchmarks/planner_accuracy.py)",
             "", "Estimate / traced per component, default method (`traced`), and the seed "
             "method's in brackets. Traced with torch 2.13 CPU, MemTracker under "
             "FakeTensorMode (the shrunk MoE models on real tensors), bf16 autocast, AdamW "
             "foreach, dropout on; LoRA r=16 through peft on all linears but the head, base in "
             "bf16; serving a bf16 prefill. Per-sample = (peak at batch 4 - peak at batch 2) / 2 "
             "(\"-\" where the optimizer step is still the peak at batch 2, as for ViT's 197 "
             "tokens and Mistral-7B's 145 GB step, so that no per-sample slope shows). "
             "T4 batch: the planner's largest full fine-tune batch on a T4 and the traced step's.",
             "", "| model | tokens | attention | " + " | ".join(LABELS[c] for c in COMPONENTS)
             + " | T4 full FT batch (traced method / seed / traced step) |",
             "|" + " --- |" * (len(COMPONENTS) + 4)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | - | - | " + " | ".join("error" for _ in COMPONENTS)
                         + f" | {r['error'][:60]} |")
            continue
        cells = []
        for c in COMPONENTS:
            tr = r["traced"][c]
            cells.append(f"{_fmt(_ratio(r['estimate'][c], tr))} ({_fmt(_ratio(r['seed'][c], tr))})")
        t4 = r["t4"]
        lines.append(f"| {r['name']} | {r['tokens']} | {r['attention']} | " + " | ".join(cells)
                     + f" | {t4['traced_method']} / {t4['seed_method']} / {t4['traced_step']} |")
    summary = summarize(rows)
    lines += ["", f"Models: {summary['models']}. Range of estimate / traced, default method: "
              + "; ".join(f"{LABELS[c]} {_fmt(lo)}-{_fmt(hi)}"
                          for c, (lo, hi) in summary["range"].items()) + ".",
              "Within ±10 %: " + "; ".join(f"{LABELS[c]} {n}/{summary['measured'][c]}"
                                           for c, n in summary["within"].items()) + ".",
              "", END]
    return "\n".join(lines) + "\n"


def summarize(rows: list[dict[str, Any]], method: str = "estimate") -> dict[str, Any]:
    ok = [r for r in rows if "error" not in r]
    rng: dict[str, tuple[float, float]] = {}
    within: dict[str, int] = {}
    measured: dict[str, int] = {}
    for c in COMPONENTS:
        ratios = [x for r in ok if (x := _ratio(r[method][c], r["traced"][c])) is not None]
        if ratios:
            rng[c] = (min(ratios), max(ratios))
        within[c] = sum(1 for x in ratios if abs(x - 1) <= 0.10)
        measured[c] = len(ratios)  # encoders have no KV cache, ViT no per-sample slope
    return {"models": len(ok), "range": rng, "within": within, "measured": measured}


def write_figures(traced: dict[str, Any], seed: dict[str, Any]) -> None:
    def worst(summary: dict[str, Any]) -> dict[str, float]:
        return {c: round(max(abs(lo - 1), abs(hi - 1)) * 100, 1)
                for c, (lo, hi) in summary["range"].items()}

    FIGURES.write_text(
        '"""The planner\'s measured accuracy, written by benchmarks/planner_accuracy.py.\n\n'
        "Layer 1 (stage 5, plan), data only: do not edit by hand; rerun\n"
        "``python benchmarks/planner_accuracy.py`` to refresh it.\n"
        '"""\n\n'
        f"#: Models traced.\nMODELS = {traced['models']}\n"
        "#: Worst |estimate / traced - 1| in percent per component, by method.\n"
        f"WORST_ERROR_PCT: dict[str, dict[str, float]] = "
        f"{json.dumps({'traced': worst(traced), 'seed': worst(seed)}, sort_keys=True)}\n"
        "#: Models within +-10 % of the traced step per component, by method.\n"
        f"WITHIN_10_PCT: dict[str, dict[str, int]] = "
        f"{json.dumps({'traced': traced['within'], 'seed': seed['within']}, sort_keys=True)}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="trace only these models")
    ap.add_argument("--reuse-traces", action="store_true",
                    help="no tracing: compare the current planner with the stored traces")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if not args.reuse_traces and not _in_venv():
        _ensure_venv()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from accuracy_models import models

    stored: dict[str, Any] = json.loads(TRACES.read_text()) if TRACES.exists() else {}
    rows = []
    for name, cfg, task, real in models():
        if args.reuse_traces or (args.only and name not in args.only):
            if name not in stored:
                continue
            row = stored[name]
        else:
            try:
                row = trace(name, cfg, task, real)
            except Exception as exc:  # one model's failure is a row, not the end of the run
                rows.append({"name": name, "error": f"{type(exc).__name__}: {exc}"})
                continue
            stored[name] = row
        rows.append(estimate(row, cfg))
        print(json.dumps(rows[-1]), flush=True)
    text = render(rows)
    print(text)
    if not args.no_write and any("error" not in r for r in rows):
        TRACES.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        results = ROOT / "benchmarks" / "RESULTS.md"
        old = results.read_text() if results.exists() else ""
        if BEGIN in old and END in old:
            old = old[:old.index(BEGIN)] + text + old[old.index(END) + len(END) + 1:]
        else:
            old = old.rstrip("\n") + "\n\n" + text
        results.write_text(old)
        write_figures(summarize(rows), summarize(rows, "seed"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
