"""Stage 5 inside the pipeline: plan a revision whose config.json changed, and diff the plans."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracker.extract.model_config import parse_model_config
from tracker.model import Artifacts, Change, ChangeKind
from tracker.planner import compare, delta_to_json, plan, plan_to_json


def checkpoint_params(artifacts: Artifacts | None) -> int | None:
    """The checkpoint's own scalar count from its safetensors headers, when all were read.

    Only the top-level weights the loader uses count: the shards an index names, else the
    top-level ``*.safetensors`` files (copies under ``original/`` and the like are ignored).
    """
    if artifacts is None:
        return None
    shards: set[str] = set()
    for index_path, weight_map in artifacts.weights.index_weight_maps.items():
        if index_path.endswith(".safetensors.index.json") and "/" not in index_path:
            shards.update(weight_map.values())
    files = [f for f in artifacts.weights.files if f.format == "safetensors" and "/" not in f.path]
    if shards:
        files = [f for f in files if f.path in shards]
    if not files or any(f.tensors is None for f in files):
        return None
    return sum(t.numel for f in files for t in (f.tensors or ()))


@dataclass
class PlanStep:
    """Plans a revision's config; ``assumptions`` are the planner's cost assumptions."""

    assumptions: Any = None
    enabled: bool = True

    def plan_json(self, config: Any, artifacts: Artifacts | None = None) -> dict[str, Any] | None:
        if not isinstance(config, dict):
            return None
        p = plan(parse_model_config(config), checkpoint_params=checkpoint_params(artifacts), assumptions=self.assumptions)
        return plan_to_json(p)

    def run(
        self, base: Artifacts | None, head: Artifacts, *, first: bool
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, Change | None]:
        """(plan, plan delta, the delta as a ``config`` change) for a revision, or Nones."""
        if not self.enabled or not isinstance(head.config, dict):
            return None, None, None
        base_cfg = base.config if base is not None else None
        if not first and base_cfg == head.config:
            return None, None, None
        new = plan(parse_model_config(head.config), checkpoint_params=checkpoint_params(head), assumptions=self.assumptions)
        if not isinstance(base_cfg, dict):
            return plan_to_json(new), None, None
        old = plan(parse_model_config(base_cfg), checkpoint_params=checkpoint_params(base), assumptions=self.assumptions)
        delta = compare(old, new)
        if delta.is_empty:
            return plan_to_json(new), None, None
        delta_json = delta_to_json(delta)
        change = Change(
            kind=ChangeKind.CONFIG, path="config.json", summary=f"plan: {delta.summary}",
            topics=("plan.delta",), detail={"plan_delta": delta_json},
        )
        return plan_to_json(new), delta_json, change
