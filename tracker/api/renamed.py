"""Reads by a renamed repo's old id (issue 10 point 8): its JSON, pages and feed answer a 307
to the same path under the id the repo moved to, as the Hub itself does for the old name.

An ASGI middleware, so every route under ``/api/v1/repos/``, ``/repos/`` and ``/feeds/``
follows a rename without each knowing of it; an id that is tracked (again) is served as is.
Its one look-up (:meth:`storage.store.Store.probe_repo`) also reads the repo's history
version, left in the scope (:func:`probe_of`) for the routes that keep pages by it; the
revisions route and the repo page make that look-up themselves, with their page
(``_FOLLOWS_ITSELF``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import quote, unquote

from starlette.concurrency import run_in_threadpool

from storage.history_rows import RepoProbe
from storage.store import Store

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_REPO_PATH = re.compile(r"^(/api/v1/repos/|/repos/)([^/]+)/([^/]+)(/.*)?$")
_FEED_PATH = re.compile(r"^(/feeds/)([^/]+)/([^/]+)\.atom$")
_PROBE_KEY = "hubwatch.repo_probe"
#: Routes that answer a former id's 307 themselves, from the look-up that also reads their
#: page (one worker thread and one connection per request instead of two: issue 17).
_FOLLOWS_ITSELF = re.compile(r"^(/api/v1/repos/[^/]+/[^/]+/revisions|/repos/[^/]+/[^/]+)$")


def probe_of(scope: Scope, repo_id: str) -> RepoProbe | None:
    """The look-up this request's middleware made of ``repo_id``, if it made one."""
    found = scope.get(_PROBE_KEY)
    return found[1] if found is not None and found[0] == repo_id else None


class RenamedRepos:
    """307 from a former repo id to the current one; everything else passes through."""

    def __init__(self, app: App, *, store: Store):
        self.app, self.store = app, store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = route_path(scope) if scope["type"] == "http" and scope["method"] in ("GET", "HEAD") else ""
        if (_FEED_PATH.match(path) or _REPO_PATH.match(path)) and not _FOLLOWS_ITSELF.match(path):
            target = await run_in_threadpool(self._moved, scope, path)
            if target is not None:
                location = moved_location(scope, target)
                await send({"type": "http.response.start", "status": 307,
                            "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)

    def _moved(self, scope: Scope, path: str) -> str | None:
        repo_id, _ = repo_of_path(path)
        probe = self.store.probe_repo(repo_id)
        scope[_PROBE_KEY] = (repo_id, probe)
        return None if probe.moved_to is None else moved_path(path, probe.moved_to)


def repo_of_path(path: str) -> tuple[str, re.Match[str]]:
    m = _FEED_PATH.match(path) or _REPO_PATH.match(path)
    assert m is not None
    return f"{unquote(m.group(2))}/{unquote(m.group(3))}", m


def moved_path(path: str, moved_to: str) -> str:
    """``path`` (a repo's page, route or feed) under the id the repo moved to."""
    _, m = repo_of_path(path)
    org, name = (quote(p, safe="") for p in moved_to.split("/", 1))
    rest = ".atom" if m.re is _FEED_PATH else (m.group(4) or "")
    return f"{m.group(1)}{org}/{name}{rest}"


def route_path(scope: Scope) -> str:
    """The path as routes match it: without the root path the app is mounted under."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


def moved_location(scope: Scope, target: str) -> str:
    """The ``Location`` of the 307 to ``target``: root path and query kept."""
    query = scope.get("query_string", b"").decode("latin-1")
    return scope.get("root_path", "") + target + (f"?{query}" if query else "")
