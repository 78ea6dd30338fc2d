"""Stage 8 (read): ``/feeds/all.atom`` and ``/feeds/{org}/{name}.atom``, Atom feeds of advisories.

Feed readers poll, so every answer carries an ``ETag`` (a digest of the advisories' ids
and ``modified`` times and the base URL) and a ``Last-Modified`` (the newest ``modified``);
``If-None-Match`` / ``If-Modified-Since`` answer 304 without rendering anything.
The newest ``FEED_MAX`` advisories are in a feed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from email.utils import format_datetime
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request, Response

from advisories.atom import ALL_FEED_IRI, FeedInfo, render_feed, repo_feed_iri
from storage.records import AdvisoryRecord
from storage.store import Store
from tracker.api.conditional import not_modified
from tracker.api.views import iso
from tracker.config import Settings

FEED_MAX = 500
ATOM = "application/atom+xml; charset=utf-8"
_DOC: dict[int | str, dict[str, object]] = {
    200: {"content": {"application/atom+xml": {}}, "description": "Atom 1.0"}, 304: {"description": "not modified"}}


def feeds_router(store: Store, settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/feeds", tags=["feeds"])

    @router.get("/all.atom", response_class=Response, responses=_DOC)
    @router.head("/all.atom", include_in_schema=False)
    def all_feed(request: Request) -> Response:
        records = store.list_advisories(limit=FEED_MAX)
        base = public_base(settings, request)
        info = FeedInfo(id=ALL_FEED_IRI, title="hubwatch: all advisories",
                        subtitle="Changes to tracked Hugging Face model repos", self_url=base + "feeds/all.atom",
                        html_url=base)
        return _answer(request, info, records, base)

    @router.get("/{org}/{name}.atom", response_class=Response, responses=_DOC)
    @router.head("/{org}/{name}.atom", include_in_schema=False)
    def repo_feed(org: str, name: str, request: Request) -> Response:
        repo = store.get_repo(f"{org}/{name}")
        if repo is None:
            raise HTTPException(404, f"not tracked: {org}/{name}")
        records = store.list_advisories(repo.id, limit=FEED_MAX)
        base = public_base(settings, request)
        path = quote(repo.id)
        info = FeedInfo(id=repo_feed_iri(repo.id), title=f"hubwatch: {repo.id}",
                        subtitle=f"Advisories for upstream changes of {repo.id}",
                        self_url=f"{base}feeds/{path}.atom", html_url=f"{base}repos/{path}",
                        fallback_updated=iso(repo.added_at) or "1970-01-01T00:00:00Z")
        return _answer(request, info, records, base)

    return router


def public_base(settings: Settings, request: Request) -> str:
    """The absolute base of our links: ``[api] public_url``, else the configured listen address;
    never the client's ``Host`` header, which anyone can set (issue 16)."""
    root = request.scope.get("root_path", "").rstrip("/")
    if settings.api.public_url:
        return f"{settings.api.public_url.rstrip('/')}{root}/"
    host = settings.server.host
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.server.port}{root}/"


def _answer(request: Request, info: FeedInfo, records: Sequence[AdvisoryRecord], base: str) -> Response:
    etag = _etag(info.self_url, records)
    last = max((_utc(r.modified) for r in records), default=None)
    headers = {"ETag": etag, "Cache-Control": "public, max-age=60"}
    if last is not None:
        headers["Last-Modified"] = format_datetime(last.replace(microsecond=0), usegmt=True)
    if not_modified(request, etag, last):
        return Response(status_code=304, headers=headers)
    body = render_feed(info, [r.record for r in records],
                       entry_link=lambda rid: f"{base}advisories/{quote(rid)}",
                       json_link=lambda rid: f"{base}v1/vulns/{quote(rid)}")
    if request.method == "HEAD":
        return Response(status_code=200, headers={**headers, "Content-Length": str(len(body))}, media_type=ATOM)
    return Response(body, media_type=ATOM, headers=headers)


def _utc(ts: datetime) -> datetime:
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _etag(self_url: str, records: Sequence[AdvisoryRecord]) -> str:
    h = hashlib.sha256(self_url.encode())
    for r in records:
        h.update(f"\n{r.id}|{_utc(r.modified).isoformat()}|{r.withdrawn is not None}".encode())
    return f'"{h.hexdigest()[:32]}"'
