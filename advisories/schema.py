"""Stage 7 (emit): strict validation of every OSV record hubwatch publishes.

``osv-schema.json`` beside this module is a byte-for-byte copy of ``validation/schema.json``
of https://github.com/ossf/osv-schema at commit 51b8156b69b9e2e9ff2301e649db61636067fcfa
(HEAD of main, 2026-07-01; the file last changed in 2a6a0b9b0ccd8b91eeec05081b2642f53cfbe81e,
git blob cf123dd7eade126e5d3b2932b43a9038611ca602). That is release 1.7.5 plus the ``x_`` prefix for
local databases (PR #499), which the v1.7.5 tag's schema rejects: so records declare
``"schema_version": "1.8.0"``, the release that carries the prefix, never 1.7.5. To update: copy the new file over, change the
commit above; tests/advisories/test_schema.py compares the copy with shared/osv/schema.json.

On top of the JSON Schema (draft 2020-12, with format checking) our own records must have:
an ``x_`` id of the shape :mod:`advisories.ids` makes, ``schema_version`` and ``published``,
a one-line summary of at most 120 characters, at least one GIT range with a repo whose
events are full 40-hex lowercase hashes (never ``0``), no event both introduced and fixed,
strict UTC timestamps in order, http(s) references, and our severity in database_specific.
A GIT range's ``repo`` is a URL others can clone, never a local path; ``versions`` are commits.

Imports: stdlib, jsonschema, tracker.errors, advisories.ids, advisories.osv.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator

from advisories.ids import is_advisory_id
from advisories.osv import SCHEMA_VERSION, is_shareable_repo_url
from tracker.errors import HubwatchError

SCHEMA_PATH = Path(__file__).with_name("osv-schema.json")
UPSTREAM_COMMIT = "51b8156b69b9e2e9ff2301e649db61636067fcfa"
SEVERITIES = ("LOW", "MODERATE", "HIGH", "CRITICAL")
_TS_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")
_SHA_RE = re.compile(r"[0-9a-f]{40}")


class InvalidRecord(HubwatchError, ValueError):
    """An OSV record fails the official schema or our own rules; ``errors`` says where."""

    def __init__(self, record_id: str, errors: list[str]):
        super().__init__(f"invalid OSV record {record_id}: " + "; ".join(errors[:5]))
        self.errors = errors


@cache
def _validator(path: Path = SCHEMA_PATH) -> Draft202012Validator:
    schema = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_errors(record: Mapping[str, Any], schema_path: Path = SCHEMA_PATH) -> list[str]:
    """Violations of the official JSON Schema (the vendored copy unless another is given)."""
    errors = _validator(schema_path).iter_errors(record)
    found = sorted(errors, key=lambda e: [str(p) for p in e.absolute_path])
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(record)'}: {e.message}" for e in found
    ]


def errors(record: Mapping[str, Any], *, ours: bool = True) -> list[str]:
    """Every problem of ``record``: the schema's, plus our own rules when ``ours``."""
    found = schema_errors(record)
    if ours and isinstance(record, Mapping):
        found += _our_errors(record)
    return found


def validate(record: Mapping[str, Any], *, ours: bool = True) -> None:
    """Raise :class:`InvalidRecord` unless ``record`` is fit to publish.

    ``ours=False`` checks the official schema only (for records of other databases, e.g.
    those a test OSV server is seeded with).
    """
    found = errors(record, ours=ours)
    if found:
        raise InvalidRecord(str(record.get("id", "?")), found)


def is_valid_ecosystem(name: str) -> bool:
    """Whether ``name`` is an ecosystem the schema knows (or ``GIT``), suffix allowed."""
    schema = _validator().schema
    pattern = schema["$defs"]["ecosystemWithSuffix"]["pattern"]
    return re.search(pattern, name) is not None


def _our_errors(record: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    record_id = record.get("id")
    if not (
        isinstance(record_id, str) and record_id.startswith("x_") and is_advisory_id(record_id)
    ):
        out.append(f"id: not an x_ advisory id of ours: {record_id!r}")
    if record.get("schema_version") != SCHEMA_VERSION:
        out.append(f"schema_version: must be {SCHEMA_VERSION!r}")
    out += _timestamp_errors(record)
    summary = record.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        out.append("summary: missing")
    elif "\n" in summary or "\r" in summary or len(summary) > 120:
        out.append("summary: must be one line of at most 120 characters")
    out += _range_errors(record)
    related = record.get("related") or []
    if record_id in related or len(set(related)) != len(related):
        out.append("related: duplicates or the record's own id")
    for i, ref in enumerate(record.get("references") or []):
        url = str(ref.get("url", "")) if isinstance(ref, Mapping) else ""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            out.append(f"references/{i}/url: not an http(s) URL: {url!r}")
    specific = record.get("database_specific")
    if not isinstance(specific, Mapping) or specific.get("severity") not in SEVERITIES:
        out.append(f"database_specific/severity: must be one of {', '.join(SEVERITIES)}")
    return out


def _timestamp_errors(record: Mapping[str, Any]) -> list[str]:
    out = []
    stamps = {}
    for key in ("published", "modified", "withdrawn"):
        value = record.get(key)
        if value is None:
            if key != "withdrawn":
                out.append(f"{key}: missing")
            continue
        if not (isinstance(value, str) and _TS_RE.fullmatch(value)):
            out.append(f"{key}: not a UTC timestamp like 2026-01-31T12:00:00Z: {value!r}")
            continue
        stamps[key] = value
    if "published" in stamps and "modified" in stamps and stamps["modified"] < stamps["published"]:
        out.append("modified: earlier than published")
    if (
        "withdrawn" in stamps
        and "published" in stamps
        and stamps["withdrawn"] < stamps["published"]
    ):
        out.append("withdrawn: earlier than published")
    return out


def _range_errors(record: Mapping[str, Any]) -> list[str]:
    out = []
    git_ranges = 0
    for i, affected in enumerate(record.get("affected") or []):
        if not isinstance(affected, Mapping):
            continue
        for j, rng in enumerate(affected.get("ranges") or []):
            if not isinstance(rng, Mapping) or rng.get("type") != "GIT":
                continue
            git_ranges += 1
            where = f"affected/{i}/ranges/{j}"
            if not is_shareable_repo_url(str(rng.get("repo") or "")):
                out.append(f"{where}/repo: not a public git URL: {rng.get('repo')!r}")
            seen: dict[str, str] = {}
            for event in rng.get("events") or []:
                for kind, value in event.items() if isinstance(event, Mapping) else ():
                    if not (isinstance(value, str) and _SHA_RE.fullmatch(value)):
                        out.append(f"{where}/events: {kind} is not a full 40-hex hash: {value!r}")
                    elif value in seen and seen[value] != kind:
                        out.append(f"{where}/events: {value} is both {seen[value]} and {kind}")
                    else:
                        seen[str(value)] = kind
        for version in affected.get("versions") or []:
            if not (isinstance(version, str) and _SHA_RE.fullmatch(version)):
                out.append(f"affected/{i}/versions: not a full 40-hex commit: {version!r}")
    if not git_ranges:
        out.append("affected: no GIT range")
    return out
