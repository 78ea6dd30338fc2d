"""Hub emulator: read a git repository the way the Hub's backend would (git CLI, no cache).

Kept apart from ``tracker.hub`` on purpose: the contract suite compares GitSource with
HfSource-through-this-emulator, so the two must not share their git reading code.
Every call reads git afresh, so commits, force-pushes and new repos show up at once.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

_SHA = re.compile(r"^[0-9a-f]{40}$")
_POINTER = re.compile(
    rb"\Aversion https://git-lfs\.github\.com/spec/v1\n(?:.*\n)*?oid sha256:([0-9a-f]{64})\nsize (\d+)\n?",
    re.S,
)
_ENV = {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_LITERAL_PATHSPECS": "1"}


def git(git_dir: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
    proc = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(git_dir), *args],
        input=stdin,
        capture_output=True,
        timeout=30,
        env=_ENV,
        check=False,
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {args[0]}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout if proc.returncode == 0 else b""


def iso(ts: float) -> str:
    """Hub date format, milliseconds: the client accepts only ``...Z``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(frozen=True)
class Entry:
    """A tree item: file or directory. For LFS files ``size`` is the object's size."""

    type: str  # "file" | "directory"
    path: str
    oid: str  # blob id (the pointer's, for LFS) or tree id
    size: int = 0
    lfs_sha256: str | None = None
    pointer_size: int = 0


class EmuRepo:
    """One served repository: a git dir plus its git-lfs object store."""

    def __init__(self, git_dir: Path):
        self.path = Path(git(Path(git_dir), "rev-parse", "--absolute-git-dir").decode().strip())

    def lfs_path(self, sha256: str) -> Path:
        return self.path / "lfs" / "objects" / sha256[:2] / sha256[2:4] / sha256

    def resolve(self, rev: str) -> str | None:
        """Branch, tag, ``refs/...`` or full sha -> commit sha (None when unknown)."""
        if not rev or rev.startswith("-"):
            return None
        candidates = [f"refs/heads/{rev}", f"refs/tags/{rev}"]
        if rev.startswith("refs/"):
            candidates.insert(0, rev)
        if _SHA.match(rev):
            candidates.insert(0, rev)
        for c in candidates:
            out = git(
                self.path, "rev-parse", "--verify", "-q", f"{c}^{{commit}}", check=False
            ).strip()
            if out:
                return out.decode()
        return None

    def refs(self) -> list[tuple[str, str]]:
        """(refname, peeled commit sha) of every branch, tag and PR ref."""
        out = git(self.path, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)")
        refs = []
        for line in out.decode().splitlines():
            name, obj, peeled = line.split("\0")
            refs.append((name, peeled or obj))
        return refs

    def commits(self, sha: str) -> list[dict[str, object]]:
        """Commit items as the Hub lists them, newest first (topological order)."""
        out = git(self.path, "log", "--topo-order", "-z", "--format=%H%x01%an%x01%ct%x01%B", sha)
        items = []
        for rec in out.decode("utf-8", "replace").split("\0"):
            if not rec.strip():
                continue
            h, author, ct, body = rec.split("\x01", 3)
            first, _, rest = body.strip("\n").partition("\n")
            items.append(
                {
                    "id": h.strip(),
                    "title": first.strip(),
                    "message": rest.strip(),
                    "date": iso(int(ct)),
                    "authors": [{"user": author}],
                }
            )
        return items

    def commit_time(self, sha: str) -> int:
        return int(git(self.path, "show", "-s", "--format=%ct", sha).strip() or 0)

    def tree(self, sha: str, folder: str = "", *, recursive: bool = True) -> list[Entry] | None:
        """Entries under ``folder`` (None when it is not a folder of the commit)."""
        if (
            folder
            and git(self.path, "cat-file", "-t", f"{sha}:{folder}", check=False).strip() != b"tree"
        ):
            return None
        args = ["ls-tree", "-l", "-z", "--full-tree"] + (["-r", "-t"] if recursive else [])
        args += [sha, "--", f"{folder}/"] if folder else [sha]
        rows = []
        for item in git(self.path, *args).split(b"\0"):
            if not item:
                continue
            meta, _, p = item.partition(b"\t")
            _mode, typ, oid, size = meta.split()
            path = p.decode("utf-8", "surrogateescape")
            if folder and path == folder:
                continue
            rows.append((typ.decode(), path, oid.decode(), 0 if size == b"-" else int(size)))
        small = [oid for typ, _, oid, size in rows if typ == "blob" and size < 1024]
        contents = self.blobs(small)
        entries = []
        for typ, path, oid, size in rows:
            if typ == "tree":
                entries.append(Entry("directory", path, oid))
            elif typ == "blob":
                m = _POINTER.match(contents.get(oid, b""))
                if m:
                    entries.append(
                        Entry("file", path, oid, int(m.group(2)), m.group(1).decode(), size)
                    )
                else:
                    entries.append(Entry("file", path, oid, size))
        return entries

    def entry(self, sha: str, path: str) -> Entry | None:
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        listing = self.tree(sha, parent, recursive=False)
        for e in listing or []:
            if e.path == path:
                return e
        return None

    def blobs(self, oids: list[str]) -> dict[str, bytes]:
        if not oids:
            return {}
        out = git(self.path, "cat-file", "--batch", stdin="\n".join(oids).encode() + b"\n")
        result, pos = {}, 0
        while pos < len(out):
            nl = out.index(b"\n", pos)
            head = out[pos:nl].split()
            pos = nl + 1
            if len(head) == 3:
                n = int(head[2])
                result[head[0].decode()] = out[pos : pos + n]
                pos += n + 1
        return result

    def blob(self, oid: str) -> bytes:
        return git(self.path, "cat-file", "blob", oid)

    def last_commit(self, sha: str, path: str) -> dict[str, str] | None:
        out = (
            git(self.path, "log", "-1", "--format=%H%x01%s%x01%ct", sha, "--", path)
            .decode()
            .strip()
        )
        if not out:
            return None
        h, title, ct = out.split("\x01", 2)
        return {"id": h, "title": title, "date": iso(int(ct))}
