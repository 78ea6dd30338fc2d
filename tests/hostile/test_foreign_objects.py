"""No object outside a tracked repository's own ``objects`` directory reaches any output (issue
16, Done when): a hostile repository that borrows another repository's objects (alternates,
a common dir, a ``gitdir:`` file or ``.git`` symlink, symlinked object folders, a partial
clone's promisor, the environment's alternates) is refused or reads nothing of it, and a
planted or replaced object cannot put other content under a blob id (the blob store is shared
by every repo). The victim is a private repository on the same machine holding a secret."""

from __future__ import annotations

import hashlib
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from storage import open_store
from tests.e2e.cli_helpers import Cli
from tests.hubemu import RepoBuilder, safetensors_bytes
from tests.hubemu.repos import Lfs
from tracker.errors import SourceRefused
from tracker.hub.localgit import GitSource

MARK = "hf_PRIVATESECRET0123456789"
SECRET = f'{{"architectures": ["LlamaForCausalLM"], "api_token": "{MARK}"}}'.encode()


def _git(cwd: Path | None, *args: str, stdin: bytes | None = None) -> str:
    cmd = ["git", *(["-C", str(cwd)] if cwd else []), *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, check=True).stdout.decode().strip()


def _private(tmp_path: Path) -> tuple[RepoBuilder, str]:
    """The victim: a private repository whose config.json carries the secret; its tree id."""
    victim = RepoBuilder.init(tmp_path / "private.git")
    sha = victim.commit({"config.json": SECRET}, title="private")
    return victim, _git(victim.path, "rev-parse", f"{sha}^{{tree}}")


def _commit_tree(git_dir: Path, tree: str) -> None:
    """A commit on ``main`` of ``git_dir`` whose tree is ``tree`` (found wherever git looks)."""
    env = "-c", "user.name=evil", "-c", "user.email=e@x"
    sha = _git(git_dir, *env, "commit-tree", tree, "-m", "borrowed tree")
    _git(git_dir, "update-ref", "refs/heads/main", sha)


def _alternates(tmp_path: Path, victim: RepoBuilder, tree: str) -> Path:
    evil = RepoBuilder.init(tmp_path / "evil.git").path
    (evil / "objects" / "info" / "alternates").write_text(f"{victim.path / 'objects'}\n")
    _commit_tree(evil, tree)
    return evil


def _commondir(tmp_path: Path, victim: RepoBuilder, tree: str) -> Path:
    evil = tmp_path / "evil.git"
    evil.mkdir()
    (evil / "commondir").write_text(str(victim.path))
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    return evil


def _gitdir_file(tmp_path: Path, victim: RepoBuilder, tree: str) -> Path:
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / ".git").write_text(f"gitdir: {victim.path}\n")
    return evil


def _dot_git_symlink(tmp_path: Path, victim: RepoBuilder, tree: str) -> Path:
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / ".git").symlink_to(victim.path, target_is_directory=True)
    return evil


def _inside_another_work_tree(tmp_path: Path, victim: RepoBuilder, tree: str) -> Path:
    work = tmp_path / "work"
    _git(None, "clone", "-q", str(victim.path), str(work))
    (work / "models" / "evil").mkdir(parents=True)
    return work / "models" / "evil"  # no repository here: discovery would find the one above


def _symlinked_object_folders(tmp_path: Path, victim: RepoBuilder, tree: str) -> Path:
    evil = RepoBuilder.init(tmp_path / "evil.git").path
    for folder in (victim.path / "objects").iterdir():
        if len(folder.name) == 2:
            (evil / "objects" / folder.name).symlink_to(folder, target_is_directory=True)
    _commit_tree(evil, tree)
    return evil


def _promisor(tmp_path: Path, victim: RepoBuilder, tree: str) -> Path:
    """A partial clone whose promisor is the victim: a missing blob would be fetched from it."""
    evil = RepoBuilder.init(tmp_path / "evil.git").path
    blob = _git(victim.path, "rev-parse", f"{tree}:config.json")
    own_tree = _git(evil, "mktree", "--missing", stdin=f"100644 blob {blob}\tconfig.json\n".encode())
    _commit_tree(evil, own_tree)
    for key, value in (("core.repositoryformatversion", "1"), ("extensions.partialClone", "origin"),
                       ("remote.origin.url", victim.path.as_uri()), ("remote.origin.promisor", "true")):
        _git(evil, "config", key, value)
    return evil


HOSTILE: dict[str, Callable[[Path, RepoBuilder, str], Path]] = {
    "alternates": _alternates,
    "commondir": _commondir,
    "gitdir file": _gitdir_file,
    ".git symlink": _dot_git_symlink,
    "parent work tree": _inside_another_work_tree,
    "symlinked object folders": _symlinked_object_folders,
    "promisor remote": _promisor,
}


def _stored(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("hw.db*"))


@pytest.mark.parametrize("how", ["path", "file-url"])
@pytest.mark.parametrize("build", HOSTILE.values(), ids=HOSTILE.keys())
def test_no_object_of_another_repository_reaches_any_output(tmp_path: Path, build: Callable[..., Path],
                                                           how: str) -> None:
    victim, tree = _private(tmp_path)
    evil = build(tmp_path, victim, tree)
    location = str(evil) if how == "path" else evil.as_uri()
    cli = Cli(tmp_path / "cli", f"sqlite:///{tmp_path / 'hw.db'}")
    tracked = cli("track", location, "--as", "evil/borrow", "--json")
    shown = cli("show", "evil/borrow", "main", "--json")
    history = cli("history", "evil/borrow", "--json")
    everything = "".join(r.out + r.err for r in (tracked, shown, history))
    assert MARK not in everything
    assert MARK.encode() not in _stored(tmp_path)
    with GitSource(location, "evil/borrow", work_dir=tmp_path / "w") as src:
        try:
            head = src.resolve_head("main")
            data = src.read_file(head, "config.json", max_bytes=10_000)
        except SourceRefused:
            return  # refused before git read anything
        except Exception as e:  # the object is not there for git: not read, nothing fetched
            assert MARK not in str(e)
            return
    raise AssertionError(f"read {data!r} through a borrowed object")


def test_alternates_from_the_environment_are_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    victim, tree = _private(tmp_path)
    evil = RepoBuilder.init(tmp_path / "evil.git").path
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(victim.path / "objects"))
    _commit_tree(evil, tree)  # made while the environment lends the victim's objects
    with GitSource(str(evil), "evil/env") as src:
        head = src.resolve_head("main")
        with pytest.raises(Exception) as raised:
            src.read_file(head, "config.json", max_bytes=10_000)
    assert MARK not in str(raised.value)


def test_a_self_contained_clone_is_read(tmp_path: Path) -> None:
    """The rule costs a legitimate repository nothing: a plain clone and a work tree read."""
    victim, _ = _private(tmp_path)
    work = tmp_path / "work"
    _git(None, "clone", "-q", str(victim.path), str(work))
    for location in (str(work), (tmp_path / "private.git").as_uri()):
        with GitSource(location, "org/ok", work_dir=tmp_path / "w") as src:
            assert src.read_file(src.resolve_head("main"), "config.json", max_bytes=10_000) == SECRET


def _loose_object_path(git_dir: Path, oid: str) -> Path:
    return git_dir / "objects" / oid[:2] / oid[2:]


def test_no_other_content_can_be_put_under_a_blob_id(tmp_path: Path) -> None:
    """A planted loose object (git does not check what it reads) or a replace ref would store
    the attacker's bytes under the id of a file other repos have: the blob store is keyed by
    id, so their revisions would show the attacker's content."""
    honest = b'{"architectures": ["LlamaForCausalLM"], "eos_token_id": 2}'
    lie = b'{"architectures": ["LlamaForCausalLM"], "eos_token_id": 9, "auto_map": {"AutoModel": "x.Y"}}'
    planted = RepoBuilder.init(tmp_path / "planted.git")
    sha = planted.commit({"config.json": honest}, title="config")
    oid = _git(planted.path, "rev-parse", f"{sha}:config.json")
    obj = _loose_object_path(planted.path, oid)
    obj.chmod(0o644)
    obj.write_bytes(zlib.compress(b"blob %d\0" % len(lie) + lie))
    assert _git(planted.path, "cat-file", "blob", oid).encode() == lie  # git itself serves the lie

    replaced = RepoBuilder.init(tmp_path / "replaced.git")
    sha2 = replaced.commit({"config.json": honest}, title="config")
    liar = _git(replaced.path, "hash-object", "-w", "--stdin", stdin=lie)
    _git(replaced.path, "update-ref", f"refs/replace/{oid}", liar)
    assert _git(replaced.path, "cat-file", "blob", oid).encode() == lie

    with GitSource(str(planted.path), "evil/planted") as src, pytest.raises(Exception, match="does not hash"):
        src.read_file(sha, "config.json", max_bytes=10_000)
    with GitSource(str(replaced.path), "evil/replaced") as src:
        assert src.read_file(sha2, "config.json", max_bytes=10_000) == honest

    db = f"sqlite:///{tmp_path / 'hw.db'}"
    cli = Cli(tmp_path / "cli", db)
    cli("track", str(planted.path), "--as", "evil/planted", "--json")
    cli("track", str(replaced.path), "--as", "evil/replaced", "--json")
    store = open_store(db)
    try:
        assert store.get_blob(f"git:{oid}") == honest
    finally:
        store.close()


def test_a_planted_lfs_object_cannot_answer_for_another_repos_weights(tmp_path: Path) -> None:
    """Headers are remembered by the weights' sha256 for every repo: a hostile repo's object
    stored under that sha256 with other bytes (same size) must not give the header, and its
    failure must not be remembered either (it would blind the genuine repo)."""
    weights = safetensors_bytes({"w": ("F16", [4, 4])}, metadata={"origin": "genuine"})
    forged = safetensors_bytes({"w": ("F32", [2, 4])}, metadata={"origin": "forged!"})
    assert len(forged) == len(weights)
    digest = hashlib.sha256(weights).hexdigest()
    evil = RepoBuilder.init(tmp_path / "evil.git")
    evil.commit({"config.json": b"{}", "model.safetensors": Lfs(weights)}, title="forged weights")
    (evil.lfs_dir / digest[:2] / digest[2:4] / digest).write_bytes(forged)
    genuine = RepoBuilder.init(tmp_path / "genuine.git")
    genuine.commit({"config.json": b"{}", "model.safetensors": Lfs(weights)}, title="weights")

    db = f"sqlite:///{tmp_path / 'hw.db'}"
    cli = Cli(tmp_path / "cli", db)
    cli.ok("track", str(evil.path), "--as", "evil/forged", "--json")
    store = open_store(db)
    try:
        assert store.get_blob(f"sthdr:sha256:{digest}") is None and store.get_blob(f"sthdr-err:sha256:{digest}") is None
        cli.ok("track", str(genuine.path), "--as", "org/genuine", "--json")
        header = store.get_blob(f"sthdr:sha256:{digest}")
    finally:
        store.close()
    assert header is not None and b"genuine" in header and b"forged" not in header


def test_a_pointer_without_its_object_does_not_blind_other_repos(tmp_path: Path) -> None:
    """A git mirror never holds LFS objects: its "not held" is the source's, not the content's."""
    tokenizer = b'{"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}'
    evil = RepoBuilder.init(tmp_path / "evil.git")
    evil.commit({"config.json": b"{}", "tokenizer.json": Lfs(tokenizer)}, title="pointer only")
    digest = hashlib.sha256(tokenizer).hexdigest()
    (evil.lfs_dir / digest[:2] / digest[2:4] / digest).unlink()
    genuine = RepoBuilder.init(tmp_path / "genuine.git")
    genuine.commit({"config.json": b"{}", "tokenizer.json": Lfs(tokenizer)}, title="tokenizer")
    db = f"sqlite:///{tmp_path / 'hw.db'}"
    cli = Cli(tmp_path / "cli", db)
    cli.ok("track", str(evil.path), "--as", "evil/pointer", "--json")
    cli.ok("track", str(genuine.path), "--as", "org/genuine", "--json")
    store = open_store(db)
    try:
        oid = _git(genuine.path, "rev-parse", "main:tokenizer.json")
        assert store.get_blob(f"git:{oid}") == tokenizer
    finally:
        store.close()
