"""Plans kept by the pipeline's plan step (tracker.pipeline.plan_step._planned) are the plans."""

from __future__ import annotations

import json

from tests.corpus import CORPUS
from tracker.extract.model_config import parse_model_config
from tracker.pipeline import plan_step
from tracker.planner import plan, plan_to_json

CONFIG = CORPUS / "changes" / "llama2-7b-hf__config-max-position-2048-to-4096"


def test_a_kept_plan_is_the_plan_and_a_changed_config_is_planned_again() -> None:
    plan_step._KEPT.clear()
    before = json.loads((CONFIG / "before" / "config.json").read_text())
    after = json.loads((CONFIG / "after" / "config.json").read_text())
    first = plan_step._planned(before, 6_738_546_688, None)
    assert plan_step._planned(dict(before), 6_738_546_688, None) is first  # kept, by content
    assert plan_to_json(first) == plan_to_json(plan(parse_model_config(before), checkpoint_params=6_738_546_688))
    other = plan_step._planned(after, 6_738_546_688, None)
    assert other is not first
    assert plan_to_json(other) == plan_to_json(plan(parse_model_config(after), checkpoint_params=6_738_546_688))
    assert plan_to_json(other) != plan_to_json(first)
    assert plan_step._planned(before, None, None) is not first  # the checkpoint count is in the key
    for i in range(plan_step.MAX_KEPT_PLANS + 1):  # bounded
        plan_step._planned({**before, "_n": i}, None, None)
    assert len(plan_step._KEPT) == plan_step.MAX_KEPT_PLANS
