"""Stage 7 (emit): Atom 1.0 feeds of OSV advisories (RFC 4287), rendered with Jinja2.

Pure: records and URLs in, bytes out; no clock. One entry per advisory: ``<id>`` is
``urn:hubwatch:advisory:<advisory id>`` (an absolute IRI, as RFC 4287 wants, built only from
the advisory id, so it is stable across re-processing, retries, daemons and hosts; readers
dedupe on it), a repo feed's is ``urn:hubwatch:feed:repo:<org>:<name>``. URN characters
are RFC 2141's; anything else is percent-encoded.
``<updated>`` the record's ``modified``, ``<published>`` its ``published``. Entries are
ordered by ``modified`` (newest first), then id, so the same records give the same bytes.
Text is XML-escaped and stripped of characters XML 1.0 cannot carry.

Imports: stdlib, jinja2.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Path(__file__).resolve().parent / "templates"
EPOCH = "1970-01-01T00:00:00Z"
CONTENT_MAX = 20_000
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_URN_SAFE = re.compile(r"[A-Za-z0-9()+,\-.:=@;$_!*']")
ALL_FEED_IRI = "urn:hubwatch:feed:all"


def _urn_part(text: str) -> str:
    return "".join(
        ch if _URN_SAFE.fullmatch(ch) and ch != ":" else "".join(f"%{b:02X}" for b in ch.encode())
        for ch in text
    )


def entry_iri(advisory_id: str) -> str:
    """The ``<id>`` of an advisory's entry, in every feed: ``urn:hubwatch:advisory:<id>``."""
    return f"urn:hubwatch:advisory:{_urn_part(advisory_id)}"


def repo_feed_iri(repo_id: str) -> str:
    """The ``<id>`` of a repo's feed: ``urn:hubwatch:feed:repo:<org>:<name>``."""
    return "urn:hubwatch:feed:repo:" + ":".join(_urn_part(p) for p in repo_id.split("/"))


@dataclass(frozen=True, slots=True)
class FeedInfo:
    """The feed-level elements; ``self_url`` and ``html_url`` are absolute URLs."""

    id: str
    title: str
    self_url: str
    html_url: str | None = None
    subtitle: str | None = None
    fallback_updated: str = EPOCH  # <updated> of a feed without entries
    generator_version: str = "0.1.0"


def _clean(value: Any) -> Any:
    return _XML_INVALID.sub("", value) if isinstance(value, str) else value


_ENV = Environment(
    loader=FileSystemLoader(str(TEMPLATES)),
    autoescape=select_autoescape(["j2"], default=True),
    finalize=_clean,
    trim_blocks=False,
    lstrip_blocks=False,
    keep_trailing_newline=True,
)


def rfc3339(value: Any) -> str | None:
    """A record timestamp as RFC 3339 UTC (``...Z``), or None when it is not one."""
    if not value:
        return None
    try:
        ts = (
            value
            if isinstance(value, datetime)
            else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        )
    except ValueError:
        return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def render_feed(
    feed: FeedInfo,
    records: Sequence[Mapping[str, Any]],
    *,
    entry_link: Callable[[str], str],
    json_link: Callable[[str], str] | None = None,
) -> bytes:
    """The feed document; ``entry_link(id)`` is each entry's HTML page (absolute URL)."""
    entries = sorted(
        (_entry(r, entry_link, json_link) for r in records),
        key=lambda e: (e["updated"], e["id"]),
        reverse=True,
    )
    updated = (
        max((e["updated"] for e in entries), default=None)
        or rfc3339(feed.fallback_updated)
        or EPOCH
    )
    return (
        _ENV.get_template("feed.xml.j2")
        .render(feed=feed, entries=entries, updated=updated)
        .encode("utf-8")
    )


def _entry(
    record: Mapping[str, Any],
    entry_link: Callable[[str], str],
    json_link: Callable[[str], str] | None,
) -> dict[str, Any]:
    rid = str(record.get("id", ""))
    modified = rfc3339(record.get("modified")) or EPOCH
    severity = str((record.get("database_specific") or {}).get("severity") or "") or None
    summary = str(record.get("summary") or rid)
    withdrawn = rfc3339(record.get("withdrawn"))
    title = f"[{severity}] {summary}" if severity else summary
    if withdrawn:
        title = f"[withdrawn] {title}"
    details = str(record.get("details") or summary)
    if len(details) > CONTENT_MAX:
        details = details[:CONTENT_MAX] + "\n\n… (truncated; see the advisory page)"
    related = [
        str(ref["url"])
        for ref in record.get("references") or []
        if isinstance(ref, Mapping) and isinstance(ref.get("url"), str)
    ][:5]
    return {
        "id": entry_iri(rid),
        "title": title,
        "updated": modified,
        "published": rfc3339(record.get("published")),
        "link": entry_link(rid),
        "json_link": json_link(rid) if json_link else None,
        "related": related,
        "severity": severity,
        "repo": _repo_of(record),
        "summary": summary,
        "content": details,
    }


def _repo_of(record: Mapping[str, Any]) -> str | None:
    for affected in record.get("affected") or []:
        purl = str((affected.get("database_specific") or {}).get("purl") or "")
        if purl.startswith("pkg:huggingface/"):
            return purl[len("pkg:huggingface/") :].split("?", 1)[0].split("@", 1)[0]
    return None
