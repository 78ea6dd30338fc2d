"""Conditional GET (RFC 9110 section 13): the answer to ``If-None-Match`` / ``If-Modified-Since``.

Feeds and the OSV export are polled by readers and mirrors; a 304 costs them nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from fastapi import Request


def not_modified(request: Request, etag: str, last: datetime | None) -> bool:
    """RFC 9110 section 13.2.2: If-None-Match wins over If-Modified-Since."""
    inm = request.headers.get("if-none-match")
    if inm is not None:
        tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
        return "*" in tags or etag in tags
    ims = request.headers.get("if-modified-since")
    if ims is None or last is None:
        return False
    try:
        since = parsedate_to_datetime(ims)
    except (TypeError, ValueError):
        return False
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return last.replace(microsecond=0) <= since
