"""The store as an :class:`~tracker.api.readers.AdvisoryReader` for the OSV routes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from storage.renames import canonical_id
from storage.store import Store

PURL_PREFIX = "pkg:huggingface/"


def repo_of_purl(purl: str) -> str | None:
    """``pkg:huggingface/org/name[@sha]`` -> ``org/name``."""
    if not purl.lower().startswith(PURL_PREFIX):
        return None
    rest = purl[len(PURL_PREFIX) :].split("?", 1)[0].split("#", 1)[0].split("@", 1)[0]
    parts = [p for p in rest.split("/") if p]
    return "/".join(parts) if len(parts) == 2 else None


class StoreAdvisoryReader:
    def __init__(self, store: Store):
        self.store = store

    def get(self, id: str) -> dict[str, Any] | None:
        row = self.store.get_advisory(id)
        return None if row is None else row.record

    def all_records(self) -> Iterable[dict[str, Any]]:
        return [r.record for r in self.store.list_advisories()]

    def for_purl(self, purl: str) -> list[dict[str, Any]]:
        repo_id = repo_of_purl(purl)
        if repo_id is None:
            return []
        # a renamed repo's records are stored under its new id and name both (issue 10)
        return [r.record for r in self.store.list_advisories(canonical_id(self.store, repo_id))]

    def for_package(self, ecosystem: str, name: str) -> list[dict[str, Any]]:
        return []  # hubwatch's records name repos by GIT range and purl, never by package

    def affecting(self, shas: Iterable[str], *, full: bool = True) -> dict[str, list[dict[str, Any]]]:
        return self.store.advisories_affecting(shas, full=full)

    def affecting_json(self, shas: Iterable[str], *, brief: bool,
                       deadline: float | None = None) -> dict[str, Sequence[str]] | None:
        return self.store.advisories_affecting_json(shas, brief=brief, deadline=deadline)

    def ancestors_of(self, sha: str) -> set[str]:
        """Every stored ancestor of ``sha`` (a walk: the drift route counts them; queries
        never call it)."""
        sha = sha.lower()
        seen: set[str] = set()
        for repo_id in set(self.store.repos_with_commit(sha)):
            graph = self.store.commit_graph(repo_id)
            stack = list(graph.get(sha, ()))
            while stack:
                current = stack.pop()
                if current not in seen:
                    seen.add(current)
                    stack.extend(graph.get(current, ()))
        return seen
