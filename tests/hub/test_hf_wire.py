"""The commit graph over git protocol v2 in-process (tracker.hub._gitwire): the same requests
as the git CLI's shallow clone, no subprocess; packs read with their deltas, hostile ones
refused; a server without v2 gets the CLI."""

from __future__ import annotations

import hashlib
import subprocess
import time
import zlib
from pathlib import Path
from unittest import mock

import pytest

from tests.hub.conftest import REPO, Tiny
from tests.hubemu import HubEmulator, RepoBuilder
from tracker.errors import SourceUnavailable
from tracker.hub import _hfgit
from tracker.hub._gitwire import commit_parents_of_pack
from tracker.hub._hfhttp import HubHttp
from tracker.hub.hf import HfSource


def _no_cli() -> mock._patch[mock.MagicMock]:
    """The git CLI fails if it is run at all (the fault that shows which path was taken)."""
    return mock.patch.object(_hfgit, "run_git", side_effect=AssertionError("the git CLI ran"))


def _http(hub: HubEmulator, timeout: float = 10, token: str | None = None) -> HubHttp:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return HubHttp(hub.url, headers, timeout=timeout, repo_id=REPO, secret=token)


def test_parents_around_a_merge_without_a_subprocess(hub: HubEmulator, tiny: Tiny) -> None:
    b = tiny.builder
    main = b.commit({"config.json": b'{"model_type": "tiny", "n": 1}'}, title="main edit")
    side = b.commit({"README.md": b"side\n"}, title="side edit", parents=[tiny.first], branch="side")
    merge = b.commit({}, title="merge side", parents=[main, side])
    hub.reset_stats()
    with _no_cli():
        listing = HfSource(REPO, endpoint=hub.url, token="hf_wire_secret").list_commits("main", stop_at={tiny.head})
    by_sha = {c.sha: c.parents for c in listing.commits}
    assert by_sha == {merge: (main, side), main: (tiny.head,), side: (tiny.first,)}
    # what the CLI asked: the advertisement, ls-refs, one fetch (deep enough at once)
    assert (hub.count("git_refs"), hub.count("git_upload_pack")) == (1, 2)
    git = [r for r in hub.requests if r.route.startswith("git_")]
    assert all(r.headers.get("authorization") == "Bearer hf_wire_secret" for r in git)
    assert all("hf_wire_secret" not in r.path and b"hf_wire_secret" not in r.body for r in git)


def test_a_branch_that_moved_on_is_read_deeper(hub: HubEmulator, tiny: Tiny) -> None:
    listed = [tiny.builder.commit({"x.txt": str(i).encode()}) for i in range(3)]
    for i in range(5):  # pushed after the listing was read, before git is asked
        tiny.builder.commit({"y.txt": str(i).encode()})
    with _no_cli():
        parents = _hfgit.commit_parents(f"{hub.url}/{REPO}", "main", listed[::-1], token=None, timeout=10,
                                        what="t", repo_id=REPO, http=_http(hub))
    assert parents == {listed[2]: (listed[1],), listed[1]: (listed[0],), listed[0]: (tiny.head,)}
    assert hub.count("git_upload_pack") == 3  # ls-refs, a fetch of depth 4, one of depth 8


def test_a_commit_not_on_the_branch_is_unavailable(hub: HubEmulator, tiny: Tiny) -> None:
    with _no_cli(), pytest.raises(SourceUnavailable, match="moved"):
        _hfgit.commit_parents(f"{hub.url}/{REPO}", "main", ["0" * 40], token=None, timeout=10, what="t",
                              repo_id=REPO, http=_http(hub))


def test_a_server_without_protocol_v2_gets_the_cli(hub: HubEmulator, tiny: Tiny) -> None:
    """The advertisement answers protocol v0 (no Git-Protocol header reaches the server)."""

    class V0Only:
        def __init__(self, inner: HubHttp):
            self.inner = inner

        def git_request(self, method: str, url: str, **kw: object) -> tuple[int, str, bytes, str]:
            headers = {k: v for k, v in kw.pop("headers").items() if k != "Git-Protocol"}  # type: ignore[attr-defined]
            return self.inner.git_request(method, url, headers=headers, **kw)  # type: ignore[arg-type]

    new = tiny.builder.commit({"x.txt": b"1"})
    parents = _hfgit.commit_parents(f"{hub.url}/{REPO}", "main", [new], token=None, timeout=10, what="t",
                                    repo_id=REPO, http=V0Only(_http(hub)))  # type: ignore[arg-type]
    assert parents == {new: (tiny.head,)}
    assert hub.count("git_refs") == 2  # ours (v0: given up), then the CLI's clone


def test_a_failing_fetch_is_unavailable_and_a_missing_git_is_not_served(hub: HubEmulator, tiny: Tiny) -> None:
    new = tiny.builder.commit({"x.txt": b"1"})
    hub.faults.add("status", route="git_upload_pack", status=503, times=None)
    with _no_cli(), pytest.raises(SourceUnavailable, match="503"):
        _hfgit.commit_parents(f"{hub.url}/{REPO}", "main", [new], token=None, timeout=10, what="t",
                              repo_id=REPO, http=_http(hub))
    hub.faults.clear()
    hub.git_protocol = False
    with _no_cli(), pytest.raises(_hfgit.GitNotServed):
        _hfgit.commit_parents(f"{hub.url}/{REPO}", "main", [new], token=None, timeout=10, what="t",
                              repo_id=REPO, http=_http(hub))


def test_a_trickling_fetch_ends_at_its_deadline(hub: HubEmulator, tiny: Tiny) -> None:
    new = tiny.builder.commit({"x.txt": b"1"})
    hub.faults.add("trickle", route="git_upload_pack", every=0.5, times=None)
    started = time.monotonic()
    with _no_cli(), pytest.raises(SourceUnavailable):
        _hfgit.commit_parents(f"{hub.url}/{REPO}", "main", [new], token=None, timeout=1, what="t",
                              repo_id=REPO, http=_http(hub, timeout=1))
    assert time.monotonic() - started < 30  # a bound, not a delay: one second per request


# -- packs as git writes them ------------------------------------------------------------------
def _git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, check=True).stdout


@pytest.mark.parametrize("offsets", [True, False], ids=["ofs-delta", "ref-delta"])
def test_packs_with_deltas_give_gits_own_parents(tmp_path: Path, offsets: bool) -> None:
    """Commits with long, similar messages are stored as deltas of each other; the parents read
    from the pack are those git lists."""
    b = RepoBuilder.init(tmp_path / "r.git")
    root = b.commit({"a.txt": b"0"}, title="root")
    side = b.commit({"b.txt": b"1"}, title="side " + "lorem ipsum dolor " * 400, parents=[root], branch="side")
    for i in range(6):
        b.commit({"a.txt": str(i).encode()}, title=f"edit {i} " + "lorem ipsum dolor " * 400)
    b.commit({}, title="merge " + "lorem ipsum dolor " * 400, parents=[b.head(), side])
    commits = _git(b.path, "rev-list", "--all").split()
    flags = ["--delta-base-offset"] if offsets else []
    pack = _git(b.path, "pack-objects", "--stdout", "--window=20", "--depth=20", *flags, data=b"\n".join(commits) + b"\n")
    kinds = _entry_kinds(pack)
    assert (6 if offsets else 7) in kinds  # the pack does hold deltas of the kind
    expected = {}
    for line in _git(b.path, "rev-list", "--parents", "--all").decode().splitlines():
        sha, *parents = line.split()
        expected[sha] = tuple(parents)
    assert commit_parents_of_pack(pack) == expected


def _entry_kinds(pack: bytes) -> set[int]:
    """The object types of a pack's entries as stored (a delta as a delta)."""
    kinds, pos, view = set(), 12, memoryview(pack)
    for _ in range(int.from_bytes(pack[8:12], "big")):
        c = pack[pos]
        kind = (c >> 4) & 7
        kinds.add(kind)
        pos += 1
        while c & 0x80:
            c = pack[pos]
            pos += 1
        if kind == 6:  # the base's offset, a varint
            while pack[pos] & 0x80:
                pos += 1
            pos += 1
        elif kind == 7:  # the base's id
            pos += 20
        d = zlib.decompressobj()
        d.decompress(view[pos:-20])
        pos = len(pack) - 20 - len(d.unused_data)
    return kinds


# -- hostile packs ---------------------------------------------------------------------------
def _pack(*entries: bytes) -> bytes:
    body = b"PACK" + (2).to_bytes(4, "big") + len(entries).to_bytes(4, "big") + b"".join(entries)
    return body + hashlib.sha1(body).digest()


def _entry(kind: int, declared: int, data: bytes) -> bytes:
    head = [(kind << 4) | (declared & 15)]
    declared >>= 4
    while declared:
        head[-1] |= 0x80
        head.append(declared & 0x7F)
        declared >>= 7
    return bytes(head) + zlib.compress(data)


COMMIT = b"tree " + b"4b825dc642cb6eb9a060e54bf8d69288fbee4904" + b"\nparent " + b"1" * 40 + b"\n\nmsg\n"


def test_a_well_formed_commit_is_read() -> None:
    sha = hashlib.sha1(b"commit %d\0" % len(COMMIT) + COMMIT).hexdigest()
    assert commit_parents_of_pack(_pack(_entry(1, len(COMMIT), COMMIT))) == {sha: ("1" * 40,)}


@pytest.mark.parametrize("pack", [
    _pack(_entry(1, 10, COMMIT)),  # inflates past its declared size (a bomb declares little)
    _pack(_entry(1, len(COMMIT) + 5, COMMIT)),  # shorter than declared
    _pack(_entry(1, 1 << 40, COMMIT)),  # declares more than any object may be
    _pack(_entry(1, len(COMMIT), COMMIT))[:-21] + b"\0" * 21,  # checksum broken
    _pack(_entry(1, len(COMMIT), COMMIT), _entry(6, 5, b"x")),  # a delta with no base
    _pack(_entry(5, 3, b"abc")),  # an unknown object type
    b"PACK" + b"\0" * 40,
], ids=["bomb", "short", "huge", "checksum", "no-base", "type", "garbage"])
def test_hostile_packs_are_refused(pack: bytes) -> None:
    with pytest.raises(ValueError):
        commit_parents_of_pack(pack)
