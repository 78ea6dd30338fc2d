"""A write that fails for a reason that passes is tried again with the analysis in hand (issue 10).

The database drops the connection in the middle of a revision's transaction (PostgreSQL
terminates the backend as the revision row is inserted): the check writes it again and the
Hub is asked exactly what a clean check of the same repo asks, not a request more. A database
error that does not pass is the check's outcome, recorded as what it is, and the check is not
re-run against the Hub.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from storage import Store, open_store
from storage.write_retry import WriteRetry, write_failure
from tests.daemon.helpers import make_daemon, tiny_repo
from tests.hubemu import HubEmulator
from tracker.cli.context import pipeline_options
from tracker.config import AdvisorySettings, Settings
from tracker.hub.hf import HfSource
from tracker.pipeline import check_repo


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Store]:
    st = open_store(pg_url)
    yield st
    st.close()


def _check(store: Store, hub: HubEmulator, repo_id: str, slept: list[float]) -> Any:
    opts = pipeline_options(Settings(advisories=AdvisorySettings(osv_api="")))
    opts.writes = WriteRetry(sleep=slept.append)
    src = HfSource(repo_id, endpoint=hub.url, timeout=5.0)
    try:
        return check_repo(store, src, store.get_repo(repo_id), opts)  # type: ignore[arg-type]
    finally:
        src.close()


def _terminate_on(store: Store, statement: str, times: int) -> list[int]:
    """PostgreSQL ends this store's connection (as a restart or failover would) each time, up to
    ``times``, that it is about to run ``statement``; returns the terminated backends."""
    killed: list[int] = []

    @event.listens_for(store.engine, "before_cursor_execute")
    def terminate(conn: Any, cursor: Any, sql: str, *_args: Any) -> None:
        if sql.lstrip().upper().startswith(statement) and len(killed) < times:
            pid = cursor.connection.info.backend_pid
            killed.append(pid)
            with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as admin:
                admin.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})

    return killed


@pytest.mark.postgres
def test_a_connection_lost_mid_store_is_written_again_without_asking_the_hub_twice(
    pg_store: Store, tmp_path: Path,
) -> None:
    with HubEmulator() as hub:
        hub.add_repo("org/cut", tiny_repo(tmp_path / "cut.git", commits=3).path)
        clean_store = open_store(f"sqlite:///{tmp_path / 'clean.db'}")  # the same check where nothing fails
        clean_store.add_repo("org/cut", source="org/cut", source_kind="hub")
        assert _check(clean_store, hub, "org/cut", []).new_revisions == 3
        clean = [(r.method, r.path) for r in hub.requests]
        hub.reset_stats()

        pg_store.add_repo("org/cut", source="org/cut", source_kind="hub")
        killed = _terminate_on(pg_store, "INSERT INTO REVISIONS", times=2)
        slept: list[float] = []
        result = _check(pg_store, hub, "org/cut", slept)
        assert len(killed) == 2 and slept == [0.1, 0.5]  # cut twice, written on the third try
        assert result.status == "ok" and result.new_revisions == 3
        assert [(r.method, r.path) for r in hub.requests] == clean  # not one request more
    got, want = pg_store.history("org/cut"), clean_store.history("org/cut")
    clean_store.close()
    assert [[c.summary for c in r.changes] for r in got] == [[c.summary for c in r.changes] for r in want]
    assert [r.seq for r in got] == [3, 2, 1] and all(r.error is None for r in got)


@pytest.mark.postgres
def test_a_database_outage_in_the_middle_of_a_store_is_waited_out_without_asking_the_hub_again(
    pg_url: str, tmp_path: Path,
) -> None:
    """PostgreSQL behind a TCP proxy that, as the first revision row is inserted, resets every
    connection and refuses new ones for 2.5 s (a restart, a failover, a partition)."""
    from sqlalchemy.engine import make_url

    from tests.faults.proxy import TcpFaultProxy

    real = make_url(pg_url)
    with HubEmulator() as hub, TcpFaultProxy(real.host or "127.0.0.1", real.port or 5432) as db_proxy:
        hub.add_repo("org/cut", tiny_repo(tmp_path / "cut.git", commits=3).path)
        clean_store = open_store(f"sqlite:///{tmp_path / 'clean.db'}")
        clean_store.add_repo("org/cut", source="org/cut", source_kind="hub")
        assert _check(clean_store, hub, "org/cut", []).new_revisions == 3
        clean = [(r.method, r.path) for r in hub.requests]
        hub.reset_stats()

        store = open_store(real.set(host="127.0.0.1", port=db_proxy.port).render_as_string(hide_password=False))
        store.add_repo("org/cut", source="org/cut", source_kind="hub")
        cuts: list[float] = []

        @event.listens_for(store.engine, "before_cursor_execute")
        def outage(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
            if sql.lstrip().upper().startswith("INSERT INTO REVISIONS") and not cuts:
                cuts.append(1)
                db_proxy.cut(2.5)

        opts = pipeline_options(Settings(advisories=AdvisorySettings(osv_api="")))
        src = HfSource("org/cut", endpoint=hub.url, timeout=5.0)
        try:
            result = check_repo(store, src, store.get_repo("org/cut"), opts)  # type: ignore[arg-type]
        finally:
            src.close()
        assert cuts and db_proxy.refused >= 1  # the database really was away, and came back
        assert result.status == "ok" and result.new_revisions == 3
        assert [(r.method, r.path) for r in hub.requests] == clean  # the Hub was not asked again
        got, want = store.history("org/cut"), clean_store.history("org/cut")
        store.close()
    clean_store.close()
    assert [[c.summary for c in r.changes] for r in got] == [[c.summary for c in r.changes] for r in want]
    assert all(r.error is None for r in got)


@pytest.mark.postgres
def test_a_daemon_cut_off_inside_a_transaction_does_not_hold_the_others_up_for_hours(
    pg_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A partition leaves the cut-off daemon's session idle in transaction on the server, its
    row lock held: the server ends it after ``IDLE_IN_TRANSACTION_SECONDS`` (60 s; 2 s here), so
    another daemon's write of the same blob goes through instead of waiting for TCP keepalive."""
    import threading
    import time

    from sqlalchemy.engine import make_url

    from storage import engine as engines
    from tests.faults.proxy import TcpFaultProxy

    default = open_store(pg_url)
    with default.engine.connect() as c:
        assert c.execute(text("SHOW idle_in_transaction_session_timeout")).scalar_one() == "1min"
    monkeypatch.setattr(engines, "IDLE_IN_TRANSACTION_SECONDS", 2.0)
    real = make_url(pg_url)
    insert = text("INSERT INTO blobs (key, size, data) VALUES ('git:shared', 1, 'x') ON CONFLICT DO NOTHING")
    with TcpFaultProxy(real.host or "127.0.0.1", real.port or 5432) as db_proxy:
        cut_off = open_store(real.set(host="127.0.0.1", port=db_proxy.port).render_as_string(hide_password=False))
        held = cut_off.engine.connect()
        held.begin()
        held.execute(insert)  # uncommitted: the blob's row is locked
        db_proxy.partition()  # its host vanishes; the server's side of the connection stays open
        other = open_store(pg_url)
        took: list[float] = []

        def write_the_same_blob() -> None:
            started = time.monotonic()
            with other.engine.begin() as c:
                c.execute(text("SET LOCAL statement_timeout = 20000"))  # without the fix: cancelled here
                c.execute(insert)
            took.append(time.monotonic() - started)

        writer = threading.Thread(target=write_the_same_blob)
        writer.start()
        writer.join(30)
        db_proxy.heal()
        assert took and took[0] < 10, f"the write waited {took} s behind the orphaned transaction"
        with other.engine.connect() as c:
            assert c.execute(text("SELECT count(*) FROM blobs WHERE key = 'git:shared'")).scalar_one() == 1
        other.close()
        held.invalidate()
        cut_off.close()
    default.close()


def test_which_database_errors_are_worth_another_write(tmp_path: Path) -> None:
    """Real driver errors, classified: a lost race and a lock pass, a wrong statement does not."""
    con = sqlite3.connect(tmp_path / "x.db")
    con.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    con.execute("INSERT INTO t VALUES ('a')")
    caught: dict[str, Exception] = {}
    for name, sql in (("dup", "INSERT INTO t VALUES ('a')"), ("syntax", "INSERT INTO nowhere VALUES (1)")):
        try:
            con.execute(sql)
        except sqlite3.Error as e:
            caught[name] = e
    assert write_failure(IntegrityError("INSERT", {}, caught["dup"])) == "race"
    # SQLite reports a missing table as an OperationalError, as it does a lost disk: the message decides
    assert isinstance(caught["syntax"], sqlite3.OperationalError)
    assert write_failure(OperationalError("INSERT", {}, caught["syntax"])) is None
    assert write_failure(ProgrammingError("INSERT", {}, caught["syntax"])) is None
    assert write_failure(OperationalError("INSERT", {}, sqlite3.OperationalError("disk I/O error"))) == "unavailable"
    assert write_failure(OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked"))) == "race"
    con.close()


def test_a_database_error_that_outlasts_the_retries_is_recorded_not_rerun_against_the_hub(
    tmp_path: Path,
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'hw.db'}")
    calls: list[int] = []

    def failing(st: Store, source: Any, repo: Any, *args: Any, **kw: Any) -> Any:
        calls.append(1)
        source.resolve_head(repo.branch)  # one Hub request, as a real check's first
        raise OperationalError("INSERT INTO revisions", {}, sqlite3.OperationalError("disk I/O error"))

    with HubEmulator() as hub:
        hub.add_repo("org/m", tiny_repo(tmp_path / "m.git", commits=2).path)
        store.add_repo("org/m", source="org/m", source_kind="hub")
        d = make_daemon(store, hub.url, check=failing)
        started = datetime.now(UTC)
        (result,) = d.run_once(started)
        assert calls == [1] and hub.count("model_info") == 1  # not re-run
    assert result.status == "error" and result.error_kind == "database"
    repo = store.get_repo("org/m")
    assert repo is not None and repo.last_error == "database OperationalError: disk I/O error"
    assert repo.next_check_at is not None and (repo.next_check_at - started).total_seconds() >= 60  # backs off
    store.close()

