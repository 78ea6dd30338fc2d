"""A small run of benchmarks/api.py on both databases, so the benchmark (its COPY and
executemany seeds included) keeps working; its numbers are not checked."""

from __future__ import annotations

import importlib.util

from tests.corpus import REPO_ROOT


def test_benchmark_runs_small(db_url: str) -> None:
    spec = importlib.util.spec_from_file_location("bench_api", REPO_ROOT / "benchmarks" / "api.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.run(db_url, repos=3, per_repo=120, requests=40)
    assert result["revisions"] == 360 and result["database"] == db_url.split(":")[0].split("+")[0]
    assert result["fixed"] > 0 and set(result) >= set(bench.ROUTES)
    for name in bench.ROUTES:
        m = result[name]
        assert 0 < m["p50_ms"] <= m["p99_ms"] and m["req_per_s"] > 0
