"""A new revision: what reading one new commit costs in-process, per stage, beside its bare requests.

    .venv/bin/python benchmarks/new_revision.py                # every scenario, 3 rounds, a table
    .venv/bin/python benchmarks/new_revision.py --profile      # plus a cProfile of the work between requests
    .venv/bin/python benchmarks/new_revision.py --statements   # plus each SQL statement of the measured check

Each scenario is a real corpus repo (shared/hf-corpus/histories: its head's config, tokenizer
files, tokenizer.json, chat templates) with safetensors shards whose headers are the model's
tensors (names from its index, shapes from its config; see ``shards.py``), tracked on a fresh
SQLite store, and then one real upstream change of shared/hf-corpus/changes committed on top
(or every shard re-uploaded). Before it, the same process read another small repo and one change
of it that got an advisory, and read the scenario's repo and a model card edit of it: the
measured check meets a daemon in its steady state (statements compiled, the analysis worker
forked, the parent's artifacts at hand). The measured step is the daemon's own: ``check_repo`` of the
repo with the Hub emulator serving it, the analysis in the worker process under its default
budget. Each stage is timed exclusively (its wall and its thread's CPU, less what the stages
it calls took); the analysis worker's CPU comes from /proc. "bare" is the same requests
(recorded by the emulator: method, URL, Range, form; the git protocol's too) sent again
through huggingface_hub's own HTTP session, each answer read and, for API routes, parsed as
JSON, right after the pipeline, by the same process. The emulator runs in the parent process;
each scenario is read in a child process, so the CPU counted is the daemon side's alone: the
checking thread's, the git commands' it ran (the commit graph read) and the analysis worker's.

Goal (issue 17): the pipeline's CPU for a new revision under 2x that of its bare requests.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import json
import os
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hubemu import hf_test_env  # noqa: E402

hf_test_env()

from benchmarks.cpu import worker_cpu  # noqa: E402
from benchmarks.shards import sharded_repo  # noqa: E402
from storage import store as store_module  # noqa: E402
from storage.store import Store, open_store  # noqa: E402
from tests.hubemu import HubEmulator, RepoBuilder  # noqa: E402
from tracker import heap  # noqa: E402
from tracker.hub import hf as hf_module  # noqa: E402
from tracker.hub.hf import HfSource  # noqa: E402
from tracker.pipeline import check as check_module  # noqa: E402
from tracker.pipeline.advise_step import AdviseStep  # noqa: E402
from tracker.pipeline.analysis import AnalysisBudget, AnalysisPool  # noqa: E402
from tracker.pipeline.check import PipelineOptions, check_repo  # noqa: E402

CHANGES = ROOT.parent / "shared" / "hf-corpus" / "changes"
if not CHANGES.is_dir():
    CHANGES = Path("/work/shared/hf-corpus/changes")


@dataclass(frozen=True)
class Scenario:
    name: str
    bundle: str  # a corpus history: the repo as it was
    change: str | None  # a corpus change: its before/ is committed first, its after/ is the new revision
    what: str


SCENARIOS = (
    Scenario("gemma chat template", "google__gemma-2b-it", "gemma-2b-it__chat-template-bos-token",
             "tokenizer_config.json: chat template emits bos_token"),
    Scenario("llama-2 context", "meta-llama__Llama-2-7b-hf", "llama2-7b-hf__config-max-position-2048-to-4096",
             "config.json: max_position_embeddings 2048 -> 4096"),
    Scenario("llama-2 tokenizer", "meta-llama__Llama-2-7b-hf", "llama2-7b-hf__tokenizer-normalized-and-pad",
             "tokenizer_config.json + special_tokens_map.json"),
    Scenario("mistral template", "mistralai__Mistral-7B-Instruct-v0.3", "mistral-7b-instruct-v0.3__chat-template-added",
             "tokenizer_config.json (137 kB, tool-use template) added"),
    Scenario("mixtral window", "mistralai__Mixtral-8x7B-v0.1", "mixtral-8x7b-v0.1__sliding-window-churn",
             "config.json: sliding_window (MoE, 19 shards)"),
    Scenario("granite template", "ibm-granite__granite-3.1-1b-a400m-instruct",
             "granite-3.1-1b-a400m-instruct__chat-template-update", "tokenizer_config.json chat template"),
    Scenario("gpt-oss template", "openai__gpt-oss-20b", "gpt-oss-20b__chat-template-rewrite-82",
             "chat_template.jinja rewritten (16 kB)"),
    Scenario("mistral weights", "mistralai__Mistral-7B-Instruct-v0.3", None,
             "every safetensors shard re-uploaded (new headers)"),
)


# ---------------------------------------------------------------------------------- stage clock
class StageClock:
    """Exclusive wall and thread-CPU time per named stage (a stage's callees are charged to them)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            w0, c0 = time.perf_counter(), time.thread_time()
            self._stack.append([0.0, 0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                w, c = time.perf_counter() - w0, time.thread_time() - c0
                inner_w, inner_c = self._stack.pop()
                self.wall[name] += w - inner_w
                self.cpu[name] += c - inner_c
                if self._stack:
                    self._stack[-1][0] += w
                    self._stack[-1][1] += c
        return timed


#: (stage, owner, attribute): what check_repo calls, grouped into the stages the issue names
STAGES: tuple[tuple[str, Any, str], ...] = (
    ("request: head check", HfSource, "resolve_head"),
    ("request: commits", HfSource, "list_commits"),
    ("request: commit graph (git protocol v2, filter tree:0)", hf_module, "commit_parents"),
    ("request: tree", HfSource, "list_files"),
    ("request: file / header reads", HfSource, "read_file"),
    ("request: file / header reads", HfSource, "read_range"),
    ("request: security status", HfSource, "file_security"),
    ("snapshot (between its requests)", check_module, "take_snapshot"),
    ("store: reads (known shas, blobs, parent snapshot)", Store, "known_shas"),
    ("store: reads (known shas, blobs, parent snapshot)", Store, "get_blob"),
    ("store: reads (known shas, blobs, parent snapshot)", Store, "get_blobs"),
    ("store: reads (known shas, blobs, parent snapshot)", Store, "snapshot"),
    ("extract: parent revision (in the daemon)", check_module, "extract_artifacts"),
    ("rules", check_module, "apply_rules"),
    ("advise: OSV record, lifecycle", AdviseStep, "run"),
    ("store: write transaction", Store, "record_revision"),
    ("store: sanitise (before the write)", store_module, "storable"),
)


@contextmanager
def instrumented(clock: StageClock, worker: dict[str, float]) -> Iterator[None]:
    with ExitStack() as stack:
        for name, owner, attr in STAGES:
            stack.enter_context(mock.patch.object(owner, attr, clock.wrap(name, getattr(owner, attr))))
        pool_run = AnalysisPool.run

        def run_counting_worker(self: AnalysisPool, *args: Any, **kwargs: Any) -> Any:
            before = worker_cpu()
            try:
                return pool_run(self, *args, **kwargs)
            finally:
                worker["cpu"] += worker_cpu() - before

        stack.enter_context(mock.patch.object(AnalysisPool, "run", clock.wrap(
            "analysis worker: extract, diff, renders, plan", run_counting_worker)))
        yield


# ---------------------------------------------------------------------------------- bare requests
def replay(hub_url: str, records: list[dict[str, Any]]) -> tuple[float, float]:
    """The recorded requests again through huggingface_hub's session: (wall, CPU) seconds."""
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    session = get_session()
    base = build_hf_headers(library_name="hubwatch-bench")
    w0, c0 = time.perf_counter(), time.thread_time()
    for r in records:
        headers = dict(base)
        if r["range"]:
            headers["Range"] = r["range"]
        url = hub_url + r["path"]
        if r["method"] == "POST":
            headers["Content-Type"] = r["type"] or "application/x-www-form-urlencoded"
            resp = session.post(url, content=base64.b64decode(r["body"]), headers=headers)
        else:
            resp = session.get(url, headers=headers)
        if resp.status_code < 400:
            hf_raise_for_status(resp)
        if r["route"] in ("model_info", "commits", "tree", "paths_info"):
            resp.json()
        else:
            _ = resp.content
    return time.perf_counter() - w0, time.thread_time() - c0


# ---------------------------------------------------------------------------------- one scenario
def _change_files(change: str, side: str) -> dict[str, bytes]:
    root = CHANGES / change / side
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


#: A small repo the daemon side reads before the measured check, with one change that gets an
#: advisory: a daemon in its steady state has written advisories before (their statements are
#: compiled), whatever the measured repo did so far.
WARM_UP = "llama2-7b-hf__config-max-position-2048-to-4096"


def _warm_up_files(side: str) -> dict[str, bytes]:
    """The warm-up change's config.json, marked so that no scenario's file has its blob id (the
    measured check must not find its files stored by the warm-up)."""
    config = json.loads(_change_files(WARM_UP, side)["config.json"])
    return {"config.json": json.dumps({**config, "_bench_warm_up": True}, indent=2).encode()}


def prepare(work: Path, hub: HubEmulator, sc: Scenario, round_no: int) -> tuple[str, RepoBuilder, str, RepoBuilder]:
    """The repo at its 'before' state and the warm-up repo, served (read by the child)."""
    before = _change_files(sc.change, "before") if sc.change else {}
    builder = sharded_repo(work / f"{sc.name.replace(' ', '-')}-{round_no}.git", sc.bundle, extra=before)
    repo_id = f"bench-{round_no}/{sc.name.replace(' ', '-')}"  # one repo (and store) per scenario and round
    hub.add_repo(repo_id, builder.path)
    warm = RepoBuilder.init(work / f"warm-{sc.name.replace(' ', '-')}-{round_no}.git")
    warm.commit(_warm_up_files("before"), title="init")
    warm_id = f"bench-{round_no}/warm-up-{sc.name.replace(' ', '-')}"
    hub.add_repo(warm_id, warm.path)
    return repo_id, builder, warm_id, warm


def new_commit(builder: RepoBuilder, sc: Scenario) -> None:
    if sc.change:
        builder.commit(_change_files(sc.change, "after"), title=sc.what)
    else:
        from benchmarks.shards import reupload_shards

        reupload_shards(builder, sc.bundle)


def run_scenario(work: Path, hub: HubEmulator, sc: Scenario, round_no: int, flags: list[str]) -> dict[str, Any]:
    """Serve the scenario's repo here; read it in a child process (so its CPU, its git commands'
    and its analysis worker's are the daemon side's alone), the measured check between two
    handshakes so the emulator counts exactly its requests."""
    repo_id, builder, warm_id, warm = prepare(work, hub, sc, round_no)
    job = {"hub": hub.url, "repo": repo_id, "git": str(builder.path), "scenario": sc.name,
           "db": str(work / (repo_id.replace("/", "__") + ".db")), "warm": warm_id, "warm_git": str(warm.path)}
    proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(job), *flags], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "ready"
        hub.wait_idle()
        hub.reset_stats()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        hub.wait_idle()
        records = hub.requests
        sent = [{"method": r.method, "route": r.route, "path": r.path, "range": r.headers.get("range"),
                 "type": r.headers.get("content-type"), "body": base64.b64encode(r.body).decode()} for r in records]
        proc.stdin.write(json.dumps(sent) + "\n")
        proc.stdin.flush()
        row = json.loads(proc.stdout.readline())
    finally:
        proc.stdin.close()
        proc.wait(60)
    routes: dict[str, int] = defaultdict(int)
    for r in records:
        routes[r.route] += 1
    return {**row, "what": sc.what, "requests": len(records), "routes": dict(routes),
            "bytes": sum(r.bytes_sent for r in records)}


@contextmanager
def statements_counted(store: Store, out: Any) -> Iterator[None]:
    """Print each SQL statement the block ran: count, wall time of its executions (``--statements``)."""
    from sqlalchemy import event

    seen: dict[str, list[float]] = defaultdict(list)
    started: list[float] = []

    def before(*_: Any) -> None:
        started.append(time.perf_counter())

    def after(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen[" ".join(statement.split())[:110]].append(time.perf_counter() - started.pop())

    event.listen(store.engine, "before_cursor_execute", before)
    event.listen(store.engine, "after_cursor_execute", after)
    try:
        yield
    finally:
        event.remove(store.engine, "before_cursor_execute", before)
        event.remove(store.engine, "after_cursor_execute", after)
        total = sum(len(v) for v in seen.values())
        print(f"\n{total} SQL statements in the measured check (count, wall ms):", file=out)
        for sql, times in sorted(seen.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {len(times):3d} {sum(times) * 1e3:7.2f}  {sql}", file=out)


def child(job: dict[str, Any], in_process: bool, profile: cProfile.Profile | None, statements: bool = False) -> None:
    """The daemon side of one scenario (see :func:`run_scenario`)."""
    sc = next(s for s in SCENARIOS if s.name == job["scenario"])
    options = PipelineOptions(analysis=AnalysisPool(AnalysisBudget(seconds=0))) if in_process else None
    builder, repo_id = RepoBuilder(Path(job["git"])), job["repo"]
    store = open_store(f"sqlite:///{job['db']}")
    src = HfSource(repo_id, endpoint=job["hub"], timeout=30)
    store.add_repo(repo_id, source=repo_id, source_kind="hub", backfill="none")
    # the setup: another repo read, then a change of it with an advisory (the daemon has
    # recorded advisories before); the repo read before, and moved once since (a model card
    # edit): the measured check finds a daemon in its steady state (statements compiled,
    # worker forked, the collector settled as the daemon settles it)
    warm, warm_src = RepoBuilder(Path(job["warm_git"])), HfSource(job["warm"], endpoint=job["hub"], timeout=30)
    store.add_repo(job["warm"], source=job["warm"], source_kind="hub", backfill="none")
    for change in (None, _warm_up_files("after")):
        if change:
            warm.commit(change, title="config: max_position_embeddings")
        assert check_repo(store, warm_src, _record(store, job["warm"]), options).status == "ok"
    assert store.list_advisories(job["warm"]), "the warm-up change should get an advisory"
    warm_src.close()
    for edit in (None, {"README.md": b"# model card, edited\n"}):
        if edit:
            builder.commit(edit, title="Update README.md")
        first = check_repo(store, src, _record(store, repo_id), options)
        assert first.status == "ok", first
    heap.settle("daemon")  # what a daemon does after its first cycle that checked a repo
    new_commit(builder, sc)
    record = _record(store, repo_id)
    print("ready", flush=True)
    assert sys.stdin.readline().strip() == "go"
    clock, worker = StageClock(), {"cpu": 0.0}
    with instrumented(clock, worker), statements_counted(store, sys.stderr) if statements else ExitStack():
        git0 = _children_cpu()
        w0, c0 = time.perf_counter(), time.thread_time()
        if profile is not None:
            profile.enable()
        result = check_repo(store, src, record, options)
        if profile is not None:
            profile.disable()
        wall, cpu, git = time.perf_counter() - w0, time.thread_time() - c0, _children_cpu() - git0
    assert result.status == "ok" and result.new_revisions == 1, result
    print("done", flush=True)
    records = json.loads(sys.stdin.readline())
    bare_wall, bare_cpu = replay(job["hub"], records)
    src.close()
    store.close()
    stages = {k: {"wall": clock.wall[k], "cpu": clock.cpu[k]} for k in clock.wall}
    stages["other (check_repo itself)"] = {"wall": wall - sum(clock.wall.values()),
                                          "cpu": cpu - sum(clock.cpu.values())}
    print(json.dumps({"scenario": sc.name, "wall": wall, "cpu": cpu, "worker_cpu": worker["cpu"], "git_cpu": git,
                      "bare_wall": bare_wall, "bare_cpu": bare_cpu, "stages": stages}), flush=True)
    if profile is not None:
        _print_profile(profile, sys.stderr)


def _children_cpu() -> float:
    """User + system seconds of this process's finished children: the git commands it ran."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _record(store: Store, repo_id: str) -> Any:
    record = store.get_repo(repo_id)
    assert record is not None
    return record


# ---------------------------------------------------------------------------------- report
def table(rows: list[dict[str, Any]], rounds: int) -> str:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["scenario"]].append(r)
    med = statistics.median
    out = [
        f"One new revision per scenario, median of {rounds} rounds (CPython {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC):",
        "",
        "| scenario | change | requests | bytes | bare wall | bare CPU | pipeline wall | pipeline CPU "
        "(daemon + git + worker) | CPU / bare | wall / bare |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    ratios, wall_ratios = [], []
    for name, rs in by.items():
        cpu = med([r["cpu"] + r["git_cpu"] + r["worker_cpu"] for r in rs])
        bare = med([r["bare_cpu"] for r in rs])
        wall = med([r["wall"] / r["bare_wall"] for r in rs])
        ratios.append(cpu / bare)
        wall_ratios.append(wall)
        routes = ", ".join(f"{k} {v}" for k, v in sorted(rs[0]["routes"].items()))
        out.append(f"| {name} | {rs[0]['what']} | {rs[0]['requests']} ({routes}) | {rs[0]['bytes'] / 1e3:.1f} kB "
                   f"| {med([r['bare_wall'] for r in rs]) * 1e3:.1f} ms | {bare * 1e3:.1f} ms "
                   f"| {med([r['wall'] for r in rs]) * 1e3:.1f} ms "
                   f"| {med([r['cpu'] for r in rs]) * 1e3:.1f} + {med([r['git_cpu'] for r in rs]) * 1e3:.0f} "
                   f"+ {med([r['worker_cpu'] for r in rs]) * 1e3:.0f} ms | {cpu / bare:.2f}x | {wall:.2f}x |")
    names = sorted({k for r in rows for k in r["stages"]}, key=lambda k: -sum(r["stages"].get(k, {}).get("cpu", 0)
                                                                              for r in rows))
    bare_all = med([sum(r["bare_cpu"] for r in rs) for rs in _rounds(rows, rounds).values()])
    out += ["", "Per stage, summed over every scenario, median round (exclusive: a stage's callees are its own "
                "rows; worker CPU is the analysis process's own); the last column is the stage's CPU over the "
                f"bare requests' CPU of the same scenarios ({bare_all * 1e3:.1f} ms): the goal, pipeline CPU under "
                "2x bare, is every stage together under 2.00, the work between requests under 1.00:", "",
            "| stage | wall | CPU (this thread) | CPU / bare |", "| --- | ---: | ---: | ---: |"]
    per_round = _rounds(rows, rounds)
    between: list[float] = [0.0] * len(per_round)
    for k in names:
        walls = [sum(r["stages"].get(k, {}).get("wall", 0) for r in rs) for rs in per_round.values()]
        cpus = [sum(r["stages"].get(k, {}).get("cpu", 0) for r in rs) for rs in per_round.values()]
        if not k.startswith("request:"):
            between = [b + c for b, c in zip(between, cpus, strict=True)]
        out.append(f"| {k} | {med(walls) * 1e3:.1f} ms | {med(cpus) * 1e3:.1f} ms | {med(cpus) / bare_all:.2f} |")
    workers = [sum(r["worker_cpu"] for r in rs) for rs in per_round.values()]
    out.append(f"| (analysis worker process, its CPU) | | {med(workers) * 1e3:.1f} ms | {med(workers) / bare_all:.2f} |")
    gits = [sum(r["git_cpu"] for r in rs) for rs in per_round.values()]
    out.append(f"| (git commands, where the server lacks protocol v2: their CPU) | | {med(gits) * 1e3:.1f} ms "
               f"| {med(gits) / bare_all:.2f} |")
    work = med([b + w + g for b, w, g in zip(between, workers, gits, strict=True)])
    out.append(f"| **between requests (every stage but the requests, worker and git included)** | | "
               f"**{work * 1e3:.1f} ms** | **{work / bare_all:.2f}** (goal: under 1.00) |")
    worst = max(ratios)
    out += ["", f"Goal: pipeline CPU under 2x its bare requests' CPU, every scenario: worst {worst:.2f}x, "
                f"median {med(ratios):.2f}x ({'met' if worst < 2 else 'NOT met'}); wall time: worst "
                f"{max(wall_ratios):.2f}x, median {med(wall_ratios):.2f}x."]
    return "\n".join(out)


def _rounds(rows: list[dict[str, Any]], rounds: int) -> dict[int, list[dict[str, Any]]]:
    """The rows of each round (rows come round by round, every scenario in each)."""
    per_round: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for i, r in enumerate(rows):
        per_round[i // (len(rows) // rounds)].append(r)
    return per_round


def _print_profile(profile: cProfile.Profile, out: Any) -> None:
    print("\ncProfile of the measured check (this thread), by own time:\n", file=out)
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
    print("\nThe project's own functions, by cumulative time:\n", file=out)
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(r"/(tracker|storage|advisories)/", 30)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", nargs="*", help="scenario names (default: all)")
    p.add_argument("--profile", action="store_true", help="cProfile each measured check; print the top functions")
    p.add_argument("--in-process", action="store_true",
                   help="analyse in this process (no worker, no budget): for --profile to see inside the analysis")
    p.add_argument("--statements", action="store_true", help="print the SQL statements of each measured check")
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(json.loads(args.child), args.in_process, cProfile.Profile() if args.profile else None, args.statements)
        return 0
    flags = [f for f, on in (("--profile", args.profile), ("--in-process", args.in_process),
                             ("--statements", args.statements)) if on]
    scenarios = [s for s in SCENARIOS if not args.only or s.name in args.only]
    rows = []
    with tempfile.TemporaryDirectory(prefix="new-revision-") as tmp, HubEmulator() as hub:
        for round_no in range(args.rounds):
            for sc in scenarios:
                rows.append(run_scenario(Path(tmp), hub, sc, round_no, flags))
        assert not hub.internal_errors, hub.internal_errors
    if args.json:
        print(json.dumps(rows, indent=2))
    print(table(rows, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
