"""Layer 2: a write that failed for a reason that passes is tried again, with what it had in hand.

A check reads the Hub, analyses, and then writes one revision in one transaction. When that
transaction loses a race (a unique key another writer committed first, a lock, a PostgreSQL
serialization failure or deadlock) or the database is briefly away (connection refused,
terminated by the server, a restart), re-running the whole check would ask the Hub again for
everything it already answered (issue 10). Writes are idempotent per revision, so the same
write is simply tried again here; only errors that say something about the statement itself
(a syntax error, bad data) are raised at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError

log = logging.getLogger("hubwatch.storage")

T = TypeVar("T")

#: What SQLite reports as an OperationalError although the statement, not the database, is wrong.
STATEMENT_ERRORS = ("no such table", "no such column", "syntax error", "has no column")


def write_failure(e: DBAPIError) -> str | None:
    """``"race"`` (another writer won), ``"unavailable"`` (the database is away or busy), or
    None (the statement itself is wrong: trying again cannot help)."""
    if isinstance(e, IntegrityError):
        return "race"
    message = str(e.orig).lower()
    if any(w in message for w in STATEMENT_ERRORS):
        return None
    if any(w in message for w in ("locked", "busy", "deadlock", "could not serialize", "serialization")):
        return "race"
    if e.connection_invalidated or isinstance(e, (OperationalError, InterfaceError)):
        return "unavailable"
    return None


def describe(e: DBAPIError) -> str:
    """``OperationalError: the first line of the driver's message`` (never the statement's values)."""
    first = str(e.orig).strip().splitlines()[0][:200] if str(e.orig).strip() else "no message"
    return f"{type(e.orig).__name__}: {first}"


@dataclass(frozen=True)
class WriteRetry:
    """How a write that lost a race or found the database away is tried again (about 30 s in all:
    a PostgreSQL restart or failover fits, an outage longer than that fails the check)."""

    delays: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def run(self, what: str, write: Callable[[], T]) -> T:
        """``write()``; again after each delay while it fails for a reason that passes."""
        for attempt, delay in enumerate((*self.delays, None), start=1):
            try:
                return write()
            except DBAPIError as e:
                kind = write_failure(e)
                if kind is None or delay is None:
                    raise
                level = logging.INFO if kind == "race" else logging.WARNING
                log.log(level, "%s: database %s (%s, attempt %d); writing again in %.1fs", what,
                        "write race" if kind == "race" else "unavailable", describe(e), attempt, delay)
                self.sleep(delay)
        raise AssertionError("unreachable")
