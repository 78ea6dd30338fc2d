"""The planner and the config parser are pure: no file, network, environment or clock."""

from __future__ import annotations

import ast
import builtins
import io
import itertools
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import REPO_ROOT
from tests.planner.helpers import CONFIGS, load
from tracker.extract.model_config import parse_model_config
from tracker.planner import compare, plan, plan_to_json, render_plan_text

PURE_FILES = [*sorted((REPO_ROOT / "tracker" / "planner").glob("*.py")), REPO_ROOT / "tracker" / "extract" / "model_config.py", REPO_ROOT / "tracker" / "extract" / "model_config_families.py", REPO_ROOT / "tracker" / "model" / "plan.py"]
STDLIB_OK = {"__future__", "collections", "dataclasses", "enum", "functools", "itertools",
             "math", "typing"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", PURE_FILES, ids=lambda p: p.name)
def test_imports_only_pure_modules(path: Path) -> None:
    for name in _imports(path):
        top = name.split(".")[0]
        assert top in STDLIB_OK or name.startswith(("tracker.model", "tracker.planner",
                                                    "tracker.extract.model_config")), name
        if path.parent.name == "planner":
            assert not name.startswith("tracker.extract"), "planner must not import extract"


PURE = ("tracker.planner", "tracker.extract", "tracker.model")


def _pure_frame() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(PURE):
            return True
        frame = frame.f_back
    return False


@pytest.fixture
def no_io(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every way out of the process raises when called from the pure modules.

    The guard looks at the calling frames, so pytest's and xdist's own threads (which keep
    using clocks, files and sockets while the test runs) are left alone.
    """

    def guard(real: Any) -> Any:
        def guarded(*a: Any, **k: Any) -> Any:
            if _pure_frame():
                raise AssertionError("I/O attempted by a pure module")
            return real(*a, **k)

        return guarded

    for target, name in [(builtins, "open"), (io, "open"), (os, "open"), (os, "getenv"),
                         (os, "listdir"), (os, "stat"), (socket, "socket"),
                         (socket, "create_connection"), (time, "time"), (time, "monotonic"),
                         (time, "perf_counter")]:
        monkeypatch.setattr(target, name, guard(getattr(target, name)))
    monkeypatch.setattr(os, "environ", _RefusingEnv(os.environ))
    yield


class _RefusingEnv(dict[str, str]):
    def __getitem__(self, key: str) -> str:
        if _pure_frame():
            raise AssertionError("environment read by a pure module")
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if _pure_frame():
            raise AssertionError("environment read by a pure module")
        return super().get(key, default)


def test_planning_does_no_io(no_io: None) -> None:
    config = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8,
              "num_hidden_layers": 4, "vocab_size": 1000}
    p = plan(parse_model_config(config))
    assert p.supported and p.params.total > 0
    compare(p, p)
    plan_to_json(p)
    render_plan_text(p)


def test_whole_corpus_plans_without_io(monkeypatch: pytest.MonkeyPatch) -> None:
    configs = [load(p.name) for p in sorted(CONFIGS.glob("*.json")) if p.name != "params.json"]
    opened: list[str] = []
    real_open = builtins.open

    def watch(*a: Any, **k: Any) -> Any:
        opened.append(str(a[0]) if a else "?")
        return real_open(*a, **k)

    monkeypatch.setattr(builtins, "open", watch)
    plans = [plan(parse_model_config(c)) for c in configs]
    for a, b in itertools.pairwise(plans):
        compare(a, b)
    for p in plans:
        plan_to_json(p)
        render_plan_text(p)
    assert opened == []
    assert len(plans) == len(configs) and all(p.supported for p in plans)
