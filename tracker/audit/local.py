"""Audit: the answer from the local store (no server): the same code path as ``/v1/query``.

For a pinned (repo, revision): the records the OSV routes' ``run_queries`` returns for the
``commit`` over the store (introduced at or before it, not fixed at or before it, on the
stored commit graph) that are about that repo (whatever Hub or mirror the repo is tracked
from; on the pin's Hub when the input names one), plus :func:`tracker.api.drift.drift`.
A repo the store does not hold is handed to ``read_untracked`` (read once from the Hub into
a scratch store, not tracked); None from it means the Hub does not have the repo either.

Imports: stdlib, storage, tracker.api (osv_routes, store_reader, drift),
tracker.audit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from storage.store import Store
from tracker.api.drift import drift
from tracker.api.osv_routes import parse_query, run_queries
from tracker.api.store_reader import StoreAdvisoryReader
from tracker.audit.pins import Pin
from tracker.audit.verdicts import Found, Verdict, concerns, found_of

ReadUntracked = Callable[[str], "tuple[Store | None, str | None]"]


class StoreAnswer:
    """Answers pins from ``store``; untracked repos through ``read_untracked`` (or unknown)."""

    def __init__(self, store: Store, read_untracked: ReadUntracked | None = None,
                 web_url: Callable[[str], str] | None = None) -> None:
        self.store = store
        self.read_untracked = read_untracked
        self.web_url = web_url
        self._stores: dict[str, tuple[Store | None, str | None]] = {}

    def answer(self, pins: Sequence[Pin]) -> list[Verdict]:
        return [self._one(p) for p in pins]

    def _store_for(self, repo: str) -> tuple[Store | None, str | None]:
        if repo not in self._stores:
            if self.store.get_repo(repo) is not None:
                self._stores[repo] = (self.store, None)
            elif self.read_untracked is not None:
                self._stores[repo] = self.read_untracked(repo)
            else:
                self._stores[repo] = (None, "not tracked")
        return self._stores[repo]

    def _one(self, pin: Pin) -> Verdict:
        store, why = self._store_for(pin.repo)
        if store is None:
            return Verdict(pin, pin.revision, known=False, note=why)
        if pin.revision is None:
            head = store.get_repo(pin.repo)
            return Verdict(pin, None, known=None, upstream_head=head.head_sha if head else None)
        d = drift(store, pin.repo, pin.revision)
        sha = d["revision"]
        found: tuple[Found, ...] = ()
        if d["known"] or len(sha) == 40:
            reader = StoreAdvisoryReader(store)
            records = run_queries(reader, [parse_query({"commit": sha})])[0]
            found = tuple(found_of(r, self._url(r["id"])) for r in records if concerns(r, pin))
        return Verdict(
            pin, sha, known=bool(d["known"]), advisories=found, behind=d["behind"],
            upstream_head=d["upstream_head"], severities_since=d["severities_since"],
            reachable=d["reachable"], note=None if d["known"] else "revision not in the stored history",
        )

    def _url(self, advisory_id: str) -> str | None:
        return self.web_url(advisory_id) if self.web_url else None
