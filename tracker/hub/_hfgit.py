"""Stage 1 (source) helper: commits' real parents from the git protocol the Hub serves.

The Hub's commit listing (``GET /api/models/{repo}/commits/{rev}``) carries no parents, and
around a merge its order is not the parent chain (Mistral-7B-Instruct-v0.3: diffing each
commit against the next listed one gave two HIGH advisories for changes nobody made). The Hub
serves every repo over git smart HTTP as well (``git clone https://huggingface.co/org/name``).
A shallow, tree-less clone of the branch (``--depth``, ``--filter=tree:0``) brings the commit
objects alone: no trees, no file contents, no LFS objects. A server without object filters
sends the trees and small files of those commits too; still no LFS objects.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tracker.errors import SourceUnavailable
from tracker.hub._gitcli import SHA_RE, GitFailed, run_git

#: git's words when the endpoint does not serve this repo over git (404), or not to us (401/403)
_NOT_SERVED = re.compile(
    r"not found|returned error: (401|403|404)|authentication failed|could not read username"
    r"|terminal prompts disabled|not valid: is this a git repository",
    re.I,
)
_ROUNDS = 4  # depth doubles each round: a branch that moved on by many commits mid-read


class GitNotServed(Exception):
    """The endpoint has no git repository for this repo (or refuses us one)."""


def commit_parents(
    url: str, branch: str, shas: Sequence[str], *, token: str | None, timeout: float, what: str,
    repo_id: str,
) -> dict[str, tuple[str, ...]]:
    """Parents of every commit in ``shas`` (all on ``branch`` of the git repo at ``url``).

    Raises GitNotServed when there is no git repo to read, SourceUnavailable when the read
    fails or the branch no longer holds all of ``shas`` (it moved: the next poll reads again).
    """
    env = {"GIT_CONFIG_COUNT": "0"}
    if token:  # a header in the environment, never on the command line
        env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
               "GIT_CONFIG_VALUE_0": f"Authorization: Bearer {token}"}
    wanted = [s for s in dict.fromkeys(shas) if SHA_RE.match(s)]
    tmp = Path(tempfile.mkdtemp(prefix="hubwatch-parents-"))
    dest = tmp / "repo.git"
    depth = len(wanted) + 1  # every wanted commit is within len(wanted) steps of the head
    try:
        _git(["clone", "-q", "--bare", "--no-tags", "--single-branch", "--branch", branch,
              "--filter=tree:0", f"--depth={depth}", "--", url, str(dest)], None, timeout, what, env, repo_id)
        for _ in range(_ROUNDS):
            graph = _graph(dest, timeout, what)
            shallow = _shallow(dest)
            if all(s in graph and s not in shallow for s in wanted):
                return {s: graph[s] for s in wanted}
            if not shallow:  # the whole history is here, and some commit is not in it
                break
            depth *= 2
            _git(["fetch", "-q", "--no-tags", f"--depth={depth}", "origin"], dest, timeout, what, env, repo_id)
        raise SourceUnavailable(f"{what}: the branch moved while its commit graph was read", repo_id=repo_id)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _git(
    args: list[str], cwd: Path | None, timeout: float, what: str, env: dict[str, str], repo_id: str = ""
) -> bytes:
    try:
        return run_git(args, cwd=cwd, timeout=timeout, what=what, env=env)
    except GitFailed as e:
        if _NOT_SERVED.search(e.stderr):
            raise GitNotServed(e.stderr.strip()[:300]) from e
        raise SourceUnavailable(f"{what}: {e}", repo_id=repo_id or None) from e


def _graph(git_dir: Path, timeout: float, what: str) -> dict[str, tuple[str, ...]]:
    """Every fetched commit of the branch and its parents (a shallow boundary shows none)."""
    out = _git(["rev-list", "--parents", "--all"], git_dir, timeout, what, {})
    graph: dict[str, tuple[str, ...]] = {}
    for line in out.decode("ascii", "replace").splitlines():
        sha, *parents = line.split()
        graph[sha] = tuple(parents)
    return graph


def _shallow(git_dir: Path) -> set[str]:
    """Commits whose parents were not fetched (git's ``shallow`` file)."""
    path = git_dir / "shallow"
    return set(path.read_text().split()) if path.is_file() else set()
