"""Layer 3 (daemon): the HubSource a check reads through, metered.

Every request takes a token from the request budget (waiting when none is left) and is
counted with its bytes; before each request the check is stopped (CheckCancelled) when the
daemon is stopping or lost the repo's lease. Git sources are not metered: they cost the Hub
nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any, Protocol, TypeVar

from tracker.daemon.budget import RequestBudget
from tracker.daemon.stats import DaemonStats
from tracker.errors import RateLimited
from tracker.hub.interface import CommitListing, HubSource
from tracker.model import FileEntry

T = TypeVar("T")

COMMITS_PAGE = 50  # the Hub pages commit listings by 50
GIT_PARENT_REQUESTS = 3  # tracker.hub._hfgit: new commits' parents read over git smart HTTP


class Meter(Protocol):
    budget: RequestBudget
    stats: DaemonStats
    cancel: threading.Event

    def raise_if_cancelled(self, repo_id: str) -> None: ...

    def rate_limited(self, retry_after: float | None) -> None: ...


class MeteredSource:
    """A HubSource wrapper; ``prepaid``: the claim already took the head check's token."""

    def __init__(self, inner: HubSource, meter: Meter, repo_id: str, metered: bool):
        self.inner, self.meter, self.tracked_as, self.metered = inner, meter, repo_id, metered
        self.prepaid = 1 if metered else 0

    def _call(self, requests: int = 1) -> None:
        self.meter.raise_if_cancelled(self.tracked_as)
        if not self.metered:
            return
        for _ in range(requests):
            if self.prepaid:
                self.prepaid -= 1
            else:
                self.meter.budget.acquire(self.meter.cancel)
        self.meter.stats.add("requests", requests)

    def _through(self, call: Callable[[], T]) -> T:
        """The call; a 429 pauses the whole daemon at once, so its other running checks stop at
        their next request rather than when this check is recorded (issue 10)."""
        try:
            return call()
        except RateLimited as e:
            self.meter.rate_limited(e.retry_after)
            raise

    def _got(self, data: bytes) -> bytes:
        self.meter.stats.add("bytes", len(data))
        return data

    @property
    def repo_id(self) -> str:
        return self.inner.repo_id

    @property
    def web_url(self) -> str:
        return self.inner.web_url

    def resolve_head(self, branch: str) -> str:
        self._call()
        return self._through(lambda: self.inner.resolve_head(branch))

    def list_commits(self, branch: str, *, stop_at: Collection[str] = ()) -> CommitListing:
        self._call()
        listing = self._through(lambda: self.inner.list_commits(branch, stop_at=stop_at))
        more = len(listing.commits) // COMMITS_PAGE  # the pages after the first, counted afterwards
        if listing.commits:  # their parents over git: the ref advertisement, ls-refs, one fetch
            more += GIT_PARENT_REQUESTS
        if self.metered and more:
            self.meter.budget.spend(more)
            self.meter.stats.add("requests", more)
        return listing

    def file_security(self, revision: str, paths: Collection[str]) -> dict[str, dict[str, Any]]:
        if paths:
            self._call(-(-len(paths) // 100))  # one request per 100 paths (tracker.hub.hf)
        return self._through(lambda: self.inner.file_security(revision, paths))

    def renamed_to(self) -> str | None:
        return self.inner.renamed_to()  # what earlier answers said: no request

    def created_at(self) -> datetime | None:
        self._call()
        return self._through(self.inner.created_at)

    def list_files(self, revision: str) -> tuple[FileEntry, ...]:
        self._call()
        return self._through(lambda: self.inner.list_files(revision))

    def read_file(self, revision: str, path: str, *, max_bytes: int) -> bytes:
        self._call()
        return self._got(self._through(lambda: self.inner.read_file(revision, path, max_bytes=max_bytes)))

    def read_range(self, revision: str, path: str, start: int, length: int) -> bytes:
        self._call()
        return self._got(self._through(lambda: self.inner.read_range(revision, path, start, length)))

    def close(self) -> None:
        self.inner.close()
