"""The read side under 16 connections: commit queries, querybatch, history pages, on SQLite
and PostgreSQL, beside a trivial FastAPI endpoint measured the same way in the same run (and
again just before each history page, whose goal is a ratio to it).

Seeds ``--repos`` repos of ``--per-repo`` linear revisions each, in bulk through the tables:
one or two changes per revision; on every ``--advisory-every``-th revision a real OSV record
(``advisories.osv.build_record``: GIT range introduced at the revision), of which 85 % get a
``fixed`` event (``add_fixed``) 1-50 revisions later, as the lifecycle writes when a later
revision restores the content. The commit index is then built by the migration's own code
(``storage.commit_rows.rebuild``), timed; then ``ANALYZE`` (on PostgreSQL ``VACUUM (ANALYZE)``: the
build's updates leave a dead version of every revision row, which autovacuum would otherwise
clean up in the middle of the measurements). The real app (``tracker.api.app.create_app``) runs
under uvicorn in a child process; the load comes from this process over 16 keep-alive
connections (a minimal asyncio HTTP/1.1 client: requests made before the timed window, the
answers' bodies counted, not kept, so the client costs little CPU), each request timed. Server CPU is read from /proc for the child; seeding and the index build
give their CPU beside their wall time (this process's, and PostgreSQL's backends'). Prints
each goal beside its measurement. Progress lines go to stderr as it runs; the report so far
is rewritten after every step to ``--out`` (and ``--out``.json), and printed at the end even
when a later step fails, so a long run keeps what it measured.

The server is run as ``hubwatch serve`` runs it (``tracker.cli.serve_cmds.serve_app``: the
same uvicorn settings, ``--workers`` forked processes on one socket), and so is the trivial
ceiling, with the same process count; the header says how. Server CPU counts the workers.
Before any route is loaded the benchmark waits for every server process's warm-up of the
commit answers (``/readyz``'s ``warm_up``: the app starts it as it starts serving, in each
worker), so no timed window carries its CPU; how long it took is reported. Each route's
first requests (about 50, on fresh connections) are still timed apart and reported beside
the steady ones ("first requests"), not hidden. ``--profile DIR`` has py-spy (when
installed) record the server through each route's timed requests, a flame graph per route.
``--stack HTTP+LOOP`` serves the app and the ceiling on that parser and loop instead of
``serve``'s choice; given twice or more, with ``--rounds N``, the stacks take turns (A, B, A, B),
each pass with its own servers and its own table.

    .venv/bin/python benchmarks/api.py                                   # both, 100 x 1,000
    .venv/bin/python benchmarks/api.py --db sqlite --repos 10 --per-repo 200 --requests 300
    .venv/bin/python benchmarks/api.py --repos 100 --per-repo 10000 --advisory-every 30 --seed-only
    .venv/bin/python benchmarks/api.py --db sqlite --routes "commit query;querybatch 1000"
    .venv/bin/python benchmarks/api.py --db postgresql --workers 2 --profile /tmp/prof --routes "commit query"
    .venv/bin/python benchmarks/api.py --db sqlite --stack h11+asyncio --stack httptools+uvloop --rounds 2  # A/B/A/B

PostgreSQL: ``--pg-admin-url`` (default ``HUBWATCH_TEST_PG`` or 127.0.0.1:5432/test); a
throwaway database is created and dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import JSON  # noqa: E402

from advisories.osv import add_fixed, build_record  # noqa: E402
from storage import history_entries, open_store  # noqa: E402
from storage.commit_rows import rebuild  # noqa: E402
from storage.store import Store  # noqa: E402
from storage.tables import AdvisoryRow, ChangeRow, RepoRow, RevisionRow  # noqa: E402
from tracker.cli.transport import Stack, preferred  # noqa: E402
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


def seed(store: Store, repos: int, per_repo: int, every: int, rng: random.Random,
         progress: Callable[[str], None] = lambda _m: None) -> dict[str, int]:
    """Linear histories with realistic records; returns counts. Rows are tuples in column
    order (columns every schema since 0001 has), their JSON columns encoded here (constant ones once: json.dumps, as the ORM's JSON
    type writes them), so the bulk insert binds them as they are."""
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    repo_t, rev_t, ch_t, adv_t = (RepoRow.__table__, RevisionRow.__table__, ChangeRow.__table__,  # type: ignore[attr-defined]
                                  AdvisoryRow.__table__)  # type: ignore[attr-defined]
    counts = {"revisions": 0, "advisories": 0, "fixed": 0}
    rev_id = 0
    authors, topics, detail = json.dumps(["bench"]), json.dumps(list(CHANGE.topics)), json.dumps(CHANGE.detail)
    started = time.perf_counter()
    for r in range(repos):
        repo_id = f"bench/model-{r:05d}"
        url = f"https://huggingface.co/{repo_id}"
        repo = [(repo_id, repo_id, "hub", "main", "all", True, sha_of(r, per_repo), t0, 0)]
        shas = [sha_of(r, i) for i in range(per_repo + 1)]
        revs, changes, advs = [], [], []
        fixes: dict[int, int] = {}  # advisory revision -> fixing revision
        for i in range(1, per_repo + 1):
            rev_id += 1
            sha, parent = shas[i], (shas[i - 1] if i > 1 else None)
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
                    record = add_fixed(record, shas[fix_at], when + timedelta(minutes=fix_at - i))
                    fixes[i] = fix_at
            title = f"Update {i}"
            revs.append((rev_id, repo_id, sha, i, parent, f'["{parent}"]' if parent else "[]", when, title, title,
                         authors, "MODERATE" if record else None, record["id"] if record else None, None, True, None,
                         f"{rev_id:064x}", when))
            changes.append((rev_id, 0, "config", "config.json", CHANGE.summary, "MODERATE", topics, detail))
            if i % 2 == 0:
                changes.append((rev_id, 1, "other", "README.md", "README.md modified", None, "[]", "{}"))
            if record:
                advs.append((record["id"], repo_id, sha, "MODERATE", when, when, None, json.dumps(record)))
        bulk_insert(store, [(repo_t, REPO_COLUMNS, repo), (rev_t, REV_COLUMNS, revs), (ch_t, CHANGE_COLUMNS, changes), (adv_t, ADV_COLUMNS, advs)])
        counts["revisions"] += len(revs)
        counts["advisories"] += len(advs)
        counts["fixed"] += len(fixes)
        if (r + 1) % max(1, repos // 10) == 0 or r + 1 == repos:
            progress(f"seeded {r + 1}/{repos} repos, {counts['revisions']:,} revisions, "
                     f"{time.perf_counter() - started:.1f} s")
    with store.engine.begin() as c:
        if store.dialect == "postgresql":
            c.exec_driver_sql("SELECT setval(pg_get_serial_sequence('revisions', 'id'), (SELECT max(id) FROM revisions))")
        c.exec_driver_sql("ANALYZE")
    return counts


# columns every schema since 0001 has (benchmarks/upgrade.py seeds a store at 0003)
REPO_COLUMNS = ("id", "source", "source_kind", "branch", "backfill", "active", "head_sha", "added_at", "failures")
REV_COLUMNS = ("id", "repo_id", "sha", "seq", "parent", "parents", "committed_at", "title", "message", "authors",
               "severity", "advisory_id", "tree_key", "reachable", "error", "chain_hash", "recorded_at")
CHANGE_COLUMNS = ("revision_id", "idx", "kind", "path", "summary", "severity", "topics", "detail")
ADV_COLUMNS = ("id", "repo_id", "sha", "severity", "published", "modified", "withdrawn", "record")


def bulk_insert(store: Store, batches: list[tuple[Any, Sequence[str], list[tuple[Any, ...]]]]) -> None:
    """Rows (tuples in ``columns`` order, JSON columns already encoded) into tables in one
    transaction: COPY on PostgreSQL, the driver's executemany on SQLite, other values bound
    by each column's own type (as the ORM would store them)."""
    raw = store.engine.raw_connection()
    try:
        cur = raw.cursor()
        for table, names, rows in batches:
            if not rows:
                continue
            if store.dialect == "postgresql":
                with cur.copy(f"COPY {table.name} ({', '.join(names)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                continue
            binds = [(j, b) for j, n in enumerate(names) if not isinstance(table.c[n].type, JSON)
                     and (b := _binder(table.c[n].type, store.engine.dialect)) is not None]
            sql = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
            cur.executemany(sql, [_bound(row, binds) for row in rows] if binds else rows)
        cur.close()
        raw.commit()
    finally:
        raw.close()


def _binder(column_type: Any, dialect: Any) -> Callable[[Any], Any] | None:
    """The bind processor the ORM applies for this dialect (a type decorator's own step and
    its dialect implementation's: on SQLite a datetime becomes SQLAlchemy's text format)."""
    return column_type.dialect_impl(dialect).bind_processor(dialect)  # type: ignore[no-any-return]


def _bound(row: tuple[Any, ...], binds: list[tuple[int, Callable[[Any], Any]]]) -> tuple[Any, ...]:
    out = list(row)
    for j, bind in binds:
        out[j] = bind(out[j])
    return tuple(out)


# --- the server, in a child process -----------------------------------------------------------


def serve_main(url: str, port: int, trivial: bool, workers: int = 1, stack: Stack | None = None) -> None:
    """The server child: bound first, the app built, then served as ``hubwatch serve`` serves
    (``serve_cmds.serve_app``: its uvicorn settings, ``workers`` forked processes, on
    ``stack`` when given), the trivial ceiling too."""
    from tracker.cli.serve_cmds import listen, serve_app

    sock = listen("127.0.0.1", port)
    after_fork: Callable[[], None] = lambda: None  # noqa: E731
    if trivial:
        from fastapi import FastAPI

        app = FastAPI()

        @app.get("/trivial")
        def trivial_route() -> dict[str, str]:
            return {"status": "ok"}
    else:
        from tracker.api.app import create_app
        from tracker.config import Settings

        store = open_store(url, run_migrations=False)
        app = create_app(store, Settings())
        after_fork = lambda: store.engine.dispose(close=False)  # noqa: E731
    serve_app(app, sock, workers, after_fork=after_fork, stack=stack)


def server_config(workers: int, stack: Stack | None = None) -> dict[str, Any]:
    """What serves the routes (and the ceiling, the same way): uvicorn's version, the HTTP
    parser and event loop (``stack``, else what ``serve`` prefers here), the worker processes."""
    import importlib.metadata

    stack = stack or preferred()
    return {"uvicorn": importlib.metadata.version("uvicorn"), "http": stack.http, "loop": stack.loop,
            "workers": workers, "access_log": False}


def config_line(config: dict[str, Any], stacks: Sequence[Stack | None] = (), rounds: int = 1) -> str:
    served = f"http {config['http']}, loop {config['loop']}"
    if len(stacks) > 1 or rounds > 1:
        served = (f"{' then '.join(str(s or preferred()) for s in stacks)} alternated, {rounds} round(s), "
                  f"each pass its own server and ceiling")
    return (f"server: uvicorn {config['uvicorn']} ({served}, access log off), "
            f"{config['workers']} process(es) as `hubwatch serve --workers {config['workers']}` serves; the trivial "
            f"ceiling served the same way, same process count")


@contextmanager
def server(url: str, *, trivial: bool = False, workers: int = 1, stack: Stack | None = None) -> Iterator[tuple[int, int]]:
    """(port, pid) of the app on uvicorn in a child process (its workers under it), once it answers."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [sys.executable, __file__, "--serve", url, "--port", str(port), "--workers", str(workers)]
    args += ["--stack", str(stack)] if stack else []
    child = subprocess.Popen(args + (["--trivial"] if trivial else []), cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        path = "/trivial" if trivial else "/healthz"
        while not (_answers(port, path) and (workers == 1 or len(descendants(child.pid)) == workers)):
            if time.monotonic() > deadline or child.poll() is not None:
                raise RuntimeError("the server did not start")
            time.sleep(0.1)
        yield port, child.pid
    finally:
        child.terminate()
        child.wait(30)


def _answers(port: int, path: str) -> bool:
    """One GET answered 200: the app is built and served (the socket listens before that)."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            return c.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def wait_warm(port: int, pids: set[int], timeout: float = 600.0) -> dict[str, Any]:
    """Poll ``/readyz`` (a fresh connection each time: ``--workers`` processes take turns)
    until every one of ``pids`` said its commit answers' warm-up ended; what the last said,
    with the wall time waited."""
    import socket

    t, done, last = time.perf_counter(), set(), {}
    while not pids <= done:
        if time.perf_counter() - t > timeout:
            raise RuntimeError(f"the warm-up did not end in {timeout:.0f} s: {last}")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
            c.sendall(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            raw = b""
            while chunk := c.recv(65536):
                raw += chunk
        last = json.loads(raw.split(b"\r\n\r\n", 1)[1])["warm_up"]["commit_answers"]
        if last["state"] in ("warm", "failed"):
            done.add(last["process"])
        else:
            time.sleep(0.2)
    return {**last, "waited_s": time.perf_counter() - t}


def descendants(pid: int) -> list[int]:
    """The processes under ``pid`` (a server's forked workers), from /proc."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                out += [int(child), *descendants(int(child))]
    return out


def cpu_seconds(pid: int, *, tree: bool = False) -> float:
    """CPU seconds of ``pid`` (with ``tree``: and of the live processes under it, a server's workers)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    if not tree:
        return own
    under = 0.0
    for child in descendants(pid):
        with contextlib.suppress(OSError):  # gone since the listing
            under += cpu_seconds(child)
    return own + under


# --- the load: a minimal keep-alive HTTP/1.1 client -------------------------------------------

Request = tuple[str, str, bytes]  # method, path, body


class _Answers(asyncio.Protocol):
    """One keep-alive connection's answers, counted rather than kept: the head parsed once,
    the body's bytes only counted (a 3 MB querybatch answer costs this process one call per
    chunk read, no buffer, no copy), so the client's CPU stays small beside the server's."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.head = b""
        self.left = -1  # body bytes still to come; -1 until the head is complete
        self.status = b""
        self.done: asyncio.Future[bytes] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def expect(self) -> asyncio.Future[bytes]:
        """The next answer's status, once its whole body came."""
        self.head, self.left = b"", -1
        self.done = asyncio.get_running_loop().create_future()
        return self.done

    def data_received(self, data: bytes) -> None:
        if self.left >= 0:
            self.left -= len(data)
        else:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, length = self.head[:end], 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            self.status, self.left = head.split(b" ", 2)[1], length - (len(self.head) - end - 4)
            self.head = head
        if self.left <= 0 and self.done is not None and not self.done.done():
            self.done.set_result(self.status)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc or ConnectionError("the server closed the connection"))


def _wire(request: Request) -> tuple[str, bytes]:
    method, path, body = request
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    return path, head + body


async def _connection(port: int, todo: list[tuple[str, bytes]], out: list[float], refused: list[str]) -> None:
    transport, answers = await asyncio.get_running_loop().create_connection(_Answers, "127.0.0.1", port)
    try:
        while todo:
            path, wire = todo.pop()
            done = answers.expect()
            t = time.perf_counter()
            transport.write(wire)
            status = await done
            out.append((time.perf_counter() - t) * 1000)
            if status != b"200":
                if status != b"429":  # a batch past its time budget: counted, not fatal
                    raise RuntimeError(f"{path}: {answers.head.splitlines()[0]!r}")
                refused.append(status.decode())
    finally:
        transport.close()


def load(port: int, pid: int, make: Callable[[], Request], requests: int, connections: int,
         profile: Path | None = None, sessions: Callable[[], int] | None = None) -> dict[str, Any]:
    """Run ``requests`` requests over ``connections`` connections; latency and server CPU
    (the server's process and its workers). Before them, the route's first requests (about
    50) open the connections and are timed apart: ``first_touch``. With ``profile`` (an
    output path), py-spy records the server through the timed requests. ``sessions`` counts
    the database sessions opened so far (PostgreSQL): how many the timed requests opened.
    This process's cyclic collector is off meanwhile (what it holds frozen first)."""
    first: list[float] = []
    first_n = min(50, max(connections, requests // 10))
    # this process's own cyclic collector stays out of the timings: a full collection of its
    # heap (the seeding's modules) once held all 16 connections for 75 ms
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        return _load(port, pid, make, requests, connections, first, first_n, profile, sessions)
    finally:
        gc.enable()


def _load(port: int, pid: int, make: Callable[[], Request], requests: int, connections: int, first: list[float],
          first_n: int, profile: Path | None, sessions: Callable[[], int] | None) -> dict[str, Any]:
    todo = _requests(make, first_n)
    before = cpu_seconds(pid, tree=True)
    t = time.perf_counter()
    asyncio.run(_many(port, todo, connections, first))
    first_touch = {"requests": first_n, "wall_s": time.perf_counter() - t, **_latency(first),
                   "server_cpu_ms_per_req": (cpu_seconds(pid, tree=True) - before) * 1000 / first_n}
    spy = _py_spy(pid, profile) if profile is not None else None
    samples: list[float] = []
    refused: list[str] = []
    opened = sessions() if sessions is not None else None
    todo = _requests(make, requests)
    server_cpu, client_cpu = cpu_seconds(pid, tree=True), resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    asyncio.run(_many(port, todo, connections, samples, refused))
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF)
    server_after = cpu_seconds(pid, tree=True)
    if spy is not None:
        spy.send_signal(2)  # SIGINT: py-spy writes its file
        spy.wait(60)
    return {
        "requests": requests, "connections": connections, "wall_s": wall, "req_per_s": requests / wall,
        **_latency(samples), "server_cpu_ms_per_req": (server_after - server_cpu) * 1000 / requests,
        "client_cpu_s": (after.ru_utime + after.ru_stime) - (client_cpu.ru_utime + client_cpu.ru_stime),
        "refused_429": len(refused), "first_touch": first_touch,
        "db_sessions_opened": None if sessions is None or opened is None else sessions() - opened,
    }


@contextmanager
def session_counter(url: str) -> Iterator[Callable[[], int] | None]:
    """On PostgreSQL, a count of the sessions the database has had (pg_stat_database, PostgreSQL
    14+), read on one connection held open (so the reading opens none); None elsewhere."""
    if not url.startswith("postgresql"):
        yield None
        return
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as c:
        def sessions() -> int:
            c.execute("SELECT pg_stat_clear_snapshot()")
            row = c.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").fetchone()
            return int(row[0]) if row and row[0] is not None else 0

        yield sessions


def _latency(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": statistics.median(ordered), "p99_ms": ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]}


def py_spy() -> str | None:
    """py-spy beside this Python (the venv's), or on PATH."""
    import shutil

    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


#: py-spy's output formats by the file suffix they are written under
PROFILE_FORMATS = {"flamegraph": ".svg", "raw": ".txt", "speedscope": ".json"}


def _py_spy(pid: int, out: Path) -> subprocess.Popen[bytes] | None:
    """py-spy recording ``pid`` and its workers to ``out`` (a flame graph SVG; collapsed stacks
    for ``.txt``, speedscope for ``.json``), or None without py-spy."""
    exe = py_spy()
    if exe is None:
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    fmt = next((f for f, suffix in PROFILE_FORMATS.items() if out.suffix == suffix), "flamegraph")
    spy = subprocess.Popen([exe, "record", "--pid", str(pid), "--subprocesses", "--nonblocking", "--rate", "200",
                            "--format", fmt, "--output", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # attached before the timed requests start
    return spy


def _requests(make: Callable[[], Request], count: int) -> list[tuple[str, bytes]]:
    """``count`` requests made ahead of their window: their JSON bodies are no server's work."""
    return [_wire(make()) for _ in range(count)]


async def _many(port: int, todo: list[tuple[str, bytes]], connections: int, out: list[float],
                refused: list[str] | None = None) -> None:
    refused = refused if refused is not None else []
    await asyncio.gather(*(_connection(port, todo, out, refused) for _ in range(connections)))


# --- one database -----------------------------------------------------------------------------


Checkpoint = Callable[[dict[str, Any]], None]


def run(url: str, *, repos: int, per_repo: int, every: int = 3, requests: int = 2000, seed_only: bool = False,
        routes: Sequence[str] = ROUTES, progress: Callable[[str], None] = lambda _m: None, checkpoint: Checkpoint = lambda _r: None,
        workers: int = 1, profile: Path | None = None, profile_format: str = "flamegraph",
        stacks: Sequence[Stack | None] = (None,), rounds: int = 1) -> dict[str, Any]:
    """One database: seed, build the index, load each route; ``checkpoint`` gets the results
    so far after every step (a long run that fails later keeps what it measured). The app
    and the ceiling are both served by ``workers`` processes; with ``profile`` (a folder)
    py-spy records the server through each route's timed requests (``profile_format``: py-spy's
    ``--format``). Each of ``stacks`` (HTTP parser and event loop; None: what ``serve``
    prefers) serves all routes in turn, ``rounds`` times (A, B, A, B): the first pass's
    results are those returned, each later pass's go to ``checkpoint`` as results of their own."""
    rng = random.Random(7)
    store = open_store(url)
    out: dict[str, Any] = {"database": store.dialect, "repos": repos, "server": server_config(workers, stacks[0])}
    try:
        progress(f"{store.dialect}: seeding {repos:,} repos x {per_repo:,} revisions")
        with timed(store) as seed_t:
            counts = seed(store, repos, per_repo, every, rng, lambda m: progress(f"{store.dialect}: {m}"))
        out |= counts | {"seed_s": seed_t["wall_s"], "seed_cpu_s": seed_t["cpu_s"], "seed_db_cpu_s": seed_t["db_cpu_s"]}
        progress(f"{store.dialect}: {steps_line(out)}; building the commit index")
        with timed(store) as index_t, store.engine.begin() as conn:
            rebuild(conn)
        out |= {"index_s": index_t["wall_s"], "index_cpu_s": index_t["cpu_s"], "index_db_cpu_s": index_t["db_cpu_s"]}
        progress(f"{store.dialect}: making the history entries")
        with timed(store) as entries_t, store.engine.begin() as conn:  # as migration 0014 makes them
            history_entries.backfill(conn)
        out |= {"entries_s": entries_t["wall_s"], "entries_cpu_s": entries_t["cpu_s"],
                "entries_db_cpu_s": entries_t["db_cpu_s"]}
        t = time.perf_counter()
        if store.dialect == "postgresql":  # the build left a million dead row versions: as autovacuum would
            with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM (ANALYZE)")
        else:
            with store.engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE")
        progress(f"{store.dialect}: {'VACUUM (ANALYZE)' if store.dialect == 'postgresql' else 'ANALYZE'} "
                 f"in {time.perf_counter() - t:.1f} s")
    finally:
        store.close()
    progress(f"{out['database']}: {steps_line(out)}")
    checkpoint(out)
    if seed_only:
        return out

    passes = [(r, stack) for r in range(rounds) for stack in stacks]
    for i, (r, stack) in enumerate(passes):
        res = out if i == 0 else {k: v for k, v in out.items() if k not in ROUTES and not k.endswith(", ceiling")}
        if len(passes) > 1:
            res |= {"server": server_config(workers, stack), "pass": f"{stack or preferred()}, round {r + 1}"}
        measure_pass(res, url, stack, repos=repos, per_repo=per_repo, requests=requests, routes=routes, rng=rng,
                     progress=progress, checkpoint=checkpoint, workers=workers, profile=profile,
                     profile_format=profile_format)
    return out


def measure_pass(out: dict[str, Any], url: str, stack: Stack | None, *, repos: int, per_repo: int, requests: int,
                 routes: Sequence[str], rng: random.Random, progress: Callable[[str], None], checkpoint: Checkpoint,
                 workers: int, profile: Path | None, profile_format: str) -> None:
    """Every route of ``routes`` (and the ceiling) loaded once, the app and the ceiling served on
    ``stack``; the measurements into ``out``."""
    label = out["database"] + (f" ({out['pass']})" if "pass" in out else "")

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

    def measure(name: str, port: int, pid: int, make: Callable[[], Request], count: int, connections: int) -> None:
        if name not in routes and name != "trivial":  # the ceiling is measured in every run
            return
        progress(f"{label}: {name}: {count} requests over {connections} connection(s)")
        stem = f"{label}-{name}".replace(" ", "-").replace(",", "").replace("(", "").replace(")", "")
        spied: dict[str, Any] = {"profile": profile / (stem + PROFILE_FORMATS[profile_format])} if profile else {}
        counted: dict[str, Any] = {"sessions": sessions} if sessions is not None else {}
        m = out[name] = load(port, pid, make, count, connections, **spied, **counted)
        first = m["first_touch"]
        progress(f"{label}: {name}: {m['req_per_s']:.0f} req/s, p50 {m['p50_ms']:.1f} ms, "
                 f"p99 {m['p99_ms']:.1f} ms, server CPU {m['server_cpu_ms_per_req']:.2f} ms/req, "
                 f"{m['refused_429']} answered 429; its first {first['requests']}: p99 {first['p99_ms']:.1f} ms, "
                 f"CPU {first['server_cpu_ms_per_req']:.2f} ms/req" + (f"; profile {spied['profile']}" if spied else "")
                 + (f"; {m['db_sessions_opened']} database sessions opened" if counted else ""))
        checkpoint(out)

    with session_counter(url) as sessions, server(url, trivial=True, workers=workers, stack=stack) as ceiling, \
            server(url, workers=workers, stack=stack) as (port, pid):
        warm = out["warm_up"] = wait_warm(port, {pid} if workers == 1 else set(descendants(pid)))
        progress(f"{label}: the commit answers' warm-up: {warm['state']}, {warm.get('chains', 0)} chains, "
                 f"{warm.get('records', 0)} records in {warm.get('seconds', 0):.1f} s (waited {warm['waited_s']:.1f} s)")
        measure("trivial", *ceiling, lambda: ("GET", "/trivial", b""), requests, CONNECTIONS)

        def beside(name: str) -> None:
            """The ceiling again, just before a history page: load on this shared machine moves
            within a minute, and the page's goal is a ratio to the ceiling of the same moment."""
            if name in routes:
                progress(f"{label}: the ceiling again, beside {name}")
                out[name + ", ceiling"] = load(*ceiling, lambda: ("GET", "/trivial", b""), requests, CONNECTIONS)

        measure("healthz", port, pid, lambda: ("GET", "/healthz", b""), requests, CONNECTIONS)
        beside("history page, newest")
        measure("history page, newest", port, pid, newest, requests, CONNECTIONS)
        beside("history page")
        measure("history page", port, pid, history, requests, CONNECTIONS)
        beside("history page, HTML")
        measure("history page, HTML", port, pid, html, max(16, requests // 4), CONNECTIONS)
        measure("commit query", port, pid, commit_query, requests, CONNECTIONS)
        measure("querybatch 1000", port, pid, batch, max(4, requests // 20), CONNECTIONS)
        measure("querybatch 1000, 1 connection", port, pid, batch, max(2, requests // 40), 1)


def db_backends(store: Store) -> dict[int, float]:
    """CPU seconds of the PostgreSQL backends serving this database (same machine), by pid."""
    if store.dialect != "postgresql":
        return {}
    with store.engine.connect() as c:
        pids = c.exec_driver_sql("SELECT pid FROM pg_stat_activity WHERE datname = current_database()").scalars().all()
    out = {}
    for pid in pids:
        with contextlib.suppress(OSError):  # another machine's server, or gone
            out[pid] = cpu_seconds(pid)
    return out


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@contextmanager
def timed(store: Store) -> Iterator[dict[str, float]]:
    """Wall time, this process's CPU and the database server's (PostgreSQL's backends) of a step."""
    got: dict[str, float] = {}
    backends, cpu, t = db_backends(store), own_cpu(), time.perf_counter()
    yield got
    got["wall_s"], got["cpu_s"] = time.perf_counter() - t, own_cpu() - cpu
    got["db_cpu_s"] = sum(v - backends.get(pid, 0.0) for pid, v in db_backends(store).items())


def steps_line(res: dict[str, Any]) -> str:
    """How long seeding and the commit index build took, CPU beside wall time."""
    def one(step: str) -> str:
        db = f", {res[step + '_db_cpu_s']:.1f} s in PostgreSQL" if res["database"] == "postgresql" else ""
        return f"{res[step + '_s']:.1f} s (CPU {res[step + '_cpu_s']:.1f} s here{db})"

    line = f"seeded in {one('seed')}"
    line += f", commit index built in {one('index')}" if "index_s" in res else ""
    line += f", history entries made in {one('entries')}" if "entries_s" in res else ""
    if warm := res.get("warm_up"):  # each server process's, waited for before the routes
        line += (f"; the server's commit answers' warm-up: {warm['state']}, {warm.get('chains', 0)} chains and "
                 f"{warm.get('records', 0)} records in {warm.get('seconds', 0):.1f} s, waited for")
    return line


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


def report(results: list[dict[str, Any]], header: str) -> str:
    """The run as markdown-ready text: the header line, then per database its sizes, seed and
    build times, and a table of routes with each goal beside its measurement (routes not
    measured yet are left out)."""
    lines = [header]
    for res in results:
        lines += ["", f"{res['database']}: {res['repos']:,} repos, {res['revisions']:,} revisions, "
                      f"{res['advisories']:,} advisories ({res['fixed']:,} fixed); {steps_line(res)}"
                      + (f"; served by {res['pass']}" if "pass" in res else "")]
        if "trivial" not in res:
            continue
        lines += ["| route | connections | requests | req/s | p50 ms | p99 ms | server CPU ms/req | 429 "
                      "| first requests: n, p99 ms, CPU ms/req | db sessions opened | goal |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |"]
        ceiling = res["trivial"]["req_per_s"]
        for name in ROUTES:
            if name not in res:
                continue
            m = res[name]
            goal = ""
            if name in GOALS:
                goal = f"p99 < {GOALS[name]:.0f} ms: {'met' if m['p99_ms'] < GOALS[name] else 'NOT met'}"
            elif name.startswith("history page"):
                near = res.get(name + ", ceiling", res["trivial"])  # the ceiling measured just before it
                ratio = near["req_per_s"] / m["req_per_s"]
                base = near["server_cpu_ms_per_req"]
                # /proc counts CPU in 10 ms ticks: a short run's ceiling can read 0
                cpu = f"{m['server_cpu_ms_per_req'] / base:.1f}x the ceiling's" if base > 0 else "n/a: the ceiling's read 0"
                goal = (f"within 3x of the ceiling: {ratio:.1f}x, {'met' if ratio <= 3 else 'NOT met'} "
                        f"(server CPU {cpu}; the ceiling just before: {near['req_per_s']:.0f} req/s, "
                        f"{base:.2f} ms/req; first measured {ceiling:.0f} req/s)")
            elif name == "trivial":
                goal = "the ceiling (bare FastAPI)"
            first = m.get("first_touch")
            touch = f"{first['requests']}, {first['p99_ms']:.1f}, {first['server_cpu_ms_per_req']:.2f}" if first else ""
            lines.append(f"| {name} | {m['connections']} | {m['requests']} | {m['req_per_s']:.0f} | {m['p50_ms']:.1f} | "
                         f"{m['p99_ms']:.1f} | {m['server_cpu_ms_per_req']:.2f} | {m['refused_429']} | {touch} | "
                         f"{'' if m.get('db_sessions_opened') is None else m['db_sessions_opened']} | {goal} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    p.add_argument("--repos", type=int, default=100)
    p.add_argument("--per-repo", type=int, default=1000)
    p.add_argument("--advisory-every", type=int, default=3)
    p.add_argument("--requests", type=int, default=2000, help="timed requests per single-query route")
    p.add_argument("--seed-only", action="store_true", help="seed and build the commit index, timed; no load")
    p.add_argument("--routes", type=lambda v: [r.strip() for r in v.split(";")], default=list(ROUTES),
                   help="routes separated by semicolons to load (default: all); the trivial ceiling is always measured")
    p.add_argument("--out", type=Path, help="the report so far, rewritten after every step (and PATH.json); "
                                            "default: hubwatch-api-<start>.md in the temporary directory")
    p.add_argument("--pg-admin-url", default=os.environ.get("HUBWATCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"))
    p.add_argument("--json", action="store_true")
    p.add_argument("--workers", type=int, default=1,
                   help="server processes for the app and the ceiling alike (as `hubwatch serve --workers N`)")
    p.add_argument("--profile", type=Path, metavar="DIR",
                   help="py-spy (if installed) records the server through each route's timed requests: DIR/<db>-<route>.svg")
    p.add_argument("--profile-format", choices=list(PROFILE_FORMATS), default="flamegraph",
                   help="py-spy's output: flamegraph (.svg), raw collapsed stacks (.txt) or speedscope (.json)")
    p.add_argument("--stack", type=_stack, action="append", metavar="HTTP+LOOP",
                   help="serve the app and the ceiling with this HTTP parser and event loop (h11+asyncio, "
                        "httptools+uvloop, ...) instead of what `serve` prefers; repeat it for an A/B: each serves "
                        "all routes in turn")
    p.add_argument("--rounds", type=int, default=1, help="passes over the --stack list (2: A, B, A, B)")
    p.add_argument("--serve", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--trivial", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if unknown := [r for r in args.routes if r not in ROUTES]:
        p.error(f"unknown route(s) {unknown}; choose from {', '.join(ROUTES)}")
    if args.workers < 1:
        p.error("--workers must be at least 1")
    if args.serve:
        serve_main(args.serve, args.port, args.trivial, args.workers, args.stack[0] if args.stack else None)
        return 0
    if args.profile is not None and py_spy() is None:
        p.error("--profile needs py-spy (pip install py-spy)")
    load_at_start, started, t0 = os.getloadavg()[0], datetime.now(UTC), time.perf_counter()
    out_path = args.out or Path(tempfile.gettempdir()) / f"hubwatch-api-{started:%Y%m%d-%H%M%S}.md"
    results: list[dict[str, Any]] = []
    stacks: list[Stack | None] = args.stack or [None]

    def header(final: bool) -> str:
        return (f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load_at_start:.1f} at the "
                f"start, {os.getloadavg()[0]:.1f} {'at the end' if final else 'so far'}, {started:%Y-%m-%d %H:%M} UTC, "
                f"{time.perf_counter() - t0:.0f} s; {config_line(server_config(args.workers, stacks[0]), stacks, args.rounds)}"
                + ("; py-spy recording the server through the timed requests" if args.profile else ""))

    def progress(message: str) -> None:
        print(f"[{datetime.now(UTC):%H:%M:%S} UTC, load {os.getloadavg()[0]:.1f}] {message}", file=sys.stderr, flush=True)

    def checkpoint(res: dict[str, Any], final: bool = False) -> None:
        if not any(r is res for r in results):
            results.append(res)
        out_path.write_text(report(results, header(final)) + "\n")
        out_path.with_name(out_path.name + ".json").write_text(json.dumps(results, indent=2) + "\n")

    progress(f"{' '.join(sys.argv)}; the report so far goes to {out_path}")
    sizes = {"repos": args.repos, "per_repo": args.per_repo, "every": args.advisory_every, "requests": args.requests,
             "seed_only": args.seed_only, "routes": args.routes, "progress": progress, "checkpoint": checkpoint,
             "workers": args.workers, "profile": args.profile, "profile_format": args.profile_format,
             "stacks": stacks, "rounds": args.rounds}
    try:
        if args.db in ("sqlite", "both"):
            with tempfile.TemporaryDirectory() as tmp:
                run(f"sqlite:///{tmp}/bench.db", **sizes)
        if args.db in ("postgresql", "both"):
            with pg_database(args.pg_admin_url) as url:
                run(url, **sizes)
    finally:  # what was measured is printed, whether or not the run got to its end
        if results:
            checkpoint(results[-1], final=True)
        print(json.dumps(results, indent=2) if args.json else report(results, header(True)), flush=True)
    return 0


def _stack(text: str) -> Stack:
    http, _, loop = text.partition("+")
    try:
        return Stack(http, loop)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


if __name__ == "__main__":
    sys.exit(main())
