"""Audit: what the answer says about each pin, and when that fails a build (``--fail-on``).

Levels, lowest first: ``unknown`` (a revision the advisory source does not know, an unpinned
reference, an advisory without a severity), ``LOW``, ``MODERATE``, ``HIGH``, ``CRITICAL``.
``--fail-on X`` fails (exit 3) when any finding is at X or above; ``none`` never fails. So
``--fail-on unknown`` is the strictest: anything not known to be clean fails.

Imports: stdlib, tracker.audit.pins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from advisories.query import parse_purl
from tracker.audit.pins import Pin

LEVELS = ("unknown", "LOW", "MODERATE", "HIGH", "CRITICAL")
_ALIASES = {"MEDIUM": "MODERATE", "MODERATE": "MODERATE", "LOW": "LOW", "HIGH": "HIGH",
            "CRITICAL": "CRITICAL", "UNKNOWN": "unknown", "NONE": "none"}


@dataclass(frozen=True, slots=True)
class Found:
    """One advisory whose GIT range holds the pinned revision."""

    id: str
    severity: str | None  # LOW | MODERATE | HIGH | CRITICAL; None when the record gives none
    summary: str
    modified: str | None = None
    published: str | None = None
    url: str | None = None  # where a person reads it

    @property
    def level(self) -> str:
        return self.severity or "unknown"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer for one pin: advisories, whether the revision is known, and the drift."""

    pin: Pin
    revision: str | None  # the full commit when the source resolved a prefix
    known: bool | None  # None: the advisory source cannot say (a plain OSV server)
    advisories: tuple[Found, ...] = ()
    behind: int | None = None  # revisions upstream's head has that the pinned one lacks
    upstream_head: str | None = None
    severities_since: Mapping[str, int] = field(default_factory=dict)
    reachable: bool | None = None  # False: upstream rewrote history and dropped the revision
    note: str | None = None  # why it is unknown, when it is

    @property
    def levels(self) -> list[str]:
        """The level of each finding this verdict holds."""
        out = [f.level for f in self.advisories]
        if not self.pin.pinned or self.known is False:
            out.append("unknown")
        return out


def severity_of(record: Mapping[str, Any]) -> str | None:
    """A record's own severity (``database_specific.severity``, as hubwatch and GHSA write it)."""
    for where in (record.get("database_specific"), *_affected_specifics(record)):
        if isinstance(where, Mapping) and isinstance(where.get("severity"), str):
            level = _ALIASES.get(where["severity"].strip().upper())
            if level in LEVELS[1:]:
                return level
    return None


def found_of(record: Mapping[str, Any], url: str | None = None) -> Found:
    """The :class:`Found` of an OSV record."""
    summary = str(record.get("summary") or record.get("details") or "").strip().splitlines()
    if url is None:
        urls = [r.get("url") for r in record.get("references") or [] if isinstance(r, Mapping)]
        url = next((u for u in urls if isinstance(u, str) and u.startswith(("https://", "http://"))), None)
    return Found(
        id=str(record["id"]), severity=severity_of(record), summary=summary[0] if summary else "",
        modified=_opt(record.get("modified")), published=_opt(record.get("published")), url=url,
    )


def concerns(record: Mapping[str, Any], pin: Pin) -> bool:
    """Whether an OSV record is about the pin's repo: a huggingface purl in ``affected`` names
    it (on the pin's Hub, when the pin names one), or a GIT range's repo URL ends in it."""
    for affected in record.get("affected") or []:
        if not isinstance(affected, Mapping):
            continue
        for spot in (affected.get("database_specific"), affected.get("package")):
            p = parse_purl(str(spot.get("purl", ""))) if isinstance(spot, Mapping) else None
            if (p is not None and p.type == "huggingface" and f"{p.namespace}/{p.name}" == pin.repo
                    and pin.repository in (None, p.repository)):
                return True
        for rng in affected.get("ranges") or []:
            if isinstance(rng, Mapping) and rng.get("type") == "GIT" and pin.repository is None:
                path = urlparse(str(rng.get("repo", ""))).path.strip("/").removesuffix(".git")
                if path == pin.repo or path.endswith("/" + pin.repo):
                    return True
    return False


def parse_fail_on(text: str) -> str:
    """``--fail-on`` value -> a level or ``none``; ValueError for anything else."""
    level = _ALIASES.get(text.strip().upper())
    if level is None:
        raise ValueError(f"--fail-on takes one of {', '.join((*LEVELS, 'none'))}, not {text!r}")
    return level


def fails(verdicts: Iterable[Verdict], threshold: str) -> bool:
    """Whether any finding is at ``threshold`` or above."""
    if threshold == "none":
        return False
    floor = LEVELS.index(threshold)
    return any(LEVELS.index(level) >= floor for v in verdicts for level in v.levels)


def _affected_specifics(record: Mapping[str, Any]) -> list[Any]:
    out = []
    for affected in record.get("affected") or []:
        if isinstance(affected, Mapping):
            out.extend([affected.get("ecosystem_specific"), affected.get("database_specific")])
    return out


def _opt(value: Any) -> str | None:
    return str(value) if value else None
