"""The first start's kill points on PostgreSQL (issue 10): its migration path is not SQLite's.

On PostgreSQL the whole upgrade is one server-side transaction behind an advisory lock (no
``BEGIN IMMEDIATE`` engine of its own). A child migrates a fresh database and SIGKILLs itself
right after its N-th statement, for every N; the server must roll the dead session back, and
the next start (this process) must open the database and find the complete schema.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import psycopg
import pytest

from storage import open_store
from tests.corpus import REPO_ROOT
from tests.faults.test_migration_kills import assert_next_start_opens, schema

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(900)]  # ~80 s idle, 4 min loaded

FORKER = textwrap.dedent("""
    import os, signal, sys
    from sqlalchemy import Engine, event
    from storage.engine import make_engine, migrate

    count_url, urls, kill_after, seen = sys.argv[1], sys.argv[2:], [0], [0]

    @event.listens_for(Engine, "after_cursor_execute")
    def count(*_args):
        seen[0] += 1
        if seen[0] == kill_after[0]:
            os.kill(os.getpid(), signal.SIGKILL)

    if not urls:  # first call: count the statements
        migrate(make_engine(count_url))
        print(seen[0], flush=True)
        sys.exit(0)
    for n, url in enumerate(urls, start=1):
        pid = os.fork()
        if pid == 0:
            seen[0], kill_after[0] = 0, n
            migrate(make_engine(url))
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print(n, os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, flush=True)
""")


@pytest.fixture
def database(pg_url: str) -> str:
    return pg_url


def _in_schema(url: str, name: str) -> str:
    """The database at ``url`` seen through a fresh schema of its own (cheaper than a database
    per kill point: the migration creates everything in the first schema of the search path)."""
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{name}"')
    return f"{url}?options=-csearch_path%3D{name}"


def _run(*urls: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", FORKER, *urls], capture_output=True, text=True,
                          env=env, cwd=REPO_ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in done.stdout.split("\n") if line.strip()]


def test_every_kill_point_of_a_first_start_on_postgresql_leaves_a_database_the_next_start_opens(
    database: str,
) -> None:
    [total] = _run(_in_schema(database, "counted"))
    statements = int(total)
    assert statements > 20
    urls = [_in_schema(database, f"kill{n}") for n in range(1, statements + 1)]
    killed = {int(n): flag == "True" for n, flag in (line.split() for line in _run("-", *urls))}
    assert len(killed) == statements and all(killed.values())  # each start really died at its kill point

    reference = open_store(_in_schema(database, "reference"))
    want = schema(reference)
    reference.close()
    for n, url in enumerate(urls, start=1):  # each waits for the server to end the dead session's transaction
        assert_next_start_opens(url, want, n)
