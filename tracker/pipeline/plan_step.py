"""Stage 5 inside the pipeline: plan a revision whose config.json changed, and diff the plans."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tracker.extract.model_config import parse_model_config
from tracker.model import Artifacts, Change, ChangeKind
from tracker.model.plan import Plan
from tracker.pipeline.gguf_plan_step import gguf_plan
from tracker.pipeline.kept import Kept
from tracker.planner import compare, delta_to_json, plan, plan_to_json
from tracker.planner.checkpoint import checkpoint_scalars


def checkpoint_params(artifacts: Artifacts | None) -> int | None:
    """The checkpoint's own scalar count (safetensors headers), when every header was read."""
    return None if artifacts is None else checkpoint_scalars(artifacts.weights)


#: Plans made lately in this process, by (config as canonical JSON, checkpoint count,
#: assumptions): a revision that changes config.json plans its parent's config again to diff
#: the plans, and that config was planned when the parent came (~1 ms; plans are frozen).
MAX_KEPT_PLANS = 16
_KEPT: Kept[tuple[str, int | None, Any], Plan] = Kept(MAX_KEPT_PLANS)


def _planned(config: dict[str, Any], ckpt: int | None, assumptions: Any) -> Plan:
    """``plan`` of ``config``, kept (assumptions that cannot be hashed: planned each time)."""
    try:
        key = (json.dumps(config, sort_keys=True, default=repr), ckpt, assumptions)
        hash(key)
    except (TypeError, ValueError, RecursionError):
        return plan(parse_model_config(config), checkpoint_params=ckpt, assumptions=assumptions)
    found = _KEPT.get(key)
    if found is not None:
        return found
    made = plan(parse_model_config(config), checkpoint_params=ckpt, assumptions=assumptions)
    _KEPT.put(key, made)
    return made


@dataclass
class PlanStep:
    """Plans a revision's config; ``assumptions`` are the planner's cost assumptions."""

    assumptions: Any = None
    enabled: bool = True

    def run(
        self, base: Artifacts | None, head: Artifacts, *, first: bool
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, Change | None]:
        """(plan, plan delta, the delta as a ``config`` change) for a revision, or Nones."""
        if not self.enabled:
            return None, None, None
        if not isinstance(head.config, dict):  # a GGUF-only repo is planned from its header
            return gguf_plan(base, head, first=first, assumptions=self.assumptions)
        base_cfg = base.config if base is not None else None
        head_ckpt = checkpoint_params(head)
        # re-planned when the config or the checkpoint's own count moved, so the stored plan of
        # every revision is the one `hubwatch plan ORG/NAME@REV` computes
        if not first and base_cfg == head.config and checkpoint_params(base) == head_ckpt:
            return None, None, None
        new = _planned(head.config, head_ckpt, self.assumptions)
        if not isinstance(base_cfg, dict):
            return plan_to_json(new), None, None
        old = _planned(base_cfg, checkpoint_params(base), self.assumptions)
        delta = compare(old, new)
        if delta.is_empty:
            return plan_to_json(new), None, None
        delta_json = delta_to_json(delta)
        change = Change(
            kind=ChangeKind.CONFIG, path="config.json", summary=f"plan: {delta.summary}",
            topics=("plan.delta",), detail={"plan_delta": delta_json},
        )
        return plan_to_json(new), delta_json, change
