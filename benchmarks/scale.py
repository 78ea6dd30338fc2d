"""Scale benchmark: one scheduler cycle over N emulated repos, polled and in firehose mode.

    .venv/bin/python benchmarks/scale.py                 # 1,000 repos, SQLite, prints a table
    .venv/bin/python benchmarks/scale.py --db sqlite --db postgresql://postgres@127.0.0.1:5432/test --write
                                                         # both databases, recorded in benchmarks/RESULTS.md

The Hub emulator (tests/hubemu) serves N repo ids over a few tiny git dirs. Every repo was
read before (head known, last check five minutes ago) and is due, so the cycle measured is
the steady state "is anything new?" pass. The daemon runs in a child process built exactly as
``hubwatch run`` builds it (``build_daemon`` over a config.toml), so its peak RSS is the
daemon's own; requests are counted by the emulator, not by the daemon.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- scale:begin -->", "<!-- scale:end -->"
NOTES = """How it was measured: `benchmarks/scale.py` serves the repos from the Hub emulator
(tests/hubemu, in the benchmark's own process, on the same cores), marks every repo as read
five minutes ago and due now, and runs `Daemon.run_once()` in a child process built by
`build_daemon` from a config.toml, as `hubwatch run` does (with `--cycles N`, N cycles in
one daemon, every repo made due again between them). `loop` is the alternative in the same
run: a child process calling huggingface_hub's `HfApi.model_info(repo, expand=["sha"])` for
every repo in as many threads as the daemon's concurrency. Requests are counted by the
emulator; CPU time is the child's own (user + system); peak RSS is the child's `ru_maxrss`
(imports included). Polled: one `model_info(expand=sha)` per repo, nothing else; unchanged
outcomes are written many to a transaction. Firehose: one `list_models` page reached the
watermark (the oldest last check), so every repo was confirmed unchanged without a request
of its own. Wall time on this machine is shared with the emulator and other work: compare
the CPU column."""


def child(config: str, cycles: int) -> None:
    """``cycles`` cycles of a daemon built from ``config`` (every repo due again before each);
    prints what each did as JSON: wall and CPU time, peak and current RSS."""
    from sqlalchemy import update

    from storage.tables import RepoRow
    from tracker.cli.context import Context
    from tracker.cli.serve_cmds import build_daemon
    from tracker.daemon.budget import RequestBudget

    ctx = Context(argparse.Namespace(config=config, command="run", json=False))
    daemon = build_daemon(ctx)
    per_cycle = []
    for cycle in range(cycles):
        if cycle:  # due again, as if an interval had passed
            with daemon.store.engine.begin() as c:
                c.execute(update(RepoRow).values(next_check_at=datetime.now(UTC) - timedelta(seconds=1)))
            daemon.budget = RequestBudget(daemon.config.requests_per_5min)
        cpu, started = _cpu_s(), time.perf_counter()
        results = daemon.run_once()
        per_cycle.append({"wall_s": time.perf_counter() - started, "cpu_s": _cpu_s() - cpu, "checked": len(results),
                          "rss_mb": _peak_rss_mb(), "rss_now_mb": _rss_now_mb()})
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    snap = daemon.stats.snapshot()
    opened = time.perf_counter()
    for i in range(50):  # what one check spends before its first request: building the Hub client
        ctx.sources.open(f"scale/probe-{i}", f"scale/probe-{i}", "hub").close()
    print(json.dumps({
        **per_cycle[-1], "cycles": per_cycle, "statuses": statuses,
        "confirmed": snap["firehose_confirmed"], "counted_requests": snap["requests"],
        "open_ms": (time.perf_counter() - opened) / 50 * 1000,
    }))


def loop_child(endpoint: str, ids_file: str, threads: int, cycles: int) -> None:
    """The alternative: a plain loop of ``model_info(expand=["sha"])`` over the same repos, in
    ``threads`` threads, with one HfApi, ``cycles`` times; prints wall and CPU time as JSON."""
    from concurrent.futures import ThreadPoolExecutor

    from huggingface_hub import HfApi

    ids = Path(ids_file).read_text().split()
    api = HfApi(endpoint=endpoint)
    per_cycle = []
    for _ in range(cycles):
        cpu, started = _cpu_s(), time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            shas = list(pool.map(lambda repo: api.model_info(repo, expand=["sha"]).sha, ids))
        assert all(shas)
        per_cycle.append({"wall_s": time.perf_counter() - started, "cpu_s": _cpu_s() - cpu, "checked": len(ids),
                          "rss_mb": _peak_rss_mb(), "rss_now_mb": _rss_now_mb()})
    print(json.dumps({**per_cycle[-1], "cycles": per_cycle}))


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _rss_now_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _database(base: str, tmp: Path, label: str) -> tuple[str, Any]:
    """A fresh database URL (and a cleanup) for one run."""
    if base == "sqlite":
        return f"sqlite:///{tmp / f'{label}.db'}", lambda: None
    import psycopg

    name = f"hubwatch_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(base, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return f"postgresql+psycopg://{base.split('://', 1)[1].rsplit('/', 1)[0]}/{name}", drop


def run(repos: int, db: str, concurrency: int, budget: int, cycles: int = 1,
        modes: tuple[str, ...] = ("loop", "polled", "firehose")) -> list[dict[str, Any]]:
    from tests.hubemu import hf_test_env

    hf_test_env()
    from storage import open_store
    from tests.daemon.helpers import hubwatch_env, write_config
    from tests.daemon.scalehub import ScaleHub, build_dirs, populate

    rows = []
    with tempfile.TemporaryDirectory(prefix="hubwatch-scale-") as t, ScaleHub() as hub:
        tmp = Path(t)
        dirs = build_dirs(tmp, 8)
        for mode in modes:
            url, drop = _database(db, tmp, mode)
            try:
                store = open_store(url)
                ids = populate(hub, store, dirs, repos)
                store.close()
                config = write_config(tmp / f"{mode}.toml", db_url=url, hub_url=hub.url, port=0,
                                      schedule={"concurrency": concurrency, "firehose": mode == "firehose"},
                                      hub={"timeout_seconds": 30, "requests_per_5min": budget})
                hub.reset_stats()
                if mode == "loop":
                    (tmp / "ids.txt").write_text("\n".join(ids))
                    args = ["--loop", hub.url, str(tmp / "ids.txt"), str(concurrency), "--cycles", str(cycles)]
                else:  # the firehose reads its listing once an interval: one cycle
                    args = ["--child", str(config), "--cycles", str(cycles if mode == "polled" else 1)]
                out = subprocess.run([sys.executable, __file__, *args], env=hubwatch_env(),
                                     capture_output=True, text=True, check=True, cwd=ROOT)
                hub.wait_idle()
                measured = json.loads(out.stdout.strip().splitlines()[-1])
                measured.setdefault("confirmed", 0)
                if measured["checked"] + measured["confirmed"] < repos:
                    raise RuntimeError(f"{mode}: the cycle did not cover every repo:\n{out.stderr[-3000:]}")
                n = len(measured.get("cycles") or [None])
                rows.append({"mode": mode, "repos": repos, "requests": hub.count() // n,
                             "by_route": {k: v["requests"] // n for k, v in hub.summary().items()},
                             "bytes": hub.bytes_sent(), **measured})
            finally:
                drop()
        assert not hub.internal_errors, hub.internal_errors
    return rows


def table(rows: list[dict[str, Any]], db: str, concurrency: int, budget: int) -> str:
    db = "SQLite" if db == "sqlite" else "PostgreSQL"
    lines = [
        f"A cycle over {rows[0]['repos']:,} unchanged repos ({db}, concurrency {concurrency}, "
        f"requests_per_5min {budget}; {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
        f"{datetime.now(UTC):%Y-%m-%d}):",
        "",
        "| mode | requests to the Hub per cycle | by route | repos polled | confirmed by the listing "
        "| wall time (last cycle) | CPU time (last cycle) | first cycle wall / CPU | peak RSS |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        routes = ", ".join(f"{k} {v}" for k, v in sorted(r["by_route"].items()))
        lines.append(f"| {r['mode']} | {r['requests']:,} | {routes} | {r['checked']:,} "
                     f"| {r['confirmed']:,} | {r['wall_s']:.2f} s | {r['cpu_s']:.2f} s "
                     f"| {r['cycles'][0]['wall_s']:.2f} s / {r['cycles'][0]['cpu_s']:.2f} s | {r['rss_mb']:.0f} MB |")
    loop = next((r for r in rows if r["mode"] == "loop"), None)
    polled = next((r for r in rows if r["mode"] == "polled"), None)
    if loop and polled:
        wall, cpu = polled["wall_s"] / loop["wall_s"], polled["cpu_s"] / loop["cpu_s"]
        ok = "met" if wall <= 1.5 and cpu <= 1.5 else "NOT met"
        lines += ["", f"Goal: the polled cycle within 1.5x of the plain `model_info` loop (last cycles, both "
                      f"warm): wall {wall:.2f}x, CPU {cpu:.2f}x ({ok})."]
    if polled and len(polled["cycles"]) > 1:
        cyc = polled["cycles"]
        lines += ["", f"{len(cyc)} polled cycles in one daemon: wall " + ", ".join(f"{c['wall_s']:.1f}" for c in cyc)
                  + " s; CPU " + ", ".join(f"{c['cpu_s']:.1f}" for c in cyc) + " s; peak RSS "
                  + ", ".join(f"{c['rss_mb']:.0f}" for c in cyc) + " MB; current RSS "
                  + ", ".join(f"{c['rss_now_mb']:.0f}" for c in cyc) + " MB."]
    if polled:
        lines += ["", f"Building one repo's Hub client (`SourceFactory.open`, then `close`) took "
                      f"{polled['open_ms']:.1f} ms in the daemon process."]
    return "\n".join(lines)


def write(section: str) -> None:
    """Replace the scale section of benchmarks/RESULTS.md (other sections are left alone)."""
    body = f"{BEGIN}\n## Scale: one scheduler cycle (`benchmarks/scale.py`)\n\n{section}\n{END}"
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _m: body, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    RESULTS.write_text(text, encoding="utf-8")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repos", type=int, default=1000)
    p.add_argument("--db", action="append", metavar="sqlite|URL",
                   help="sqlite (the default), or a PostgreSQL admin URL to create throwaway databases on; "
                        "repeat to run several")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--budget", type=int, default=1000, help="[hub] requests_per_5min")
    p.add_argument("--cycles", type=int, default=3, help="polled cycles run in one daemon (RSS across cycles)")
    p.add_argument("--modes", default="loop,polled,firehose")
    p.add_argument("--write", action="store_true", help="record the table in benchmarks/RESULTS.md")
    p.add_argument("--child", metavar="CONFIG", help=argparse.SUPPRESS)
    p.add_argument("--loop", nargs=3, metavar=("ENDPOINT", "IDS", "THREADS"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.cycles)
        return 0
    if args.loop:
        loop_child(args.loop[0], args.loop[1], int(args.loop[2]), args.cycles)
        return 0
    modes = tuple(args.modes.split(","))
    tables = [table(run(args.repos, db, args.concurrency, args.budget, args.cycles, modes), db, args.concurrency,
                    args.budget) for db in args.db or ["sqlite"]]
    section = "\n\n".join([*tables, NOTES])
    print(section)
    if args.write:
        write(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
