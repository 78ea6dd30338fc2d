"""Stage 8 (read): the bearer token that guards every write of the HTTP API.

Writes need ``Authorization: Bearer $HUBWATCH_API_TOKEN`` (compared in constant time); with
no token configured every write is refused, so a fresh install is read-only. The check runs
twice: in :mod:`tracker.api.guard` before a body is read, and as a route dependency.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from fastapi import HTTPException, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from tracker.config import Settings

#: Declared as a security scheme, so the OpenAPI document marks every write as needing it.
BEARER = HTTPBearer(auto_error=False, scheme_name="bearerAuth", description="HUBWATCH_API_TOKEN")


def token_refusal(expected: str | None, authorization: str) -> HTTPException | None:
    """Why a request with this ``Authorization`` header may not write, or None when it may."""
    if not expected:
        return HTTPException(403, "writes are disabled: no API token configured (set HUBWATCH_API_TOKEN)")
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected.encode()):
        return HTTPException(401, "a valid 'Authorization: Bearer <token>' header is needed",
                             headers={"WWW-Authenticate": "Bearer"})
    return None


def token_guard(settings: Settings) -> Callable[..., None]:
    """A FastAPI dependency: 401 without the right token, 403 when writes are disabled.

    ``BEARER`` is there for the OpenAPI document (the write declares the scheme); the check
    itself is :func:`token_refusal` on the raw header, the same as the guard's.
    """
    expected = settings.server.api_token

    def require_token(request: Request, _: HTTPAuthorizationCredentials | None = Security(BEARER)) -> None:
        refusal = token_refusal(expected, request.headers.get("authorization", ""))
        if refusal is not None:
            raise refusal

    return require_token
