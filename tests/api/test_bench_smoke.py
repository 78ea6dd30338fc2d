"""A small run of benchmarks/api.py, so the benchmark keeps working (its numbers are not checked)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.corpus import REPO_ROOT

ROUTES = {"trivial", "healthz", "history page", "commit query", "querybatch 1000", "querybatch 1000, 1 connection"}


def test_benchmark_runs_small(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_api", REPO_ROOT / "benchmarks" / "api.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.run(f"sqlite:///{tmp_path / 'b.db'}", repos=3, per_repo=120, requests=40)
    assert result["revisions"] == 360 and result["database"] == "sqlite" and result["fixed"] > 0
    assert set(result) >= ROUTES
    for name in ROUTES:
        m = result[name]
        assert 0 < m["p50_ms"] <= m["p99_ms"] and m["req_per_s"] > 0
