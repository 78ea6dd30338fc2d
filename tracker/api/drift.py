"""Stage 8 (read): how far a pinned revision is behind its repo's stored head.

``drift(store, repo_id, revision)`` answers, from stored history only:

- ``tracked``: the store holds the repo; ``known``: it holds the revision (a sha or a unique
  prefix, resolved into ``revision``); ``reachable``: still on the tracked branch;
- ``upstream_head``: the branch head; ``behind``: how many stored revisions the head has
  that the pinned revision has not (in git terms ``git rev-list --count pinned..head``);
- ``severities_since``: the severities of those revisions, counted (``{"HIGH": 1}``).

Ancestry comes from the same reader the OSV routes use, so ``audit`` and ``/v1/query`` walk
one graph. Served as ``POST /api/v1/drift`` with ``{"queries": [{"repo", "revision"}]}``
(at most 1,000), answering ``{"results": [...]}`` in order; ``hubwatch audit --server``
reads it when the server is a hubwatch.

Imports: stdlib, fastapi, storage, tracker.api.store_reader.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from fastapi import APIRouter, HTTPException, Request

from storage.store import Store
from tracker.api.store_reader import StoreAdvisoryReader
from tracker.config import Settings

MAX_QUERIES = 1000
_HEX = re.compile(r"^[0-9a-fA-F]{4,64}$")


def drift(store: Store, repo_id: str, revision: str) -> dict[str, Any]:
    """The drift of ``repo_id`` at ``revision`` (see the module docstring)."""
    out: dict[str, Any] = {"repo": repo_id, "revision": revision.lower(), "tracked": False, "known": False,
                           "reachable": None, "upstream_head": None, "behind": None, "severities_since": {}}
    repo = store.get_repo(repo_id)
    if repo is None:
        return out
    out.update(tracked=True, upstream_head=repo.head_sha)
    rev = store.get_revision(repo_id, revision) if _HEX.match(revision) else None
    if rev is None:
        return out
    out.update(known=True, revision=rev.sha, reachable=rev.reachable)
    if repo.head_sha is None:
        return out
    reader = StoreAdvisoryReader(store)
    since = (reader.ancestors_of(repo.head_sha) | {repo.head_sha}) - reader.ancestors_of(rev.sha) - {rev.sha}
    severities = {r.sha: r.severity for r in store.history(repo_id, with_changes=False)}
    counted = Counter(severities[s] for s in since if severities.get(s))
    out.update(behind=len(since), severities_since=dict(sorted(counted.items())))
    return out


def drift_router(store: Store, settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["api"])

    @router.post("/drift")
    async def drift_batch(request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError as e:
            raise HTTPException(400, "the body is not JSON") from e
        queries = body.get("queries") if isinstance(body, dict) else None
        if not isinstance(queries, list) or len(queries) > MAX_QUERIES:
            raise HTTPException(400, f"queries must be a list of at most {MAX_QUERIES}")
        parsed = []
        for q in queries:
            repo, rev = (q.get("repo"), q.get("revision")) if isinstance(q, dict) else (None, None)
            if not isinstance(repo, str) or not isinstance(rev, str) or len(repo) > 200 or len(rev) > 64:
                raise HTTPException(400, "each query is {\"repo\": \"org/name\", \"revision\": \"<hex>\"}")
            parsed.append((repo, rev))

        from starlette.concurrency import run_in_threadpool

        results = await run_in_threadpool(lambda: [drift(store, r, v) for r, v in parsed])
        return {"results": results}

    return router
