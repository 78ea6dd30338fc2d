"""Upgrading a store that predates the commit index: what migration 0004 and the later ones
cost an operator whose store already holds a long history (issue 17).

Seeds ``benchmarks/api.py``'s histories (same sizes, same records) into a store at schema
``--from`` (default 0003, the last before the index), then runs the migrations to head
(``storage.engine.migrate``, as ``hubwatch`` does at start-up), timed: wall time, this
process's CPU and PostgreSQL's backends'. Checks that every revision got its label and that
every advisory's spans were written.

    .venv/bin/python benchmarks/upgrade.py --db both --repos 100 --per-repo 10000 --advisory-every 30
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.api import db_backends, own_cpu, pg_database, seed  # noqa: E402
from storage import open_store  # noqa: E402
from storage.engine import make_engine, migrate  # noqa: E402


def run(url: str, *, repos: int, per_repo: int, every: int, start: str) -> str:
    engine = make_engine(url)
    store = open_store(url, run_migrations=False)
    try:
        migrate(engine, start)
        t = time.perf_counter()
        counts = seed(store, repos, per_repo, every, random.Random(7))
        seed_s = time.perf_counter() - t
        backends, cpu, t = db_backends(store), own_cpu(), time.perf_counter()
        migrate(engine)
        wall, cpu = time.perf_counter() - t, own_cpu() - cpu
        db_cpu = sum(v - backends.get(pid, 0.0) for pid, v in db_backends(store).items())
        with engine.connect() as c:
            unlabelled = c.exec_driver_sql("SELECT count(*) FROM revisions WHERE chain IS NULL").scalar()
            indexed = c.exec_driver_sql("SELECT count(DISTINCT advisory_id) FROM advisory_spans").scalar()
        assert unlabelled == 0 and indexed == counts["advisories"], (unlabelled, indexed)
    finally:
        store.close()
        engine.dispose()
    in_db = f", {db_cpu:.1f} s in PostgreSQL" if store.dialect == "postgresql" else ""
    return (f"{store.dialect}: {repos:,} repos, {counts['revisions']:,} revisions, {counts['advisories']:,} advisories "
            f"(seeded at {start} in {seed_s:.1f} s); migrated {start} -> head in {wall:.1f} s (CPU {cpu:.1f} s here"
            f"{in_db}); every revision labelled, every advisory indexed")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    p.add_argument("--repos", type=int, default=100)
    p.add_argument("--per-repo", type=int, default=1000)
    p.add_argument("--advisory-every", type=int, default=3)
    p.add_argument("--from", dest="start", default="0003", help="the schema the store is at before the upgrade")
    p.add_argument("--pg-admin-url", default=os.environ.get("HUBWATCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    args = p.parse_args(argv)
    load_at_start, started = os.getloadavg()[0], datetime.now(UTC)
    sizes = {"repos": args.repos, "per_repo": args.per_repo, "every": args.advisory_every, "start": args.start}
    lines = []
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            lines.append(run(f"sqlite:///{tmp}/bench.db", **sizes))
            print(lines[-1], file=sys.stderr, flush=True)
    if args.db in ("postgresql", "both"):
        with pg_database(args.pg_admin_url) as url:
            lines.append(run(url, **sizes))
    print(f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load_at_start:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end, {started:%Y-%m-%d %H:%M} UTC")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
