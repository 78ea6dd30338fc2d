"""Stage 5, plan: rebuild a model's layer graph from config.json alone and size it.

Pure (layer 1): values in, values out, no I/O, no transformers or torch. The lead calls
``plan(parse_model_config(config_dict))``; the planner does not import ``tracker.extract``.
"""

from tracker.model.plan import CostAssumptions
from tracker.planner.build import plan
from tracker.planner.checkpoint import checkpoint_scalars
from tracker.planner.compare import compare
from tracker.planner.render import (
    delta_to_json,
    plan_to_json,
    render_delta_text,
    render_plan_text,
)

__all__ = [
    "CostAssumptions",
    "checkpoint_scalars",
    "compare",
    "delta_to_json",
    "plan",
    "plan_to_json",
    "render_delta_text",
    "render_plan_text",
]
