"""History page latency with a large stored history, on SQLite and PostgreSQL.

Inserts N revisions of one repo in bulk directly through the tables (with one or two changes
each, and an advisory on every third), then times history page requests through the real
app served by uvicorn on 127.0.0.1: the JSON page (``/api/v1/repos/{id}/revisions``) and the
HTML page (``/repos/{id}``), each at the newest page and at random cursors deep in the
history. Prints median and p99 per (database, page).

    .venv/bin/python benchmarks/api.py                      # both databases, 100,000 revisions
    .venv/bin/python benchmarks/api.py --db sqlite --revisions 2000 --requests 50

PostgreSQL: ``--pg-admin-url`` (default ``HUBWATCH_TEST_PG`` or the test server on
127.0.0.1:5432); a throwaway database is created and dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from sqlalchemy import insert

from storage import open_store
from storage.store import Store
from storage.tables import AdvisoryRow, ChangeRow, RepoRow, RevisionRow
from tracker.api.app import create_app
from tracker.config import Settings

REPO = "bench/model"
CHUNK = 5000
PAGE = 50


def seed(store: Store, n: int) -> None:
    """N revisions (+ changes, + an advisory every third) in bulk, newest has seq N."""
    t0 = datetime(2020, 1, 1, tzinfo=UTC)
    with store.session() as s:
        s.add(RepoRow(id=REPO, source=REPO, source_kind="hub", added_at=t0, head_sha=f"{n:040x}"))
        s.commit()
    rev_t, ch_t, adv_t = RevisionRow.__table__, ChangeRow.__table__, AdvisoryRow.__table__  # type: ignore[attr-defined]
    for lo in range(1, n + 1, CHUNK):
        hi = min(n, lo + CHUNK - 1)
        revs, changes, advs = [], [], []
        for i in range(lo, hi + 1):
            sha, parent = f"{i:040x}", (f"{i - 1:040x}" if i > 1 else None)
            when = t0 + timedelta(minutes=i)
            adv_id = f"x_HUBWATCH-bench-{i:07d}" if i % 3 == 0 else None
            revs.append({"id": i, "repo_id": REPO, "sha": sha, "seq": i, "parent": parent,
                         "parents": [parent] if parent else [], "committed_at": when, "title": f"Update {i}",
                         "message": f"Update {i}", "authors": ["bench"], "severity": "HIGH" if adv_id else None,
                         "advisory_id": adv_id, "tree_key": None, "reachable": True, "error": None,
                         "chain_hash": f"{i:064x}", "recorded_at": when})
            changes.append({"revision_id": i, "idx": 0, "kind": "config", "path": "config.json",
                            "summary": "eos_token_id 2 -> 3", "severity": "MODERATE", "topics": ["config.token_ids"],
                            "detail": {"fields": [{"path": "eos_token_id", "old": 2, "new": 3}]}})
            if i % 2 == 0:
                changes.append({"revision_id": i, "idx": 1, "kind": "other", "path": "README.md",
                                "summary": "README.md modified", "severity": None, "topics": [], "detail": {}})
            if adv_id:
                record = {"id": adv_id, "modified": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "summary": f"{REPO} {i}"}
                advs.append({"id": adv_id, "repo_id": REPO, "sha": sha, "severity": "HIGH", "published": when,
                             "modified": when, "withdrawn": None, "record": record})
        with store.session() as s:
            s.execute(insert(rev_t), revs)
            s.execute(insert(ch_t), changes)
            if advs:
                s.execute(insert(adv_t), advs)
            s.commit()
    if store.dialect == "postgresql":
        with store.engine.begin() as c:
            c.exec_driver_sql("SELECT setval(pg_get_serial_sequence('revisions', 'id'), (SELECT max(id) FROM revisions))")
            c.exec_driver_sql("ANALYZE")
    else:
        with store.engine.begin() as c:
            c.exec_driver_sql("ANALYZE")


def serve(store: Store) -> Any:
    """The real app on uvicorn, on a free loopback port (the tests' own helper)."""
    from tests.api.data import serve_app

    return serve_app(create_app(store, Settings()))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[k]


def time_pages(base: str, n: int, requests: int, rng: random.Random) -> dict[str, dict[str, float]]:
    """Latency in ms of the JSON and HTML history pages: newest page and random deep cursors."""
    paths = {
        "api newest": lambda: f"/api/v1/repos/{REPO}/revisions?limit={PAGE}",
        "api random cursor": lambda: f"/api/v1/repos/{REPO}/revisions?limit={PAGE}&cursor={rng.randint(PAGE + 1, n)}",
        "html newest": lambda: f"/repos/{REPO}?limit={PAGE}",
        "html random cursor": lambda: f"/repos/{REPO}?limit={PAGE}&cursor={rng.randint(PAGE + 1, n)}",
    }
    out: dict[str, dict[str, float]] = {}
    with httpx.Client(base_url=base, timeout=30) as client:
        for name, make in paths.items():
            for _ in range(20):  # warm-up: connections, template compile, caches
                client.get(make()).raise_for_status()
            samples = []
            for _ in range(requests):
                path = make()
                t = time.perf_counter()
                r = client.get(path)
                samples.append((time.perf_counter() - t) * 1000)
                r.raise_for_status()
                if name.startswith("api"):
                    assert len(r.json()["revisions"]) == PAGE
            out[name] = {"median_ms": statistics.median(samples), "p99_ms": percentile(samples, 0.99),
                         "max_ms": max(samples), "requests": requests}
    return out


def run(url: str, n: int, requests: int, seed_value: int = 7) -> dict[str, Any]:
    store = open_store(url)
    try:
        t = time.perf_counter()
        seed(store, n)
        insert_s = time.perf_counter() - t
        with serve(store) as base:
            pages = time_pages(base, n, requests, random.Random(seed_value))
        return {"database": store.dialect, "revisions": n, "insert_seconds": insert_s, "pages": pages}
    finally:
        store.close()


@contextmanager
def pg_database(admin_url: str) -> Iterator[str]:
    import psycopg

    name = f"hubwatch_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    try:
        yield "postgresql+psycopg://" + admin_url.split("://", 1)[1].rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin_url, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    p.add_argument("--revisions", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=1000, help="timed requests per page kind")
    p.add_argument("--pg-admin-url", default=os.environ.get("HUBWATCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    results = []
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(run(f"sqlite:///{tmp}/bench.db", args.revisions, args.requests))
    if args.db in ("postgresql", "both"):
        with pg_database(args.pg_admin_url) as url:
            results.append(run(url, args.revisions, args.requests))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print("| database | page | revisions | requests | median ms | p99 ms | max ms |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for res in results:
        for name, m in res["pages"].items():
            print(f"| {res['database']} | {name} | {res['revisions']:,} | {m['requests']} | {m['median_ms']:.1f} | "
                  f"{m['p99_ms']:.1f} | {m['max_ms']:.1f} |")
    for res in results:
        print(f"{res['database']}: {res['revisions']:,} revisions inserted in {res['insert_seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
