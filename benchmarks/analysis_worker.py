"""Cost of analysing a revision in the budgeted worker (tracker.pipeline.analysis), per revision.

Runs a real revision pair (gemma-2b-it's chat template change, with a corpus config.json)
through ``AnalysisPool`` the way the daemon does: from a process with busy threads (the
daemon's scheduler, API and delivery threads) and a large heap (``--heap-mb``, what a
long-running daemon holds). Prints, for the pool's first answer (a worker started) and for
``--revisions`` answers of a warm pool: wall time, and CPU time of the calling thread and of the
worker processes (from /proc). ``--inline`` is the same analysis without a worker (the floor).

    .venv/bin/python benchmarks/analysis_worker.py --revisions 40 --heap-mb 1000
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import threading
import time
from pathlib import Path

from tracker.model import FileEntry, Snapshot
from tracker.pipeline.analysis import AnalysisBudget, AnalysisPool
from tracker.pipeline.plan_step import PlanStep

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "hf-corpus"
CHANGE = CORPUS / "changes" / "gemma-2b-it__chat-template-bos-token"
TICKS = os.sysconf("SC_CLK_TCK")


def _snapshot(side: str) -> Snapshot:
    contents = {
        "config.json": (CORPUS / "configs" / "google__gemma-2b-it.json").read_bytes(),
        "tokenizer_config.json": (CHANGE / side / "tokenizer_config.json").read_bytes(),
    }
    files = tuple(FileEntry(p, len(b), hashlib.sha1(b).hexdigest()) for p, b in sorted(contents.items()))
    return Snapshot(sha=hashlib.sha1(side.encode()).hexdigest(), files=files, contents=contents)


def _cpu_of(pid: int) -> float:
    """utime + stime of a live process, seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _worker_pids() -> list[int]:
    """This process's descendants (workers, and a fork server and its children)."""
    found, frontier = [], [os.getpid()]
    while frontier:
        pid = frontier.pop()
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        for c in map(int, children):
            found.append(c)
            frontier.append(c)
    return found


def _busy_threads(n: int, stop: threading.Event) -> list[threading.Thread]:
    """Threads that take and release a lock and log, as the daemon's do, while workers start."""
    lock = threading.Lock()

    def spin() -> None:
        while not stop.is_set():
            with lock:
                sum(range(2000))
            time.sleep(0.001)

    threads = [threading.Thread(target=spin, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--revisions", type=int, default=40)
    ap.add_argument("--heap-mb", type=int, default=0, help="bytes this process holds (touched) first")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--inline", action="store_true", help="analyse in this process (no worker)")
    args = ap.parse_args()
    heap = bytearray(args.heap_mb << 20)
    heap[::4096] = b"\1" * len(range(0, len(heap), 4096))  # touched: resident, as a daemon's heap is
    stop = threading.Event()
    _busy_threads(args.threads, stop)
    before, after = _snapshot("before"), _snapshot("after")
    plan = PlanStep()
    pool = AnalysisPool(AnalysisBudget(seconds=0 if args.inline else 60, memory_bytes=2 * 1024**3))
    kw = dict(max_json_depth=64, plan=plan)
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    base = pool.run(before, None, base_sha=None, head_sha=before.sha, **kw).head  # type: ignore[arg-type]
    cold_wall = time.perf_counter() - wall0
    cpu1 = time.thread_time()
    first = pool.run(after, base, base_sha=before.sha, head_sha=after.sha, **kw)  # type: ignore[arg-type]
    assert first.cut is None and first.diff.changes, first
    wall1 = time.perf_counter()
    workers0 = sum(_cpu_of(p) for p in _worker_pids())
    cpu2, wall1 = time.thread_time(), time.perf_counter()
    for i in range(args.revisions):
        snap, parent = (after, before) if i % 2 == 0 else (before, after)
        base_art = base if i % 2 == 0 else first.head
        out = pool.run(snap, base_art, base_sha=parent.sha, head_sha=snap.sha, **kw)  # type: ignore[arg-type]
        assert out.cut is None and out.diff.changes
    warm_wall = (time.perf_counter() - wall1) / args.revisions
    warm_cpu = (time.thread_time() - cpu2) / args.revisions
    workers = (sum(_cpu_of(p) for p in _worker_pids()) - workers0) / args.revisions
    stop.set()
    pool.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    mode = "inline" if args.inline else "worker"
    print(f"{mode}: heap {args.heap_mb} MB (max RSS {rss} MB), {args.threads} busy threads, load "
          f"{os.getloadavg()[0]:.2f}")
    print(f"  first answer (worker start + a first revision): {cold_wall * 1000:.1f} ms wall, "
          f"{(cpu1 - cpu0) * 1000:.1f} ms CPU in the caller, {workers0 * 1000:.1f} ms CPU in the worker "
          "processes (a fork server's start included) by the end of the second")
    print(f"  per revision, warm ({args.revisions}): {warm_wall * 1000:.1f} ms wall, "
          f"{warm_cpu * 1000:.1f} ms CPU in the caller + {workers * 1000:.1f} ms CPU in workers")
    del heap


if __name__ == "__main__":
    main()
