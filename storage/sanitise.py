"""Stage 6 (store): make whatever a revision produced storable on SQLite and PostgreSQL.

A hostile commit once blinded the tracker for good (issue 16, point 3): a file name with
bytes that are not UTF-8, a NUL in a commit message or ``NaN`` in config.json made the store
refuse the revision, every later poll failed at it and the head never moved. Before a write,
every string is made valid UTF-8 (undecodable bytes and lone surrogates become ``\\xNN``
text), NUL and other control characters except tab, newline and carriage return become
``\\xNN`` text, non-finite floats become the strings ``"NaN"``, ``"Infinity"``,
``"-Infinity"``, and commit titles and messages are capped.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from storage.records import Amendment, NewRevision
from tracker.model import Change, ChangeKind

MAX_TITLE = 1_000
MAX_MESSAGE = 65_536  # a 10 MB commit message was stored and served whole
MAX_AUTHOR = 500
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def clean_text(text: str, limit: int | None = None) -> str:
    """``text`` as valid UTF-8 without control characters, cut to ``limit`` characters."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "backslashreplace")
        text = raw.decode("utf-8", "backslashreplace")
    if _CONTROL.search(text):
        text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if limit is not None and len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} characters cut)"
    return text


def clean_json(value: Any) -> Any:
    """A JSON-able value with every string cleaned and non-finite numbers as strings."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    return clean_text(str(value))


def _clean_change(c: Change) -> Change:
    return replace(c, path=clean_text(c.path), summary=clean_text(c.summary),
                   topics=tuple(clean_text(t) for t in c.topics), detail=clean_json(c.detail))


def storable(rev: NewRevision) -> NewRevision:
    """``rev`` with every text and JSON field as both databases take it."""
    return replace(
        rev,
        title=clean_text(rev.title, MAX_TITLE),
        message=clean_text(rev.message, MAX_MESSAGE),
        authors=tuple(clean_text(a, MAX_AUTHOR) for a in rev.authors),
        changes=tuple(_clean_change(c) for c in rev.changes),
        plan=None if rev.plan is None else clean_json(rev.plan),
        plan_delta=None if rev.plan_delta is None else clean_json(rev.plan_delta),
        advisory=None if rev.advisory is None else clean_json(rev.advisory),
        advisory_updates=tuple((clean_json(r), clean_text(why)) for r, why in rev.advisory_updates),
        error=None if rev.error is None else clean_text(rev.error, 2_000),
        unreadable=tuple(clean_text(p) for p in rev.unreadable),  # named only: a repair reads the tree
    )


def storable_amendment(am: Amendment) -> Amendment:
    """``am`` cleaned as :func:`storable` cleans a revision."""
    return replace(
        am, changes=tuple(_clean_change(c) for c in am.changes), reason=clean_text(am.reason, 500),
        plan=None if am.plan is None else clean_json(am.plan),
        plan_delta=None if am.plan_delta is None else clean_json(am.plan_delta),
        advisory=None if am.advisory is None else clean_json(am.advisory),
        advisory_updates=tuple((clean_json(r), clean_text(why)) for r, why in am.advisory_updates),
        error=None if am.error is None else clean_text(am.error, 2_000),
    )


def bare(rev: NewRevision, why: str) -> NewRevision:
    """What is recorded when the database refused ``rev`` even cleaned: the commit, its place
    in the history, its tree and one change that says so, so the head moves and no commit
    hides the ones after it."""
    note = Change(kind=ChangeKind.OTHER, path="/", topics=("store.error",),
                  summary="this revision's details could not be stored; it is recorded without them")
    return replace(
        rev, title=clean_text(rev.title.encode("ascii", "backslashreplace").decode(), MAX_TITLE), message="",
        authors=(), changes=(note,), plan=None, plan_delta=None, advisory=None, advisory_updates=(),
        error=f"the database refused this revision's data ({why})",
    )
