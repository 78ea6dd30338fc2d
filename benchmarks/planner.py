"""Benchmark: time per plan over the corpus configs, against transformers on the meta device.

Run from the repository root:

    python benchmarks/planner.py [--configs DIR] [--repeat N] [--markdown]

``plan(parse_model_config(config))`` is timed for every config in
``../shared/hf-corpus/configs`` (the median of ``--repeat`` runs). Where ``transformers`` and
``torch`` are importable (never a dependency of the project: use a separate virtualenv), the
same config's class is also instantiated on PyTorch's meta device, timed the same way, and its
unique parameters counted, so the table shows both times, their ratio and whether the counts
agree.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracker.extract.model_config import parse_model_config  # noqa: E402
from tracker.planner import plan  # noqa: E402


def _median_seconds(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _meta_instantiate(config: dict[str, Any]) -> tuple[Any, Any] | None:
    """A callable building the class on the meta device, and the class's unique count."""
    try:
        import torch
        import transformers
        from transformers import AutoConfig
    except ImportError:
        return None
    cfg = dict(config)
    model_type = cfg.pop("model_type", None)
    arch = (cfg.get("architectures") or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    if cls is None or model_type is None:
        return None
    try:
        conf = AutoConfig.for_model(model_type, **cfg)
    except Exception:  # a remote-code model_type transformers does not ship
        return None

    def build() -> Any:
        with torch.device("meta"):
            return cls(conf)

    model = build()
    seen: set[int] = set()
    count = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            count += p.numel()
    return build, count


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=Path,
                    default=ROOT.parent / "shared" / "hf-corpus" / "configs")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--meta-repeat", type=int, default=3)
    ap.add_argument("--markdown", action="store_true", help="print a RESULTS.md section")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    rows = []
    for path in sorted(args.configs.glob("*.json")):
        if path.name == "params.json":
            continue
        config = json.loads(path.read_text())
        ours = _median_seconds(lambda c=config: plan(parse_model_config(c)), args.repeat)
        total = plan(parse_model_config(config)).params.total
        meta = _meta_instantiate(config)
        meta_s: float | None = None
        agree: bool | None = None
        if meta is not None:
            build, count = meta
            meta_s = _median_seconds(build, args.meta_repeat)
            agree = count == total
        rows.append((path.stem, ours, meta_s, agree))
    _print(rows, args.markdown)
    return 0 if all(a is not False for *_, a in rows) else 1


def _print(rows: list[tuple[str, float, float | None, bool | None]], markdown: bool) -> None:
    ours = [r[1] for r in rows]
    pairs = [(r[1], r[2]) for r in rows if r[2] is not None]
    print("| config | plan (µs) | transformers meta (ms) | ratio | same count |")
    print("|---|---:|---:|---:|:---:|")
    for name, o, m, agree in rows:
        meta = f"{m * 1e3:.1f}" if m is not None else "n/a"
        ratio = f"{m / o:,.0f}x" if m is not None else "n/a"
        same = {True: "yes", False: "NO", None: "n/a"}[agree]
        print(f"| {name} | {o * 1e6:.0f} | {meta} | {ratio} | {same} |")
    print()
    print(f"configs: {len(rows)}; plan median {statistics.median(ours) * 1e6:.0f} µs, "
          f"max {max(ours) * 1e6:.0f} µs")
    if pairs:
        ratios = [m / o for o, m in pairs]
        print(f"transformers meta-device instantiation on {len(pairs)} configs: median "
              f"{statistics.median([m for _, m in pairs]) * 1e3:.1f} ms; planner faster by a "
              f"median {statistics.median(ratios):,.0f}x (min {min(ratios):,.0f}x)")
    if markdown:
        print("\n(paste the table above into benchmarks/RESULTS.md, section 'Planner')")


if __name__ == "__main__":
    raise SystemExit(main())
