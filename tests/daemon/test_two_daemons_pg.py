"""Two ``hubwatch run`` processes on one PostgreSQL, one killed with SIGKILL mid-run: the other
takes its repos over when the leases expire, and every revision and advisory exists exactly
once. Then SIGTERM stops the survivor cleanly: exit 0, no lease left behind."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from advisories.ids import advisory_id
from storage import Store, open_store
from tests.daemon.helpers import free_port, http_get, start_run, tiny_repo, wait_for, write_config
from tests.hubemu import HubEmulator, clone_bundle

pytestmark = pytest.mark.postgres

CORPUS = ("google__gemma-2b-it", "openai__gpt-oss-20b")


@pytest.fixture
def fleet_hub(tmp_path: Path) -> Iterator[tuple[HubEmulator, dict[str, list[str]]]]:
    """The emulator serving 22 tiny repos and two real histories; expected shas per repo."""
    expected: dict[str, list[str]] = {}
    with HubEmulator() as hub:
        for i in range(22):
            repo_id = f"fleet/tiny-{i:02d}"
            b = tiny_repo(tmp_path / "git" / f"t{i}.git", commits=3 + i % 3)
            hub.add_repo(repo_id, b.path)
            expected[repo_id] = _shas(b.path)
        for name in CORPUS:
            path = clone_bundle(name, tmp_path / "git")
            repo_id = name.replace("__", "/")
            hub.add_repo(repo_id, path)
            expected[repo_id] = _shas(path)
        hub.faults.add("slow", route="tree", seconds=0.1)  # long enough a run to kill it halfway
        yield hub, expected
        assert not hub.internal_errors, hub.internal_errors


def _shas(git_dir: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(git_dir), "rev-list", "main"], capture_output=True, text=True, check=True)
    return out.stdout.split()


def _leased_by(store: Store, pid: int) -> int:
    with store.engine.connect() as c:
        return int(c.execute(text("SELECT count(*) FROM repos WHERE lease_owner LIKE :p"), {"p": f"%:{pid}:%"}).scalar_one())


def _count(store: Store, sql: str) -> int:
    with store.engine.connect() as c:
        return int(c.execute(text(sql)).scalar_one())


def test_a_killed_daemons_repos_are_taken_over_and_nothing_is_recorded_twice(
    pg_url: str, tmp_path: Path, fleet_hub: tuple[HubEmulator, dict[str, list[str]]]
) -> None:
    hub, expected = fleet_hub
    store = open_store(pg_url)  # migrated once here; each daemon migrates again on start (a no-op)
    configs = [
        write_config(tmp_path / f"config-{n}.toml", db_url=pg_url, hub_url=hub.url, port=free_port(),
                     repos=sorted(expected),
                     schedule={"interval_seconds": 3600, "concurrency": 3, "lease_seconds": 4})
        for n in ("a", "b")
    ]
    a = start_run(configs[0], tmp_path / "a.log")
    b = start_run(configs[1], tmp_path / "b.log")
    try:
        wait_for(lambda: _count(store, "SELECT count(*) FROM revisions") >= 15 and _leased_by(store, a.pid) >= 2,
                 120, "daemon a to be halfway through, holding repos", every=0.05)
        a.send_signal(signal.SIGKILL)
        assert a.wait(10) == -signal.SIGKILL
        assert _leased_by(store, a.pid) > 0  # what it held when it died

        heads = {r: shas[0] for r, shas in expected.items()}
        wait_for(lambda: {r.id: r.head_sha for r in store.list_repos()} == heads, 60,
                 "daemon b to finish every repo, a's included")
        assert _leased_by(store, a.pid) == 0  # taken over, then released by b

        total = sum(len(s) for s in expected.values())
        assert _count(store, "SELECT count(*) FROM revisions") == total
        assert _count(store, "SELECT count(*) FROM (SELECT repo_id, sha FROM revisions "
                             "GROUP BY repo_id, sha HAVING count(*) > 1) d") == 0
        for repo_id, shas in expected.items():
            history = store.history(repo_id, with_changes=False)
            assert sorted(r.sha for r in history) == sorted(shas), repo_id
            assert sorted(r.seq for r in history) == list(range(1, len(shas) + 1)), repo_id  # no gap, no twin
        advisories = {a.id: a for a in store.list_advisories()}
        with_advisory = [r for repo in expected for r in store.history(repo, with_changes=False) if r.advisory_id]
        assert len(advisories) == len(with_advisory) == _count(store, "SELECT count(*) FROM advisories")
        for rev in with_advisory:
            assert rev.advisory_id == advisory_id("x_HUBWATCH", rev.repo_id, rev.sha)
            assert advisories[rev.advisory_id].sha == rev.sha
            assert [v for v, _, _ in store.advisory_versions(rev.advisory_id)] == [1]  # published once
        for i in range(22):  # every tiny commit after the first changes the context length
            repo_id = f"fleet/tiny-{i:02d}"
            assert {x.sha for x in with_advisory if x.repo_id == repo_id} == set(expected[repo_id][:-1])

        port = int(configs[1].read_text().split("port = ")[1].split()[0])
        assert http_get(f"http://127.0.0.1:{port}/readyz")[0] == 200
        b.send_signal(signal.SIGTERM)
        assert b.wait(30) == 0
        assert _count(store, "SELECT count(*) FROM repos WHERE lease_owner IS NOT NULL") == 0
        log = (tmp_path / "b.log").read_text()
        assert "stopped" in log and "Traceback" not in log
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()
                p.wait(10)
        store.close()
