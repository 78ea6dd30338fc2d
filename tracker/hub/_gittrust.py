"""Stage 1 (source) helper: a local git repository is read only when it is self-contained.

The trust rule (issue 16, "no local file outside the tracked repository's own objects can
reach any output"): hubwatch reads a repository's objects from its own ``objects``
directory and nowhere else. git itself would also read objects through

- ``objects/info/alternates`` / ``http-alternates`` (another repository's objects),
- a ``commondir`` file (a worktree's git dir: objects and refs of another repository),
- a ``.git`` *file* (``gitdir: /elsewhere``) or a ``.git`` symlink (the whole repository is
  elsewhere), or a parent directory's repository found by discovery,
- symlinks inside ``objects`` (loose objects or packs of another repository),
- a partial clone's promisor remote (a lazy fetch of any URL or local path),
- replace refs (``refs/replace/<id>``: another object's content served under an id),

so :func:`refuse_unless_self_contained` refuses the first five before any git command reads
the repository, and :mod:`tracker.hub._gitcli` runs git with replace objects off, no
transport for commands that are not fetches (no lazy fetch) and no alternates from the
environment. A repository that uses alternates legitimately (``clone --shared``) is made
self-contained with ``git repack -a -d`` and removing ``objects/info/alternates``.
"""

from __future__ import annotations

import os
from pathlib import Path

from tracker.errors import SourceRefused

_REMEDY = "; make it self-contained (git repack -a -d, then remove objects/info/alternates) or track a clone"


def refuse_unless_self_contained(git_dir: Path, repo_id: str) -> None:
    """SourceRefused when git would read objects of ``git_dir`` from anywhere but its own
    ``objects`` directory."""
    def refuse(why: str) -> SourceRefused:
        return SourceRefused(f"{repo_id}: not read: {why}{_REMEDY}", repo_id=repo_id)

    if (git_dir / "commondir").exists():
        raise refuse("its git dir names a common dir (a worktree of another repository)")
    objects = git_dir / "objects"
    if objects.is_symlink() or not objects.is_dir():
        raise refuse("its objects directory is a symlink or missing")
    info = objects / "info"
    if (info / "http-alternates").exists() or (info / "alternates").is_symlink():
        raise refuse("it borrows objects from other repositories (alternates)")
    try:
        lines = (info / "alternates").read_bytes().splitlines()
    except FileNotFoundError:
        lines = []
    except OSError as e:
        raise refuse(f"objects/info/alternates cannot be read ({e.strerror})") from e
    if any(line.strip() and not line.lstrip().startswith(b"#") for line in lines):
        raise refuse("it borrows objects from other repositories (alternates)")
    for sub in _entries(objects):
        if sub.is_symlink():
            raise refuse(f"objects/{sub.name} is a symlink")
        if sub.is_dir(follow_symlinks=False):
            for entry in _entries(Path(sub.path)):
                if entry.is_symlink():
                    raise refuse(f"objects/{sub.name}/{entry.name} is a symlink")
                if sub.name == "pack" and entry.name.endswith(".promisor"):
                    raise refuse("it is a partial clone (missing objects would be fetched from elsewhere)")


def own_git_dir(path: Path, git_dir: Path, repo_id: str) -> None:
    """SourceRefused unless ``git_dir`` (what git found for ``path``) is ``path`` itself (bare)
    or its ``.git`` directory: no ``gitdir:`` file, no symlink, no repository found above."""
    here = path.resolve()
    dot_git = path / ".git"
    if dot_git.is_symlink() or dot_git.is_file():
        raise SourceRefused(f"{repo_id}: not read: {dot_git.name} is a link or a gitdir file pointing "
                            f"elsewhere{_REMEDY}", repo_id=repo_id)
    if git_dir.resolve() not in (here, here / ".git"):
        raise SourceRefused(f"{repo_id}: not read: the repository git finds there is elsewhere "
                            f"(a parent directory's){_REMEDY}", repo_id=repo_id)


def _entries(path: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:
        return []
