"""A first start killed after any statement of its migration never wedges the database (issue 10 point 3).

A child process migrates a fresh SQLite file and SIGKILLs itself right after its N-th SQL
statement, for every N the whole migration has; each time the next start (this process) must
open the file and find the complete schema at the head revision.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from sqlalchemy import inspect, text

from storage import Store, open_store
from tests.corpus import REPO_ROOT

FORKER = textwrap.dedent("""
    import os, signal, sys
    from sqlalchemy import Engine, event
    from storage.engine import make_engine, migrate

    directory, kill_after, seen = sys.argv[1], [0], [0]

    @event.listens_for(Engine, "after_cursor_execute")
    def count(*_args):
        seen[0] += 1
        if seen[0] == kill_after[0]:
            os.kill(os.getpid(), signal.SIGKILL)

    migrate(make_engine(f"sqlite:///{directory}/count.db"))  # kill_after 0: count the statements
    total = seen[0]
    print(total, flush=True)
    for n in range(1, total + 1):  # imports done once; each first start is a fork
        pid = os.fork()
        if pid == 0:
            seen[0], kill_after[0] = 0, n
            migrate(make_engine(f"sqlite:///{directory}/kill{n}.db"))
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print(n, os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, flush=True)
""")


def _first_starts(directory: Path) -> tuple[int, dict[int, bool]]:
    """Run the migration once to count its statements, then once per kill point; which died there."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", FORKER, str(directory)], capture_output=True, text=True,
                          env=env, cwd=REPO_ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    first, *rest = done.stdout.split("\n")
    killed = {int(n): flag == "True" for n, flag in (line.split() for line in rest if line.strip())}
    return int(first), killed


def test_every_kill_point_of_the_first_start_leaves_a_database_the_next_start_opens(tmp_path: Path) -> None:
    statements, killed = _first_starts(tmp_path)
    assert statements > 20  # every CREATE, index and version row of the migrations
    assert len(killed) == statements and all(killed.values())  # each start really died at its kill point
    reference = open_store(f"sqlite:///{tmp_path / 'reference.db'}")
    want = schema(reference)
    reference.close()
    for n in range(1, statements + 1):
        assert_next_start_opens(f"sqlite:///{tmp_path / f'kill{n}.db'}", want, n)


def schema(store: Store) -> dict[str, list[str]]:
    """Table name -> sorted column names."""
    insp = inspect(store.engine)
    return {t: sorted(c["name"] for c in insp.get_columns(t)) for t in insp.get_table_names()}


def assert_next_start_opens(url: str, want: dict[str, list[str]], n: int) -> None:
    """The start after a kill at statement ``n``: it opens the database (it must not fail with
    "table blobs already exists"), finds the whole schema at one version, and can write."""
    store = open_store(url)
    try:
        assert schema(store) == want, f"kill after statement {n}"
        with store.engine.connect() as c:
            versions = c.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        assert len(versions) == 1, f"kill after statement {n}: {versions}"
        store.add_repo("org/model", source="org/model", source_kind="hub")  # and it works
    finally:
        store.close()
