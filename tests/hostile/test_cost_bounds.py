"""No revision can hold a core past its budget (issue 16, point 4; issue 10, point 9): its
analysis runs in a worker process with a wall-clock deadline; a revision over it is
recorded with an ``analysis.cut`` change, and the poll goes on with the commits after it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from storage import open_store
from tests.daemon.helpers import config_bytes
from tests.e2e.cli_helpers import Cli
from tests.hostile import runners
from tests.hubemu import RepoBuilder
from tracker.model import Snapshot
from tracker.pipeline.analysis import AnalysisBudget, AnalysisPool
from tracker.pipeline.plan_step import PlanStep


def _slow_config(n: int, value: int) -> bytes:
    """A config.json whose field-by-field diff against the last one takes seconds."""
    return json.dumps({**json.loads(config_bytes()), **{f"k{i}": [value, {"v": i}] for i in range(n)}}).encode()


def _cut_and_moved_on(tmp_path: Path, repo_id: str, *, cut: str, head: str) -> dict[str, Any]:
    """The stored revisions by sha, once checked: ``cut`` recorded as cut, the head at ``head``."""
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    by_sha = {r.sha: r for r in store.history(repo_id)}
    repo = store.get_repo(repo_id)
    store.close()
    assert repo is not None and repo.head_sha == head
    assert by_sha[cut].severity == "HIGH" and [c.topics for c in by_sha[cut].changes] == [("analysis.cut",)]
    return by_sha


def _pool_for_the_cli(monkeypatch: pytest.MonkeyPatch, runner: Any) -> list[AnalysisPool]:
    """The CLI's analysis pool, built with ``runner`` (kept in the list, closed by the caller)."""
    from tracker.cli import context

    made: list[AnalysisPool] = []

    def pool(budget: AnalysisBudget) -> AnalysisPool:
        made.append(AnalysisPool(budget, runner=runner))
        return made[-1]

    monkeypatch.setattr(context, "shared_pool", pool)
    return made


def test_a_revision_over_its_time_budget_is_cut_and_the_poll_goes_on(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pools = _pool_for_the_cli(monkeypatch, runners.slow_on_bomb)
    b = RepoBuilder.init(tmp_path / "slow.git")
    b.commit({"config.json": _slow_config(20_000, 1)}, title="baseline")
    slow = b.commit({"config.json": _slow_config(20_000, 2)}, title="diff bomb")
    after = b.commit({"config.json": config_bytes(eos_token_id=9)}, title="after")
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}", extra_config="[limits]\nanalysis_seconds = 1.5\n")
    started = time.monotonic()
    try:
        tracked = cli.ok("track", str(b.path), "--as", "evil/slow", "--json").json()
    finally:
        for pool in pools:
            pool.close()
    assert time.monotonic() - started < 30
    assert tracked["poll"]["status"] == "ok" and tracked["poll"]["new_revisions"] == 3
    by_sha = _cut_and_moved_on(tmp_path, "evil/slow", cut=slow, head=after)
    cut = by_sha[slow]
    assert "time budget of 1.5 s" in (cut.error or "")


def _tokenizer_bomb(entries: int) -> bytes:
    """A tokenizer.json of a few MB whose parse and summary take more than ten times that."""
    vocab = {f"t{i:07d}": i for i in range(entries)}
    merges = [f"t{i:07d} t{i + 1:07d}" for i in range(entries)]
    return json.dumps({"version": "1.0", "model": {"type": "BPE", "vocab": vocab, "merges": merges}},
                      separators=(",", ":")).encode()


def test_a_revision_over_its_memory_budget_is_cut_recorded_and_the_poll_goes_on(tmp_path: Path) -> None:
    """Issue 16, point 4: the worker's address-space limit stops a revision whose analysis
    allocates past it (here a 9 MB tokenizer.json, under every read cap, that the analysis
    turns into hundreds of MB of objects); the daemon's own memory is not touched."""
    import resource

    bomb = _tokenizer_bomb(300_000)
    assert len(bomb) < 25_165_824  # under the tokenizer read cap: the memory budget must stop it
    b = RepoBuilder.init(tmp_path / "mem.git")
    b.commit({"config.json": config_bytes()}, title="baseline")
    heavy = b.commit({"tokenizer.json": bomb}, title="tokenizer bomb")
    after = b.commit({"config.json": config_bytes(eos_token_id=9), "tokenizer.json": _tokenizer_bomb(10)},
                     title="after")
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}",
              extra_config="[limits]\nanalysis_memory_mb = 64\nanalysis_seconds = 120\n")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracked = cli.ok("track", str(b.path), "--as", "evil/mem", "--json").json()
    assert tracked["poll"]["status"] == "ok" and tracked["poll"]["new_revisions"] == 3
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 150 * 1024  # KiB: not here
    by_sha = _cut_and_moved_on(tmp_path, "evil/mem", cut=heavy, head=after)
    cut = by_sha[heavy]
    assert "memory budget of 64 MiB" in (cut.error or "") and "analysed in part" in cut.changes[0].summary
    assert by_sha[after].error is None  # the next one is analysed: its config change is there
    assert [c.kind.value for c in by_sha[after].changes if c.path == "config.json"] == ["config"]


def test_a_worker_never_inherits_a_lock_another_thread_holds(tmp_path: Path) -> None:
    """Issue 16: workers were forked from the threaded daemon, so a lock some other thread
    held at that instant (SQLAlchemy's pool, httpx's, logging's stream) stayed held forever in
    the worker; an analysis that needed it hung to its deadline and was recorded as cut."""
    snap = Snapshot(sha="b" * 40, files=(), contents={})
    pool = AnalysisPool(AnalysisBudget(seconds=20), runner=runners.analyse_under_lock)
    release = threading.Event()

    def hold() -> None:
        with runners.HELD_AT_FORK:
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        while not runners.HELD_AT_FORK.locked():
            time.sleep(0.01)
        out = pool.run(snap, None, base_sha=None, head_sha="b" * 40, max_json_depth=32, plan=PlanStep())
    finally:
        release.set()
        holder.join()
        pool.close()
    assert out.cut is None and out.error is None


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
