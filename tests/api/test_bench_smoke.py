"""A small run of benchmarks/api.py on both databases, so the benchmark (its COPY and
executemany seeds included) keeps working; its numbers are not checked."""

from __future__ import annotations

import importlib.util
import json

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


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_api", REPO_ROOT / "benchmarks" / "api.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_a_run_that_fails_later_keeps_what_it_measured(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """The report so far is on disk after every step, and printed when a later step fails."""
    bench = _bench()
    real_load = bench.load

    def load(port, pid, make, requests, connections, **kw):  # type: ignore[no-untyped-def]
        if make()[1] == "/v1/query":  # the fault: the commit query route breaks
            raise RuntimeError("injected")
        return real_load(port, pid, make, requests, connections, **kw)

    monkeypatch.setattr(bench, "load", load)
    out = tmp_path / "report.md"
    try:
        bench.main(["--db", "sqlite", "--repos", "2", "--per-repo", "60", "--requests", "20", "--out", str(out)])
    except RuntimeError as e:
        assert str(e) == "injected"
    else:
        raise AssertionError("the injected fault did not surface")
    printed, progress = capsys.readouterr()
    kept = out.read_text()
    assert "| history page, HTML | 16 |" in kept and "commit query" not in kept.split("| route |", 1)[1]
    assert kept.splitlines()[1:] == printed.strip().splitlines()[1:]  # the header line has the time so far
    assert "sqlite: 2 repos, 120 revisions" in kept and "commit index built in" in kept
    assert "sqlite: history page: 20 requests over 16 connection(s)" in progress
    assert json.loads(out.with_name("report.md.json").read_text())[0]["revisions"] == 120


def test_seed_only_times_the_seed_and_the_build(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "seed.md"
    assert _bench().main(["--db", "sqlite", "--repos", "2", "--per-repo", "50", "--seed-only", "--out", str(out)]) == 0
    (res,) = json.loads(out.with_name("seed.md.json").read_text())
    assert res["revisions"] == 100 and "trivial" not in res
    assert res["seed_cpu_s"] > 0 and res["index_cpu_s"] >= 0 and res["index_s"] > 0
    assert "| route |" not in out.read_text()


def test_the_upgrade_benchmark_runs_small(db_url: str) -> None:
    """benchmarks/upgrade.py: the api seed written at schema 0003, migrated to head (0004
    builds the index); it checks every revision labelled and every advisory indexed."""
    spec = importlib.util.spec_from_file_location("bench_upgrade", REPO_ROOT / "benchmarks" / "upgrade.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    line = bench.run(db_url, repos=2, per_repo=60, every=3, start="0003")
    assert "120 revisions, 40 advisories" in line and "every revision labelled, every advisory indexed" in line
