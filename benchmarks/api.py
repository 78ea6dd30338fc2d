"""The read side under 16 connections: commit queries, querybatch, history pages, on SQLite
and PostgreSQL, beside a trivial FastAPI endpoint measured the same way in the same run.

Seeds ``--repos`` repos of ``--per-repo`` linear revisions each, in bulk through the tables:
one or two changes per revision; on every ``--advisory-every``-th revision a real OSV record
(``advisories.osv.build_record``: GIT range introduced at the revision), of which 85 % get a
``fixed`` event (``add_fixed``) 1-50 revisions later, as the lifecycle writes when a later
revision restores the content. The commit index is then built by the migration's own code
(``storage.commit_rows.rebuild``), timed. The real app (``tracker.api.app.create_app``) runs
under uvicorn in a child process; the load comes from this process over 16 keep-alive
connections (a minimal asyncio HTTP/1.1 client, so the client costs little CPU), each
request timed. Server CPU is read from /proc for the child. Prints each goal beside its
measurement.

    .venv/bin/python benchmarks/api.py                                   # both, 100 x 1,000
    .venv/bin/python benchmarks/api.py --db sqlite --repos 10 --per-repo 200 --requests 300

PostgreSQL: ``--pg-admin-url`` (default ``HUBWATCH_TEST_PG`` or 127.0.0.1:5432/test); a
throwaway database is created and dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import JSON  # noqa: E402

from advisories.osv import add_fixed, build_record  # noqa: E402
from storage import open_store  # noqa: E402
from storage.commit_rows import rebuild  # noqa: E402
from storage.store import Store  # noqa: E402
from storage.tables import AdvisoryRow, ChangeRow, RepoRow, RevisionRow  # noqa: E402
from tracker.model import Change, ChangeKind, CommitInfo, RevisionDiff, Severity  # noqa: E402

ROUTES = ("trivial", "healthz", "history page, newest", "history page", "history page, HTML", "commit query",
          "querybatch 1000", "querybatch 1000, 1 connection")
CONNECTIONS = 16
PAGE = 50
BATCH = 1000
GOALS = {"commit query": 20.0, "querybatch 1000": 200.0, "querybatch 1000, 1 connection": 200.0}
CHANGE = Change(ChangeKind.CONFIG, "config.json", "eos_token_id 2 -> 3", ("config.token_ids",), Severity.MODERATE,
                {"fields": [{"path": "eos_token_id", "old": 2, "new": 3}]})


def sha_of(repo: int, i: int) -> str:
    return f"{repo:08x}{i:032x}"


def seed(store: Store, repos: int, per_repo: int, every: int, rng: random.Random) -> dict[str, int]:
    """Linear histories with realistic records; returns counts."""
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    rev_t, ch_t, adv_t = (RevisionRow.__table__, ChangeRow.__table__, AdvisoryRow.__table__)  # type: ignore[attr-defined]
    counts = {"revisions": 0, "advisories": 0, "fixed": 0}
    rev_id = 0
    for r in range(repos):
        repo_id = f"bench/model-{r:05d}"
        url = f"https://huggingface.co/{repo_id}"
        with store.session() as s:
            s.add(RepoRow(id=repo_id, source=repo_id, source_kind="hub", added_at=t0, head_sha=sha_of(r, per_repo)))
            s.commit()
        revs, changes, advs = [], [], []
        fixes: dict[int, int] = {}  # advisory revision -> fixing revision
        for i in range(1, per_repo + 1):
            rev_id += 1
            sha, parent = sha_of(r, i), (sha_of(r, i - 1) if i > 1 else None)
            when = t0 + timedelta(minutes=i)
            record = None
            if parent and i % every == 0:
                commit = CommitInfo(sha=sha, parents=(parent,), committed_at=when, title=f"Update {i}")
                record = build_record(
                    prefix="x_HUBWATCH", repo_id=repo_id, repo_url=url, commit_url=f"{url}/commit/{sha}",
                    branch="main", commit=commit, parent=parent,
                    diff=RevisionDiff(base=parent, head=sha, changes=(CHANGE,)), plan_delta=None, related=(),
                    now=when,
                )
                fix_at = i + rng.randint(1, 50)
                if record is not None and rng.random() < 0.85 and fix_at <= per_repo and fix_at not in fixes.values():
                    record = add_fixed(record, sha_of(r, fix_at), when + timedelta(minutes=fix_at - i))
                    fixes[i] = fix_at
            revs.append({"id": rev_id, "repo_id": repo_id, "sha": sha, "seq": i, "parent": parent,
                         "parents": [parent] if parent else [], "committed_at": when, "title": f"Update {i}",
                         "message": f"Update {i}", "authors": ["bench"], "severity": "MODERATE" if record else None,
                         "advisory_id": record["id"] if record else None, "tree_key": None, "reachable": True,
                         "error": None, "chain_hash": f"{rev_id:064x}", "recorded_at": when})
            changes.append({"revision_id": rev_id, "idx": 0, "kind": "config", "path": "config.json",
                            "summary": CHANGE.summary, "severity": "MODERATE", "topics": list(CHANGE.topics),
                            "detail": CHANGE.detail})
            if i % 2 == 0:
                changes.append({"revision_id": rev_id, "idx": 1, "kind": "other", "path": "README.md",
                                "summary": "README.md modified", "severity": None, "topics": [], "detail": {}})
            if record:
                advs.append({"id": record["id"], "repo_id": repo_id, "sha": sha, "severity": "MODERATE",
                             "published": when, "modified": when, "withdrawn": None, "record": record})
        bulk_insert(store, [(rev_t, revs), (ch_t, changes), (adv_t, advs)])
        counts["revisions"] += len(revs)
        counts["advisories"] += len(advs)
        counts["fixed"] += len(fixes)
    with store.engine.begin() as c:
        if store.dialect == "postgresql":
            c.exec_driver_sql("SELECT setval(pg_get_serial_sequence('revisions', 'id'), (SELECT max(id) FROM revisions))")
        c.exec_driver_sql("ANALYZE")
    return counts


def bulk_insert(store: Store, batches: list[tuple[Any, list[dict[str, Any]]]]) -> None:
    """Rows into tables in one transaction: COPY on PostgreSQL, the driver's executemany on
    SQLite, values bound by each column's own type (as the ORM would store them)."""
    raw = store.engine.raw_connection()
    if store.dialect != "postgresql":
        try:
            cur = raw.cursor()
            for table, rows in batches:
                if not rows:
                    continue
                names = list(rows[0])
                binds = [table.c[n].type.bind_processor(store.engine.dialect) for n in names]
                sql = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
                cur.executemany(sql, [tuple(v if b is None else b(v) for v, b in zip(row.values(), binds, strict=True))
                                      for row in rows])
            raw.commit()
        finally:
            raw.close()
        return
    try:
        with raw.cursor() as cur:  # type: ignore[attr-defined]
            for table, rows in batches:
                if not rows:
                    continue
                names = list(rows[0])
                json_cols = {c.name for c in table.columns if isinstance(c.type, JSON)}
                with cur.copy(f"COPY {table.name} ({', '.join(names)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row([json.dumps(row[n]) if n in json_cols and row[n] is not None else row[n]
                                        for n in names])
        raw.commit()
    finally:
        raw.close()


# --- the server, in a child process -----------------------------------------------------------


def serve_main(url: str, port: int, trivial: bool) -> None:
    import uvicorn

    if trivial:
        from fastapi import FastAPI

        app = FastAPI()

        @app.get("/trivial")
        def trivial_route() -> dict[str, str]:
            return {"status": "ok"}
    else:
        from tracker.api.app import create_app
        from tracker.config import Settings

        app = create_app(open_store(url, run_migrations=False), Settings())
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


@contextmanager
def server(url: str, *, trivial: bool = False) -> Iterator[tuple[int, int]]:
    """(port, pid) of the app on uvicorn in a child process."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [sys.executable, __file__, "--serve", url, "--port", str(port)] + (["--trivial"] if trivial else [])
    child = subprocess.Popen(args, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or child.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.1)
        yield port, child.pid
    finally:
        child.terminate()
        child.wait(10)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- the load: a minimal keep-alive HTTP/1.1 client -------------------------------------------

Request = tuple[str, str, bytes]  # method, path, body


async def _connection(
    port: int, make: Callable[[], Request], todo: list[int], out: list[float], refused: list[str]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while todo[0] > 0:
            todo[0] -= 1
            method, path, body = make()
            head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n").encode()
            t = time.perf_counter()
            writer.write(head + body)
            status_headers = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in status_headers.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            out.append((time.perf_counter() - t) * 1000)
            if not status_headers.startswith(b"HTTP/1.1 200"):
                status = status_headers.split(b" ", 2)[1].decode()
                if status != "429":  # a batch past its time budget: counted, not fatal
                    raise RuntimeError(f"{path}: {status_headers.splitlines()[0]!r}")
                refused.append(status)
    finally:
        writer.close()


def load(port: int, pid: int, make: Callable[[], Request], requests: int, connections: int) -> dict[str, float]:
    """Run ``requests`` requests over ``connections`` connections; latency and CPU."""
    warm: list[float] = []
    asyncio.run(_many(port, make, min(50, max(connections, requests // 10)), connections, warm))
    samples: list[float] = []
    refused: list[str] = []
    server_cpu, client_cpu = cpu_seconds(pid), resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    asyncio.run(_many(port, make, requests, connections, samples, refused))
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF)
    ordered = sorted(samples)
    return {
        "requests": requests, "connections": connections, "wall_s": wall, "req_per_s": requests / wall,
        "p50_ms": statistics.median(ordered), "p99_ms": ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))],
        "server_cpu_ms_per_req": (cpu_seconds(pid) - server_cpu) * 1000 / requests,
        "client_cpu_s": (after.ru_utime + after.ru_stime) - (client_cpu.ru_utime + client_cpu.ru_stime),
        "refused_429": len(refused),
    }


async def _many(
    port: int, make: Callable[[], Request], requests: int, connections: int, out: list[float],
    refused: list[str] | None = None,
) -> None:
    todo, refused = [requests], refused if refused is not None else []
    await asyncio.gather(*(_connection(port, make, todo, out, refused) for _ in range(connections)))


# --- one database -----------------------------------------------------------------------------


def run(url: str, *, repos: int, per_repo: int, every: int = 3, requests: int = 2000) -> dict[str, Any]:
    rng = random.Random(7)
    store = open_store(url)
    try:
        t = time.perf_counter()
        counts = seed(store, repos, per_repo, every, rng)
        seed_s = time.perf_counter() - t
        t = time.perf_counter()
        with store.engine.begin() as conn:
            rebuild(conn)
        index_s = time.perf_counter() - t
        with store.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
        dialect = store.dialect
    finally:
        store.close()

    def any_commit() -> str:
        return sha_of(rng.randrange(repos), rng.randint(1, per_repo))

    def commit_query() -> Request:
        return "POST", "/v1/query", json.dumps({"commit": any_commit()}).encode()

    def batch() -> Request:
        return "POST", "/v1/querybatch", json.dumps({"queries": [{"commit": any_commit()} for _ in range(BATCH)]}).encode()

    def history() -> Request:
        repo = f"bench/model-{rng.randrange(repos):05d}"
        return "GET", f"/api/v1/repos/{repo}/revisions?limit={PAGE}&cursor={rng.randint(PAGE + 1, per_repo + 1)}", b""

    def newest() -> Request:
        return "GET", f"/api/v1/repos/bench/model-{rng.randrange(repos):05d}/revisions?limit={PAGE}", b""

    def html() -> Request:
        repo = f"bench/model-{rng.randrange(repos):05d}"
        return "GET", f"/repos/{repo}?limit={PAGE}&cursor={rng.randint(PAGE + 1, per_repo + 1)}", b""

    out: dict[str, Any] = {"database": dialect, **counts, "repos": repos, "seed_s": seed_s, "index_s": index_s}
    with server(url, trivial=True) as (port, pid):
        out["trivial"] = load(port, pid, lambda: ("GET", "/trivial", b""), requests, CONNECTIONS)
    with server(url) as (port, pid):
        out["healthz"] = load(port, pid, lambda: ("GET", "/healthz", b""), requests, CONNECTIONS)
        out["history page, newest"] = load(port, pid, newest, requests, CONNECTIONS)
        out["history page"] = load(port, pid, history, requests, CONNECTIONS)
        out["history page, HTML"] = load(port, pid, html, max(16, requests // 4), CONNECTIONS)
        out["commit query"] = load(port, pid, commit_query, requests, CONNECTIONS)
        out["querybatch 1000"] = load(port, pid, batch, max(4, requests // 20), CONNECTIONS)
        out["querybatch 1000, 1 connection"] = load(port, pid, batch, max(2, requests // 40), 1)
    return out


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


def report(results: list[dict[str, Any]]) -> None:
    for res in results:
        print(f"\n{res['database']}: {res['repos']:,} repos, {res['revisions']:,} revisions, {res['advisories']:,} "
              f"advisories ({res['fixed']:,} fixed); seeded in {res['seed_s']:.1f} s, commit index built in "
              f"{res['index_s']:.1f} s")
        print("| route | connections | requests | req/s | p50 ms | p99 ms | server CPU ms/req | 429 | goal |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        ceiling = res["trivial"]["req_per_s"]
        for name in ROUTES:
            m = res[name]
            goal = ""
            if name in GOALS:
                goal = f"p99 < {GOALS[name]:.0f} ms: {'met' if m['p99_ms'] < GOALS[name] else 'NOT met'}"
            elif name.startswith("history page"):
                ratio = ceiling / m["req_per_s"]
                cpu = m["server_cpu_ms_per_req"] / res["trivial"]["server_cpu_ms_per_req"]
                goal = (f"within 3x of the ceiling: {ratio:.1f}x, {'met' if ratio <= 3 else 'NOT met'} "
                        f"(server CPU {cpu:.1f}x the ceiling's)")
            elif name == "trivial":
                goal = "the ceiling (bare FastAPI)"
            print(f"| {name} | {m['connections']} | {m['requests']} | {m['req_per_s']:.0f} | {m['p50_ms']:.1f} | "
                  f"{m['p99_ms']:.1f} | {m['server_cpu_ms_per_req']:.2f} | {m['refused_429']} | {goal} |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    p.add_argument("--repos", type=int, default=100)
    p.add_argument("--per-repo", type=int, default=1000)
    p.add_argument("--advisory-every", type=int, default=3)
    p.add_argument("--requests", type=int, default=2000, help="timed requests per single-query route")
    p.add_argument("--pg-admin-url", default=os.environ.get("HUBWATCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    p.add_argument("--json", action="store_true")
    p.add_argument("--serve", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--trivial", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        serve_main(args.serve, args.port, args.trivial)
        return 0
    load_at_start, started, t0 = os.getloadavg()[0], datetime.now(UTC), time.perf_counter()
    results = []
    sizes = {"repos": args.repos, "per_repo": args.per_repo, "every": args.advisory_every, "requests": args.requests}
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(run(f"sqlite:///{tmp}/bench.db", **sizes))
    if args.db in ("postgresql", "both"):
        with pg_database(args.pg_admin_url) as url:
            results.append(run(url, **sizes))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load_at_start:.1f} at the start, "
              f"{os.getloadavg()[0]:.1f} at the end, {started:%Y-%m-%d %H:%M} UTC, {time.perf_counter() - t0:.0f} s")
        report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
