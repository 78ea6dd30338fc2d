"""The lean path of ``POST /v1/query`` for a plain commit query (issue 17).

A scanner's commit query (``{"commit": "<hex>"}``, nothing else) answered from the kept
commit answers is a label probe and a join of pre-encoded records; the FastAPI stack around
it (error and exception middlewares, routing, the request and response objects, the send
wrappers) cost about as much again. This ASGI middleware, in front of the app, answers such
a query itself with the route's exact bytes and headers; anything else (another body,
another route, a body that is not small, an answer not kept) goes to the app unchanged, its
body replayed, so validation, errors (400 code 3, 413) and the OpenAPI document stay the
route's own.

Imports: stdlib, tracker.api.{guard,osv_routes,renamed}.
"""

from __future__ import annotations

import json

from tracker.api.guard import NOSNIFF, App, Message, Receive, Scope, Send
from tracker.api.osv_routes import KeptCommits, plain_commits, vulns_json
from tracker.api.renamed import route_path

SMALL_BODY = 4096  # a commit query is ~60 bytes; larger bodies are the route's to read


class CommitQueryFastPath:
    """Answers kept plain commit queries before the app; passes everything else through."""

    def __init__(self, app: App, *, kept: KeptCommits) -> None:
        self.app, self.kept = app, kept

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        small = scope["type"] == "http" and scope["method"] == "POST" and _small_body(scope)
        if not small or scope.get("query_string") or route_path(scope) != "/v1/query":  # (the guard's %00 check)
            await self.app(scope, receive, send)
            return
        body, messages = await _read(receive)
        commit = _plain_commit(body) if body is not None else None
        held = None
        if commit is not None:
            self.kept.warm_soon()  # (PostgreSQL: after a label stamp read shared by the queries in flight)
            held = await self.kept.kept_soon([commit], brief=False)
        if commit is None or held is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        answer = vulns_json(held[commit]).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-length", str(len(answer)).encode()), (b"content-type", b"application/json"),
            NOSNIFF,  # what tracker.api.guard adds to every answer
        ]})
        await send({"type": "http.response.body", "body": answer})


def _small_body(scope: Scope) -> bool:
    """The request declares a body of at most ``SMALL_BODY`` bytes (chunked ones are the route's)."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            return value.isdigit() and int(value) <= SMALL_BODY
    return False


async def _read(receive: Receive) -> tuple[bytes | None, list[Message]]:
    """The whole body (None: the client went away first) and the messages it came in, to be
    replayed as they came when the app answers instead (the server holds a body to its
    declared length)."""
    messages: list[Message] = []
    body = b""
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return None, messages
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return body, messages


def _plain_commit(body: bytes) -> str | None:
    """The lowercased commit of a body that is exactly ``{"commit": "<hex>"}``, else None."""
    try:
        query = json.loads(body)
    except (ValueError, RecursionError):
        return None
    commits = plain_commits([query])
    return commits[0] if commits else None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """``receive`` as the app would have had it: the messages already read, then the rest."""
    queue = list(messages)

    async def replayed() -> Message:
        return queue.pop(0) if queue else await receive()

    return replayed
