"""Stage 8 (read): the JSON API of DESIGN.md's route table under ``/api/v1``.

- ``GET/POST /repos``, ``GET/DELETE /repos/{org}/{name}``: tracked repos. A POST only writes
  the row the daemon picks up (it never reads the Hub); writes need the bearer token.
- ``GET /repos/{org}/{name}/revisions?cursor=&limit=``: ``{"revisions": [...], "next_cursor"}``,
  newest first, also a ``Link: <...>; rel="next"`` header. The cursor is the arrival order
  of the last revision returned, so pages stay stable while new revisions arrive.
- ``GET /repos/{org}/{name}/revisions/{sha}``, ``/compare/{base}...{head}``, ``/plan``,
  ``POST /plan``, ``/repos/{org}/{name}/badge.json`` (shields.io endpoint schema).
- Subscriptions: :mod:`tracker.api.rest_subscriptions`.

Errors are ``{"code", "message"}`` (installed by :mod:`tracker.api.app`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from storage import repairs
from storage.records import RepoRecord, RevisionRecord
from storage.store import Store, read_again_if_dropped
from tracker.api import compute
from tracker.api.auth import token_guard
from tracker.api.conditional import not_modified
from tracker.api.history_views import page_json
from tracker.api.page_cache import Kept, PageCache
from tracker.api.renamed import moved_location, moved_path, route_path
from tracker.api.rest_subscriptions import subscriptions_router
from tracker.api.source_policy import check_git_source
from tracker.api.views import repair_json, repo_json, revision_json
from tracker.config import Settings
from tracker.errors import AlreadyTracked

PAGE_DEFAULT, PAGE_MAX = 50, 1000
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
REV = re.compile(r"^[0-9a-fA-F]{4,64}$")
CURSOR = re.compile(r"^[0-9]{1,10}$")
CURSOR_MAX = 2**31 - 1  # revisions.seq is a 32-bit INTEGER on PostgreSQL


def cursor_value(text: str | None) -> int | None:
    """A cursor's arrival order, or None unless it is 1 to CURSOR_MAX in ASCII digits."""
    if not text or not CURSOR.match(text):
        return None
    value = int(text)
    return value if 1 <= value <= CURSOR_MAX else None
BACKFILL = re.compile(r"^(all|none|[1-9][0-9]{0,6})$")
BADGE_COLORS = {"CRITICAL": "critical", "HIGH": "orange", "MODERATE": "yellow", "LOW": "informational"}


class RepoIn(BaseModel):
    """``source``: a Hub ``org/name`` or a git location; ``id`` (or ``as``) names a git source."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    source: str | None = Field(None, min_length=1, max_length=2000)
    id: str | None = Field(None, min_length=3, max_length=200)
    as_id: str | None = Field(None, alias="as", min_length=3, max_length=200)
    branch: str = Field("main", min_length=1, max_length=255, pattern=r"^[^\s~^:?*\[\\]+$")
    backfill: str = Field("all", pattern=BACKFILL.pattern)


class HistoryPage(BaseModel):
    repo: str
    revisions: list[dict[str, Any]]
    next_cursor: str | None


class RepoOut(BaseModel):
    id: str
    source: str
    source_kind: str
    branch: str
    head: str | None
    revisions: int
    status: str
    last_poll: str | None
    last_success: str | None
    last_change: str | None
    last_error: str | None
    last_error_kind: str | None
    failures: int
    next_check: str | None


def rest_router(store: Store, settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["api"])
    writes = [Depends(token_guard(settings))]
    pages: PageCache[Kept] = PageCache()

    def repo_or_404(org: str, name: str) -> RepoRecord:
        repo = store.get_repo(f"{org}/{name}")
        if repo is None:
            raise HTTPException(404, f"not tracked: {org}/{name}")
        return repo

    def revision_or_404(repo_id: str, rev: str) -> RevisionRecord:
        if not REV.match(rev):
            raise HTTPException(400, f"not a revision: {rev[:80]!r} (4 to 64 hex digits)")
        found = store.get_revision(repo_id, rev)
        if found is None:
            raise HTTPException(404, f"{repo_id}: no stored revision {rev!r} (or the prefix is ambiguous)")
        return found

    @router.get("/repos", responses={200: {"model": list[RepoOut]}})
    def list_repos() -> list[dict[str, Any]]:
        return [repo_json(r) for r in store.list_repos()]

    @router.post("/repos", status_code=201, dependencies=writes,
                 responses={201: {"model": RepoOut}, 200: {"model": RepoOut, "description": "already tracked"}})
    def add_repo(body: RepoIn, response: Response) -> dict[str, Any]:
        repo_id, source, kind = _classify(body)
        if kind == "git":
            check_git_source(source, allow_git=settings.api.allow_git_sources,
                             allow_private=settings.webhooks.allow_private_destinations)
        try:
            record, created = store.add_repo(repo_id, source=source, source_kind=kind, branch=body.branch,
                                             backfill=body.backfill, added_by="api")
        except AlreadyTracked as e:
            raise HTTPException(409, str(e)) from e
        if not created:
            response.status_code = 200
        return repo_json(record)

    @router.get("/repos/{org}/{name}", responses={200: {"model": RepoOut}})
    def get_repo(org: str, name: str) -> dict[str, Any]:
        return repo_json(repo_or_404(org, name))

    @router.delete("/repos/{org}/{name}", status_code=204, dependencies=writes)
    def untrack(org: str, name: str) -> Response:
        repo = repo_or_404(org, name)
        if not store.untrack(repo.id):
            raise HTTPException(404, f"not tracked: {repo.id}")
        return Response(status_code=204)

    @router.get("/repos/{org}/{name}/revisions", responses={200: {"model": HistoryPage}},
                openapi_extra={"parameters": REPO_PARAMETERS + PAGE_PARAMETERS})
    async def revisions(request: Request) -> Response:
        """Encoded once per page and kept per repo version (issue 17), with a strong ETag:
        ``If-None-Match`` answers 304. One worker thread and one connection per request: the
        version look-up (which also finds a former id: 307, as the rename middleware answers
        elsewhere) and, when no page is kept at that version, the page. The path and query
        are read here (:func:`page_query`), not by FastAPI's parameter machinery: that was
        a third of a computed page's CPU."""
        cursor, limit = page_query(request.query_params)
        path = request.path_params
        repo_id = f"{path['org']}/{path['name']}"
        key = (repo_id, cursor, limit, url_path(request.scope))
        kept = await run_in_threadpool(_kept_page, store, pages, key, route_path(request.scope))
        if isinstance(kept, str):
            return Response(status_code=307, headers={"location": moved_location(request.scope, kept)})
        headers = {**kept.headers, "ETag": kept.etag}
        if not_modified(request, kept.etag, None):
            return Response(status_code=304, headers=headers)
        return Response(kept.body, media_type="application/json", headers=headers)

    @router.get("/repos/{org}/{name}/revisions/{sha}")
    def revision(org: str, name: str, sha: str) -> dict[str, Any]:
        repo = repo_or_404(org, name)
        rev = revision_or_404(repo.id, sha)
        doc = revision_json(rev, detail=True)
        doc["plan"] = rev.plan or store.plan_at(repo.id, rev.seq)
        repair = repair_json(repairs.state(store, repo.id, rev.sha))
        if repair is not None:
            doc["repair"] = repair
        return doc

    @router.get("/repos/{org}/{name}/compare/{spec}")
    def compare(org: str, name: str, spec: str) -> dict[str, Any]:
        repo = repo_or_404(org, name)
        base, sep, head = spec.partition("...")
        if not sep:
            raise HTTPException(400, "compare takes BASE...HEAD")
        return compute.compare_revisions(store, settings, repo.id, revision_or_404(repo.id, base),
                                         revision_or_404(repo.id, head))

    @router.get("/repos/{org}/{name}/plan")
    def repo_plan(org: str, name: str,
                  revision: str | None = Query(None, max_length=64, description="a sha or prefix; default: head")
                  ) -> dict[str, Any]:
        repo = repo_or_404(org, name)
        if revision is not None:
            rev = revision_or_404(repo.id, revision)
        else:
            last = store.history(repo.id, limit=1, with_changes=False)
            if not last:
                raise HTTPException(404, f"{repo.id}: no revision stored yet")
            rev = store.get_revision(repo.id, repo.head_sha or last[0].sha) or last[0]
        plan = rev.plan or store.plan_at(repo.id, rev.seq)
        if plan is None:
            raise HTTPException(404, f"{repo.id}@{rev.sha[:12]}: no plan (no readable config.json up to it)")
        return {**plan, "repo": repo.id, "revision": rev.sha}

    @router.post("/plan", openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"type": "object", "description": "a config.json (or an array of them)"}}}}})
    async def post_plan(request: Request) -> Any:
        doc = compute.parse_config_body(await request.body())
        if isinstance(doc, list):
            return [compute.plan_config(settings, d) for d in doc]
        return compute.plan_config(settings, doc)

    @router.get("/repos/{org}/{name}/badge.json")
    def badge(org: str, name: str, response: Response) -> dict[str, Any]:
        repo = repo_or_404(org, name)
        response.headers["Cache-Control"] = "public, max-age=300"
        return _badge(store, repo)

    router.include_router(subscriptions_router(store, settings))
    return router


@read_again_if_dropped
def _kept_page(store: Store, pages: PageCache[Kept], key: tuple[str, int | None, int, str],
               route: str, on_loop: bool = False) -> Kept | str:
    """The page of ``key`` (repo, cursor, size, path), kept at the version read before it was
    read (a write in between only makes the next request miss); the path to redirect to when
    the id is a renamed repo's former one; 404 when not tracked. ``on_loop``: see
    :meth:`storage.store.Store.history_reader`."""
    repo_id, before, size, path = key
    with store.history_reader(on_loop=on_loop) as reader:
        if reader.reads_together and key not in pages:  # never kept: a miss at any version, so read with it
            version, revs = reader.versioned_page_json(repo_id, limit=size + 1, before_seq=before)
            if version is not None:
                kept = _history_page(revs, repo_id, size, path)
                pages.put(key, version, kept, len(kept.body) + 200)
                return kept
        probe = reader.probe(repo_id)  # kept at some version, or not tracked under this id
        if probe.moved_to is not None:
            return moved_path(route, probe.moved_to)
        if probe.version is None:
            raise HTTPException(404, f"not tracked: {repo_id}")
        kept = pages.get(key, probe.version)
        if kept is None:
            kept = _history_page(reader.page_json(repo_id, limit=size + 1, before_seq=before), repo_id, size, path)
            pages.put(key, probe.version, kept, len(kept.body) + 200)
    return kept


def _history_page(revs: list[tuple[int, str]], repo_id: str, size: int, path: str) -> Kept:
    """One page of history (``size + 1`` entries read), encoded, with its ``Link`` header."""
    more = len(revs) > size
    revs = revs[:size]
    next_cursor = str(revs[-1][0]) if more and revs else None
    headers = {}
    if next_cursor is not None:
        headers["Link"] = f'<{path}?{urlencode({"cursor": next_cursor, "limit": size})}>; rel="next"'
    return Kept.of(page_json(repo_id, revs, next_cursor), headers)


def url_path(scope: Mapping[str, Any]) -> str:
    """``request.url.path`` without building the URL (a tenth of a kept page's answer): the
    path with ``?``, ``#`` and ``\\`` escaped as Starlette escapes them (it would also drop
    tabs and newlines, which no tracked repo's id holds)."""
    return str(scope["path"]).replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")


def page_query(query: Mapping[str, str], page_max: int = PAGE_MAX) -> tuple[int | None, int]:
    """``(cursor's arrival order or None, page size at most page_max)`` of a history page's
    query (:data:`PAGE_PARAMETERS`), or a 400."""
    cursor, limit = query.get("cursor"), query.get("limit", str(PAGE_DEFAULT))
    if cursor is not None and len(cursor) > 20:
        raise HTTPException(400, "invalid request: query.cursor: String should have at most 20 characters")
    digits = limit.strip()
    size = int(digits) if digits.isascii() and digits.isdigit() and len(digits) < 4000 else 0  # int()'s digit cap
    if size < 1:
        raise HTTPException(400, f"invalid request: query.limit: want a whole number from 1, not {limit[:20]!r}")
    return _cursor(cursor), min(size, page_max)


#: a repo route's path, as the OpenAPI document describes it (for routes that read it themselves)
REPO_PARAMETERS = [{"name": n, "in": "path", "required": True, "schema": {"type": "string", "title": n.title()}}
                   for n in ("org", "name")]
#: what :func:`page_query` reads, as the OpenAPI document describes it
PAGE_PARAMETERS = [
    {"name": "cursor", "in": "query", "required": False, "description": "next_cursor of the previous page",
     "schema": {"anyOf": [{"type": "string", "maxLength": 20}, {"type": "null"}], "title": "Cursor"}},
    {"name": "limit", "in": "query", "required": False,
     "description": f"page size (at most {PAGE_MAX} are returned)",
     "schema": {"type": "integer", "minimum": 1, "default": PAGE_DEFAULT, "title": "Limit"}},
]


def _cursor(cursor: str | None) -> int | None:
    if cursor in (None, ""):
        return None
    value = cursor_value(cursor)
    if value is None:
        raise HTTPException(400, f"invalid cursor {cursor[:40]!r}: pass next_cursor of the previous page")
    return value


def _classify(body: RepoIn) -> tuple[str, str, str]:
    """(repo id, source, kind) of a POST: a Hub id, or a git location named by ``id``/``as``."""
    name = body.as_id or body.id
    source = body.source or name
    if source is None:
        raise HTTPException(400, "invalid request: give source (org/name or a git location) or id")
    if HUB_ID.match(source) and not source.endswith((".git", ".bundle")):
        if name is not None and name != source:
            raise HTTPException(400, "a Hub repo is tracked under its own id")
        return source, source, "hub"
    repo_id = name or _git_name(source)
    if not HUB_ID.match(repo_id):
        raise HTTPException(400, f"invalid repo id {repo_id!r}: want org/name")
    return repo_id, source, "git"


def _git_name(location: str) -> str:
    """``org/name`` from the last two parts of a git path or URL (``org__name.bundle`` -> org/name)."""
    path = location.split("://", 1)[-1].split("?", 1)[0].rstrip("/")
    parts = [p for p in re.split(r"[/\\:]+", path) if p]
    if not parts:
        raise HTTPException(400, f"cannot name a repo after {location[:200]!r}; give id")
    last = re.sub(r"\.(git|bundle)$", "", parts[-1])
    if "__" in last and parts[-1].endswith(".bundle"):
        return last.replace("__", "/", 1)
    return f"{parts[-2]}/{last}" if len(parts) >= 2 else last


def _badge(store: Store, repo: RepoRecord) -> dict[str, Any]:
    """shields.io endpoint JSON: advisory count and the newest advisory's severity."""
    open_ = [a for a in store.list_advisories(repo.id) if a.withdrawn is None]
    if not open_:
        return {"schemaVersion": 1, "label": "hubwatch", "message": "no advisories", "color": "brightgreen",
                "cacheSeconds": 300}
    latest = open_[0]
    n = len(open_)
    return {"schemaVersion": 1, "label": "hubwatch",
            "message": f"{n} advisor{'y' if n == 1 else 'ies'}, latest {latest.severity.lower()}",
            "color": BADGE_COLORS.get(latest.severity, "lightgrey"), "cacheSeconds": 300}
