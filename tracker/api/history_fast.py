"""The lean path of history pages (issue 17): ``GET /api/v1/repos/{org}/{name}/revisions``
and the repo page, ``GET /repos/{org}/{name}``.

A history page is one or two statements (the page itself kept per repo version); the
FastAPI stack around it (error and exception middlewares, routing, the request and response
objects, the send wrappers) cost as much as the page's own work. This ASGI middleware, in
front of the app, answers a plain request for either itself, with the route's bytes and
headers (the same functions: ``tracker.api.rest._kept_page``, ``tracker.api.pages.repo_page_html``;
the guard's headers); anything else goes to the app unchanged: another method or path, a URL
the guard refuses (``%00``), a query the route answers 400, a conditional request (the JSON
route's 304), a former id (307) or an id not tracked (404). The OpenAPI document stays the
routes' own.

Imports: stdlib, starlette, fastapi, markupsafe, storage.store, tracker.api.{guard,page_cache,pages,renamed,rest}.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import HTTPException
from markupsafe import Markup
from starlette.datastructures import QueryParams

from storage.store import PAGE_CONNECTIONS, LoopBusy, Store
from tracker.api import pages, rest
from tracker.api.guard import NOSNIFF, PAGE_HEADERS, App, Receive, Scope, Send
from tracker.api.page_cache import Kept, PageCache
from tracker.api.renamed import route_path

#: the routes' paths as Starlette compiles ``/api/v1/repos/{org}/{name}/revisions`` and ``/repos/{org}/{name}``
REVISIONS = re.compile(r"^/api/v1/repos/(?P<org>[^/]+)/(?P<name>[^/]+)/revisions$")
REPO_PAGE = re.compile(r"^/repos/(?P<org>[^/]+)/(?P<name>[^/]+)$")


class HistoryPageFastPath:
    """Answers plain history page requests before the app; passes everything else through."""

    def __init__(self, app: App, *, store: Store) -> None:
        self.app, self.store = app, store
        self.pages: PageCache[Kept] = PageCache()
        self.fragments: PageCache[Markup] = PageCache(64 * 1024 * 1024)  # as tracker.api.pages keeps them
        # the pages' own threads, as many as their connections (more would wait for one): a hop
        # to one costs a third of anyio's, which adds a limiter and a cancel scope (47 us of CPU
        # against 131 under 16 connections, issue 17)
        self.threads = ThreadPoolExecutor(PAGE_CONNECTIONS, thread_name_prefix="hubwatch-pages")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = await self._answer(scope) if scope["type"] == "http" and scope["method"] == "GET" else None
        if answer is None:
            await self.app(scope, receive, send)
            return
        headers, body = answer
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _call(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` here on the event loop where the store has a connection for it
        (SQLite: a page is ~0.1 ms of reading, less than a worker thread's hop and the GIL's
        hand-overs under 16 connections cost, issue 17), else, or when that connection is
        locked, in one of the pages' threads."""
        if self.store.loop_reads is not None:
            with contextlib.suppress(LoopBusy):
                return fn(*args, on_loop=True)
        return await asyncio.get_running_loop().run_in_executor(self.threads, functools.partial(fn, *args))

    async def _answer(self, scope: Scope) -> tuple[list[tuple[bytes, bytes]], bytes] | None:
        """The headers and body of this request's page, or None when the app is to answer it."""
        query = scope.get("query_string", b"")
        if "\x00" in scope["path"] or b"%00" in query:
            return None
        route = route_path(scope)
        if (found := REVISIONS.match(route)) is not None:
            return None if _conditional(scope) else await self._json(scope, route, found, query)
        if (found := REPO_PAGE.match(route)) is not None:
            return await self._html(scope, found, query)
        return None

    async def _json(self, scope: Scope, route: str, found: re.Match[str], query: bytes
                    ) -> tuple[list[tuple[bytes, bytes]], bytes] | None:
        try:
            cursor, limit = rest.page_query(QueryParams(query))
            key = (f"{found['org']}/{found['name']}", cursor, limit, rest.url_path(scope))
            kept = await self._call(rest._kept_page, self.store, self.pages, key, route)
        except HTTPException:  # a 400 or a 404: the route's own answer
            return None
        if not isinstance(kept, Kept):  # a former id: the route's 307
            return None
        # as Starlette's Response writes them (the given headers, then length and type), then the guard's
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in kept.headers.items()]
        headers += [(b"etag", kept.etag.encode("latin-1")), (b"content-length", str(len(kept.body)).encode()),
                    (b"content-type", b"application/json"), NOSNIFF]
        return headers, kept.body

    async def _html(self, scope: Scope, found: re.Match[str], query: bytes
                    ) -> tuple[list[tuple[bytes, bytes]], bytes] | None:
        asked = pages.page_query(QueryParams(query))
        if asked is None:  # the route's 400 page
            return None
        root = scope.get("root_path", "").rstrip("/")
        html, _moved = await self._call(pages.repo_page_html, self.store, self.fragments,
                                               f"{found['org']}/{found['name']}", *asked, root)
        if html is None:  # a former id's 307, or the route's 404 page
            return None
        body = html.encode("utf-8")
        return [(b"content-length", str(len(body)).encode()), (b"content-type", b"text/html; charset=utf-8"),
                *PAGE_HEADERS], body


def _conditional(scope: Scope) -> bool:
    return any(name.lower() == b"if-none-match" for name, _ in scope.get("headers", ()))
