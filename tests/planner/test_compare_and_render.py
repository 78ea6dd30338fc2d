"""Plan deltas between revisions, and the plan's JSON contract and text rendering."""

from __future__ import annotations

import json

from tests.planner.helpers import CHANGES, load, plan_of
from tracker.planner import (
    compare,
    delta_to_json,
    plan_to_json,
    render_delta_text,
    render_plan_text,
)


def _change(name: str) -> tuple[dict[str, object], dict[str, object]]:
    d = CHANGES / name
    return (json.loads((d / "before" / "config.json").read_text()),
            json.loads((d / "after" / "config.json").read_text()))


def test_a_plan_against_itself_is_empty() -> None:
    p = plan_of(load("meta-llama__Meta-Llama-3-8B.json"))
    d = compare(p, p)
    assert d.is_empty and d.summary == "no change to the plan"
    assert delta_to_json(d)["is_empty"] is True


def test_more_kv_heads_grow_the_cache_and_stop_serving_on_small_cards() -> None:
    old = load("meta-llama__Meta-Llama-3-8B.json")
    new = {**old, "num_key_value_heads": 32}
    a, b = plan_of(old), plan_of(new)
    d = compare(a, b)
    assert d.kv_cache_factor == 4.0
    assert "KV cache x4" in d.summary
    assert d.params_total[1] > d.params_total[0]
    assert not d.is_empty
    # the inverse delta undoes it
    back = compare(b, a)
    assert back.kv_cache_factor == 0.25 and back.params_total == d.params_total[::-1]


def test_a_card_that_stops_fitting_is_named() -> None:
    old = load("meta-llama__Llama-3.2-1B.json")
    new = {**old, "num_key_value_heads": 32, "num_hidden_layers": 64}
    d = compare(plan_of(old), plan_of(new))
    stopped = [c for c in d.cards if c.stops_fitting]
    assert stopped and "no longer" in d.summary
    for c in stopped:
        assert c.before > 0 and c.after == 0


def test_rope_factor_change_adds_the_finding() -> None:
    """Llama-3.2-3B-Instruct PR #3: rope_scaling.factor 8 -> 32 over a 131072 context."""
    before, after = _change("llama-3.2-3b-instruct__rope-scaling-factor-8-to-32")
    d = compare(plan_of(before), plan_of(after))
    assert [f.id for f in d.findings_added] == ["rope-scaling-beyond-context"]
    assert d.params_total[0] == d.params_total[1]
    assert "rope-scaling-beyond-context" in d.summary
    assert "rope-scaling-beyond-context" in render_delta_text(d)


def test_vocab_growth_between_mistral_versions() -> None:
    before, after = _change("mistral-7b-instruct__v0.1-to-v0.3-config")
    d = compare(plan_of(before), plan_of(after))
    assert d.params_total[1] - d.params_total[0] == 2 * (32768 - 32000) * 4096
    assert d.dims["vocab"] == (32000, 32768)
    assert "parameters" in d.summary


def test_plan_json_has_exactly_the_contract_keys() -> None:
    j = plan_to_json(plan_of(load("mistralai__Mixtral-8x7B-v0.1.json"),
                             checkpoint_params=46_702_792_704))
    assert {"params", "training_tokens", "memory_bytes", "cards", "structure", "findings",
            "cost"} <= set(j)
    assert {"total", "active", "checkpoint", "delta_pct"} <= set(j["params"])
    assert {"full_finetune", "lora", "serve_weights", "kv_cache"} <= set(j["memory_bytes"])
    assert list(j["cards"]) == ["t4", "l4", "a100-40", "a100-80", "h200"]
    for row in j["cards"].values():
        assert set(row) == {"full_finetune", "lora", "serve"}
        assert all(isinstance(v, int) and v >= 0 for v in row.values())
    assert j["params"]["active"] < j["params"]["total"] and j["params"]["delta_pct"] == 0.0
    assert all({"id", "level", "message", "fix"} == set(f) for f in j["findings"])
    assert j["structure"][0] == {"index": 1, "name": "Input", "type": "Input",
                                 "shape": [1, 2048]}
    assert j["cost"]["usd"] > 0 and j["cost"]["card"]
    assert json.loads(json.dumps(j)) == j


def test_text_rendering_shows_the_tables() -> None:
    text = render_plan_text(plan_of(load("FacebookAI__xlm-roberta-base.json")))
    assert "T4 16 GB" in text and "Structure (52 nodes)" in text
    assert "deep-attention-default-init" in text and "$1.77" in text


def test_split_only_where_one_card_cannot_hold_batch_one() -> None:
    p = plan_of(load("meta-llama__Meta-Llama-3-8B.json"))
    for s in p.split:
        fit = p.card(s.card)
        assert fit is not None and fit.batch(s.mode) == 0 and s.batch >= 1
    assert any(s.mode == "full_finetune" for s in p.split)
