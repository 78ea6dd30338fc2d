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
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- scale:begin -->", "<!-- scale:end -->"
NOTES = """How it was measured: `benchmarks/scale.py` serves the repos from the Hub emulator
(tests/hubemu, in the benchmark's own process, on the same cores), marks every repo as read
five minutes ago and due now, and runs one `Daemon.run_once()` in a child process built by
`build_daemon` from a config.toml, as `hubwatch run` does. Requests and bytes are counted by
the emulator; peak RSS is the child's `ru_maxrss` (imports included). Polled: one
`model_info(expand=sha)` per repo, nothing else. Firehose: one `list_models` page reached the
watermark (the oldest last check), so every repo was confirmed unchanged without a request of
its own; this holds right after a restart too, as no watermark is kept in memory between
processes. The polled cycle's wall time is CPU on a 2-core machine, shared with the emulator:
huggingface_hub's `model_info` and the emulator answering it, not the database. (Before the
Hub clients shared one TLS context, building each client cost 22 ms and the polled cycle took
27-28 s; see git history of this file.)"""


def child(config: str) -> None:
    """One cycle of a daemon built from ``config``; prints what it did as JSON."""
    from tracker.cli.context import Context
    from tracker.cli.serve_cmds import build_daemon

    ctx = Context(argparse.Namespace(config=config, command="run", json=False))
    daemon = build_daemon(ctx)
    started = time.perf_counter()
    results = daemon.run_once()
    wall = time.perf_counter() - started
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    snap = daemon.stats.snapshot()
    rss = _peak_rss_mb()
    opened = time.perf_counter()
    for i in range(50):  # what one check spends before its first request: building the Hub client
        ctx.sources.open(f"scale/probe-{i}", f"scale/probe-{i}", "hub").close()
    print(json.dumps({
        "wall_s": wall, "checked": len(results), "statuses": statuses, "rss_mb": rss,
        "confirmed": snap["firehose_confirmed"], "counted_requests": snap["requests"],
        "open_ms": (time.perf_counter() - opened) / 50 * 1000,
    }))


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


def run(repos: int, db: str, concurrency: int, budget: int) -> list[dict[str, Any]]:
    from tests.hubemu import hf_test_env

    hf_test_env()
    from storage import open_store
    from tests.daemon.helpers import hubwatch_env, write_config
    from tests.daemon.scalehub import ScaleHub, build_dirs, populate

    rows = []
    with tempfile.TemporaryDirectory(prefix="hubwatch-scale-") as t, ScaleHub() as hub:
        tmp = Path(t)
        dirs = build_dirs(tmp, 8)
        for mode in ("polled", "firehose"):
            url, drop = _database(db, tmp, mode)
            try:
                store = open_store(url)
                populate(hub, store, dirs, repos)
                store.close()
                config = write_config(tmp / f"{mode}.toml", db_url=url, hub_url=hub.url, port=0,
                                      schedule={"concurrency": concurrency, "firehose": mode == "firehose"},
                                      hub={"timeout_seconds": 30, "requests_per_5min": budget})
                hub.reset_stats()
                out = subprocess.run([sys.executable, __file__, "--child", str(config)], env=hubwatch_env(),
                                     capture_output=True, text=True, check=True, cwd=ROOT)
                hub.wait_idle()
                measured = json.loads(out.stdout.strip().splitlines()[-1])
                if measured["checked"] + measured["confirmed"] < repos:
                    raise RuntimeError(f"{mode}: the cycle did not cover every repo:\n{out.stderr[-3000:]}")
                rows.append({"mode": mode, "repos": repos, "requests": hub.count(),
                             "by_route": {k: v["requests"] for k, v in hub.summary().items()},
                             "bytes": hub.bytes_sent(), **measured})
            finally:
                drop()
        assert not hub.internal_errors, hub.internal_errors
    return rows


def table(rows: list[dict[str, Any]], db: str, concurrency: int, budget: int) -> str:
    db = "SQLite" if db == "sqlite" else "PostgreSQL"
    lines = [
        f"One cycle over {rows[0]['repos']:,} unchanged repos ({db}, concurrency {concurrency}, "
        f"requests_per_5min {budget}; {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}):",
        "",
        "| mode | requests to the Hub | by route | bytes from the Hub | repos polled | confirmed by the listing "
        "| cycle wall time | daemon peak RSS |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        routes = ", ".join(f"{k} {v}" for k, v in sorted(r["by_route"].items()))
        lines.append(f"| {r['mode']} | {r['requests']:,} | {routes} | {r['bytes']:,} | {r['checked']:,} "
                     f"| {r['confirmed']:,} | {r['wall_s']:.1f} s | {r['rss_mb']:.0f} MB |")
    lines += ["", f"Building one repo's Hub client (`SourceFactory.open`, then `close`) took "
                  f"{rows[0]['open_ms']:.1f} ms in the daemon process."]
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
    p.add_argument("--write", action="store_true", help="record the table in benchmarks/RESULTS.md")
    p.add_argument("--child", metavar="CONFIG", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child)
        return 0
    tables = [table(run(args.repos, db, args.concurrency, args.budget), db, args.concurrency, args.budget)
              for db in args.db or ["sqlite"]]
    section = "\n\n".join([*tables, NOTES])
    print(section)
    if args.write:
        write(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
