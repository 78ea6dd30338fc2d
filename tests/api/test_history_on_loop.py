"""History pages read on the event loop (SQLite, issue 17): as fresh as a worker thread's
read, never blocking the loop on a lock, never two reads at once on the loop's connection."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time

import pytest

from storage import open_store
from storage.store import LoopBusy
from tests.api.data import seed_history
from tracker.api.history_fast import HistoryPageFastPath

PAGE = "/api/v1/repos/org/model/revisions"


async def _not_asked(scope, receive, send):  # type: ignore[no-untyped-def]
    raise AssertionError(f"the app was asked for {scope['path']}")


async def _get(lean: HistoryPageFastPath, path: str, query: bytes = b"") -> tuple[int, bytes]:
    sent: list[dict] = []  # type: ignore[type-arg]

    async def send(message):  # type: ignore[no-untyped-def]
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "root_path": "", "query_string": query, "headers": []}
    await lean(scope, None, send)  # type: ignore[arg-type]
    return sent[0]["status"], sent[1]["body"]


def _shas(body: bytes) -> list[str]:
    return [r["sha"] for r in json.loads(body)["revisions"]]


def test_a_page_read_on_the_loop_sees_every_write_committed_before_it(sqlite_store) -> None:  # type: ignore[no-untyped-def]
    assert sqlite_store.loop_reads is not None
    lean = HistoryPageFastPath(_not_asked, store=sqlite_store)
    seed_history(sqlite_store, n=3)
    status, body = asyncio.run(_get(lean, PAGE))
    assert status == 200 and len(_shas(body)) == 3
    for n in range(4, 8):  # written by the daemon's connections between two requests
        added = seed_history(sqlite_store, n=1, first_index=n - 1)
        status, body = asyncio.run(_get(lean, PAGE))
        assert _shas(body)[0] == added[0].sha and len(_shas(body)) == n
        status, html = asyncio.run(_get(lean, "/repos/org/model"))
        assert status == 200 and added[0].sha.encode() in html


def test_a_locked_database_sends_the_read_to_a_worker_thread_and_the_loop_runs_on(sqlite_url) -> None:  # type: ignore[no-untyped-def]
    first = open_store(sqlite_url)
    seed_history(first, n=4)
    want = asyncio.run(_get(HistoryPageFastPath(_not_asked, store=first), PAGE, b"limit=2&cursor=4"))
    first.close()
    store = open_store(sqlite_url)
    store.engine.dispose()  # no connection open: the locker below may take the file whole
    try:
        lean = HistoryPageFastPath(_not_asked, store=store)
        locker = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), check_same_thread=False)
        locker.execute("PRAGMA locking_mode=EXCLUSIVE")
        locker.execute("BEGIN EXCLUSIVE")
        locker.execute("UPDATE repos SET failures = failures")
        threading.Timer(0.6, locker.close).start()  # a writer holding the file for 0.6 s

        async def run() -> tuple[tuple[int, bytes], float, float]:
            gaps: list[float] = []
            done = asyncio.Event()

            async def tick() -> None:
                last = time.monotonic()
                while not done.is_set():
                    await asyncio.sleep(0.01)
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now

            ticker = asyncio.create_task(tick())
            started = time.monotonic()
            got = await _get(lean, PAGE, b"limit=2&cursor=4")
            took = time.monotonic() - started
            done.set()
            await ticker
            return got, took, max(gaps)

        (status, body), took, longest_gap = asyncio.run(run())
        assert status == 200 and _shas(body) == _shas(want[1])
        assert took >= 0.5  # it waited for the lock, in a worker thread ...
        assert longest_gap < 0.35  # ... while the loop went on (at most LOOP_BUSY_MS blocked)
    finally:
        store.close()


def test_the_loops_connection_is_never_shared(sqlite_store) -> None:  # type: ignore[no-untyped-def]
    seed_history(sqlite_store, n=2)
    with sqlite_store.history_reader(on_loop=True) as reader:
        assert reader.probe("org/model").version is not None
        with pytest.raises(LoopBusy), sqlite_store.history_reader(on_loop=True):  # another loop's, meanwhile
            pass
        with sqlite_store.history_reader() as other:  # a worker thread's read is not refused
            assert other.probe("org/model").version == reader.probe("org/model").version
    with sqlite_store.history_reader(on_loop=True) as again:
        assert again.probe("org/model").version is not None


def test_postgresql_and_memory_stores_have_no_loop_connection(db_url) -> None:  # type: ignore[no-untyped-def]
    for url in ([db_url] if db_url.startswith("postgresql") else ["sqlite://"]):
        store = open_store(url)
        try:
            assert store.loop_reads is None
            with pytest.raises(LoopBusy), store.history_reader(on_loop=True):
                pass
        finally:
            store.close()


@pytest.fixture
def pg_store(pg_url):  # type: ignore[no-untyped-def]
    store = open_store(pg_url)
    yield store
    store.close()


def test_postgresql_pages_read_on_after_their_connections_were_dropped(pg_store) -> None:  # type: ignore[no-untyped-def]
    """The page pool has no pre-ping: a page whose kept connection was dropped (a restarted
    server) is read once more on fresh connections, not answered 500."""
    from fastapi.testclient import TestClient

    from storage.store import PAGE_READS_NAME
    from tests.api.data import settings
    from tracker.api.app import create_app

    seed_history(pg_store, n=3)
    client = TestClient(create_app(pg_store, settings()))
    pages = [PAGE, "/repos/org/model", PAGE + "?limit=2", "/repos/org/model?limit=1"]
    want = [client.get(p).content for p in pages]  # each read keeps its connection in the pool
    for n, path in enumerate(pages):
        with pg_store.engine.connect() as conn:
            killed = conn.exec_driver_sql(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %(name)s"
                " AND datname = current_database()",
                {"name": PAGE_READS_NAME}).scalar()
            conn.commit()
        assert killed >= 1
        seed_history(pg_store, n=1, first_index=3 + n)  # a page not kept: read from the database
        got = client.get(path)
        assert got.status_code == 200 and got.content != want[n]


def test_a_sqlite_process_never_imports_psycopg_for_a_page(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """psycopg in a SQLite daemon's process made each new revision ~100 ms dearer (the worker's
    answer unpickled in the daemon's thread): ``hubwatch run`` serves pages in that process, so
    neither a page nor a 404 may import it."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'x.db'}"
    script = (
        "import sys\n"
        "from fastapi.testclient import TestClient\n"
        "from storage import open_store\n"
        "from tests.api.data import seed_history, settings\n"
        "from tracker.api.app import create_app\n"
        f"store = open_store({url!r})\n"
        "seed_history(store, n=2)\n"
        "client = TestClient(create_app(store, settings()))\n"
        "codes = [client.get(p).status_code for p in ('/api/v1/repos/org/model/revisions', '/repos/org/model',"
        " '/api/v1/repos/org/none/revisions', '/repos/org/none')]\n"
        "print(codes, 'psycopg' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split()[-1] == "False" and "[200, 200, 404, 404]" in out.stdout, out.stdout + out.stderr
