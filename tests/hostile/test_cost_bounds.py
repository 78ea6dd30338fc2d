"""No revision can hold a core past its budget (issue 16, point 4; issue 10, point 9): its
analysis runs in a worker process with a wall-clock deadline; a revision over it is
recorded with an ``analysis.cut`` change, and the poll goes on with the commits after it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from storage import open_store
from tests.daemon.helpers import config_bytes
from tests.e2e.cli_helpers import Cli
from tests.hubemu import RepoBuilder
from tracker.model import Snapshot
from tracker.pipeline.analysis import AnalysisBudget, AnalysisPool
from tracker.pipeline.plan_step import PlanStep


def _slow_config(n: int, value: int) -> bytes:
    """A config.json whose field-by-field diff against the last one takes seconds."""
    return json.dumps({**json.loads(config_bytes()), **{f"k{i}": [value, {"v": i}] for i in range(n)}}).encode()


def test_a_revision_over_its_time_budget_is_cut_and_the_poll_goes_on(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tracker.pipeline import analysis

    real = analysis.diff_artifacts

    def slower(base: Any, head: Any, **kw: Any) -> Any:  # the bomb's diff, made slow on any machine
        out = real(base, head, **kw)
        if isinstance(head.config, dict) and "k0" in head.config and base is not None:
            time.sleep(5)
        return out

    monkeypatch.setattr(analysis, "diff_artifacts", slower)  # workers are forked: they inherit it
    b = RepoBuilder.init(tmp_path / "slow.git")
    b.commit({"config.json": _slow_config(20_000, 1)}, title="baseline")
    slow = b.commit({"config.json": _slow_config(20_000, 2)}, title="diff bomb")
    after = b.commit({"config.json": config_bytes(eos_token_id=9)}, title="after")
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}", extra_config="[limits]\nanalysis_seconds = 1.5\n")
    started = time.monotonic()
    tracked = cli.ok("track", str(b.path), "--as", "evil/slow", "--json").json()
    assert time.monotonic() - started < 30
    assert tracked["poll"]["status"] == "ok" and tracked["poll"]["new_revisions"] == 3
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    by_sha = {r.sha: r for r in store.history("evil/slow")}
    repo = store.get_repo("evil/slow")
    store.close()
    assert repo is not None and repo.head_sha == after
    cut = by_sha[slow]
    assert cut.severity == "HIGH" and [c.topics for c in cut.changes] == [("analysis.cut",)]
    assert "time budget of 1.5 s" in (cut.error or "")


def test_the_worker_answers_what_the_process_would() -> None:
    snap = Snapshot(sha="b" * 40, files=(), contents={})
    inline = AnalysisPool(AnalysisBudget(seconds=0)).run(snap, None, base_sha=None, head_sha="b" * 40,
                                                         max_json_depth=32, plan=PlanStep())
    pool = AnalysisPool(AnalysisBudget(seconds=30))
    try:
        worker = pool.run(snap, None, base_sha=None, head_sha="b" * 40, max_json_depth=32, plan=PlanStep())
    finally:
        pool.close()
    assert worker == inline and worker.cut is None


def test_one_slow_repo_does_not_stall_the_others(tmp_path: Path) -> None:
    """Issue 16, point 7: the scheduler waited for a slow repo instead of claiming more."""
    import threading
    from datetime import UTC, datetime

    from tests.daemon.helpers import make_daemon
    from tracker.pipeline.check import CheckResult

    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    store.add_repo("org/slow", source="org/slow", source_kind="hub")
    release, checked = threading.Event(), []

    def check(_store: Any, _source: Any, repo: Any, _opts: Any, **_kw: Any) -> CheckResult:
        checked.append(repo.id)
        if repo.id == "org/slow":
            assert release.wait(30)
        elif repo.id == "org/late":
            release.set()  # checked while the slow one still runs
        return CheckResult(repo.id, "unchanged")

    daemon = make_daemon(store, "http://127.0.0.1:9", check=check, concurrency=2, tick_seconds=0.1)
    cycle = threading.Thread(target=daemon.run_once, args=(datetime.now(UTC),))
    cycle.start()
    while "org/slow" not in checked:
        time.sleep(0.02)
    store.add_repo("org/late", source="org/late", source_kind="hub")  # falls due mid-cycle
    cycle.join(20)
    assert not cycle.is_alive() and checked == ["org/slow", "org/late"]
    store.close()


def test_a_revision_reads_at_most_its_byte_budget(tmp_path: Path) -> None:
    """Issue 16, point 6: 300 files of 1.9 MB, each under its own cap, took 1.8 GB of memory."""
    b = RepoBuilder.init(tmp_path / "amp.git")
    b.commit({"config.json": config_bytes()}, title="baseline")
    big = {f"modeling_{i}.py": (f"# {i}\n" + "x = 1\n" * 30_000).encode() for i in range(30)}  # 180 kB each
    sha = b.commit(big, title="amplification")
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}",
              extra_config="[limits]\nmax_revision_bytes = 1_000_000\n")
    assert cli.ok("track", str(b.path), "--as", "evil/amp", "--json").json()["poll"]["status"] == "ok"
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    rev = store.get_revision("evil/amp", sha)
    snap = store.snapshot("evil/amp", sha)
    store.close()
    assert rev is not None and snap is not None
    read = sum(len(v) for v in snap.contents.values())
    assert read <= 1_000_000 and 0 < len([p for p in snap.contents if p.endswith(".py")]) < 30
    assert any("read budget of 1000000 bytes is spent" in c.summary for c in rev.changes)
