"""Firehose cost when k of N tracked repos changed: requests per cycle and CPU, beside the model.

    .venv/bin/python benchmarks/firehose_cost.py --repos 1000,10000,100000 --changed 0,1,10,100,1000
    .venv/bin/python benchmarks/firehose_cost.py --pairs 1000:0,1000:100,100000:0,100000:1000   # chosen cells

One daemon cycle in firehose mode (``Daemon.run_once`` in a child process built by
``build_daemon`` from a config.toml, as ``hubwatch run`` builds it) over N tracked Hub repos
of which k pushed one commit since they were last read. The Hub emulator (ScaleHub: many ids
over a few git dirs, its listing built page by page) serves them; the tracked set is seeded
with one bulk insert (every repo read five minutes ago, head known, due), so seeding 100,000
repos takes seconds. A moved repo is served from a copy of its git dir with one more commit
(a config.json edit dated now), so its check reads a real new revision.

The model printed beside each row (see benchmarks/RESULTS.md, "The whole Hub"):

    requests = ceil((k + 1) / page) + r_new * k
        one listing page per 1,000 changes since the watermark (the +1: the first older item,
        which proves the read complete), then each moved repo's check (r_new requests: head
        check, commits page, tree, the changed file)
    CPU      = c_cycle + c_repo * N + c_new * k
        c_repo: loading and confirming each tracked repo; c_new: one moved repo's check;
        calibrated on the smallest N's rows (k = 0 and the largest k), predicted for the rest.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGE = 1000  # the Hub's (and the emulator's) list_models page size


def seed(url: str, ids: list[str], heads: list[str], earlier: datetime) -> float:
    """The tracked set in bulk: every repo read at ``earlier`` with head ``heads[i]``, due now."""
    from sqlalchemy import insert

    from storage import open_store
    from storage.tables import RepoRow

    started = time.perf_counter()
    store = open_store(url)
    rows = [{"id": i, "source": i, "source_kind": "hub", "branch": "main", "backfill": "all", "active": True,
             "head_sha": h, "added_at": earlier, "last_poll_at": earlier, "last_success_at": earlier,
             "failures": 0, "next_check_at": earlier} for i, h in zip(ids, heads, strict=True)]
    with store.engine.begin() as c:
        for i in range(0, len(rows), 5000):
            c.execute(insert(RepoRow), rows[i : i + 5000])
    store.close()
    return time.perf_counter() - started


def moved_dirs(base: Path, dirs: list[tuple[Path, str]]) -> list[Path]:
    """For each shared git dir, a copy with one more commit (a config edit dated now)."""
    from tests.daemon.helpers import config_bytes
    from tests.hubemu import RepoBuilder
    from tests.hubemu.repos import _git

    out = []
    for i, (path, _) in enumerate(dirs):
        copy = base / f"moved-{i}.git"
        copy.parent.mkdir(parents=True, exist_ok=True)
        _git(None, "clone", "-q", "--bare", str(path), str(copy))
        RepoBuilder(copy).commit({"config.json": config_bytes(hidden_size=64 + i, max_position_embeddings=4096)},
                                 title="longer context", date=datetime.now(UTC).replace(microsecond=0))
        out.append(copy)
    return out


def child(config: str) -> None:
    """One firehose cycle of a daemon built from ``config``; prints wall and CPU as JSON, the
    firehose read's own (this thread) apart from the whole cycle's (every thread, and the
    analysis workers)."""
    from benchmarks.cpu import process_cpu, worker_cpu
    from tracker.cli.context import Context
    from tracker.cli.serve_cmds import build_daemon
    from tracker.daemon.coverage import FirehoseCoverage

    ctx = Context(argparse.Namespace(config=config, command="run", json=False))
    daemon = build_daemon(ctx)
    read = FirehoseCoverage.read
    spent = {"wall": 0.0, "cpu": 0.0}

    def timed_read(self: FirehoseCoverage, *args: Any, **kwargs: Any) -> Any:
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            return read(self, *args, **kwargs)
        finally:
            spent["wall"] += time.perf_counter() - w0
            spent["cpu"] += time.thread_time() - c0

    FirehoseCoverage.read = timed_read  # type: ignore[method-assign]
    cpu0, work0, w0 = process_cpu(), worker_cpu(), time.perf_counter()
    results = daemon.run_once()
    wall, cpu, worker = time.perf_counter() - w0, process_cpu() - cpu0, worker_cpu() - work0
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    snap = daemon.stats.snapshot()
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "worker_cpu_s": worker, "firehose_wall_s": spent["wall"],
                      "firehose_cpu_s": spent["cpu"], "statuses": statuses, "confirmed": snap["firehose_confirmed"],
                      "moved": snap["firehose_moved"], "new_revisions": sum(r.new_revisions for r in results)}))


def run(pairs: list[tuple[int, int]], db: str, concurrency: int) -> list[dict[str, Any]]:
    from tests.hubemu import hf_test_env

    hf_test_env()
    from benchmarks.scale import _database
    from tests.daemon.helpers import hubwatch_env, write_config
    from tests.daemon.scalehub import ScaleHub, build_dirs

    rows = []
    with tempfile.TemporaryDirectory(prefix="hubwatch-firehose-") as t, ScaleHub() as hub:
        tmp = Path(t)
        dirs = build_dirs(tmp, 8)
        for n, k in pairs:
            label = f"n{n}-k{k}"
            # pushed just now, for each cell: the listing must hold them past the watermark
            moved = moved_dirs(tmp / label, dirs) if k else []
            url, drop = _database(db, tmp, label)
            try:
                ids = [f"fh{n}/model-{i:06d}" for i in range(n)]
                with hub._lock:
                    hub._repos.clear()
                for i, repo_id in enumerate(ids):  # the moved ones spread over the set
                    hub.add_repo(repo_id, moved[i % 8] if k and i % (n // k) == 0 and i // (n // k) < k
                                 else dirs[i % 8][0])
                seeded = seed(url, ids, [dirs[i % 8][1] for i in range(n)],
                              datetime.now(UTC) - timedelta(minutes=5))
                config = write_config(tmp / f"{label}.toml", db_url=url, hub_url=hub.url, port=0,
                                      schedule={"concurrency": concurrency, "firehose": True},
                                      hub={"timeout_seconds": 60, "requests_per_5min": 10_000_000})
                hub.reset_stats()
                out = subprocess.run([sys.executable, __file__, "--child", str(config)], env=hubwatch_env(),
                                     capture_output=True, text=True, check=True, cwd=ROOT)
                hub.wait_idle()
                measured = json.loads(out.stdout.strip().splitlines()[-1])
                if measured["confirmed"] + measured["statuses"].get("ok", 0) < n:
                    raise RuntimeError(f"{label}: the cycle did not cover every repo: {measured}\n"
                                       f"{out.stderr[-3000:]}")
                rows.append({"repos": n, "changed": k, "seed_s": seeded, "requests": hub.count(),
                             "by_route": {r: v["requests"] for r, v in hub.summary().items()}, **measured})
                print(f"N={n:,} k={k:,}: {rows[-1]['requests']} requests, {measured['cpu_s']:.2f} s CPU",
                      file=sys.stderr, flush=True)
            finally:
                drop()
        assert not hub.internal_errors, hub.internal_errors
    return rows


def model(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The model's constants: r_new from the rows' own per-moved-repo requests at the smallest N,
    and the CPU terms from the smallest N's k = 0 and largest-k rows (predicting the rest)."""
    small = min(r["repos"] for r in rows)
    calib = [r for r in rows if r["repos"] == small]
    idle = next(r for r in calib if r["changed"] == 0)
    busy = max(calib, key=lambda r: r["changed"])
    k = busy["changed"] or 1
    r_new = (busy["requests"] - math.ceil((busy["changed"] + 1) / PAGE)) / k
    c_new = (busy["cpu_s"] + busy["worker_cpu_s"] - idle["cpu_s"] - idle["worker_cpu_s"]) / k
    bigger = [r for r in rows if r["changed"] == 0 and r["repos"] > small]
    if bigger:
        big = max(bigger, key=lambda r: r["repos"])
        c_repo = (big["cpu_s"] - idle["cpu_s"]) / (big["repos"] - small)
    else:
        c_repo = 0.0
    return {"r_new": r_new, "c_new": c_new, "c_repo": c_repo, "c_cycle": idle["cpu_s"] - c_repo * small,
            "calibrated_on": small}


def predict(m: dict[str, float], n: int, k: int) -> tuple[float, float]:
    return math.ceil((k + 1) / PAGE) + m["r_new"] * k, m["c_cycle"] + m["c_repo"] * n + m["c_new"] * k


def goals(rows: list[dict[str, Any]]) -> list[str]:
    """The firehose's own cost against what it should be: its listing pages, and the unchanged
    cycle's requests, whatever N."""
    pages = [(r["repos"], r["changed"], r["by_route"].get("list_models", 0), math.ceil((r["changed"] + 1) / PAGE))
             for r in rows]
    idle = [(r["repos"], r["requests"]) for r in rows if r["changed"] == 0]
    return [
        "- Goal: the listing costs ceil((k + 1) / 1,000) pages whatever N. Measured: "
        + ", ".join(f"N = {n:,}, k = {k:,}: {got}" for n, k, got, _ in pages)
        + f" ({'met' if all(got == want for *_, got, want in pages) else 'NOT met'}).",
        "- Goal: a cycle in which nothing moved costs 1 request whatever N. Measured: "
        + ", ".join(f"N = {n:,}: {got}" for n, got in idle)
        + f" ({'met' if idle and all(got == 1 for _, got in idle) else 'NOT met' if idle else 'not run'}).",
    ]


def table(rows: list[dict[str, Any]], db: str, concurrency: int, started: datetime, load: float) -> str:
    m = model(rows)
    lines = [
        f"Firehose cycles ({'SQLite' if db == 'sqlite' else 'PostgreSQL'}, concurrency {concurrency}; CPython "
        f"{platform.python_version()}, {os.cpu_count()} CPUs shared with other work, 1-minute load average "
        f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
        f"{started:%Y-%m-%d %H:%M}-{datetime.now(UTC):%H:%M} UTC):",
        "",
        "| tracked N | changed k | requests (model) | by route | listing read: wall / CPU | cycle wall "
        "| cycle CPU, daemon + workers (model) | confirmed | new revisions |",
        "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        req, cpu = predict(m, r["repos"], r["changed"])
        routes = ", ".join(f"{k} {v}" for k, v in sorted(r["by_route"].items()))
        lines.append(
            f"| {r['repos']:,} | {r['changed']:,} | {r['requests']:,} ({req:,.0f}) | {routes} "
            f"| {r['firehose_wall_s']:.2f} s / {r['firehose_cpu_s']:.2f} s | {r['wall_s']:.2f} s "
            f"| {r['cpu_s']:.2f} + {r['worker_cpu_s']:.2f} s ({cpu:.2f} s) | {r['confirmed']:,} "
            f"| {r['new_revisions']:,} |")
    lines += ["", f"Model constants (calibrated on N = {m['calibrated_on']:,}): r_new = {m['r_new']:.2f} requests "
                  f"per moved repo, c_new = {m['c_new'] * 1e3:.0f} ms CPU per moved repo, c_repo = "
                  f"{m['c_repo'] * 1e6:.1f} us CPU per tracked repo per cycle, c_cycle = {m['c_cycle']:.2f} s.", "",
              *goals(rows)]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repos", default="1000,10000,100000", help="tracked set sizes N, comma-separated")
    p.add_argument("--changed", default="0,1,10,100,1000", help="moved repos k per cycle, comma-separated")
    p.add_argument("--pairs", help="N:k pairs instead of the whole grid, e.g. 1000:0,1000:100,100000:1000")
    p.add_argument("--db", default="sqlite", help="sqlite, or a PostgreSQL admin URL (throwaway databases)")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", metavar="CONFIG", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child)
        return 0
    if args.pairs:
        pairs = [(int(n), int(k)) for n, k in (p.split(":") for p in args.pairs.split(","))]
    else:
        pairs = [(int(n), int(k)) for n in args.repos.split(",") for k in args.changed.split(",") if int(k) <= int(n)]
    started, load = datetime.now(UTC), os.getloadavg()[0]
    print(f"Command: `.venv/bin/python {' '.join(['benchmarks/firehose_cost.py', *sys.argv[1:]])}`\n", flush=True)
    rows = run(pairs, args.db, args.concurrency)
    if args.json:
        print(json.dumps(rows, indent=2))
    print(table(rows, args.db, args.concurrency, started, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
