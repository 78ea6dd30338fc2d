"""Golden OSV records, one per change kind plus the lifecycle, compared byte for byte.

Regenerate with ``UPDATE_GOLDEN=1 pytest tests/advisories/test_osv_golden.py`` and review
the diff: a changed golden is a changed public record.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from advisories.export import record_bytes
from advisories.osv import add_fixed, mark_history_rewritten, withdraw
from tests.advisories.osv_helpers import NOW, assert_valid, examples, pair
from tests.corpus import REPO_ROOT

GOLDEN = REPO_ROOT / "tests" / "golden" / "osv"
EXAMPLES = examples()


def _lifecycle() -> dict[str, Callable[[], dict[str, Any]]]:
    base = EXAMPLES["config_auto_map"].record()
    assert base is not None
    revert = pair("falcon-7b-instruct__revert-in-library-63").sha
    again = pair("falcon-7b-instruct__move-to-in-library-88").sha
    return {
        "lifecycle_fixed": lambda: add_fixed(base, revert, NOW + timedelta(days=1)),
        "lifecycle_history_rewritten": lambda: mark_history_rewritten(
            base, new_head=again, now=NOW + timedelta(days=2)
        ),
        "lifecycle_withdrawn": lambda: withdraw(
            add_fixed(base, revert, NOW + timedelta(days=1)),
            "duplicate of an earlier advisory",
            NOW + timedelta(days=3),
        ),
    }


CASES: dict[str, Callable[[], dict[str, Any] | None]] = {
    **{name: example.record for name, example in EXAMPLES.items()},
    **_lifecycle(),
}


def _check(name: str, record: dict[str, Any], golden: Path) -> None:
    data = record_bytes(record)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_bytes(data)
    assert golden.exists(), f"missing {golden}; run with UPDATE_GOLDEN=1"
    assert data == golden.read_bytes(), f"{name} differs from {golden}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_record(name: str) -> None:
    record = CASES[name]()
    assert record is not None
    assert_valid(record)
    _check(name, record, GOLDEN / f"{name}.json")
    assert_valid(json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8")))


def test_every_golden_file_has_a_case() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(CASES)


def test_every_kind_with_a_severity_has_a_golden() -> None:
    kinds = {c.kind.value for example in EXAMPLES.values() for c in example.changes}
    assert kinds == {
        "config",
        "generation_config",
        "tokenizer",
        "chat_template",
        "weights",
        "code",
        "history",
    }
