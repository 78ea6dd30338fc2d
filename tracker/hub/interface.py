"""The HubSource protocol: everything hubwatch needs to read a model repo without its weights.

Two implementations run through one contract suite (tests/contract/test_hub_source.py):
``tracker.hub.localgit.GitSource`` (a git repository, local or remote) and
``tracker.hub.hf.HfSource`` (the Hub's HTTP API through huggingface_hub).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from tracker.model import CommitInfo, FileEntry


@dataclass(frozen=True, slots=True)
class CommitListing:
    """Commits of a branch, newest first, read until a known sha.

    ``reached_known`` is True when the listing stopped at one of the ``stop_at`` shas; when the
    caller passed stop shas and it is False, none of them is in the branch's history any more
    (upstream rewrote history) and ``commits`` is the whole history.
    """

    commits: tuple[CommitInfo, ...]
    reached_known: bool


@runtime_checkable
class HubSource(Protocol):
    """A readable model repository. Every method may raise :class:`tracker.errors.SourceError`."""

    @property
    def repo_id(self) -> str:
        """The ``org/name`` id the repo is tracked under."""
        ...

    @property
    def web_url(self) -> str:
        """The URL people (and OSV GIT ranges) use for the repo."""
        ...

    def resolve_head(self, branch: str) -> str:
        """The 40-hex sha the branch points at: the one cheap "anything new?" call."""
        ...

    def list_commits(self, branch: str, *, stop_at: Collection[str] = ()) -> CommitListing:
        """Commits of ``branch`` newest first, stopping before the first sha in ``stop_at``, each
        with its real parents (a merge has two; over HTTP they come from the git protocol, the
        Hub's listing has none)."""
        ...

    def list_files(self, revision: str) -> tuple[FileEntry, ...]:
        """Every file of the revision (recursive), sorted by path, with sizes, blob ids, LFS sha256."""
        ...

    def read_file(self, revision: str, path: str, *, max_bytes: int) -> bytes:
        """The file's committed bytes; raises TooLarge past ``max_bytes`` without reading them all."""
        ...

    def read_range(self, revision: str, path: str, start: int, length: int) -> bytes:
        """``length`` bytes of the file's real content from ``start`` (fewer at end of file).

        For LFS files this reads the LFS object, never the whole of it.
        """
        ...

    def file_security(self, revision: str, paths: Collection[str]) -> dict[str, dict[str, Any]]:
        """The Hub's own per-file scan results (``securityFileStatus``) of ``paths``.

        Only the paths it reports on are in the answer; a source without scanners (git)
        answers ``{}``. Callers ask only about files whose content is new (issue 13).
        """
        ...

    def created_at(self) -> datetime | None:
        """When the host created the repo (the Hub's ``createdAt``); None where it cannot tell
        (git). Asked only when the branch shares no commit with the stored history: a repo
        created after our last successful look is another repo under the same name."""
        ...

    def renamed_to(self) -> str | None:
        """The ``org/name`` the host now serves this repo under, once an answer showed it is
        another id than ``repo_id`` (a rename on the Hub: it redirects the old id); else None."""
        ...

    def close(self) -> None:
        """Release connections or temporary clones."""
        ...
