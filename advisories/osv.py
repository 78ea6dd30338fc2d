"""Stage 7 (emit): one OSV record per revision, and the lifecycle of a record.

Pure functions, dict in, dict out: no clock (``now`` is an argument), no I/O. A record is
built for a revision that has at least one change of severity LOW or above; the root commit
of a history is the baseline (a history entry, never an advisory). There is no ``package``
(OSV has no Hugging Face ecosystem): the GIT range names the repo, the purl
``pkg:huggingface/org/name@sha`` and the branch go in ``affected[0].database_specific`` and
our own severity in the top-level ``database_specific`` (OSV ``severity`` is CVSS only).

A record is shared data: the GIT range ``repo`` is the repo's canonical URL (never a local
path; the pipeline chooses it), referenced as ``PACKAGE``; a repo on a Hub mirror (not
huggingface.co) carries ``?repository_url=<mirror>`` on its purl, as the purl spec says.
Once a ``fixed`` event bounds the range, ``affected[].versions`` lists the affected commits
(at most ``VERSIONS_MAX``), so scanners that match versions, not GIT ranges, match too.

Lifecycle functions return an edited copy with ``modified`` bumped (strictly later than
before), or an unchanged copy when there was nothing to do; nothing is ever deleted:
withdrawal sets ``withdrawn``. The store keeps each edited record (same id) so that
``modified`` stays truthful.

Imports: stdlib, tracker.model, advisories.ids, advisories.osv_text.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

from advisories.ids import advisory_id
from advisories.osv_text import (
    TEXT_MAX,
    esc,
    fit,
    jsonable,
    one_line,
    parse_timestamp,
    render_details,
    timestamp,
)
from tracker.model.core import Change, ChangeKind, CommitInfo, RevisionDiff, max_severity
from tracker.model.restore import changed_paths, content_ids, is_open, restores

__all__ = [
    "SCHEMA_VERSION",
    "add_fixed",
    "add_repo_name",
    "also_named",
    "amend",
    "build_record",
    "changed_paths",
    "content_ids",
    "full_sha",
    "is_open",
    "is_shareable_repo_url",
    "mark_history_rewritten",
    "mark_namespace_reused",
    "parse_timestamp",
    "purl",
    "restores",
    "set_related",
    "timestamp",
    "withdraw",
]

#: The OSV schema release whose rules the records meet: ``x_`` ids for a local database came
#: after 1.7.5 (osv-schema PR #499) and are part of 1.8.0. See advisories/schema.py.
SCHEMA_VERSION = "1.8.0"
HUB_URL = "https://huggingface.co"
VERSIONS_MAX = 1000  # affected commits listed in ``versions``; past it only the range says
SUMMARY_MAX = 120
CHANGES_MAX = 200  # changes kept in database_specific
_SHA_RE = re.compile(r"[0-9a-f]{40}")
_KEY_ORDER = (
    "schema_version",
    "id",
    "published",
    "modified",
    "withdrawn",
    "aliases",
    "upstream",
    "related",
    "summary",
    "details",
    "severity",
    "affected",
    "references",
    "credits",
    "database_specific",
)
_KIND_ORDER = {kind: i for i, kind in enumerate(ChangeKind)}
HISTORY_SECTION = "## Record history"


# --- building --------------------------------------------------------------------------------


def build_record(
    *,
    prefix: str,
    repo_id: str,
    repo_url: str,
    commit_url: str,
    branch: str,
    commit: CommitInfo,
    parent: str | None,
    diff: RevisionDiff,
    plan_delta: Mapping[str, Any] | None,
    related: Sequence[str],
    now: datetime,
    repository_url: str | None = None,
) -> dict[str, Any] | None:
    """The OSV record of one revision, or None when it deserves none.

    None for the root commit (``parent`` None: the baseline, unless the repo itself changed
    identity there: namespace reuse starts a fresh baseline that is an advisory) and for a revision whose
    changes are all below LOW (README, model card, other files). ``repository_url``: the
    Hub mirror the repo lives on, when it is not huggingface.co (the purl's qualifier).
    """
    flagged = sorted(
        (c for c in diff.changes if c.severity is not None),
        key=lambda c: (-c.severity.rank if c.severity else 0, c.kind not in REPO_EVENTS, _KIND_ORDER[c.kind], c.path),
    )  # the repo's own events (reuse, rename) lead: they say what the rest is about
    if not flagged or (parent is None and not any(c.kind in REPO_EVENTS for c in flagged)):
        return None  # a root is a baseline: only an event of the repo itself makes it a record
    if not is_shareable_repo_url(repo_url):
        raise ValueError(f"a GIT range needs the repo's public URL, not {repo_url!r}")
    sha = full_sha(commit.sha)
    severity = max_severity(c.severity for c in flagged)
    if severity is None:  # unreachable: flagged changes all have one
        return None
    record_id = advisory_id(prefix, repo_id, sha)
    ts = timestamp(now)
    others = [c for c in diff.changes if c.severity is None]
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "id": record_id,
        "published": ts,
        "modified": ts,
        "summary": _summary(repo_id, sha, flagged),
        "details": render_details(
            repo_id=repo_id,
            repo_url=repo_url,
            commit_url=commit_url,
            branch=branch,
            commit=commit,
            parent=parent,
            severity=severity.value,
            flagged=flagged,
            others=others,
            plan_delta=plan_delta,
        ),
        "affected": [
            {
                "ranges": [{"type": "GIT", "repo": repo_url, "events": [{"introduced": sha}]}],
                "database_specific": {
                    "purl": purl(repo_id, sha, repository_url=repository_url),
                    "branch": one_line(branch),
                },
            }
        ],
        "database_specific": {
            "severity": severity.value,
            "parent": one_line(parent).lower() if parent else None,
            "changes": [_change_entry(c) for c in flagged[:CHANGES_MAX]],
            "plan_delta": jsonable(plan_delta),
        },
    }
    if len(flagged) > CHANGES_MAX:
        record["database_specific"]["changes_omitted"] = len(flagged) - CHANGES_MAX
    references = [{"type": "WEB", "url": commit_url}] if commit_url else []
    if urlsplit(repo_url).scheme in ("http", "https"):
        references.append({"type": "PACKAGE", "url": repo_url})
    if references:
        record["references"] = references
    ids = _related(related, record_id)
    if ids:
        record["related"] = ids
    return _ordered(record)


def purl(repo_id: str, sha: str | None = None, *, repository_url: str | None = None) -> str:
    """``pkg:huggingface/org/name[@sha][?repository_url=URL]``.

    purl spec: namespace and name as given, the sha lowercase; ``repository_url`` only for
    a Hub other than huggingface.co (the type's default repository).
    """
    segments = "/".join(_purl_quote(part) for part in repo_id.split("/") if part)
    text = f"pkg:huggingface/{segments}" + (f"@{sha.lower()}" if sha else "")
    base = (repository_url or "").rstrip("/")
    if base and base.lower() != HUB_URL:
        text += "?repository_url=" + quote(base, safe=":/")
    return text


def is_shareable_repo_url(url: str) -> bool:
    """A URL others can clone: http(s), ssh or git, or scp-like ``user@host:path``; no local path."""
    if not url or any(ch.isspace() for ch in url):
        return False
    parts = urlsplit(url)
    if "://" in url:
        return parts.scheme in ("http", "https", "ssh", "git") and bool(parts.hostname)
    return bool(re.fullmatch(r"[\w.-]+@[\w.-]+:.+", url))


def full_sha(value: str) -> str:
    """A full 40-hex commit hash, lowercased; ValueError otherwise."""
    sha = value.strip().lower()
    if not _SHA_RE.fullmatch(sha):
        raise ValueError(f"not a full 40-hex commit hash: {value!r}")
    return sha


# --- lifecycle -------------------------------------------------------------------------------


def add_fixed(
    record: Mapping[str, Any], sha: str, now: datetime, *, affected: Sequence[str] = ()
) -> dict[str, Any]:
    """Add a ``fixed`` event: revision ``sha`` restored what the advisory's revision changed.

    ``affected``: the commits the now bounded range holds (the advisory's revision and its
    descendants that do not contain ``sha``), written to ``versions`` when there are at most
    ``VERSIONS_MAX``.
    """
    sha = full_sha(sha)
    new = copy.deepcopy(dict(record))
    events = _git_range(new)["events"]
    if any(e.get("fixed") == sha for e in events):
        return new
    if any(sha in e.values() for e in events):
        raise ValueError(f"{sha} is already an event of {new.get('id')}")
    events.append({"fixed": sha})
    commits = sorted({full_sha(c) for c in affected} - {sha})
    if commits and len(commits) <= VERSIONS_MAX:
        _git_entry(new)["versions"] = commits
    url = _sibling_commit_url(new, sha)
    if url:
        new.setdefault("references", []).append({"type": "FIX", "url": url})
    ts = _bump(new, now)
    _note(new, ts, f"fixed: revision `{sha}` restored the earlier content of the changed files")
    return _ordered(new)


def mark_history_rewritten(
    record: Mapping[str, Any], *, new_head: str, now: datetime
) -> dict[str, Any]:
    """Note that the branch was rewritten and no longer holds this revision; the range stays."""
    head = full_sha(new_head)
    new = copy.deepcopy(dict(record))
    ds = new.setdefault("database_specific", {})
    previous = ds.get("history_rewritten")
    if isinstance(previous, dict) and previous.get("new_head") == head:
        return new
    ts = _bump(new, now)
    ds["history_rewritten"] = {"new_head": head, "marked": ts}
    _note(
        new,
        ts,
        f"history rewritten: the branch head is now `{head}`, which does not descend "
        "from this revision",
    )
    return _ordered(new)


def mark_namespace_reused(
    record: Mapping[str, Any], *, baseline: str, now: datetime
) -> dict[str, Any]:
    """Note that the repo under this name was deleted and another created: this revision is
    the old repo's, which is gone; the range stays (the record is about what people loaded).
    ``baseline``: the new repo's first recorded commit (it carries the reuse advisory)."""
    first = full_sha(baseline)
    new = copy.deepcopy(dict(record))
    ds = new.setdefault("database_specific", {})
    previous = ds.get("namespace_reused")
    if isinstance(previous, dict) and previous.get("baseline") == first:
        return new
    ts = _bump(new, now)
    ds["namespace_reused"] = {"baseline": first, "marked": ts}
    _note(
        new,
        ts,
        "namespace reused: the repo was deleted and another one created under the same name "
        f"(recorded afresh from its commit `{first}`); this revision belongs to the deleted repo",
    )
    return _ordered(new)


def add_repo_name(
    record: Mapping[str, Any], *, repo_id: str, repo_url: str, now: datetime,
    repository_url: str | None = None,
) -> dict[str, Any]:
    """The repo was renamed: the record names it under ``repo_id`` too (an ``affected`` entry
    with the same commits on the new URL and purl), so queries by either name find it."""
    new = also_named(record, [(repo_id, repo_url)], repository_url=repository_url)
    if new == record:
        return new
    names = new.setdefault("database_specific", {}).setdefault("repo_names", [])
    if repo_id not in names:
        names.append(repo_id)
    ts = _bump(new, now)
    _note(new, ts, f"repo renamed on the Hub: it is now `{one_line(repo_id)}` ({repo_url})")
    return _ordered(new)


def also_named(
    record: Mapping[str, Any], names: Sequence[tuple[str, str]], *, repository_url: str | None = None,
) -> dict[str, Any]:
    """The record with an ``affected`` entry per other ``(repo id, repo URL)`` the repo has
    (had, or now has): the first entry's commits on that URL and purl. No edit note."""
    new = copy.deepcopy(dict(record))
    affected = list(new.get("affected") or [])
    if not affected:
        return new
    first = affected[0]
    events = [e for r in first.get("ranges") or [] for e in r.get("events") or []]
    introduced = next((str(e["introduced"]) for e in events if "introduced" in e), "")
    for repo_id, repo_url in names:
        wanted = purl(repo_id, repository_url=repository_url)
        if any(_bare_purl(a) == wanted for a in affected):
            continue
        entry = copy.deepcopy(first)
        for r in entry.get("ranges") or []:
            if r.get("type") == "GIT":
                r["repo"] = repo_url
        entry.setdefault("database_specific", {})["purl"] = purl(repo_id, introduced or None,
                                                                 repository_url=repository_url)
        affected.append(entry)
    new["affected"] = affected
    return new


def _bare_purl(affected: Mapping[str, Any]) -> str:
    """An affected entry's purl without its version (the package it names)."""
    text = str((affected.get("database_specific") or {}).get("purl", ""))
    head, _, query = text.partition("?")
    base = head.rsplit("@", 1)[0] if "@" in head.split("/")[-1] else head
    return base + (f"?{query}" if query else "")


def amend(record: Mapping[str, Any], fresh: Mapping[str, Any], *, reason: str, now: datetime) -> dict[str, Any]:
    """The record of a revision whose changes were amended (a repair read files that could not
    be read when it was recorded): what the revision changed comes from ``fresh`` (summary,
    details, severity, changes, plan delta, related), all the record went through since (fixed
    events, marks, names, its history notes) stays, ``modified`` is bumped and the amendment
    noted. An unchanged copy when nothing differs; a withdrawn record stays as it was."""
    new = copy.deepcopy(dict(record))
    if "withdrawn" in new:
        return new
    for key in ("summary", "related"):
        if key in fresh:
            new[key] = copy.deepcopy(fresh[key])
        else:
            new.pop(key, None)
    old_details = str(new.get("details", ""))
    notes = old_details[old_details.index(HISTORY_SECTION):].rstrip("\n") if HISTORY_SECTION in old_details else ""
    new["details"] = str(fresh.get("details", "")).rstrip("\n") + (f"\n\n{notes}\n" if notes else "")
    ds, fds = new.setdefault("database_specific", {}), fresh.get("database_specific") or {}
    for key in ("severity", "changes", "changes_omitted", "plan_delta"):
        if key in fds:
            ds[key] = copy.deepcopy(fds[key])
        else:
            ds.pop(key, None)
    if new == dict(record):
        return new
    ts = _bump(new, now)
    _note(new, ts, f"amended: {esc(one_line(reason))}")
    return _ordered(new)


def withdraw(record: Mapping[str, Any], reason: str, now: datetime) -> dict[str, Any]:
    """Withdraw the record (kept and served, never deleted); the reason leads the summary."""
    new = copy.deepcopy(dict(record))
    if "withdrawn" in new:
        return new
    why = fit(one_line(reason), 200) or "no reason given"
    ts = _bump(new, now)
    new["withdrawn"] = ts
    new["summary"] = fit(f"WITHDRAWN ({why}): {new.get('summary', '')}", SUMMARY_MAX)
    new["details"] = f"**Withdrawn** {ts}: {esc(why)}\n\n" + str(new.get("details", ""))
    new.setdefault("database_specific", {})["withdrawn_reason"] = why
    _note(new, ts, f"withdrawn: {esc(why)}")
    return _ordered(new)


def set_related(record: Mapping[str, Any], ids: Sequence[str], now: datetime) -> dict[str, Any]:
    """Replace ``related`` (e.g. after a later OSV look-up); bumps ``modified`` only on change."""
    new = copy.deepcopy(dict(record))
    wanted = _related(ids, str(new.get("id", "")))
    if wanted == new.get("related", []):
        return new
    if wanted:
        new["related"] = wanted
    else:
        new.pop("related", None)
    _bump(new, now)
    return _ordered(new)


#: The topic of a pickle importing code-running globals (tracker.diff.topics).
DANGEROUS_PICKLE = "weights.pickle.dangerous_imports"


# --- Markdown and helpers --------------------------------------------------------------------


#: Changes of the repo itself rather than of its files (no path; a baseline may carry one).
REPO_EVENTS = frozenset({ChangeKind.NAMESPACE_REUSE, ChangeKind.RENAME})
_SHORT = {
    ChangeKind.HISTORY: "history rewritten",
    ChangeKind.NAMESPACE_REUSE: "namespace reused: the repo was deleted and another created under its name",
}


def _summary(repo_id: str, sha: str, flagged: Sequence[Change]) -> str:
    """``org/name abc1234: <what changed, specifically>``: the most severe changes' own words
    ("eos_token_id 128001 -> 128009; chat template 'default' changed: ..."), as many as fit."""
    head = f"{one_line(repo_id)} {sha[:7]}: "
    parts: list[str] = []
    for change in flagged:
        text = _SHORT.get(change.kind) or one_line(change.summary)
        if text and text not in parts:
            parts.append(text)
    shown: list[str] = []
    for i, text in enumerate(parts):
        rest = len(parts) - i - 1
        tail = f"; and {rest} more" if rest else ""
        candidate = "; ".join([*shown, text])
        if len(head) + len(candidate) + len(tail) <= SUMMARY_MAX:
            shown.append(text)
            continue
        if not shown:  # the first is too long alone: cut it
            room = SUMMARY_MAX - len(head) - len(tail)
            shown.append(fit(text, max(20, room)))
        break
    left = len(parts) - len(shown)
    return fit(head + "; ".join(shown) + (f"; and {left} more" if left else ""), SUMMARY_MAX)


def _change_entry(change: Change) -> dict[str, Any]:
    return {
        "kind": change.kind.value,
        "path": fit(one_line(change.path), TEXT_MAX),
        "summary": fit(one_line(change.summary), TEXT_MAX),
        "severity": change.severity.value if change.severity else None,
        "topics": [fit(one_line(t), 100) for t in change.topics[:50]],
    }


def _related(ids: Iterable[str], own: str) -> list[str]:
    return sorted({one_line(i) for i in ids if isinstance(i, str) and i.strip()} - {own, ""})


def _git_entry(record: dict[str, Any]) -> dict[str, Any]:
    """The ``affected`` entry that holds the record's GIT range."""
    for affected in record.get("affected") or []:
        for rng in affected.get("ranges") or []:
            if isinstance(rng, dict) and rng.get("type") == "GIT":
                return affected  # type: ignore[no-any-return]
    raise ValueError(f"record {record.get('id')} has no GIT range")


def _git_range(record: dict[str, Any]) -> dict[str, Any]:
    return next(
        r for r in _git_entry(record)["ranges"] if isinstance(r, dict) and r.get("type") == "GIT"
    )


def _sibling_commit_url(record: Mapping[str, Any], sha: str) -> str | None:
    """The commit page of ``sha``, made from the advisory's own commit reference."""
    introduced = next(
        (e["introduced"] for e in _git_range(dict(record))["events"] if "introduced" in e), None
    )
    for ref in record.get("references") or []:
        url = str(ref.get("url", ""))
        if ref.get("type") == "WEB" and introduced and url.endswith(introduced):
            return url[: -len(introduced)] + sha
    return None


def _bump(record: dict[str, Any], now: datetime) -> str:
    """Set ``modified`` to ``now``, or one second past the old value if the clock lags.

    An edited record is published again under today's rules, so it takes today's schema version.
    """
    record["schema_version"] = SCHEMA_VERSION
    stamp = parse_timestamp(timestamp(now))
    old = record.get("modified")
    if isinstance(old, str):
        previous = parse_timestamp(old)
        if stamp <= previous:
            stamp = previous.replace(microsecond=0) + timedelta(seconds=1)
    record["modified"] = timestamp(stamp)
    return str(record["modified"])


def _note(record: dict[str, Any], ts: str, text: str) -> None:
    details = str(record.get("details", "")).rstrip("\n")
    if HISTORY_SECTION not in details:
        details += f"\n\n{HISTORY_SECTION}\n"
    record["details"] = f"{details}\n- {ts}: {text}\n"


def _ordered(record: dict[str, Any]) -> dict[str, Any]:
    rank = {k: i for i, k in enumerate(_KEY_ORDER)}
    return {k: record[k] for k in sorted(record, key=lambda k: (rank.get(k, len(rank)), k))}


def _purl_quote(part: str) -> str:
    return "".join(
        ch
        if ch.isascii() and (ch.isalnum() or ch in "-._~")
        else "".join(f"%{b:02X}" for b in ch.encode())
        for ch in part
    )
