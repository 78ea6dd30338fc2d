"""Stage 8 (read): the bearer token that guards every write of the HTTP API.

Writes need ``Authorization: Bearer $HUBWATCH_API_TOKEN`` (compared in constant time); with
no token configured every write is refused, so a fresh install is read-only.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from fastapi import HTTPException, Request

from tracker.config import Settings


def token_guard(settings: Settings) -> Callable[[Request], None]:
    """A FastAPI dependency: 401 without the right token, 403 when writes are disabled."""
    expected = settings.server.api_token

    def require_token(request: Request) -> None:
        if not expected:
            raise HTTPException(403, "writes are disabled: no API token configured (set HUBWATCH_API_TOKEN)")
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected.encode()):
            raise HTTPException(401, "a valid 'Authorization: Bearer <token>' header is needed",
                                headers={"WWW-Authenticate": "Bearer"})

    return require_token
