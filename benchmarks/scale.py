"""Scale benchmark: scheduler cycles over N emulated unchanged repos, polled and in firehose mode,
beside the plain ``model_info`` loop they are measured against (issue 17).

    .venv/bin/python benchmarks/scale.py                 # 1,000 repos, 5 cycles, SQLite
    .venv/bin/python benchmarks/scale.py --repos 1000:5 --repos 10000:2 \\
        --db sqlite --db postgresql://postgres@127.0.0.1:5432/test --write
                                                         # recorded in benchmarks/RESULTS.md

The Hub emulator (tests/hubemu) serves N repo ids over a few tiny git dirs. Every repo was
read before (head known, last check five minutes ago) and is due, so the cycle measured is
the steady state "is anything new?" pass. The daemon runs in a child process built exactly as
``hubwatch run`` builds it (``build_daemon`` over a config.toml), so its CPU time and peak RSS
are the daemon's own; requests are counted by the emulator, not by the daemon. The loop and
the daemon are two child processes alive side by side, told to run one cycle at a time in
turn (loop, polled, polled, loop, ...), so load from elsewhere falls on both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- scale:begin -->", "<!-- scale:end -->"
RATIO_GOAL = 1.5  # the polled cycle within 1.5x of the loop, wall and CPU (issue 17)
FLAT_GOAL = 0.05  # peak RSS grows less than 5 % from the first warm cycle to the last
NOTES = """How it was measured: `benchmarks/scale.py` serves the repos from the Hub emulator
(tests/hubemu, in the benchmark's own process, on the same cores), marks every repo as read
five minutes ago and due now, and runs `Daemon.run_once()` in a child process built by
`build_daemon` from a config.toml, as `hubwatch run` does; before each later cycle every repo
is made due again. `loop` is the alternative, in a second child process alive at the same
time: huggingface_hub's `HfApi.model_info(repo, expand=["sha"])` for every repo in as many
threads as the daemon's concurrency. The two are told to run one cycle at a time, in turn
(loop, polled, then polled, loop, ...), so load from elsewhere on the machine falls on both
alike. Ratios are over the warm cycles (all but the first; summed). Requests are counted by
the emulator per cycle; CPU time is the child's own (user + system); peak RSS is the child's
own high-water mark (`VmHWM`, imports included; `ru_maxrss` would carry the parent's over fork
and exec), current RSS its resident set after the cycle. Polled: one
`GET /api/models/{id}/revision/main?expand=sha` per repo through the daemon's shared,
deadline-bound connections, nothing else; claims are one `UPDATE ... RETURNING` for a batch,
unchanged outcomes are written 64 to a transaction. Firehose: one `list_models` page reached
the watermark (the oldest last check), so every repo was confirmed unchanged without a request
of its own. Wall time on this machine is shared with the emulator and other work: compare CPU."""


# ---------------------------------------------------------------------------- the children
def _serve(prepare: Callable[[int], None], cycle: Callable[[], dict[str, Any]], out: IO[str]) -> None:
    """One cycle per ``cycle`` line on stdin (``prepare`` first, untimed); a JSON line for each."""
    for n, line in enumerate(sys.stdin):
        if line.strip() != "cycle":
            break
        prepare(n)
        cpu, started = _cpu_s(), time.perf_counter()
        measured = cycle()
        wall, used = time.perf_counter() - started, _cpu_s() - cpu
        out.write(json.dumps({"cycle": n + 1, "wall_s": wall, "cpu_s": used, "rss_mb": _peak_rss_mb(),
                              "rss_now_mb": _rss_now_mb(), **measured}) + "\n")
        out.flush()


def daemon_child(config: str) -> None:
    """A daemon built from ``config``, as ``hubwatch run`` builds it; every repo due again before
    each cycle but the first."""
    from sqlalchemy import update

    from storage.tables import RepoRow
    from tracker.cli.context import Context
    from tracker.cli.serve_cmds import build_daemon
    from tracker.daemon.budget import RequestBudget

    out, sys.stdout = sys.stdout, sys.stderr  # only the measurements on stdout
    daemon = build_daemon(Context(argparse.Namespace(config=config, command="run", json=False)))

    def prepare(n: int) -> None:
        if n:  # due again, as if an interval had passed
            with daemon.store.engine.begin() as c:
                c.execute(update(RepoRow).values(next_check_at=datetime.now(UTC) - timedelta(seconds=1)))
            daemon.budget = RequestBudget(daemon.config.requests_per_5min)

    def cycle() -> dict[str, Any]:
        confirmed = daemon.stats.snapshot()["firehose_confirmed"]
        results = daemon.run_once()
        statuses: dict[str, int] = {}
        for r in results:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        return {"checked": len(results), "statuses": statuses,
                "confirmed": daemon.stats.snapshot()["firehose_confirmed"] - confirmed}

    _serve(prepare, cycle, out)
    daemon.stop(0)


def loop_child(endpoint: str, ids_file: str, threads: int) -> None:
    """The alternative: a plain loop of ``model_info(expand=["sha"])`` over the same repos, in
    ``threads`` threads, with one HfApi."""
    from concurrent.futures import ThreadPoolExecutor

    from huggingface_hub import HfApi

    ids = Path(ids_file).read_text().split()
    api = HfApi(endpoint=endpoint)

    def cycle() -> dict[str, Any]:
        with ThreadPoolExecutor(threads) as pool:
            shas = list(pool.map(lambda repo: api.model_info(repo, expand=["sha"]).sha, ids))
        assert all(shas)
        return {"checked": len(ids), "statuses": {"unchanged": len(ids)}, "confirmed": 0}

    _serve(lambda _n: None, cycle, sys.stdout)


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _rss_now_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20


def _peak_rss_mb() -> float:
    """This process's own peak (VmHWM, new at exec): ``ru_maxrss`` carries the parent's peak over
    fork and exec, so a child of a larger benchmark process read the parent's figure."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# ---------------------------------------------------------------------------- the parent
class Child:
    """A child process that runs one cycle each time it is asked."""

    def __init__(self, args: list[str], log: Path) -> None:
        from tests.daemon.helpers import hubwatch_env

        self.log = log.open("w")
        self.proc = subprocess.Popen([sys.executable, __file__, *args], env=hubwatch_env(), cwd=ROOT, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        self.log_path = log

    def cycle(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("cycle\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.startswith("{"):
            self.close()
            raise RuntimeError(f"the child stopped:\n{self.log_path.read_text()[-3000:]}")
        return dict(json.loads(line))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=120)
        self.log.close()


def _database(base: str, tmp: Path, label: str) -> tuple[str, Callable[[], None]]:
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


def run(repos: int, db: str, concurrency: int, budget: int, cycles: int = 5,
        modes: tuple[str, ...] = ("loop", "polled", "firehose")) -> dict[str, Any]:
    """Every mode's cycles over ``repos`` unchanged repos; loop and polled alternated."""
    from tests.hubemu import hf_test_env

    hf_test_env()
    from storage import open_store
    from tests.daemon.helpers import write_config
    from tests.daemon.scalehub import ScaleHub, build_dirs, populate

    load, started = [os.getloadavg()[0]], datetime.now(UTC)
    per_mode: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="hubwatch-scale-") as t, ScaleHub() as hub:
        tmp = Path(t)
        dirs = build_dirs(tmp, 8)

        def config(mode: str, url: str) -> Path:
            return write_config(tmp / f"{mode}.toml", db_url=url, hub_url=hub.url, port=0,
                                schedule={"concurrency": concurrency, "firehose": mode == "firehose"},
                                hub={"timeout_seconds": 30, "requests_per_5min": budget})

        def measure(mode: str, child: Child) -> None:
            hub.reset_stats()
            got = child.cycle()
            hub.wait_idle()
            got.update(requests=hub.count(), by_route={k: v["requests"] for k, v in hub.summary().items()})
            if got["checked"] + got["confirmed"] < repos:
                raise RuntimeError(f"{mode}: the cycle did not cover every repo: {got}")
            per_mode.setdefault(mode, []).append(got)

        url, drop = _database(db, tmp, "polled")
        children: dict[str, Child] = {}
        try:
            store = open_store(url)
            ids = populate(hub, store, dirs, repos)
            store.close()
            (tmp / "ids.txt").write_text("\n".join(ids))
            if "loop" in modes:
                children["loop"] = Child(["--loop", hub.url, str(tmp / "ids.txt"), str(concurrency)], tmp / "loop.log")
            if "polled" in modes:
                children["polled"] = Child(["--child", str(config("polled", url))], tmp / "polled.log")
            for i in range(cycles):
                for mode in list(children) if i % 2 == 0 else list(reversed(children)):
                    measure(mode, children[mode])
        finally:
            for child in children.values():
                child.close()
            drop()
        if "firehose" in modes:  # the firehose reads its listing once an interval: one cycle
            url, drop = _database(db, tmp, "firehose")
            try:
                store = open_store(url)
                populate(hub, store, dirs, repos)
                store.close()
                child = Child(["--child", str(config("firehose", url))], tmp / "firehose.log")
                try:
                    measure("firehose", child)
                finally:
                    child.close()
            finally:
                drop()
        assert not hub.internal_errors, hub.internal_errors
    load.append(os.getloadavg()[0])
    return {"repos": repos, "db": db, "concurrency": concurrency, "budget": budget, "modes": per_mode, "load": load,
            "when": f"{started:%Y-%m-%d %H:%M}-{datetime.now(UTC):%H:%M} UTC"}


# ---------------------------------------------------------------------------- the report
def _warm(cycles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return cycles[1:] or cycles


def _ratio(polled: list[dict[str, Any]], loop: list[dict[str, Any]], key: str) -> float:
    return sum(c[key] for c in _warm(polled)) / sum(c[key] for c in _warm(loop))


def table(run: dict[str, Any]) -> str:
    db = "SQLite" if run["db"] == "sqlite" else "PostgreSQL"
    modes, repos = run["modes"], run["repos"]
    lines = [
        f"{repos:,} unchanged repos ({db}, concurrency {run['concurrency']}, requests_per_5min {run['budget']}; "
        f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}; "
        f"{os.cpu_count()} CPUs shared with other work, 1-minute load average {run['load'][0]:.1f} at the start, "
        f"{run['load'][1]:.1f} at the end; {run['when']}):",
        "",
        "| mode | cycles | requests to the Hub per cycle | by route | repos polled | confirmed by the listing "
        "| wall time (warm, median) | CPU time (warm, median) | first cycle wall / CPU | peak RSS |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode, cycles in modes.items():
        last, warm = cycles[-1], _warm(cycles)
        routes = ", ".join(f"{k} {v}" for k, v in sorted(last["by_route"].items()))
        lines.append(
            f"| {mode} | {len(cycles)} | {last['requests']:,} | {routes} | {last['checked']:,} | {last['confirmed']:,} "
            f"| {statistics.median(c['wall_s'] for c in warm):.2f} s | {statistics.median(c['cpu_s'] for c in warm):.2f} s "
            f"| {cycles[0]['wall_s']:.2f} s / {cycles[0]['cpu_s']:.2f} s | {max(c['rss_mb'] for c in cycles):.0f} MB |")
    lines.append("")
    loop, polled = modes.get("loop"), modes.get("polled")
    if polled:
        exact = all(c["requests"] == c["by_route"].get("model_info", 0) == repos for c in polled)
        lines.append("- Goal: exactly one request per unchanged repo. Measured: "
                     + ", ".join(f"{c['requests']:,}" for c in polled)
                     + f" requests in the {len(polled)} polled cycles ({'met' if exact else 'NOT met'}).")
    if loop and polled:
        wall, cpu = _ratio(polled, loop, "wall_s"), _ratio(polled, loop, "cpu_s")
        ok = "met" if wall <= RATIO_GOAL and cpu <= RATIO_GOAL else "NOT met"
        pairs = ", ".join(f"{p['cpu_s'] / q['cpu_s']:.2f}" for p, q in zip(polled, loop, strict=False))
        lines.append(f"- Goal: the polled cycle within {RATIO_GOAL}x of the plain `model_info` loop in wall and CPU "
                     f"time. Measured (warm cycles, alternated): wall {wall:.2f}x, CPU {cpu:.2f}x ({ok}); CPU ratio "
                     f"per cycle {pairs}.")
    if polled and len(polled) > 2:
        peak = [c["rss_mb"] for c in polled]
        base = peak[1]
        growth = peak[-1] - base
        ok = "met" if growth <= FLAT_GOAL * base else "NOT met"
        lines.append(f"- Goal: peak RSS flat across cycles (under {FLAT_GOAL:.0%} growth after the first). Measured, "
                     f"polled: peak RSS per cycle " + ", ".join(f"{x:.1f}" for x in peak) + " MB, resident after "
                     "each " + ", ".join(f"{c['rss_now_mb']:.1f}" for c in polled)
                     + f" MB: {growth:+.1f} MB ({growth / base:+.1%}) from cycle 2 to {len(polled)} ({ok}).")
    for mode, cycles in modes.items():
        lines.append(f"- {mode} per cycle: wall " + ", ".join(f"{c['wall_s']:.1f}" for c in cycles) + " s; CPU "
                     + ", ".join(f"{c['cpu_s']:.2f}" for c in cycles) + " s.")
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


def _size(text: str) -> tuple[int, int | None]:
    repos, _, cycles = text.partition(":")
    return int(repos), int(cycles) if cycles else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repos", action="append", type=_size, metavar="N[:CYCLES]",
                   help="repos per run (1000 by default), optionally with its own number of cycles; repeat")
    p.add_argument("--db", action="append", metavar="sqlite|URL",
                   help="sqlite (the default), or a PostgreSQL admin URL to create throwaway databases on; "
                        "repeat to run several")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--budget", type=int, default=1000, help="[hub] requests_per_5min")
    p.add_argument("--cycles", type=int, default=5, help="loop and polled cycles per run (RSS across cycles)")
    p.add_argument("--modes", default="loop,polled,firehose")
    p.add_argument("--write", action="store_true", help="record the tables in benchmarks/RESULTS.md")
    p.add_argument("--child", metavar="CONFIG", help=argparse.SUPPRESS)
    p.add_argument("--loop", nargs=3, metavar=("ENDPOINT", "IDS", "THREADS"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        daemon_child(args.child)
        return 0
    if args.loop:
        loop_child(args.loop[0], args.loop[1], int(args.loop[2]))
        return 0
    command = " ".join(["benchmarks/scale.py", *sys.argv[1:]])
    print(f"Command: `.venv/bin/python {command}`\n", flush=True)
    tables = []
    for repos, cycles in args.repos or [(1000, None)]:
        for db in args.db or ["sqlite"]:
            measured = run(repos, db, args.concurrency, args.budget, cycles or args.cycles,
                           tuple(args.modes.split(",")))
            tables.append(table(measured))
            print(tables[-1] + "\n", flush=True)
    section = "\n\n".join([f"Command: `.venv/bin/python {command}`", *tables, NOTES])
    if args.write:
        write(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
