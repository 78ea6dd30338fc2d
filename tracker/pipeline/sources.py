"""Which HubSource reads a repo: a git repository, or the Hub over HTTP."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from tracker.hub.connections import HubConnections
from tracker.hub.interface import HubSource
from tracker.netio import Resolver, system_resolver

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def is_git_location(source: str) -> bool:
    """A local path, ``file://`` or git URL, rather than a Hub ``org/name`` id.

    An ``org/name`` is the Hub's even when a directory of that name exists here (issue 17):
    ``./org/name`` or another path form names the directory.
    """
    if "://" in source or source.startswith(("/", ".", "~", "git@")):
        return True
    if source.endswith((".git", ".bundle")):
        return True
    return not _HUB_ID.match(source)


def shadowing_directory(source: str) -> bool:
    """A Hub id that is also a directory here (the CLI says which one it took)."""
    return not is_git_location(source) and Path(source).is_dir()


def hub_web_url(endpoint: str, repo_id: str) -> str:
    return f"{endpoint.rstrip('/')}/{repo_id}"


@dataclass(frozen=True)
class SourceFactory:
    """Opens the right source for a tracked repo, with the deadlines and caches from config."""

    endpoint: str = "https://huggingface.co"
    token: str | None = field(default=None, repr=False)
    timeout: float = 30.0
    cache_dir: Path | None = None
    allow_private: bool = False  # [webhooks] allow_private_destinations: API sources too
    resolve: Resolver = system_resolver  # a test's resolver (a rebinding one)
    #: one connection pool for every Hub repo this factory opens (a daemon's checks share it)
    connections: HubConnections = field(default_factory=HubConnections, compare=False, repr=False)

    def git_work_dir(self) -> Path:
        if self.cache_dir is not None:
            return self.cache_dir / "git"
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "hubwatch" / "git"

    def open(self, repo_id: str, source: str, source_kind: str, *, added_by: str = "operator") -> HubSource:
        """The source of a tracked repo; a git source an API client added (``added_by="api"``)
        has every fetch checked against the private-address policy again and pinned."""
        if source_kind == "git":
            from tracker.hub._gitnet import PublicFetchPolicy
            from tracker.hub.localgit import GitSource

            if added_by == "api" and not self.allow_private:
                return GitSource(source, repo_id, work_dir=self.git_work_dir(), timeout=self.timeout,
                                 network=PublicFetchPolicy(self.resolve))
            location = str(Path(source).expanduser().resolve()) if Path(source).expanduser().exists() else source
            return GitSource(location, repo_id, work_dir=self.git_work_dir(), timeout=self.timeout)
        from tracker.hub.hf import HfSource

        return HfSource(repo_id, endpoint=self.endpoint, token=self.token, timeout=self.timeout,
                        connections=self.connections)

    def close(self) -> None:
        """Close the shared Hub connections (a later ``open`` starts new ones)."""
        self.connections.close()
