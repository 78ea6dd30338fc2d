"""Stage 1 (source) helper: one opened git repository (a git dir) and the lookups on it."""

from __future__ import annotations

from pathlib import Path

from tracker.errors import RepoNotFound, RevisionNotFound
from tracker.hub._gitcli import SHA_RE, GitFailed, run_git
from tracker.hub._gittrust import own_git_dir, refuse_unless_self_contained


class GitRepo:
    """A git dir plus the few plumbing queries GitSource needs; each one a timed git call."""

    def __init__(self, path: Path, repo_id: str, timeout: float, lfs_roots: tuple[Path, ...]):
        self.path = path
        self.repo_id = repo_id
        self.timeout = timeout
        self.lfs_roots = lfs_roots  # git dirs whose own ``lfs/objects`` may hold LFS objects

    @classmethod
    def open(cls, path: Path, repo_id: str, timeout: float, origin: Path | None = None) -> GitRepo:
        """The repository at ``path``; SourceRefused unless it is ``path``'s own and
        self-contained (:mod:`tracker.hub._gittrust`), checked on every open."""
        try:
            out = run_git(
                ["rev-parse", "--absolute-git-dir"], cwd=path, timeout=timeout, what=repo_id
            )
        except GitFailed as e:
            raise RepoNotFound(f"{repo_id}: not a git repository: {path}", repo_id=repo_id) from e
        git_dir = Path(out.decode("utf-8", "surrogateescape").strip())
        own_git_dir(path, git_dir, repo_id)
        refuse_unless_self_contained(git_dir, repo_id)
        roots = [git_dir] if origin is None else [git_dir, origin]
        return cls(git_dir, repo_id, timeout, tuple(roots))

    def _q(self, args: list[str]) -> str | None:
        """Output of a query that fails quietly (exit 1) when the answer is "no"."""
        try:
            return (
                run_git(args, cwd=self.path, timeout=self.timeout, what=self.repo_id)
                .decode()
                .strip()
            )
        except GitFailed as e:
            if e.returncode in (1, 128):
                return None
            raise

    def ref(self, branch: str) -> str | None:
        return self._q(["rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}"]) or None

    def branch_head(self, branch: str) -> str:
        sha = self.ref(branch)
        if sha is None:
            raise RevisionNotFound(
                f"{self.repo_id}: no branch {branch!r}", repo_id=self.repo_id, revision=branch
            )
        return sha

    def has_commit(self, sha: str) -> bool:
        return self._q(["cat-file", "-e", f"{sha}^{{commit}}"]) is not None

    def is_ancestor(self, ancestor: str, head: str) -> bool:
        return self._q(["merge-base", "--is-ancestor", ancestor, head]) is not None

    def commit_sha(self, rev: str) -> str:
        """A branch, tag or full sha -> commit sha (abbreviated shas are refused: ambiguous)."""
        candidates = [f"refs/heads/{rev}", f"refs/tags/{rev}"]
        if SHA_RE.match(rev):
            candidates.insert(0, rev)
        for c in candidates:
            sha = self._q(["rev-parse", "--verify", "-q", f"{c}^{{commit}}"])
            if sha:
                return sha
        raise RevisionNotFound(
            f"{self.repo_id}: unknown revision {rev!r}", repo_id=self.repo_id, revision=rev
        )

    def blob_entry(self, sha: str, path: str) -> tuple[str | None, int]:
        """(blob id, size) of ``path`` at commit ``sha``; (None, 0) when it is not a file there."""
        if not path or path.startswith("/") or "\0" in path:
            return None, 0
        out = run_git(
            ["ls-tree", "-l", "-z", sha, "--", path],
            cwd=self.path,
            timeout=self.timeout,
            what=self.repo_id,
        )
        for item in out.split(b"\0"):
            meta, _, p = item.partition(b"\t")
            fields = meta.split()
            if (
                p.decode("utf-8", "surrogateescape") == path
                and len(fields) == 4
                and fields[1] == b"blob"
            ):
                return fields[2].decode(), int(fields[3])
        return None, 0
