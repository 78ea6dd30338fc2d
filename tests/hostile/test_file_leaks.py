"""A hostile git repository cannot make hubwatch read a local file outside its own objects
(issue 16, point 1): LFS objects that are symlinks, sit under a symlinked folder, or are hard
links to a file elsewhere are refused, and nothing of the planted secret reaches the store
(hence no API, page, feed or OSV record). Tracked by path and by ``file://``."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.cli_helpers import Cli
from tests.hubemu import RepoBuilder, safetensors_bytes
from tests.hubemu.repos import Lfs
from tracker.hub.localgit import GitSource

MARK = "hf_PLANTEDSECRET0123456789"
SECRET_CONFIG = json.dumps({"architectures": ["LlamaForCausalLM"], "api_token": MARK}).encode()
SECRET_WEIGHTS = safetensors_bytes({"w": ("F16", [2])}, metadata={"token": MARK})


def _obj(b: RepoBuilder, data: bytes) -> Path:
    digest = hashlib.sha256(data).hexdigest()
    return b.lfs_dir / digest[:2] / digest[2:4] / digest


def _symlinked_object(b: RepoBuilder, secret: Path, data: bytes) -> None:
    obj = _obj(b, data)
    obj.unlink()
    obj.symlink_to(secret)


def _symlinked_folder(b: RepoBuilder, secret: Path, data: bytes) -> None:
    obj = _obj(b, data)
    elsewhere = secret.parent / "elsewhere" / obj.parent.name
    elsewhere.mkdir(parents=True)
    (elsewhere / obj.name).write_bytes(secret.read_bytes())
    obj.unlink()
    obj.parent.rmdir()
    obj.parent.symlink_to(elsewhere, target_is_directory=True)


def _hard_link(b: RepoBuilder, secret: Path, data: bytes) -> None:
    obj = _obj(b, data)
    obj.unlink()
    os.link(secret, obj)


PLANTS: dict[str, Callable[[RepoBuilder, Path, bytes], None]] = {
    "symlinked object": _symlinked_object,
    "symlinked folder": _symlinked_folder,
    "hard link": _hard_link,
}


def _hostile_repo(tmp_path: Path, plant: Callable[[RepoBuilder, Path, bytes], None]) -> RepoBuilder:
    """A repo whose config.json and weights are LFS pointers to secret files outside it."""
    b = RepoBuilder.init(tmp_path / "evil.git")
    b.commit({"config.json": b'{"architectures": ["LlamaForCausalLM"]}'}, title="baseline")
    b.commit({"config.json": Lfs(SECRET_CONFIG), "model.safetensors": SECRET_WEIGHTS}, title="pointers")
    for name, data in (("secret-config.json", SECRET_CONFIG), ("secret.safetensors", SECRET_WEIGHTS)):
        secret = tmp_path / "private" / name
        secret.parent.mkdir(exist_ok=True)
        secret.write_bytes(data)
        plant(b, secret, data)
    return b


def _stored_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("hw.db*"))


@pytest.mark.parametrize("plant", PLANTS.values(), ids=PLANTS.keys())
@pytest.mark.parametrize("how", ["path", "file-url"])
def test_no_lfs_object_outside_the_repo_is_read(tmp_path: Path, plant: Callable[..., None], how: str) -> None:
    b = _hostile_repo(tmp_path, plant)
    location = str(b.path) if how == "path" else b.path.as_uri()
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}")
    tracked = cli.ok("track", location, "--as", "evil/model", "--json").json()
    assert tracked["poll"]["status"] == "ok" and tracked["poll"]["new_revisions"] == 2
    shown = cli.ok("show", "evil/model", b.head() or "", "--json").out
    assert "not read" in shown or "could not be read" in shown, shown
    assert MARK not in shown
    assert MARK.encode() not in _stored_bytes(tmp_path)


def test_a_genuine_lfs_object_is_still_read(tmp_path: Path) -> None:
    b = RepoBuilder.init(tmp_path / "ok.git")
    sha = b.commit({"config.json": Lfs(SECRET_CONFIG), "model.safetensors": SECRET_WEIGHTS}, title="lfs")
    with GitSource(str(b.path), "org/ok") as src:
        assert src.read_file(sha, "config.json", max_bytes=10_000) == SECRET_CONFIG
        assert src.read_range(sha, "model.safetensors", 0, 8) == SECRET_WEIGHTS[:8]


def test_an_object_that_does_not_hash_to_its_pointer_is_refused(tmp_path: Path) -> None:
    b = RepoBuilder.init(tmp_path / "ok.git")
    sha = b.commit({"config.json": Lfs(SECRET_CONFIG)}, title="lfs")
    _obj(b, SECRET_CONFIG).write_bytes(b"x" * len(SECRET_CONFIG))  # same size, other content
    with GitSource(str(b.path), "org/ok") as src, pytest.raises(Exception, match="does not match its pointer"):
        src.read_file(sha, "config.json", max_bytes=10_000)


def test_a_fifo_planted_as_an_object_does_not_hang(tmp_path: Path) -> None:
    b = RepoBuilder.init(tmp_path / "ok.git")
    sha = b.commit({"config.json": Lfs(SECRET_CONFIG)}, title="lfs")
    obj = _obj(b, SECRET_CONFIG)
    obj.unlink()
    os.mkfifo(obj)
    with GitSource(str(b.path), "org/ok") as src, pytest.raises(Exception, match="LFS object not available"):
        src.read_file(sha, "config.json", max_bytes=10_000)


def test_a_big_blob_without_lfs_is_streamed_not_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16, point 6: the 8-byte length of a 40 MB non-LFS safetensors blob costs 8 bytes."""
    big = safetensors_bytes({"w": ("F32", [10_000_000])})  # committed as a plain blob (no LFS pattern)
    b = RepoBuilder.init(tmp_path / "big.git")
    sha = b.commit({"weights/model.safetensors.raw": big}, title="no lfs")
    import tracker.hub.localgit as localgit

    whole_reads: list[str] = []
    real = localgit.GitSource._blob

    def spy(self: GitSource, repo: object, oid: str) -> bytes:
        whole_reads.append(oid)
        return real(self, repo, oid)  # type: ignore[arg-type]

    monkeypatch.setattr(localgit.GitSource, "_blob", spy)
    with GitSource(str(b.path), "org/big") as src:
        assert src.read_range(sha, "weights/model.safetensors.raw", 0, 8) == big[:8]
        assert src.read_range(sha, "weights/model.safetensors.raw", 8, 16) == big[8:24]
    assert whole_reads == []


@pytest.mark.parametrize("location", ["fd::3", "fd::0/org/x", "ext::sh -c touch% /tmp/pwned", "FD::7"])
def test_remote_helper_transports_are_refused(location: str) -> None:
    """``fd::`` reads and writes the daemon's own file descriptors; ``ext::`` runs a command."""
    from tracker.errors import RepoNotFound

    with pytest.raises(RepoNotFound, match="invalid git location"):
        GitSource(location, "x/y")
