"""GitSource specifics beyond the contract suite: remotes mirrored into work_dir (bundles,
file:// URLs), fetching only when the head moved, LFS objects, naming, timeouts and errors."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tracker.hub.localgit as localgit
from tests.hub.conftest import WEIGHTS
from tests.hubemu import RepoBuilder, bundle_path
from tracker.errors import EntryNotFound, RepoNotFound, RevisionNotFound, SourceUnavailable
from tracker.hub.localgit import GitSource, default_repo_id


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("/data/hf/google__gemma-2b-it.bundle", "google/gemma-2b-it"),
        ("/srv/mirrors/org/name.git", "org/name"),
        ("/srv/mirrors/org/name.bundle", "org/name"),
        ("https://huggingface.co/openai/gpt-oss-20b", "openai/gpt-oss-20b"),
        ("https://huggingface.co/openai/gpt-oss-20b.git/", "openai/gpt-oss-20b"),
        ("file:///tmp/x/acme/tiny", "acme/tiny"),
        ("git@github.com:acme/tiny.git", "acme/tiny"),
        ("relative/dir", "relative/dir"),
    ],
)
def test_default_repo_id(location: str, expected: str) -> None:
    assert default_repo_id(location) == expected


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every network-capable git command GitSource runs (clone, fetch, ls-remote)."""
    calls: list[list[str]] = []
    real = localgit.run_git

    def spy(args: Any, **kw: Any) -> bytes:
        calls.append(list(args))
        return real(args, **kw)

    monkeypatch.setattr(localgit, "run_git", spy)
    return calls


def _verbs(calls: list[list[str]]) -> list[str]:
    """The commands that talk to the remote, in order."""
    return [c[0] for c in calls if c[0] in ("clone", "fetch", "ls-remote")]


def test_bundle_is_mirrored_once_into_work_dir(tmp_path: Path, git_calls: list[list[str]]) -> None:
    bundle = bundle_path("google__gemma-2b-it")
    commits = json.loads(bundle.with_suffix(".json").read_text())["commits"]
    with GitSource(str(bundle), default_repo_id(str(bundle)), work_dir=tmp_path) as src:
        assert src.repo_id == "google/gemma-2b-it" and src.web_url == ""  # a bundle: no public URL
        assert src.resolve_head("main") == commits[-1]["sha"]
        assert len(src.list_commits("main").commits) == len(commits)
        assert any(f.path == "config.json" for f in src.list_files(commits[0]["sha"]))
    assert _verbs(git_calls) == ["ls-remote", "clone"]
    assert len(list(tmp_path.glob("*.git"))) == 1  # the mirror stays in work_dir (a cache)

    git_calls.clear()
    with GitSource(str(bundle), "google/gemma-2b-it", work_dir=tmp_path) as again:
        assert len(again.list_commits("main").commits) == len(commits)
    assert _verbs(git_calls) == ["ls-remote"]  # mirror reused, head unchanged: no fetch


@pytest.fixture
def origin(tmp_path: Path) -> RepoBuilder:
    b = RepoBuilder.init(tmp_path / "origin" / "acme" / "tiny.git")
    b.commit({"config.json": b"{}", "model.safetensors": WEIGHTS}, title="init")
    return b


@pytest.fixture
def remote(tmp_path: Path, origin: RepoBuilder) -> Iterator[GitSource]:
    url = f"file://{origin.path}"
    with GitSource(url, default_repo_id(url), work_dir=tmp_path / "work", timeout=10) as src:
        yield src


def test_remote_fetches_only_when_the_head_moved(
    remote: GitSource, origin: RepoBuilder, git_calls: list[list[str]]
) -> None:
    assert remote.repo_id == "acme/tiny"
    first = remote.resolve_head("main")
    assert [c.sha for c in remote.list_commits("main").commits] == [first]
    assert _verbs(git_calls) == ["ls-remote", "clone"]  # list_commits reused resolve_head's answer

    git_calls.clear()
    assert remote.resolve_head("main") == first
    assert remote.list_commits("main", stop_at={first}).commits == ()
    assert _verbs(git_calls) == ["ls-remote"]  # unchanged: one request, no fetch

    second = origin.commit({"config.json": b'{"v": 2}'}, title="two")
    git_calls.clear()
    assert remote.resolve_head("main") == second
    listing = remote.list_commits("main", stop_at={first})
    assert [c.sha for c in listing.commits] == [second] and listing.reached_known
    assert _verbs(git_calls) == ["ls-remote", "fetch"]
    assert remote.read_file(second, "config.json", max_bytes=100) == b'{"v": 2}'


def test_remote_force_push_and_lfs_from_a_local_origin(
    remote: GitSource, origin: RepoBuilder
) -> None:
    first = remote.resolve_head("main")
    remote.list_commits("main")
    old = origin.commit({"a.txt": b"a"}, title="will vanish")
    remote.list_commits("main")
    origin.reset(first)
    new = origin.commit({"b.txt": b"b"}, title="rewritten")

    listing = remote.list_commits("main", stop_at={old})
    assert not listing.reached_known and [c.sha for c in listing.commits] == [new, first]
    # the origin is a local path, so its LFS store is readable through the mirror
    assert remote.read_range(new, "model.safetensors", 0, 8) == WEIGHTS[:8]


def test_lfs_object_missing_is_a_clear_entry_not_found(tmp_path: Path, origin: RepoBuilder) -> None:
    mirror_of_bundle_like = GitSource(f"file://{origin.path}", "acme/tiny", work_dir=tmp_path / "w")
    head = mirror_of_bundle_like.resolve_head("main")
    for obj in origin.lfs_dir.rglob("*"):
        if obj.is_file():
            obj.unlink()
    with pytest.raises(EntryNotFound, match="LFS object not available"):
        mirror_of_bundle_like.read_range(head, "model.safetensors", 0, 8)


def test_non_bare_checkout_with_lfs_store(tmp_path: Path) -> None:
    work = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    b = RepoBuilder(work / ".git")
    sha = b.commit({"model.safetensors": WEIGHTS, "config.json": b"{}"})
    assert (work / ".git" / "lfs" / "objects").is_dir()
    src = GitSource(str(work), "local/checkout")
    assert src.resolve_head("main") == sha
    assert src.read_file(sha, "model.safetensors", max_bytes=len(WEIGHTS)) == WEIGHTS


def test_missing_repositories(tmp_path: Path) -> None:
    (tmp_path / "plain-dir").mkdir()
    for location in (
        str(tmp_path / "nope"),
        str(tmp_path / "plain-dir"),
        f"file://{tmp_path}/nope.git",
        str(tmp_path / "nope.bundle"),
    ):
        src = GitSource(location, "x/y", work_dir=tmp_path / "w", timeout=10)
        with pytest.raises(RepoNotFound):
            src.resolve_head("main")
        with pytest.raises(RepoNotFound):
            src.list_commits("main")


def test_hostile_revision_names_never_reach_git(
    remote: GitSource, git_calls: list[list[str]]
) -> None:
    for rev in (
        "-c",
        "--upload-pack=touch /tmp/x",
        "a..b",
        "main:config.json",
        "main@{1}",
        "x y",
        "",
    ):
        with pytest.raises(RevisionNotFound):
            remote.resolve_head(rev)
        with pytest.raises(RevisionNotFound):
            remote.list_files(rev)
    assert _verbs(git_calls) == []
    with pytest.raises(RepoNotFound):
        GitSource("--upload-pack=evil", "x/y")


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never answers: git waits until killed."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
                held.append(conn)
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield sock.getsockname()[1]
    stop.set()
    t.join()
    for c in held:
        c.close()
    sock.close()


def test_git_timeout_is_unavailable(tmp_path: Path, silent_server: int) -> None:
    src = GitSource(
        f"git://127.0.0.1:{silent_server}/acme/tiny", "acme/tiny", work_dir=tmp_path, timeout=1
    )
    start = time.monotonic()
    with pytest.raises(SourceUnavailable, match="timed out"):
        src.resolve_head("main")
    assert time.monotonic() - start < 5


def test_close_removes_its_own_temporary_mirror(origin: RepoBuilder) -> None:
    src = GitSource(f"file://{origin.path}", "acme/tiny")
    src.list_commits("main")
    mirror = src._repo.path if src._repo else None
    assert mirror is not None and mirror.exists()
    src.close()
    assert not mirror.exists()
