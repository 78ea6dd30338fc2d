"""Commit metadata git accepts but a datetime does not (issue 16, "a commit that the store
cannot take as is never hides later commits"): a commit dated past year 9999, before year 1,
or with a 5,000-digit time stopped every poll of its repo at it (``ValueError: year 10000 is
out of range`` while listing commits), so nothing after it was ever recorded."""

from __future__ import annotations

import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from storage import open_store
from tests.daemon.helpers import config_bytes
from tests.e2e.cli_helpers import Cli
from tests.hubemu import RepoBuilder
from tracker.hub.hf import _commit

DATES = ["253402300800", "99999999999999999999", "-99999999999", "9" * 5000]


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], input=stdin, capture_output=True,
                          check=True).stdout.decode().strip()


def _raw_commit(git_dir: Path, tree: str, parent: str, when: str, title: str) -> str:
    """A commit object written as is (``--literally``: git's own checks would refuse it)."""
    body = (f"tree {tree}\nparent {parent}\nauthor evil <e@x> {when} +0000\n"
            f"committer evil <e@x> {when} +0000\n\n{title}\n")
    return _git(git_dir, "hash-object", "-t", "commit", "-w", "--literally", "--stdin", stdin=body.encode())


def test_commits_dated_out_of_range_do_not_hide_the_ones_after_them(tmp_path: Path) -> None:
    b = RepoBuilder.init(tmp_path / "dates.git")
    head = b.commit({"config.json": config_bytes()}, title="baseline")
    tree = _git(b.path, "rev-parse", f"{head}^{{tree}}")
    odd = []
    for when in DATES:
        head = _raw_commit(b.path, tree, head, when, f"dated {when[:20]}")
        odd.append(head)
    blob = _git(b.path, "hash-object", "-w", "--stdin", stdin=config_bytes(eos_token_id=9))
    newer = _git(b.path, "mktree", stdin=f"100644 blob {blob}\tconfig.json\n".encode())
    after = _raw_commit(b.path, newer, head, "1764547200", "after")
    _git(b.path, "update-ref", "refs/heads/main", after)
    db = f"sqlite:///{tmp_path / 'hw.db'}"
    tracked = Cli(tmp_path / "cli", db).ok("track", str(b.path), "--as", "evil/dates", "--json").json()
    assert tracked["poll"]["status"] == "ok" and tracked["poll"]["new_revisions"] == 2 + len(DATES)
    store = open_store(db)
    try:
        repo = store.get_repo("evil/dates")
        by_sha = {r.sha: r for r in store.history("evil/dates")}
    finally:
        store.close()
    assert repo is not None and repo.head_sha == after
    assert set(odd) <= set(by_sha)
    assert by_sha[odd[0]].committed_at.year == 9999 and by_sha[odd[2]].committed_at.year == 1


def test_a_hub_commit_whose_date_does_not_parse_is_still_read() -> None:
    item = {"id": "a" * 40, "date": "+10000-01-01T00:00:00Z", "title": "far future", "authors": []}
    commit = _commit(item, (), "evil/x")
    assert commit.sha == "a" * 40 and commit.committed_at == datetime.fromtimestamp(0, UTC)


def test_a_fetch_past_its_timeout_leaves_no_process_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git's timeout killed git alone: the ssh it ran to a host that never answers lived on
    (one found 47 minutes later), one more per poll."""
    from tracker.errors import SourceUnavailable
    from tracker.hub.localgit import GitSource

    bin_dir, pid_file = tmp_path / "bin", tmp_path / "ssh.pid"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    src = GitSource("git@hangs.example:org/x.git", "evil/hang", work_dir=tmp_path / "w", timeout=2)
    with pytest.raises(SourceUnavailable, match="timed out"):
        src.resolve_head("main")
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
