"""Hostile content the analysis must take in bounded time without a worker's help (issue 16,
fresh review): absurd sizes in config.json (the planner sizes layers, experts and widths by
arithmetic, never by iterating them), an integer of 5,000 digits (Python refuses to parse
it), and chat templates that recurse or nest thousands deep. Each is analysed in-process here,
so a regression shows as a slow test or an exception, not as a cut hidden by the worker."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest

from tracker.model import FileEntry, Snapshot
from tracker.pipeline.analysis import Analysis, AnalysisBudget, AnalysisPool
from tracker.pipeline.plan_step import PlanStep

BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 4, "vocab_size": 1000, "max_position_embeddings": 128}

CONFIGS: dict[str, dict[str, Any]] = {
    "a billion layers": {"num_hidden_layers": 10**9},
    "10^18 layers": {"num_hidden_layers": 10**18},
    "10^30 wide": {"hidden_size": 10**30, "intermediate_size": 10**30},
    "a billion experts": {"num_local_experts": 10**9, "num_experts_per_tok": 10**9},
    "100k listed layer types": {"num_hidden_layers": 100_000, "layer_types": ["full_attention"] * 100_000},
    "negative sizes": {"num_hidden_layers": -5, "hidden_size": -64},
    "float layers": {"num_hidden_layers": 1e300},
}

TEMPLATES = {
    "self-recursive macro": "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "3,000 nested ifs": "{% if true %}" * 3000 + "x" + "{% endif %}" * 3000,
    "5,000 nested parentheses": "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
}


def _analyse(contents: dict[str, bytes]) -> tuple[Analysis, float]:
    files = tuple(FileEntry(p, len(b), hashlib.sha1(b).hexdigest()) for p, b in sorted(contents.items()))
    snap = Snapshot(sha="a" * 40, files=files, contents=contents)
    started = time.process_time()
    out = AnalysisPool(AnalysisBudget(seconds=0)).run(snap, None, base_sha=None, head_sha="a" * 40,
                                                      max_json_depth=64, plan=PlanStep())
    return out, time.process_time() - started


@pytest.mark.parametrize("fields", CONFIGS.values(), ids=CONFIGS.keys())
def test_absurd_config_sizes_are_planned_by_arithmetic(fields: dict[str, Any]) -> None:
    out, cpu = _analyse({"config.json": json.dumps({**BASE, **fields}).encode()})
    assert cpu < 5 and out.cut is None
    assert [c.path for c in out.diff.changes if c.path == "config.json"] == ["config.json"]


def test_an_integer_python_will_not_parse_is_an_unreadable_config() -> None:
    out, cpu = _analyse({"config.json": b'{"num_hidden_layers": ' + b"9" * 5000 + b"}"})
    assert cpu < 5
    (change,) = [c for c in out.diff.changes if c.path == "config.json"]
    assert "could not be read" in change.summary and "invalid JSON" in change.summary


@pytest.mark.parametrize("template", TEMPLATES.values(), ids=TEMPLATES.keys())
def test_hostile_template_shapes_end_quickly(template: str) -> None:
    out, cpu = _analyse({"tokenizer_config.json": json.dumps({"chat_template": template}).encode()})
    assert cpu < 10 and out.cut is None
    assert any(c.kind.value == "chat_template" for c in out.diff.changes)
