"""The HubSource contract, run against GitSource (local git) and HfSource (the same repo via the
Hub emulator): real corpus histories checked against the corpus's own commit lists, plus
repos built for the test (LFS safetensors, odd paths, new commits, force-pushes, errors).
"""

from __future__ import annotations

import hashlib
import json
import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.contract.conftest import OpenSource, git_bytes, git_out, history
from tests.hubemu import Lfs, RepoBuilder, bundle_names, safetensors_bytes
from tracker.errors import EntryNotFound, ObjectNotHeld, RepoNotFound, RevisionNotFound, TooLarge
from tracker.hub.interface import CommitListing, HubSource

BUNDLES = bundle_names()


def _corpus(name: str, open_source: OpenSource, corpus_repos: dict[str, Path]) -> HubSource:
    return open_source(history(name)["hf_repo_id"], corpus_repos[name], register=False)


def _date(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- real histories ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUNDLES)
def test_every_commit_listed_as_the_corpus_records_it(
    name: str, impl: str, open_source: OpenSource, corpus_repos: dict[str, Path]
) -> None:
    src = _corpus(name, open_source, corpus_repos)
    want = list(reversed(history(name)["commits"]))  # the corpus lists oldest first
    git_dir = corpus_repos[name]
    committer = dict(
        line.split() for line in git_out(git_dir, "log", "--format=%H %ct", "main").splitlines()
    )

    listing = src.list_commits("main")

    assert isinstance(listing, CommitListing) and not listing.reached_known
    shas = [c.sha for c in listing.commits]
    assert shas == [w["sha"] for w in want]
    assert src.resolve_head("main") == shas[0]
    for c, w in zip(listing.commits, want, strict=True):
        assert c.title == w["title"]
        assert c.authors == (w["author"],)
        assert c.committed_at.utcoffset() == timedelta(0)
        assert c.committed_at == datetime.fromtimestamp(int(committer[c.sha]), UTC)
        assert abs(c.committed_at - _date(w["date"])) <= timedelta(seconds=60)  # author date
        body = git_out(git_dir, "show", "-s", "--format=%B", c.sha).strip("\n").partition("\n")[2]
        assert c.message == body.strip()
        # over HTTP too: the listing has no parents, the git protocol the Hub serves has them
        assert c.parents == tuple(w["parents"])


@pytest.mark.parametrize("name", BUNDLES)
def test_listing_stops_before_a_known_commit(
    name: str, open_source: OpenSource, corpus_repos: dict[str, Path]
) -> None:
    src = _corpus(name, open_source, corpus_repos)
    shas = [w["sha"] for w in reversed(history(name)["commits"])]
    k = len(shas) // 2

    part = src.list_commits("main", stop_at={shas[k], "0" * 40})

    assert part.reached_known
    assert [c.sha for c in part.commits] == shas[:k]
    assert part.commits[-1].parents[0] == shas[k] or len(part.commits[-1].parents) > 1
    nothing_new = src.list_commits("main", stop_at=[shas[0]])
    assert nothing_new.commits == () and nothing_new.reached_known
    unknown = src.list_commits("main", stop_at=["0" * 40])
    assert not unknown.reached_known and len(unknown.commits) == len(shas)


@pytest.mark.parametrize("name", BUNDLES)
def test_file_trees_follow_the_recorded_changes(
    name: str, open_source: OpenSource, corpus_repos: dict[str, Path]
) -> None:
    """At every commit: the paths are the parent's plus A minus D, and exactly the M (and A)
    files have a new blob id."""
    src = _corpus(name, open_source, corpus_repos)
    trees: dict[str, dict[str, str]] = {}
    for w in history(name)["commits"]:
        files = src.list_files(w["sha"])
        assert [f.path for f in files] == sorted(f.path for f in files)
        now = {f.path: f.blob_id for f in files}
        before = trees[w["parents"][0]] if w["parents"] else {}
        status = {c["path"]: c["status"] for c in w["files_changed"]}
        expect = (set(before) | {p for p, s in status.items() if s == "A"}) - {
            p for p, s in status.items() if s == "D"
        }
        assert set(now) == expect, w["sha"]
        changed = {p for p in now if p in before and now[p] != before[p]}
        assert changed == {p for p, s in status.items() if s == "M"}, w["sha"]
        for f in files:
            assert f.size >= 0 and len(f.blob_id) == 40
            assert f.lfs_sha256 is None or len(f.lfs_sha256) == 64
        trees[w["sha"]] = now


@pytest.mark.parametrize("name", BUNDLES)
def test_head_files_have_git_blob_ids_sizes_and_lfs_sha256(
    name: str, open_source: OpenSource, corpus_repos: dict[str, Path]
) -> None:
    src = _corpus(name, open_source, corpus_repos)
    git_dir = corpus_repos[name]
    head = src.resolve_head("main")
    files = src.list_files(head)
    lfs = [f for f in files if f.lfs_sha256]
    assert lfs, "every corpus repo has LFS weights"
    for f in files:
        assert f.blob_id == git_out(git_dir, "rev-parse", f"{head}:{f.path}").strip()
        if f.lfs_sha256:
            pointer = git_out(git_dir, "cat-file", "blob", f.blob_id)
            assert pointer.startswith("version https://git-lfs.github.com/spec/v1")
            assert f"oid sha256:{f.lfs_sha256}\n" in pointer and f"size {f.size}\n" in pointer
            assert f.content_id == f"sha256:{f.lfs_sha256}"
        else:
            assert f.size == int(git_out(git_dir, "cat-file", "-s", f.blob_id))


@pytest.mark.parametrize("name", BUNDLES)
def test_read_file_gives_committed_bytes(
    name: str, open_source: OpenSource, corpus_repos: dict[str, Path]
) -> None:
    src = _corpus(name, open_source, corpus_repos)
    git_dir = corpus_repos[name]
    head = src.resolve_head("main")
    files = src.list_files(head)
    small = [f for f in files if not f.lfs_sha256 and 0 < f.size < 200_000]
    for f in small:
        want = git_bytes(git_dir, "cat-file", "blob", f.blob_id)
        assert src.read_file(head, f.path, max_bytes=f.size) == want
    config = next(f for f in small if f.path == "config.json")
    assert isinstance(json.loads(src.read_file(head, "config.json", max_bytes=config.size)), dict)
    with pytest.raises(TooLarge):
        src.read_file(head, "config.json", max_bytes=config.size - 1)
    assert (
        src.read_range(head, "config.json", 1, 5)
        == src.read_file(head, "config.json", max_bytes=10**6)[1:6]
    )
    # the corpus has LFS pointers but no LFS objects: a clear "not available", never the pointer,
    # and one that says asking again cannot help (a 404 of a listed file may be transient)
    weights = next(f for f in files if f.lfs_sha256)
    with pytest.raises(ObjectNotHeld, match="LFS object not available"):
        src.read_file(head, weights.path, max_bytes=weights.size)
    with pytest.raises(ObjectNotHeld, match="LFS object not available"):
        src.read_range(head, weights.path, 0, 8)


# -- built repos ------------------------------------------------------------------------------

TENSORS = {
    "model.embed.weight": ("BF16", [32, 8]),
    "model.layers.0.mlp.weight": ("F32", [8, 16]),
    "lm_head.weight": ("F16", [32, 8]),
}


def _repo_id(tmp_path: Path) -> str:
    return f"test/{tmp_path.name[-60:].strip('-_.') or 'repo'}"


@pytest.fixture
def builder(tmp_path: Path) -> RepoBuilder:
    return RepoBuilder.init(tmp_path / "repo.git")


def test_safetensors_header_read_by_range(
    tmp_path: Path, builder: RepoBuilder, open_source: OpenSource
) -> None:
    small = safetensors_bytes(TENSORS, metadata={"format": "pt"})
    big = safetensors_bytes(
        {f"layer.{i}.weight": ("F16", [4, 4]) for i in range(2000)}, pad_header_to=150_000
    )
    sha = builder.commit(
        {"model.safetensors": small, "shard/model-00001.safetensors": big, "config.json": b"{}"}
    )
    src = open_source(_repo_id(tmp_path), builder.path)

    for path, data in (("model.safetensors", small), ("shard/model-00001.safetensors", big)):
        entry = next(f for f in src.list_files(sha) if f.path == path)
        assert entry.lfs_sha256 == hashlib.sha256(data).hexdigest() and entry.size == len(data)
        (n,) = struct.unpack("<Q", src.read_range(sha, path, 0, 8))
        header = json.loads(src.read_range(sha, path, 8, n))
        assert header == json.loads(data[8 : 8 + n])
    assert header["layer.1999.weight"]["shape"] == [4, 4]
    meta = json.loads(
        src.read_range(sha, "model.safetensors", 8, struct.unpack("<Q", small[:8])[0])
    )
    assert meta["__metadata__"] == {"format": "pt"}
    assert {k: (v["dtype"], v["shape"]) for k, v in meta.items() if k != "__metadata__"} == {
        k: (d, s) for k, (d, s) in TENSORS.items()
    }
    # tail, past the end, whole file, cap
    assert src.read_range(sha, "model.safetensors", len(small) - 4, 100) == small[-4:]
    assert src.read_range(sha, "model.safetensors", len(small), 10) == b""
    assert src.read_file(sha, "model.safetensors", max_bytes=len(small)) == small
    with pytest.raises(TooLarge):
        src.read_file(sha, "model.safetensors", max_bytes=len(small) - 1)


def test_file_security_reports_only_what_the_source_scans(
    tmp_path: Path, builder: RepoBuilder, open_source: OpenSource, impl: str
) -> None:
    """Issue 13: the Hub's securityFileStatus by paths-info; git has no scanners."""
    data = safetensors_bytes(TENSORS)
    sha = builder.commit({"model.safetensors": data, "config.json": b"{}"})
    src = open_source(_repo_id(tmp_path), builder.path)
    got = src.file_security(sha, ["model.safetensors", "missing.bin"])
    if impl == "git":
        assert got == {}
    else:
        assert set(got) == {"model.safetensors"} and got["model.safetensors"]["status"] == "safe"
    assert src.file_security(sha, []) == {}


def test_odd_paths_and_empty_files(
    tmp_path: Path, builder: RepoBuilder, open_source: OpenSource
) -> None:
    files = {
        "sub dir/ünïcode name.json": b'{"x": 1}',
        "a/b/c/deep.txt": b"deep\n",
        "weird #1?%.txt": b"odd",
        "empty.txt": b"",
        "forced.lfs.json": Lfs(b'{"big": true}'),
    }
    sha = builder.commit(files, title="odd paths")
    src = open_source(_repo_id(tmp_path), builder.path)

    listed = {f.path: f for f in src.list_files(sha)}
    assert set(listed) == set(files)
    assert listed["forced.lfs.json"].lfs_sha256 == hashlib.sha256(b'{"big": true}').hexdigest()
    for path, data in files.items():
        raw = data.data if isinstance(data, Lfs) else data
        assert src.read_file(sha, path, max_bytes=100) == raw
        assert listed[path].size == len(raw)
    assert src.read_range(sha, "sub dir/ünïcode name.json", 2, 3) == b'x":'


def test_new_commits_and_other_branches(
    tmp_path: Path, builder: RepoBuilder, open_source: OpenSource
) -> None:
    first = builder.commit({"config.json": b'{"v": 1}'}, title="one", author="Ada")
    src = open_source(_repo_id(tmp_path), builder.path)
    assert src.resolve_head("main") == first

    second = builder.commit(
        {"config.json": b'{"v": 2}'}, title="two", message="why\n\nbecause", author="Bob"
    )
    dev = builder.commit({"dev.txt": b"x"}, title="on dev", branch="dev", parents=[first])

    assert src.resolve_head("main") == second
    new = src.list_commits("main", stop_at={first})
    assert new.reached_known and [c.sha for c in new.commits] == [second]
    c = new.commits[0]
    assert (c.parents, c.title, c.message, c.authors) == (
        (first,),
        "two",
        "why\n\nbecause",
        ("Bob",),
    )
    assert c.committed_at > src.list_commits("main").commits[1].committed_at
    assert src.resolve_head("dev") == dev
    assert [c.sha for c in src.list_commits("dev").commits] == [dev, first]
    assert {f.path for f in src.list_files("dev")} == {"config.json", "dev.txt"}


def test_force_push_is_detected(
    tmp_path: Path, builder: RepoBuilder, open_source: OpenSource
) -> None:
    c1 = builder.commit({"config.json": b"1"}, title="c1")
    c2 = builder.commit({"config.json": b"2"}, title="c2")
    c3 = builder.commit({"config.json": b"3"}, title="c3")
    src = open_source(_repo_id(tmp_path), builder.path)
    assert src.list_commits("main", stop_at={c2}).reached_known

    builder.reset(c1)  # rewrite: c2 and c3 vanish from main
    c2b = builder.commit({"config.json": b"2b"}, title="c2 rewritten")

    gone = src.list_commits("main", stop_at={c3})
    assert not gone.reached_known
    assert [c.sha for c in gone.commits] == [c2b, c1]  # the whole history
    partly = src.list_commits("main", stop_at={c3, c1})
    assert partly.reached_known and [c.sha for c in partly.commits] == [c2b]
    assert src.read_file(c2b, "config.json", max_bytes=10) == b"2b"


def test_errors(tmp_path: Path, builder: RepoBuilder, open_source: OpenSource) -> None:
    sha = builder.commit({"config.json": b"{}", "dir/x.txt": b"x"})
    src = open_source(_repo_id(tmp_path), builder.path)

    with pytest.raises(RevisionNotFound):
        src.resolve_head("no-such-branch")
    with pytest.raises(RevisionNotFound):
        src.list_commits("no-such-branch")
    with pytest.raises(RevisionNotFound):
        src.list_files("0123456789" * 4)
    with pytest.raises(RevisionNotFound):
        src.read_file("no-such-branch", "config.json", max_bytes=10)
    for path in ("missing.json", "dir", "dir/missing"):
        with pytest.raises(EntryNotFound):
            src.read_file(sha, path, max_bytes=10)
        with pytest.raises(EntryNotFound):
            src.read_range(sha, path, 0, 1)

    gone = open_source("nobody/nothing", tmp_path / "does-not-exist", register=False)
    with pytest.raises(RepoNotFound):
        gone.resolve_head("main")
    with pytest.raises(RepoNotFound):
        gone.list_commits("main")


def test_identity(tmp_path: Path, builder: RepoBuilder, open_source: OpenSource, impl: str) -> None:
    builder.commit({"config.json": b"{}"})
    repo_id = _repo_id(tmp_path)
    src = open_source(repo_id, builder.path)
    assert isinstance(src, HubSource)
    assert src.repo_id == repo_id
    # a local git checkout without a remote has no public URL: never its path
    assert src.web_url.endswith(repo_id) if impl == "hf" else src.web_url == ""
