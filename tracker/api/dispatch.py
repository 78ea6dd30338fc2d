"""Stage 8 (read): each included router is asked about a request only when its path could be one of its routes'.

FastAPI asks the app's included routers in order whether a path is theirs, each by trying
its routes' patterns one after another (and the chosen one once more to handle it): the
pages, included last, paid for every pattern of the JSON API, the OSV API and the feeds
first (~60 µs of a page, issue 17). A route's pattern matches only paths that begin with
its literal part (what comes before its first ``{``), so an included router none of whose
routes' literal parts begins the path (or, for a path without parameters, is the path)
can answer neither a match nor a partial one (a 405):
:func:`gate_included_routers` has it say so at once. Order, matches, 405s, 404s and the
OpenAPI document are FastAPI's own; a router with a route whose path is not a plain pattern
(a mount, a host, a frontend) is asked as before.

Imports: stdlib, fastapi/starlette.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette._utils import get_route_path
from starlette.routing import Match, Route

Scope = dict[str, Any]
Matcher = Callable[[Scope], tuple[Match, Scope]]


def gate_included_routers(app: FastAPI) -> int:
    """Put a prefix check in front of each included router's ``matches``; returns how many
    were gated (none where FastAPI's included routers are not what this expects)."""
    gated = 0
    for route in app.router.routes:
        candidates = getattr(route, "effective_candidates", None)
        contexts = getattr(route, "effective_route_contexts", None)
        if candidates is None or contexts is None or "matches" in vars(route):
            continue
        route.matches = _gated(route.matches, candidates, contexts)
        gated += 1
    return gated


def literal_parts(contexts: Callable[[], Any]) -> tuple[frozenset[str], tuple[str, ...]] | None:
    """An included router's paths without parameters (matched whole) and the literal
    beginnings of those with, or None when one of its routes is not a plain path pattern
    (it is then always asked)."""
    exact: set[str] = set()
    prefixes: set[str] = set()
    for ctx in contexts():
        original = ctx.original_route
        if isinstance(original, APIRoute):
            path = ctx.path_format
        elif type(original) is Route and ctx.starlette_route is not None:
            path = getattr(ctx.starlette_route, "path_format", "")
        else:
            return None
        if not path.startswith("/"):
            return None
        if "{" in path:
            prefixes.add(path.split("{", 1)[0])
        else:
            exact.add(path)
    return frozenset(exact), tuple(sorted(prefixes))


def _gated(matches: Matcher, candidates: Callable[[], Any], contexts: Callable[[], Any]) -> Matcher:
    """``matches``, asked only for a path that begins with one of the router's literal
    prefixes; worked out again whenever the router's routes change (FastAPI builds a new
    candidate list then)."""
    known: list[Any] = [None, None]  # the candidate list the parts were worked out from, the parts

    def gated(scope: Scope) -> tuple[Match, Scope]:
        current = candidates()
        if current is not known[0]:
            known[0], known[1] = current, literal_parts(contexts)
        parts = known[1]
        if parts is not None and scope["type"] in ("http", "websocket"):
            path = get_route_path(scope)
            if path not in parts[0] and not path.startswith(parts[1]):
                return Match.NONE, {}
        return matches(scope)

    return gated
