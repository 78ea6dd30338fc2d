"""Engines and migrations: SQLite (WAL, foreign keys, busy timeout) or PostgreSQL by URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import QueuePool, StaticPool

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def normalise_url(url: str) -> str:
    """Accept the common PostgreSQL spellings and pick the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


#: How long PostgreSQL lets one of our sessions sit idle inside a transaction before ending it.
IDLE_IN_TRANSACTION_SECONDS = 60.0


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url``; SQLite files get WAL mode and foreign keys on every connection."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        if url not in ("sqlite://", "sqlite:///:memory:"):
            path = url.split("///", 1)[-1]
            if path:
                Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        # A pool, not a connection per session: opening a SQLite file and setting its pragmas
        # cost 16 ms of the 18.8 ms an unchanged repo spent in the database (issue 17).
        # In-memory databases keep one connection, or each session would see an empty one.
        memory = url in ("sqlite://", "sqlite:///:memory:")
        # Every connection once opened is kept (no overflow): the same 32 at most as before,
        # but one past the pool's size was closed on its return and opened again by the next
        # request (the API under 16 connections opened hundreds per 2,000 requests).
        pool: dict[str, Any] = (
            {"poolclass": StaticPool} if memory else {"poolclass": QueuePool, "pool_size": 32, "max_overflow": 0}
        )
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, **pool, **kwargs
        )
        _sqlite_pragmas(engine, BUSY_MS)
        return engine
    # 20 at most, as before (10 + 10 overflow), each kept once opened: an overflow connection
    # was closed on its return, so 16 requests in flight started a backend every few requests.
    engine = create_engine(url, **({"pool_pre_ping": True, "pool_size": 20, "max_overflow": 0} | kwargs))

    @event.listens_for(engine, "connect")
    def _end_orphaned_transactions(dbapi_conn: Any, _record: Any) -> None:
        # A daemon whose host vanished mid-transaction (a partition, a dead VM) leaves its session
        # idle in transaction on the server, holding row locks until TCP keepalive notices (hours):
        # every write of the same blob or revision would wait behind it. Our transactions never
        # sit idle (no Hub call or render happens inside one), so the server may end such a one.
        with dbapi_conn.cursor() as cur:
            cur.execute(f"SET idle_in_transaction_session_timeout = {int(IDLE_IN_TRANSACTION_SECONDS * 1000)}")
        dbapi_conn.commit()

    return engine


def plan_once(engine: Engine) -> Engine:
    """``engine`` (PostgreSQL 12 or later) with each connection's prepared statements planned
    once, for any parameters (``plan_cache_mode = force_generic_plan``): for the history pages'
    pool, whose statements are index walks by repo and cursor whose plan no parameter changes.
    PostgreSQL's own choice kept planning the repo page's statement anew at every execution
    (its custom plans looked cheaper: the same index walk, planned again for each page; issue
    17); psycopg prepares a statement at its fifth execution on a connection."""

    @event.listens_for(engine, "connect")
    def _plan_once(dbapi_conn: Any, _record: Any) -> None:
        if dbapi_conn.info.server_version < 120000:  # no such setting before PostgreSQL 12
            return
        with dbapi_conn.cursor() as cur:
            cur.execute("SET plan_cache_mode = force_generic_plan")
        dbapi_conn.commit()

    return engine


BUSY_MS = 30_000  # how long a SQLite connection waits for a lock
LOOP_BUSY_MS = 100  # ... and one read on the event loop: past it, the read goes to a worker thread


def _sqlite_pragmas(engine: Engine, busy_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
        cur.close()


def make_loop_engine(url: str) -> Engine | None:
    """One SQLite connection for reads made on the event loop (a history page is ~0.1 ms of
    reading: a worker thread's hop and the GIL's hand-overs cost more, issue 17); it waits at
    most :data:`LOOP_BUSY_MS` for a lock. None for PostgreSQL (a round trip the loop must not
    wait on) and in-memory databases (a connection of its own would see another database)."""
    url = normalise_url(url)
    if not url.startswith("sqlite") or url in ("sqlite://", "sqlite:///:memory:"):
        return None
    engine = create_engine(url, poolclass=StaticPool,
                           connect_args={"check_same_thread": False, "timeout": LOOP_BUSY_MS / 1000})
    _sqlite_pragmas(engine, LOOP_BUSY_MS)
    return engine


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["engine"] = engine
    return cfg


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (Alembic); safe to call on every start.

    All of it is one transaction with the version row, so a kill at any statement leaves the
    schema as it was and the next start simply runs it again (issue 10). PostgreSQL's DDL is
    transactional already; Python's sqlite3 commits before every DDL statement unless told not
    to, so SQLite migrations run on an engine of their own that issues ``BEGIN IMMEDIATE``
    itself (which also makes two first starts wait for each other instead of interleaving).
    """
    if engine.dialect.name != "sqlite":
        command.upgrade(alembic_config(engine), revision)
        return
    ddl = make_engine(engine.url.render_as_string(hide_password=False))

    @event.listens_for(ddl, "connect")
    def _no_implicit_transactions(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # the driver's own BEGIN/COMMIT around DDL: off

    @event.listens_for(ddl, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    try:
        command.upgrade(alembic_config(ddl), revision)
    finally:
        ddl.dispose()


def param_mark(conn: Any) -> str:
    """The DBAPI parameter mark of ``conn``'s driver, for SQL written as text: ``?`` on
    sqlite3, ``%s`` on psycopg."""
    return "?" if conn.dialect.paramstyle == "qmark" else "%s"
