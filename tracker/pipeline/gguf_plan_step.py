"""Stage 5 for a repo without config.json: plan its GGUF model from the GGUF header (issue 13)."""

from __future__ import annotations

from typing import Any

from tracker.extract.gguf_config import GgufModel, choose_gguf, config_from_gguf
from tracker.extract.model_config import parse_model_config
from tracker.model import Artifacts, Change, ChangeKind
from tracker.model.plan import Plan
from tracker.planner import compare, delta_to_json, plan_to_json
from tracker.planner.gguf_plan import plan_gguf


def _plan(model: GgufModel, assumptions: Any) -> Plan | None:
    cfg = config_from_gguf(model.info)
    if cfg is None:
        return None
    return plan_gguf(
        parse_model_config(cfg), tensor_bytes=sum(model.tensor_bytes.values()),
        tensor_scalars=model.tensor_scalars, bytes_by_type=model.tensor_bytes, assumptions=assumptions,
    )


def gguf_plan(
    base: Artifacts | None, head: Artifacts, *, first: bool, assumptions: Any
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, Change | None]:
    """(plan, delta, delta change) of the repo's GGUF model, when it is new or its files changed."""
    new_model = choose_gguf(head.weights)
    if new_model is None:
        return None, None, None
    old_model = choose_gguf(base.weights) if base is not None and not isinstance(base.config, dict) else None
    if not first and old_model is not None and old_model.content_ids == new_model.content_ids:
        return None, None, None
    new = _plan(new_model, assumptions)
    if new is None:
        return None, None, None
    old = _plan(old_model, assumptions) if old_model is not None else None
    if old is None:
        return plan_to_json(new), None, None
    delta = compare(old, new)
    if delta.is_empty:
        return plan_to_json(new), None, None
    delta_json = delta_to_json(delta)
    change = Change(
        kind=ChangeKind.WEIGHTS, path=new_model.path, summary=f"plan: {delta.summary}",
        topics=("plan.delta",), detail={"plan_delta": delta_json},
    )
    return plan_to_json(new), delta_json, change
