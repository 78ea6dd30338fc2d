"""Stage 1 (source): a :class:`~tracker.hub.interface.HubSource` over a plain git repository.

A local directory (bare or not) is read in place. A ``.bundle`` file, a ``file://`` URL or any
other git URL is mirrored (``git clone --mirror``) into ``work_dir``; ``resolve_head`` then
costs one ``git ls-remote`` and the mirror is fetched only when the head moved. Hugging Face
repos are git repos too, so this reads a Hub repo through ``https://huggingface.co/org/name``
as well (without LFS objects).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from tracker.errors import (
    EntryNotFound,
    ObjectNotHeld,
    RepoNotFound,
    RevisionNotFound,
    SourceUnavailable,
    TooLarge,
)
from tracker.hub._gitcli import (
    LFS_POINTER_MAX,
    SHA_RE,
    GitFailed,
    blob_matches,
    cat_file_batch,
    parse_commit,
    parse_lfs_pointer,
    read_blob_prefix,
    run_git,
)
from tracker.hub._gitnet import FetchPin, PublicFetchPolicy
from tracker.hub._gitrepo import GitRepo
from tracker.hub._lfsstore import hashes_to, open_lfs_object, read_whole_verified
from tracker.hub.interface import CommitListing
from tracker.model import CommitInfo, FileEntry
from tracker.model.locations import strip_credentials, strip_credentials_in

_NOT_FOUND = re.compile(
    r"not found|does not appear to be a git repository|does not exist|not a git repository"
    r"|could not read from remote|authentication failed|terminal prompts disabled"
    r"|is not a valid|could not read username|unable to read",
    re.I,
)
# ``<helper>::<address>`` runs a git remote helper (``fd::``, ``ext::``): never from a location.
_REMOTE_HELPER = re.compile(r"^[A-Za-z0-9+.-]+::")
_BAD_REV = re.compile(r"^-|\.\.|@\{|[\x00-\x20\x7f~^:?*\[\\]")


def default_repo_id(location: str) -> str:
    """``org/name`` from the last two parts of a path or URL (``org__name.bundle`` -> org/name)."""
    path = urlsplit(location).path if "://" in location else location
    if (
        ":" in path and "://" not in location and not Path(path).exists()
    ):  # scp-like user@host:org/x
        path = path.split(":", 1)[1]
    parts = [p for p in re.split(r"[/\\]+", path) if p]
    if not parts:
        raise ValueError(f"cannot name a repo after {location!r}")
    last = parts[-1]
    for suffix in (".bundle", ".git"):
        if last.endswith(suffix) and len(last) > len(suffix):
            last = last[: -len(suffix)]
            break
    if "__" in last and parts[-1].endswith(".bundle"):
        org, name = last.split("__", 1)
        return f"{org}/{name}"
    if len(parts) >= 2:
        return f"{parts[-2]}/{last}"
    return last


def public_git_url(location: str) -> str:
    """``location`` when others can clone it (http(s), ssh, git, scp-like), credentials
    removed; "" for local paths, bundles and ``file://``."""
    if not location or any(ch.isspace() for ch in location):
        return ""
    if "://" not in location:
        return location if re.fullmatch(r"[\w.-]+@[\w.-]+:.+", location) else ""
    parts = urlsplit(location)
    if parts.scheme not in ("http", "https", "ssh", "git") or not parts.hostname:
        return ""
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    user = f"{parts.username}@" if parts.username and parts.scheme == "ssh" else ""
    return parts._replace(netloc=user + host, query="", fragment="").geturl()


def _is_remote(location: str) -> bool:
    if "://" in location or location.endswith(".bundle"):
        return True
    # scp-like syntax: host:path with no slash before the colon
    head = location.split("/", 1)[0]
    return ":" in head and not Path(location).exists()


class GitSource:
    """Read a model repo's commits and files straight from git (no weights needed)."""

    def __init__(
        self,
        location: str,
        repo_id: str,
        *,
        work_dir: Path | None = None,
        timeout: float = 30.0,
        network: PublicFetchPolicy | None = None,
    ) -> None:
        """``network``: every fetch is re-checked and pinned by it (a source added over the API)."""
        if location.startswith("-") or _REMOTE_HELPER.match(location):
            raise RepoNotFound(f"invalid git location {location!r}", repo_id=repo_id)
        self._network = network
        self._verified: set[str] = set()  # LFS objects whose whole content was hashed
        self._location = location
        self._shown = strip_credentials(location)  # what messages and OSV records may show
        self._repo_id = repo_id
        self._timeout = timeout
        self._remote = _is_remote(location)
        self._own_tmp: Path | None = None
        self._work_dir = work_dir
        self._heads: dict[str, str] = {}  # branch -> head from the last ls-remote, not yet used
        self._repo: GitRepo | None = None

    # -- protocol --------------------------------------------------------------------------
    @property
    def repo_id(self) -> str:
        return self._repo_id

    @property
    def web_url(self) -> str:
        """The repo's public URL: a remote location, else a local repo's ``origin`` remote.

        "" when there is none (a bundle, a local path, a ``file://`` URL): a local path is
        never published; the pipeline falls back to the Hub URL of the repo id.
        """
        if self._remote:
            return public_git_url(self._location)
        try:
            origin = run_git(  # no include.path: a hostile config could include any local file
                ["config", "--no-includes", "--get", "remote.origin.url"], cwd=Path(self._location).expanduser(),
                timeout=self._timeout, what=self._repo_id,
            )
        except (GitFailed, SourceUnavailable):
            return ""
        return public_git_url(origin.decode("utf-8", "replace").strip())

    def resolve_head(self, branch: str) -> str:
        self._check_rev(branch)
        if self._remote:
            sha = self._ls_remote(branch)
            self._heads[branch] = sha
            return sha
        return self._local().branch_head(branch)

    def list_commits(self, branch: str, *, stop_at: Collection[str] = ()) -> CommitListing:
        self._check_rev(branch)
        repo = self._synced(branch)
        head = repo.branch_head(branch)
        t = self._timeout
        existing = [s for s in stop_at if SHA_RE.match(s) and repo.has_commit(s)]
        known = [s for s in existing if repo.is_ancestor(s, head)]
        args = ["rev-list", "--topo-order", head, *(["--not", *known] if known else [])]
        shas = self._git(args, repo.path).decode().split()
        raw = cat_file_batch(repo.path, shas, timeout=t)
        commits = []
        for sha in shas:
            c = parse_commit(raw[sha])
            commits.append(
                CommitInfo(
                    sha,
                    c.parents,
                    c.committed_at,
                    c.title,
                    c.message,
                    (c.author,) if c.author else (),
                )
            )
        return CommitListing(tuple(commits), reached_known=bool(known))

    def list_files(self, revision: str) -> tuple[FileEntry, ...]:
        repo, sha = self._commit(revision)
        out = self._git(["ls-tree", "-r", "-l", "-z", "--full-tree", sha], repo.path)
        rows: list[tuple[str, str, int]] = []
        for item in out.split(b"\0"):
            if not item:
                continue
            meta, _, raw_path = item.partition(b"\t")
            fields = meta.split()
            if len(fields) != 4 or fields[1] != b"blob":
                continue  # submodules and oddities
            rows.append(
                (raw_path.decode("utf-8", "surrogateescape"), fields[2].decode(), int(fields[3]))
            )
        small = [oid for _, oid, size in rows if size < LFS_POINTER_MAX]
        blobs = cat_file_batch(repo.path, small, timeout=self._timeout)
        entries = []
        for path, oid, size in rows:
            ptr = parse_lfs_pointer(blobs[oid]) if oid in blobs else None
            if ptr is not None:
                entries.append(FileEntry(path, ptr.size, oid, ptr.sha256))
            else:
                entries.append(FileEntry(path, size, oid))
        return tuple(sorted(entries, key=lambda e: e.path))

    def read_file(self, revision: str, path: str, *, max_bytes: int) -> bytes:
        repo, sha = self._commit(revision)
        oid, size = self._entry(repo, sha, path)
        ptr = None
        if size < LFS_POINTER_MAX:  # small: may be an LFS pointer, whose real size decides
            data = self._blob(repo, oid)
            ptr = parse_lfs_pointer(data)
        real = ptr.size if ptr is not None else size
        if real > max_bytes:
            raise TooLarge(
                f"{path} is {real} bytes (cap {max_bytes})", repo_id=self._repo_id, revision=sha
            )
        if ptr is None:
            whole = data if size < LFS_POINTER_MAX else self._blob(repo, oid)
            if not blob_matches(oid, whole):  # a planted loose object: content under another's id
                raise ObjectNotHeld(f"{path}: the object's content does not hash to its id {oid[:12]}",
                                    repo_id=self._repo_id, revision=sha)
            return whole
        with self._lfs_object(repo, sha, path, ptr.sha256, ptr.size) as f:
            whole = read_whole_verified(f, ptr.sha256, ptr.size)
        if whole is None:
            raise ObjectNotHeld(f"{path}: LFS object does not match its pointer", repo_id=self._repo_id, revision=sha)
        return whole

    def file_security(self, revision: str, paths: Collection[str]) -> dict[str, dict[str, Any]]:
        """Git has no scanners: nothing to report."""
        return {}

    def renamed_to(self) -> str | None:
        """A git location has no id of its own to move to."""
        return None

    def created_at(self) -> datetime | None:
        """A git repository records no creation time (commit dates are the committer's word)."""
        return None

    def read_range(self, revision: str, path: str, start: int, length: int) -> bytes:
        if start < 0 or length < 0:
            raise ValueError("start and length must be >= 0")
        repo, sha = self._commit(revision)
        oid, size = self._entry(repo, sha, path)
        data = self._blob(repo, oid) if size < LFS_POINTER_MAX else None
        ptr = parse_lfs_pointer(data) if data is not None else None
        if ptr is None:
            if data is not None:
                if not blob_matches(oid, data):
                    raise ObjectNotHeld(f"{path}: the object's content does not hash to its id {oid[:12]}",
                                        repo_id=self._repo_id, revision=sha)
                return data[start : start + length]
            # A big blob committed without LFS: stream its first bytes, never read it whole.
            try:
                prefix = read_blob_prefix(repo.path, oid, start + length, timeout=self._timeout)
            except GitFailed as e:
                raise SourceUnavailable(self._scrub(f"{self._repo_id}: {e}"), repo_id=self._repo_id) from e
            return prefix[start:]
        with self._lfs_object(repo, sha, path, ptr.sha256, ptr.size) as f:
            if ptr.sha256 not in self._verified:
                if not hashes_to(f, ptr.sha256):
                    raise ObjectNotHeld(f"{path}: LFS object does not match its pointer",
                                        repo_id=self._repo_id, revision=sha)
                self._verified.add(ptr.sha256)
            f.seek(start)
            return f.read(max(0, min(length, ptr.size - start)))

    def close(self) -> None:
        if self._own_tmp is not None:
            shutil.rmtree(self._own_tmp, ignore_errors=True)
            self._own_tmp = None
            self._repo = None

    def __enter__(self) -> GitSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"GitSource({self._shown!r}, {self._repo_id!r})"

    # -- internals ---------------------------------------------------------------------------
    def _git(self, args: list[str], cwd: Path | None) -> bytes:
        try:
            return run_git(args, cwd=cwd, timeout=self._timeout, what=self._repo_id)
        except GitFailed as e:
            raise SourceUnavailable(self._scrub(f"{self._repo_id}: {e}"), repo_id=self._repo_id) from e

    def _scrub(self, text: str) -> str:
        """git's words with any credentials of the location taken out."""
        return strip_credentials_in(text.replace(self._location, self._shown))

    def _check_rev(self, rev: str) -> None:
        if not rev or len(rev) > 255 or _BAD_REV.search(rev):
            raise RevisionNotFound(f"invalid revision {rev!r}", repo_id=self._repo_id, revision=rev)

    def _pin(self) -> FetchPin | None:
        """The address check of one network call, made now (None: the operator's source)."""
        return None if self._network is None else self._network.pin(self._location, self._repo_id)

    def _local(self) -> GitRepo:
        if self._network is not None:
            self._network.pin(self._location, self._repo_id)  # refuses: never a local path
        if self._repo is None:
            p = Path(self._location).expanduser()
            if not p.is_dir():
                raise RepoNotFound(f"no git repository at {self._location}", repo_id=self._repo_id)
            self._repo = GitRepo.open(p, self._repo_id, self._timeout)
        return self._repo

    def _mirror_dir(self) -> Path:
        if self._work_dir is None:
            if self._own_tmp is None:
                self._own_tmp = Path(tempfile.mkdtemp(prefix="hubwatch-git-"))
            base = self._own_tmp
        else:
            base = self._work_dir
        digest = hashlib.sha256(self._location.encode()).hexdigest()[:12]
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", self._repo_id)[:80]
        return base / f"{safe}-{digest}.git"

    def _remote_error(self, e: GitFailed) -> Exception:
        if _NOT_FOUND.search(e.stderr):
            return RepoNotFound(
                f"{self._repo_id}: no git repository at {self._shown}", repo_id=self._repo_id
            )
        return SourceUnavailable(self._scrub(f"{self._repo_id}: {e}"), repo_id=self._repo_id)

    def _ls_remote(self, branch: str) -> str:
        pin = self._pin()
        try:
            out = run_git(
                ["ls-remote", "--", pin.location if pin else self._location, f"refs/heads/{branch}"],
                timeout=self._timeout,
                what=self._repo_id,
                pin=pin,
            )
        except GitFailed as e:
            raise self._remote_error(e) from e
        for line in out.decode("utf-8", "replace").splitlines():
            sha, _, ref = line.partition("\t")
            if ref == f"refs/heads/{branch}" and SHA_RE.match(sha):
                return sha
        raise RevisionNotFound(
            f"{self._repo_id}: no branch {branch!r}", repo_id=self._repo_id, revision=branch
        )

    def _mirror(self, *, fetch: bool) -> GitRepo:
        """The mirror repo, cloned on first use and fetched when ``fetch``."""
        local = self._local_origin()
        # a local origin is held to the same rule before anything is copied from it
        origin = GitRepo.open(local, self._repo_id, self._timeout).path if local is not None else None
        if self._repo is None:
            dest = self._mirror_dir()
            if not (dest / "HEAD").exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_name(dest.name + ".tmp")
                shutil.rmtree(tmp, ignore_errors=True)
                pin = self._pin()
                try:
                    run_git(
                        ["clone", "--mirror", "-q", "--", pin.location if pin else self._location, str(tmp)],
                        timeout=self._timeout * 10,
                        what=self._repo_id,
                                pin=pin,
                    )
                except GitFailed as e:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise self._remote_error(e) from e
                tmp.rename(dest)
                fetch = False
            self._repo = GitRepo.open(dest, self._repo_id, self._timeout, origin=origin)
        if fetch:
            pin = self._pin()
            # pinned: the URL given each time (a git:// pin carries the address checked now)
            where = ["--", pin.location, "+refs/*:refs/*"] if pin else ["origin"]
            try:
                run_git(
                    ["fetch", "-q", "--prune", *where],
                    cwd=self._repo.path,
                    timeout=self._timeout * 10,
                    what=self._repo_id,
                        pin=pin,
                )
            except GitFailed as e:
                raise self._remote_error(e) from e
        return self._repo

    def _local_origin(self) -> Path | None:
        """A local remote's directory (file://, a path; not a bundle): LFS objects may be there."""
        loc = self._location
        if self._network is not None or loc.endswith(".bundle"):
            return None
        p = Path(urlsplit(loc).path) if loc.startswith("file://") else Path(loc)
        return p if p.is_dir() else None

    def _synced(self, branch: str) -> GitRepo:
        """The repo with ``branch`` up to date: for a remote, fetch only when its head moved."""
        if not self._remote:
            return self._local()
        head = self._heads.pop(branch, None) or self._ls_remote(branch)
        repo = self._mirror(fetch=False)
        if repo.ref(branch) != head:
            self._mirror(fetch=True)
        return repo

    def _commit(self, revision: str) -> tuple[GitRepo, str]:
        self._check_rev(revision)
        if not self._remote:
            repo = self._local()
            return repo, repo.commit_sha(revision)
        repo = self._mirror(fetch=False)
        if SHA_RE.match(revision) and repo.has_commit(revision):
            return repo, revision
        if not SHA_RE.match(revision):  # a branch or tag: bring it up to date
            repo = self._mirror(fetch=repo.ref(revision) != self._ls_remote_or_none(revision))
        elif not repo.has_commit(revision):
            repo = self._mirror(fetch=True)
        return repo, repo.commit_sha(revision)

    def _ls_remote_or_none(self, branch: str) -> str | None:
        try:
            return self._ls_remote(branch)
        except RevisionNotFound:
            return None  # a tag, or missing: commit_sha decides

    def _entry(self, repo: GitRepo, sha: str, path: str) -> tuple[str, int]:
        oid, size = repo.blob_entry(sha, path)
        if oid is None:
            raise EntryNotFound(f"{path} not in {sha[:12]}", repo_id=self._repo_id, revision=sha)
        return oid, size

    def _blob(self, repo: GitRepo, oid: str) -> bytes:
        return self._git(["cat-file", "blob", oid], repo.path)

    def _lfs_object(self, repo: GitRepo, sha: str, path: str, sha256: str, size: int) -> BinaryIO:
        """The object from the repo's own LFS store; a symlink or hard link is never followed."""
        for root in repo.lfs_roots:
            f = open_lfs_object(root, sha256, size)
            if f is not None:
                return f
        raise ObjectNotHeld(
            f"{path}: LFS object not available (sha256 {sha256[:12]}); the git source has only its pointer",
            repo_id=self._repo_id,
            revision=sha,
        )
