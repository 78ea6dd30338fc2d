"""Stage 3-5 of one revision (extract, diff with its renders, plan) under a hard budget.

A hostile revision must not hold a core for long or take the daemon's memory (issue 16,
point 4; issue 10, point 9): the analysis runs in a worker process with a wall-clock
deadline and an address-space limit (``RLIMIT_AS``), which no loop in Python, Jinja or a C
extension can escape. A worker over its budget is killed and replaced; the revision is
recorded with a change that says what was cut (``analysis.cut``, HIGH: content nobody could
compare may hide anything), and the poll goes on with the next commit. Before that, a second,
reduced pass (:mod:`tracker.pipeline.essentials`) runs in a fresh worker under the same
budget: config, code files, weights and their scans, without the tokenizer, templates and text
diffs, so a bomb file that stays in the tree cannot hide a later ``auto_map`` backdoor; what it
finds is recorded beside the cut. Only when it is cut too is the revision not analysed at all.

Workers come from a fork server: one single-threaded helper process, started once (a fresh
interpreter that imports the pure stages), forks each worker. Forking the daemon itself
would copy whatever locks its other threads hold at that moment (the scheduler's, SQLAlchemy's
pool, httpx's, stdio buffers) into a child that can never release them, and every socket and
database connection it has open; a worker that met such a lock hung until its deadline and
its revision was recorded as cut. The server's interpreter start is paid once per process
(:meth:`AnalysisPool.warm` starts it ahead of the first revision); a pool keeps one worker per
concurrent caller and reuses it, so a revision costs a round trip on a pipe.
``AnalysisBudget(seconds=0)`` analyses in-process (no limit), for callers that have no use
for a process.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import resource
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any

from tracker.diff import diff_artifacts
from tracker.extract import extract_artifacts
from tracker.model import Artifacts, Change, ChangeKind, RevisionDiff, Snapshot
from tracker.pipeline.analysis_wire import Held, WireJob, WorkerCache, compact, expand, pack
from tracker.pipeline.essentials import analyse_essentials, reduced_cut_change
from tracker.pipeline.plan_step import PlanStep

log = logging.getLogger("hubwatch.analysis")

PlanResult = tuple["dict[str, Any] | None", "dict[str, Any] | None", "Change | None"]


@dataclass(frozen=True, slots=True)
class AnalysisBudget:
    """What one revision's analysis may cost: seconds of wall clock, bytes of address space."""

    seconds: float = 60.0
    memory_bytes: int = 2 * 1024**3


@dataclass(frozen=True, slots=True)
class Analysis:
    """What the analysis of one revision found; ``cut`` names the budget it ran over."""

    head: Artifacts
    diff: RevisionDiff
    plan: PlanResult
    error: str | None = None
    cut: str | None = None
    not_compared: tuple[str, ...] = ()  # the reduced pass: left-out files that changed


@dataclass(frozen=True, slots=True)
class _Job:
    snap: Snapshot
    base: Artifacts | None
    base_sha: str | None
    head_sha: str
    max_json_depth: int
    plan: PlanStep
    essentials: bool = False  # the reduced pass, after the full one ran over its budget


def analyse(job: _Job) -> Analysis:
    """The analysis itself, in whatever process runs it; content errors become ``error``."""
    if job.essentials:
        return _analyse_essentials(job)
    error: str | None = None
    try:
        head = extract_artifacts(job.snap, max_json_depth=job.max_json_depth, earlier=job.base)
        diff = diff_artifacts(job.base, head, base_sha=job.base_sha, head_sha=job.head_sha)
    except MemoryError:
        raise  # the worker answers "memory": the revision is recorded as cut
    except Exception as e:  # hostile content must never crash a poll: record it
        error = f"{type(e).__name__}: {e}"
        head = Artifacts(files=job.snap.files)
        diff = RevisionDiff(base=job.base_sha, head=job.head_sha)
    try:
        plan = job.plan.run(job.base, head, first=job.base_sha is None)
    except Exception as e:  # the planner is pure and total, but a poll must survive a bug in it
        error = error or f"plan failed: {type(e).__name__}: {e}"
        plan = (None, None, None)
    return Analysis(head=head, diff=diff, plan=plan, error=error)


def _analyse_essentials(job: _Job) -> Analysis:
    """The reduced pass; no plan (it needs the tokenizer and templates the pass leaves out)."""
    try:
        head, diff, skipped = analyse_essentials(job.snap, job.base, base_sha=job.base_sha,
                                                 head_sha=job.head_sha, max_json_depth=job.max_json_depth)
    except MemoryError:
        raise
    except Exception as e:  # hostile content must never crash a poll: the revision stays "not analysed"
        return Analysis(head=Artifacts(files=job.snap.files), diff=RevisionDiff(base=job.base_sha, head=job.head_sha),
                        plan=(None, None, None), error=f"reduced analysis failed: {type(e).__name__}: {e}")
    return Analysis(head=head, diff=diff, plan=(None, None, None),
                    not_compared=skipped)


def cut_change(why: str) -> Change:
    """The change that records a revision whose analysis was stopped."""
    return Change(kind=ChangeKind.OTHER, path="/", topics=("analysis.cut",),
                  summary=f"not analysed: {why}; its config, tokenizer, template, weights and code "
                          "changes were not compared")


Runner = Callable[[_Job], Analysis]


class AnalysisPool:
    """Worker processes that analyse revisions under an :class:`AnalysisBudget`.

    ``runner`` is what a worker runs for each revision (:func:`analyse`; a test's own, which
    must be a module-level function: the worker imports it by name)."""

    def __init__(self, budget: AnalysisBudget = AnalysisBudget(), *, runner: Runner = analyse):
        self.budget = budget
        self.runner = runner
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def warm(self) -> threading.Thread | None:
        """Start one worker (and the fork server) in the background, so the first revision
        does not wait for an interpreter start; None when the pool analyses in-process."""
        if self.budget.seconds <= 0:
            return None

        def start() -> None:
            try:
                worker = _Worker(self.budget.memory_bytes, self.runner)
            except Exception:  # a worker that cannot start now is started (and fails) on use
                log.warning("analysis worker could not be started ahead", exc_info=True)
                return
            with self._lock:
                self._idle.append(worker)

        thread = threading.Thread(target=start, name="hubwatch-analysis-warm", daemon=True)
        thread.start()
        return thread

    def run(self, snap: Snapshot, base: Artifacts | None, *, base_sha: str | None, head_sha: str,
            max_json_depth: int, plan: PlanStep) -> Analysis:
        job = _Job(snap, base, base_sha, head_sha, max_json_depth, plan)
        if self.budget.seconds <= 0:
            return self.runner(job)
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None or not worker.alive():
            worker = _Worker(self.budget.memory_bytes, self.runner)
        outcome, value = worker.call(job, self.budget.seconds)
        if outcome == "ok":
            with self._lock:
                self._idle.append(worker)
            assert isinstance(value, Analysis)
            return value
        worker.kill()
        why = self._why(outcome)
        reduced = self._reduced(job)
        if reduced is not None and reduced.error is None:
            log.warning("revision %s analysed in part: %s", head_sha[:12], why)
            changes = (*reduced.diff.changes, reduced_cut_change(why, reduced.not_compared))
            return Analysis(head=reduced.head, diff=replace(reduced.diff, changes=changes), plan=reduced.plan,
                            error=f"analysis stopped: {why}; the reduced analysis is recorded", cut=outcome)
        log.warning("revision %s not analysed: %s", head_sha[:12], why)
        return Analysis(head=Artifacts(files=snap.files),
                        diff=RevisionDiff(base=base_sha, head=head_sha, changes=(cut_change(why),)),
                        plan=(None, None, None), error=f"analysis stopped: {why}", cut=outcome)

    def _why(self, outcome: str) -> str:
        return {"time": f"over its time budget of {self.budget.seconds:g} s",
                "memory": f"over its memory budget of {self.budget.memory_bytes // 2**20} MiB"}.get(
            outcome, "the analysis worker failed")

    def _reduced(self, job: _Job) -> Analysis | None:
        """The reduced pass in a fresh worker under the same budget; None when it was cut too."""
        try:
            worker = _Worker(self.budget.memory_bytes, self.runner)
        except Exception:
            log.warning("no worker for the reduced analysis", exc_info=True)
            return None
        outcome, value = worker.call(replace(job, essentials=True), self.budget.seconds)
        if outcome != "ok":
            worker.kill()
            return None
        with self._lock:
            self._idle.append(worker)
        assert isinstance(value, Analysis)
        return value

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for w in idle:
            w.kill()


_POOLS: dict[AnalysisBudget, AnalysisPool] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(budget: AnalysisBudget = AnalysisBudget()) -> AnalysisPool:
    """The process's pool for ``budget``: workers are reused by every check that shares it.
    Created warm: its first worker starts in the background."""
    with _POOLS_LOCK:
        if budget not in _POOLS:
            _POOLS[budget] = AnalysisPool(budget)
            _POOLS[budget].warm()
        return _POOLS[budget]


_CONTEXT: Any = None
_CONTEXT_LOCK = threading.Lock()


def _context() -> Any:
    """The ``forkserver`` context, its server preloading this module (so the pure stages are
    imported once, in the server, and every worker forked from it has them)."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload([__name__])
            _CONTEXT = ctx
        return _CONTEXT


_TOKENS = itertools.count(1)


class _Worker:
    """One worker process and its pipe; what it holds from earlier jobs
    (:mod:`tracker.pipeline.analysis_wire`) is not sent again."""

    def __init__(self, memory_bytes: int, runner: Runner):
        ctx = _context()
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, memory_bytes, runner), daemon=True,
                                name="hubwatch-analysis")
        self.proc.start()
        child.close()
        self.held = Held()
        self.produced: dict[int, Artifacts] = {}  # this side of the worker's artifact tokens

    def alive(self) -> bool:
        return bool(self.proc.is_alive())

    def call(self, job: _Job, seconds: float) -> tuple[str, object]:
        ends = time.monotonic() + seconds
        token = next(_TOKENS)
        outcome, value, held = self._exchange(pack(job, token, self.held, self.produced), seconds)
        if outcome == "missing":  # it no longer holds what was referred to: the job in full
            self.held, self.produced = Held(), {}
            outcome, value, held = self._exchange(WireJob(job, token), max(ends - time.monotonic(), 0.001))
        value = expand(value, job.base)
        if outcome == "ok" and isinstance(held, Held) and isinstance(value, Analysis):
            self.held = held
            self.produced = {t: a for t, a in (*self.produced.items(), (token, value.head)) if t in held.artifacts}
        return outcome, value

    def _exchange(self, wire: WireJob, seconds: float) -> tuple[str, object, object]:
        try:
            self.conn.send(wire)
            if not self.conn.poll(seconds):
                return "time", None, None
            answer = self.conn.recv()
        except (EOFError, OSError):  # killed by the kernel (memory) or crashed
            return "memory" if self.proc.exitcode in (None, -9) else "crash", None, None
        assert isinstance(answer, tuple)
        return answer[0], answer[1], answer[2]

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()


def _serve(conn: Connection, memory_bytes: int, runner: Runner) -> None:
    """The worker's loop: analyse each job sent, answer ("ok", Analysis, what it holds now),
    ("memory", None, None), or ("missing", None, None) for a job that refers to bytes or
    artifacts it no longer holds."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # not the daemon's "stop gracefully"
        signal.signal(sig, signal.SIG_DFL)
    # the budget is on top of what the process already maps (its interpreter and the pure
    # stages' modules); an absolute cap below that made stack growth fault
    limit = _mapped_bytes() + memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    parent = os.getppid()
    cache = WorkerCache()
    while True:
        try:
            while not conn.poll(1.0):  # the fork server's child: exit when the server (the daemon) goes
                if os.getppid() != parent:
                    return
            wire = conn.recv()
        except (EOFError, OSError):
            return
        try:
            job = cache.unpack(wire)
            if job is None:
                conn.send(("missing", None, None))
                continue
            found = runner(job)
            conn.send(("ok", compact(found, job.base), cache.keep(job, wire.token, found.head)))
        except MemoryError:
            conn.send(("memory", None, None))


def _mapped_bytes() -> int:
    """This process's virtual size (``/proc/self/statm``), 0 where that is not readable."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0
