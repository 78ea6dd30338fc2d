"""Stage 1 (source) helper: commits' real parents from the git protocol the Hub serves.

The Hub's commit listing (``GET /api/models/{repo}/commits/{rev}``) carries no parents, and
around a merge its order is not the parent chain (Mistral-7B-Instruct-v0.3: diffing each
commit against the next listed one gave two HIGH advisories for changes nobody made). The Hub
serves every repo over git smart HTTP as well (``git clone https://huggingface.co/org/name``).
A shallow, tree-less clone of the branch (``--depth``, ``--filter=tree:0``) brings the commit
objects alone: no trees, no file contents, no LFS objects. A server without object filters
sends the trees and small files of those commits too; still no LFS objects.

The clone is the fallback: first the same requests are made in-process
(:mod:`tracker.hub._gitwire`, protocol v2 through the source's HTTP client: no subprocess, no
temporary directory, a few ms of CPU instead of ~40); the CLI runs where the server does not
speak v2 with shallow fetches and filters.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tracker.errors import SourceUnavailable
from tracker.hub._gitcli import SHA_RE, GitFailed, run_git
from tracker.hub._gitwire import GitHttp, GitNotServed, WireClient, WireUnsupported

#: git's words when the endpoint does not serve this repo over git (404), or not to us (401/403)
_NOT_SERVED = re.compile(
    r"not found|returned error: (401|403|404)|authentication failed|could not read username"
    r"|terminal prompts disabled|not valid: is this a git repository",
    re.I,
)
_ROUNDS = 4  # depth doubles each round: a branch that moved on by many commits mid-read


__all__ = ["GitNotServed", "commit_parents"]


def commit_parents(
    url: str, branch: str, shas: Sequence[str], *, token: str | None, timeout: float, what: str,
    repo_id: str, http: GitHttp | None = None,
) -> dict[str, tuple[str, ...]]:
    """Parents of every commit in ``shas`` (all on ``branch`` of the git repo at ``url``).

    ``http``: the source's client (its deadline, its headers with the token) for the in-process
    read; without one (or where the server lacks what it needs) the git CLI reads them.
    Raises GitNotServed when there is no git repo to read, SourceUnavailable when the read
    fails or the branch no longer holds all of ``shas`` (it moved: the next poll reads again).
    """
    if http is not None:
        try:
            return _over_the_wire(http, url, branch, shas, what=what, repo_id=repo_id)
        except WireUnsupported:
            pass
    return _with_the_cli(url, branch, shas, token=token, timeout=timeout, what=what, repo_id=repo_id)


def _over_the_wire(
    http: GitHttp, url: str, branch: str, shas: Sequence[str], *, what: str, repo_id: str
) -> dict[str, tuple[str, ...]]:
    """The CLI's requests, in-process: the advertisement, ls-refs, then fetches of the branch's
    newest commits (their objects carry their parents), deeper while some are missing."""
    wanted = [s for s in dict.fromkeys(shas) if SHA_RE.match(s)]
    client = WireClient(http, url, what=what, repo_id=repo_id)
    client.advertise()
    tip = client.branch_tip(branch)
    depth = len(wanted) + 1  # every wanted commit is within len(wanted) steps of the head
    for _ in range(_ROUNDS + 1):
        fetched = client.fetch_commits(tip, depth)
        if all(s in fetched.parents for s in wanted):
            return {s: fetched.parents[s] for s in wanted}
        if not fetched.shallow:  # the whole history is here, and some commit is not in it
            break
        depth *= 2
    raise SourceUnavailable(f"{what}: the branch moved while its commit graph was read", repo_id=repo_id)


def _with_the_cli(
    url: str, branch: str, shas: Sequence[str], *, token: str | None, timeout: float, what: str,
    repo_id: str,
) -> dict[str, tuple[str, ...]]:
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
