"""Build git repositories for tests: clone a corpus bundle, or make commits from dicts.

    repo = clone_bundle("google__gemma-2b-it", tmp_path)        # bare clone of a real history
    b = RepoBuilder.init(tmp_path / "acme.git")                   # or RepoBuilder(repo)
    sha1 = b.commit({"config.json": b"{}", "model.safetensors": safetensors_bytes({"w": ("F16", [2, 2])})},
                    title="init")
    sha2 = b.commit({"config.json": b'{"a": 1}'}, delete=["README.md"], title="tweak")
    b.reset(sha1); b.commit({...}, title="rewritten")            # a force-push

Repos are bare; commits are made with plumbing (hash-object, mktree, commit-tree, update-ref),
so nothing depends on a work tree or on git-lfs. Files matching LFS_PATTERNS (or wrapped in
``Lfs(...)``) are committed as git-lfs pointer files, their bytes stored in the repo's own
``lfs/objects/aa/bb/<sha256>`` (git-lfs's layout), where GitSource and the emulator find them.
Dates are deterministic: each commit is one minute after the previous one unless given.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import struct
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.corpus import CORPUS

LFS_PATTERNS = (
    "*.safetensors",
    "*.bin",
    "*.pt",
    "*.pth",
    "*.gguf",
    "*.h5",
    "*.msgpack",
    "*.onnx",
    "*.model",
)
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_ENV_BASE = {"LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


@dataclass(frozen=True)
class Lfs:
    """Wrap bytes to force storing them as an LFS object whatever the file name."""

    data: bytes


@dataclass(frozen=True)
class LfsPointer:
    """An LFS pointer file committed as it is: its object was stored by the caller (e.g. a
    sparse shard of the model's real size, see ``RepoBuilder.store_sparse_lfs``)."""

    pointer: bytes


def bundle_path(name: str) -> Path:
    """``google__gemma-2b-it`` or ``google/gemma-2b-it`` -> the corpus bundle file."""
    return CORPUS / "histories" / f"{name.replace('/', '__')}.bundle"


def bundle_names() -> list[str]:
    """The corpus histories, as ``org__name`` stems."""
    return sorted(p.stem for p in (CORPUS / "histories").glob("*.bundle"))


def clone_bundle(name: str, dest_dir: Path) -> Path:
    """A bare clone of a corpus bundle at ``dest_dir/<org__name>.git`` (branch ``main``)."""
    dest = Path(dest_dir) / f"{name.replace('/', '__')}.git"
    _git(None, "clone", "-q", "--bare", str(bundle_path(name)), str(dest))
    _git(dest, "symbolic-ref", "HEAD", "refs/heads/main")
    return dest


def lfs_pointer(data: bytes) -> bytes:
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
        f"size {len(data)}\n"
    ).encode()


def safetensors_bytes(
    tensors: Mapping[str, tuple[str, Iterable[int]]],
    *,
    metadata: Mapping[str, str] | None = None,
    pad_header_to: int = 0,
) -> bytes:
    """A valid safetensors file (zero-filled data) with the given {name: (dtype, shape)}."""
    head, data_bytes = safetensors_head(tensors, metadata=metadata, pad_header_to=pad_header_to)
    return head + b"\0" * data_bytes


def safetensors_head(
    tensors: Mapping[str, tuple[str, Iterable[int]]],
    *,
    metadata: Mapping[str, str] | None = None,
    pad_header_to: int = 0,
) -> tuple[bytes, int]:
    """The first bytes of that file (length and header) and how many data bytes follow them."""
    sizes = {
        "F64": 8,
        "F32": 4,
        "F16": 2,
        "BF16": 2,
        "I64": 8,
        "I32": 4,
        "I16": 2,
        "I8": 1,
        "U8": 1,
        "BOOL": 1,
        "F8_E4M3": 1,
        "F8_E5M2": 1,
    }
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name, (dtype, shape) in tensors.items():
        shape = list(shape)
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * max(0, pad_header_to - len(raw))
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw, offset


def _git(
    cwd: Path | None, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
) -> str:
    import os

    full_env = {**os.environ, **_ENV_BASE, **(env or {})}
    cmd = ["git", "-c", "safe.directory=*"] + (["-C", str(cwd)] if cwd else []) + list(args)
    proc = subprocess.run(
        cmd, input=stdin, capture_output=True, env=full_env, timeout=60, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode().strip()


class RepoBuilder:
    """Make commits on a bare repo from {path: bytes} dicts; reset a branch to force-push."""

    def __init__(self, git_dir: Path, *, branch: str = "main"):
        self.path = Path(git_dir)
        self.branch = branch
        self._clock: datetime | None = None

    @classmethod
    def init(cls, git_dir: Path, *, branch: str = "main") -> RepoBuilder:
        _git(None, "init", "-q", "--bare", "-b", branch, str(git_dir))
        return cls(git_dir, branch=branch)

    @property
    def lfs_dir(self) -> Path:
        return self.path / "lfs" / "objects"

    def head(self, branch: str | None = None) -> str | None:
        try:
            return _git(
                self.path, "rev-parse", "--verify", "-q", f"refs/heads/{branch or self.branch}"
            )
        except RuntimeError:
            return None

    def store_lfs(self, data: bytes) -> bytes:
        """Put ``data`` in the LFS store; return the pointer file to commit."""
        digest = hashlib.sha256(data).hexdigest()
        obj = self.lfs_dir / digest[:2] / digest[2:4] / digest
        obj.parent.mkdir(parents=True, exist_ok=True)
        obj.write_bytes(data)
        return lfs_pointer(data)

    def store_sparse_lfs(self, head: bytes, size: int) -> LfsPointer:
        """An LFS object of ``size`` bytes that holds ``head`` and then zeros, written sparse
        (a 10 GB shard takes its header's disk). Its oid is a digest of ``head`` and ``size``,
        not of the zeros: nothing in the emulator or hubwatch hashes whole weight files."""
        digest = hashlib.sha256(head + str(size).encode()).hexdigest()
        obj = self.lfs_dir / digest[:2] / digest[2:4] / digest
        obj.parent.mkdir(parents=True, exist_ok=True)
        with obj.open("wb") as f:
            f.write(head)
            f.truncate(size)
        pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{digest}\nsize {size}\n"
        return LfsPointer(pointer.encode())

    def _tree_of(self, sha: str | None) -> dict[str, tuple[str, str]]:
        if sha is None:
            return {}
        out = subprocess.run(
            ["git", "-C", str(self.path), "ls-tree", "-r", "-z", sha],
            capture_output=True,
            check=True,
        ).stdout.decode()
        files = {}
        for item in out.split("\0"):
            if item:
                meta, path = item.split("\t", 1)
                mode, _, oid = meta.split()
                files[path] = (mode, oid)
        return files

    def _write_tree(self, files: Mapping[str, tuple[str, str]]) -> str:
        """Nested trees via ``mktree``, one per folder, bottom-up."""
        root: dict[str, object] = {}
        for path, entry in files.items():
            node = root
            *folders, name = path.split("/")
            for f in folders:
                node = node.setdefault(f, {})  # type: ignore[assignment]
            node[name] = entry

        def mk(node: dict[str, object]) -> str:
            lines = []
            for name, value in node.items():
                if isinstance(value, dict):
                    lines.append(f"040000 tree {mk(value)}\t{name}")
                else:
                    mode, oid = value  # type: ignore[misc]
                    lines.append(f"{mode} blob {oid}\t{name}")
            return _git(self.path, "mktree", "-z", stdin="".join(x + "\0" for x in lines).encode())

        return mk(root)

    def commit(
        self,
        files: Mapping[str, bytes | Lfs | LfsPointer],
        *,
        title: str = "update",
        message: str = "",
        author: str = "Test Author",
        date: datetime | None = None,
        delete: Iterable[str] = (),
        parents: Iterable[str] | None = None,
        replace: bool = False,
        branch: str | None = None,
    ) -> str:
        """Commit ``files`` on top of the branch head (or ``parents``); returns the new sha.

        ``replace=True`` makes the tree exactly ``files``; ``delete`` removes paths.
        """
        branch = branch or self.branch
        parent_list = (
            list(parents) if parents is not None else [h for h in [self.head(branch)] if h]
        )
        tree = {} if replace or not parent_list else self._tree_of(parent_list[0])
        for path in delete:
            tree.pop(path, None)
        for path, data in files.items():
            if isinstance(data, LfsPointer):
                blob = data.pointer
            elif isinstance(data, Lfs):
                blob = self.store_lfs(data.data)
            elif any(fnmatch.fnmatch(path.rsplit("/", 1)[-1], p) for p in LFS_PATTERNS):
                blob = self.store_lfs(data)
            else:
                blob = data
            tree[path] = ("100644", _git(self.path, "hash-object", "-w", "--stdin", stdin=blob))
        when = date or self._next_date(parent_list)
        stamp = f"{int(when.timestamp())} +0000"
        env = {
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": "author@example.com",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_NAME": author,
            "GIT_COMMITTER_EMAIL": "author@example.com",
            "GIT_COMMITTER_DATE": stamp,
        }
        text = title + ("\n\n" + message if message else "") + "\n"
        args = ["commit-tree", self._write_tree(tree)]
        for p in parent_list:
            args += ["-p", p]
        sha = _git(self.path, *args, stdin=text.encode(), env=env)
        _git(self.path, "update-ref", f"refs/heads/{branch}", sha)
        self._clock = when
        return sha

    def _next_date(self, parents: list[str]) -> datetime:
        latest = self._clock or _EPOCH
        for p in parents:
            ts = int(_git(self.path, "show", "-s", "--format=%ct", p))
            latest = max(latest, datetime.fromtimestamp(ts, UTC))
        return latest + timedelta(minutes=1)

    def reset(self, sha: str, *, branch: str | None = None) -> None:
        """Point the branch at ``sha`` (the first half of a force-push; commit() the rest)."""
        _git(self.path, "update-ref", f"refs/heads/{branch or self.branch}", sha)

    def tag(self, name: str, sha: str) -> None:
        _git(self.path, "tag", name, sha)

    def delete_branch(self, branch: str) -> None:
        _git(self.path, "update-ref", "-d", f"refs/heads/{branch}")
