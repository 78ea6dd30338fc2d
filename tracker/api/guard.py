"""Stage 8 (read): an ASGI middleware in front of every route (issue 16, points 8 and lower).

- A request body under ``/api/`` is capped before any route reads it: a declared ``Content-Length`` over
  ``[api] max_body_bytes`` is answered 413 at once, a streamed body is buffered only up to
  the cap (a 300 MB body once pushed the server past 650 MB before its 413).
- Writes to token-guarded routes are authenticated before their body is read at all.
- A URL with a NUL character (``%00``) is answered 400: no id, sha or cursor has one, and
  PostgreSQL refuses such a string outright (a 500 on every route that looked it up).
- Every answer says ``X-Content-Type-Options: nosniff``; pages also carry a strict
  Content-Security-Policy, ``X-Frame-Options: DENY`` and ``Referrer-Policy``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from tracker.api.auth import token_refusal

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_BODYLESS = {"GET", "HEAD", "OPTIONS"}
#: Routes whose writes need the API token; ``/api/v1/plan`` is public compute.
_GUARDED = ("/api/v1/repos", "/api/v1/subscriptions")
_CSP = ("default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data: https:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
#: what every answer gets, and what a page (text/html) gets, in this order (unless it set them)
NOSNIFF = (b"x-content-type-options", b"nosniff")
PAGE_HEADERS = (NOSNIFF, (b"content-security-policy", _CSP.encode()), (b"x-frame-options", b"DENY"),
                (b"referrer-policy", b"same-origin"))


class RequestGuard:
    """Caps bodies, authenticates guarded writes first, and adds the security headers."""

    def __init__(self, app: App, *, max_body: int, api_token: str | None):
        self.app, self.max_body, self.api_token = app, max_body, api_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        path = scope.get("path", "")
        if "\x00" in path or b"%00" in scope.get("query_string", b""):
            await _refuse(send, 400, "a URL may not contain NUL characters")
            return
        if scope["method"] in _BODYLESS or not path.startswith("/api/"):  # /v1 and /hooks cap their own
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if path.startswith(_GUARDED):
            refusal = token_refusal(self.api_token, headers.get("authorization", ""))
            if refusal is not None:
                await _refuse(send, refusal.status_code, str(refusal.detail), refusal.headers)
                return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            await _refuse(send, 413, f"request body over {self.max_body} bytes")
            return
        body = await _read_capped(receive, self.max_body)
        if body is None:
            await _refuse(send, 413, f"request body over {self.max_body} bytes")
            return
        await self.app(scope, _replay(body), send)


async def _read_capped(receive: Receive, cap: int) -> bytes | None:
    """The whole body, or None as soon as it passes ``cap`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _with_security_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {k.lower() for k, _ in headers}
            ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
            extra = [*PAGE_HEADERS] if ctype.startswith(b"text/html") else [NOSNIFF]
            message["headers"] = headers + [(k, v) for k, v in extra if k not in names]
        await send(message)

    return wrapped


async def _refuse(send: Send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"code": status, "message": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
           (b"connection", b"close")]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
