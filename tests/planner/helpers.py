"""Shared helpers of the planner tests: corpus configs and plans of them."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from tests.corpus import CORPUS, SEEDS
from tracker.extract.model_config import parse_model_config
from tracker.model.plan import Plan
from tracker.planner import plan

CONFIGS = CORPUS / "configs"
CHANGES = CORPUS / "changes"


@cache
def params_table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / "params.json").read_text())
    return data


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / name).read_text())
    return data


def plan_of(config: dict[str, Any], **kw: Any) -> Plan:
    return plan(parse_model_config(config), **kw)


def seed_text(name: str) -> str:
    return (SEEDS / f"{name}.txt").read_text()
