"""Stage 1 (source) helper: translate Hub HTTP answers into :mod:`tracker.errors`.

The Hub says what went wrong in ``X-Error-Code`` (hub-api.md §4): RepoNotFound (401, also for
private repos), GatedRepo (403), RevisionNotFound / EntryNotFound (404). Rate limits come as
429 with ``Retry-After`` and/or the IETF ``RateLimit: "api";r=0;t=N`` header.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from tracker.errors import (
    EntryNotFound,
    GatedRepo,
    ObjectNotHeld,
    RateLimited,
    RepoNotFound,
    RevisionNotFound,
    SourceError,
    SourceUnavailable,
)

_RATELIMIT_T = re.compile(r"(?:^|;)\s*t=(\d+(?:\.\d+)?)")
_CTRL = re.compile(r"[\x00-\x1f\x7f]+")


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait: ``RateLimit``'s ``t=`` when present, else ``Retry-After`` (seconds or a date)."""
    rl = headers.get("ratelimit")
    if rl:
        m = _RATELIMIT_T.search(rl)
        if m:
            return float(m.group(1))
    ra = (headers.get("retry-after") or "").strip()
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(ra)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def clean(text: str, secret: str | None = None, limit: int = 200) -> str:
    """A server-supplied message made safe to log: one line, short, never the token."""
    text = _CTRL.sub(" ", text).strip()
    if secret:
        text = text.replace(secret, "***")
    return text[:limit]


def from_status(
    status: int,
    headers: Mapping[str, str],
    *,
    what: str,
    repo_id: str,
    revision: str | None = None,
    body_message: str = "",
    secret: str | None = None,
    not_found: type[SourceError] = RepoNotFound,
) -> SourceError:
    """The tracker error for an HTTP error answer. ``headers`` must be case-insensitive."""
    code = headers.get("x-error-code") or ""
    server = clean(headers.get("x-error-message") or body_message, secret)
    msg = (
        f"{what}: HTTP {status}" + (f" {code}" if code else "") + (f": {server}" if server else "")
    )
    kw = {"repo_id": repo_id, "revision": revision}
    if status == 410 and issubclass(not_found, EntryNotFound):
        # Gone: the server says it does not hold the object and will not (a mirror of a git
        # repo without its LFS objects). A 404 of a listed file may be transient; this is not.
        return ObjectNotHeld(msg, **kw)
    if code == "RevisionNotFound":
        return RevisionNotFound(msg, **kw)
    if code == "EntryNotFound":
        return EntryNotFound(msg, **kw)
    if code == "GatedRepo":
        return GatedRepo(msg, **kw)
    if code == "RepoNotFound" or server == "Access to this resource is disabled.":
        return RepoNotFound(msg, **kw)
    if status == 429:
        return RateLimited(msg, retry_after=retry_after(headers), **kw)
    if status == 401 and "invalid credentials" in server.lower():
        return SourceError(msg + " (check the token)", **kw)
    if status in (401, 403):
        return RepoNotFound(msg, **kw)
    if status == 404:
        return not_found(msg, **kw)
    if status >= 500 or status == 408:
        return SourceUnavailable(msg, **kw)
    return SourceError(msg, **kw)
