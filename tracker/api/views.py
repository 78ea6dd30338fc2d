"""Domain records -> the JSON shapes of DESIGN.md's contracts, shared by the API and the CLI."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from storage.records import RepoRecord, RevisionRecord
from storage.subscriptions import SubscriptionRecord
from tracker.model import Change
from tracker.model.locations import strip_credentials


def iso(ts: datetime | None) -> str | None:
    """RFC 3339 UTC with a trailing Z (what OSV, Atom and the Hub all expect)."""
    if ts is None:
        return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def change_json(change: Change, *, detail: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": change.kind.value,
        "path": change.path,
        "summary": change.summary,
        "severity": change.severity.value if change.severity else None,
    }
    if detail:
        out["topics"] = list(change.topics)
        out["detail"] = change.detail
    return out


def repair_json(state: dict[str, Any] | None) -> dict[str, Any] | None:
    """A revision's repair (``storage.repairs.state``) as ``show --json`` and the API give it;
    its last error stays with the operator (the log), as a check's does."""
    if state is None:
        return None
    return {"status": state["status"], "paths": list(state["paths"]), "attempts": state["attempts"],
            "recorded_at": iso(state["recorded_at"]), "next_attempt_at": iso(state["next_attempt_at"])
            if state["status"] == "pending" else None, "done_at": iso(state["done_at"])}


def revision_json(rev: RevisionRecord, *, detail: bool = False) -> dict[str, Any]:
    """One entry of ``history --json`` (and of the revisions API)."""
    out: dict[str, Any] = {
        "sha": rev.sha,
        "parent": rev.parent,
        "committed_at": iso(rev.committed_at),
        "title": rev.title,
        "authors": list(rev.authors),
        "severity": rev.severity,
        "advisory_id": rev.advisory_id,
        "changes": [change_json(c, detail=detail) for c in rev.changes],
    }
    if detail:
        out.update({
            "parents": list(rev.parents),
            "message": rev.message,
            "reachable": rev.reachable,
            "error": rev.error,
            "recorded_at": iso(rev.recorded_at),
            "chain_hash": rev.chain_hash,
            "plan": rev.plan,
            "plan_delta": rev.plan_delta,
        })
    return out


#: What the public API says about a failed check, by error kind: our own words, never git's
#: or the database's (issue 16, point 2: git's text was a port-scan oracle and named paths).
PUBLIC_ERRORS = {
    "not_found": "the repository was not found, or is not accessible",
    "gated": "the repository is gated and the configured token has no access",
    "revision_not_found": "the tracked branch does not exist",
    "entry_not_found": "a listed file could not be read",
    "rate_limited": "the source asked us to slow down; retrying later",
    "unavailable": "the source could not be reached; retrying later",
    "too_large": "the repository is over a configured size limit",
    "database": "the result could not be stored; retrying",
    "invalid": "the repository location is not valid",
    "refused": "the repository's address is not a public one; it is not fetched",
}


def public_error(kind: str | None, text: str | None) -> str | None:
    """``last_error`` as the public API and pages show it (the operator's CLI shows ``text``)."""
    if text is None and kind is None:
        return None
    return PUBLIC_ERRORS.get(kind or "", "the check failed; the daemon's log has the details")


def repo_json(repo: RepoRecord, *, public: bool = True) -> dict[str, Any]:
    """One entry of ``repos --json`` (``public=False``) and of ``GET /api/v1/repos``."""
    return {
        "id": repo.id,
        "source": strip_credentials(repo.source),
        "source_kind": repo.source_kind,
        "branch": repo.branch,
        "head": repo.head_sha,
        "revisions": repo.revisions,
        "status": repo.status,
        "last_poll": iso(repo.last_poll_at),
        "last_success": iso(repo.last_success_at),
        "last_change": iso(repo.last_change_at),
        "last_error": public_error(repo.last_error_kind, repo.last_error) if public else repo.last_error,
        "last_error_kind": repo.last_error_kind,
        "failures": repo.failures,
        "next_check": iso(repo.next_check_at),
    }


def subscription_json(sub: SubscriptionRecord, *, with_secret: bool = False) -> dict[str, Any]:
    """A webhook subscription; its secret only on creation."""
    out: dict[str, Any] = {
        "id": sub.id,
        "url": sub.url,
        "repos": None if sub.repos is None else list(sub.repos),
        "status": sub.status,
        "created_at": iso(sub.created_at),
        "consecutive_failures": sub.consecutive_failures,
        "disabled_reason": sub.disabled_reason,
        "deliveries": {"pending": sub.pending, "delivered": sub.delivered, "failed": sub.failed},
        "last_error": sub.last_error,
        "failing_since": iso(sub.failing_since),
        "previous_secret_expires_at": iso(sub.previous_secret_until),
    }
    if with_secret:
        out["secret"] = sub.secret
    return out
