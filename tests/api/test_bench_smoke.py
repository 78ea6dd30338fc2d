"""A small run of benchmarks/api.py, so the benchmark keeps working (its numbers are not checked)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.corpus import REPO_ROOT


def test_benchmark_runs_small(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_api", REPO_ROOT / "benchmarks" / "api.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.run(f"sqlite:///{tmp_path / 'b.db'}", 400, 5)
    assert result["revisions"] == 400 and result["database"] == "sqlite"
    assert set(result["pages"]) == {"api newest", "api random cursor", "html newest", "html random cursor"}
    for m in result["pages"].values():
        assert 0 < m["median_ms"] <= m["p99_ms"] <= m["max_ms"]
    assert bench.percentile([1.0, 2.0, 3.0, 100.0], 0.5) in (2.0, 3.0)
