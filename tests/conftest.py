"""Shared fixtures: a store on SQLite and on the PostgreSQL at 127.0.0.1:5432, a fixed clock.

The Hub client reads its environment at import time, so the test environment is set here,
before anything imports huggingface_hub.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

_HF_HOME = tempfile.mkdtemp(prefix="hubwatch-hf-home-")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ["HF_HOME"] = _HF_HOME
os.environ.pop("HF_TOKEN", None)
os.environ.pop("HF_ENDPOINT", None)

PG_ADMIN_URL = os.environ.get("HUBWATCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def pg_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3):
            return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The admin URL of the test PostgreSQL; a hard failure in CI when it is down."""
    if not pg_available():
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN_URL}")
        pytest.skip("PostgreSQL not reachable")
    return PG_ADMIN_URL


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    import psycopg

    name = f"hubwatch_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    base = pg_server.rsplit("/", 1)[0]
    yield f"postgresql+psycopg://{base.split('://', 1)[1]}/{name}"
    with psycopg.connect(pg_server, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_url(tmp_path) -> str:  # type: ignore[no-untyped-def]
    return f"sqlite:///{tmp_path / 'hubwatch.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """Parametrises a test over both supported databases."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'hubwatch.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(db_url: str):  # type: ignore[no-untyped-def]
    from storage import open_store

    st = open_store(db_url)
    yield st
    st.close()


@pytest.fixture
def sqlite_store(sqlite_url: str):  # type: ignore[no-untyped-def]
    from storage import open_store

    st = open_store(sqlite_url)
    yield st
    st.close()


@pytest.fixture
def fixed_now() -> datetime:
    return datetime(2026, 11, 30, 5, 0, 0, tzinfo=UTC)
