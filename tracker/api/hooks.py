"""``POST /hooks/huggingface``: Hub webhooks mark a tracked repo due at once.

The Hub sends its secret verbatim in ``X-Webhook-Secret`` (no HMAC; hub-api.md §16), so it
is compared in constant time; ``?secret=`` works too when ``[hooks] allow_query_secret`` is
set, for receivers behind proxies that drop headers (off by default: URLs land in logs). The payload is parsed leniently by hand: huggingface_hub's own model drops
``headSha`` and rejects unknown actions and versions. Unknown events are acknowledged (200)
and ignored, so the Hub does not retry them. A push is only a hint: the daemon confirms
with its own head check, so a forged or replayed payload costs one request, never a record.
"""

from __future__ import annotations

import hmac
import json
import logging
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, HTTPException, Request

from storage.store import Store
from tracker.config import Settings

log = logging.getLogger("hubwatch.hooks")

MAX_BODY = 1_000_000  # real payloads are a few kB


@dataclass(frozen=True, slots=True)
class HubEvent:
    action: str
    scope: str
    repo_type: str
    repo_name: str
    head_sha: str | None  # sha of main, when the scope starts with "repo"
    updated_refs: tuple[tuple[str, str | None], ...]  # (ref, newSha); newSha None: deleted


def parse_hub_event(body: bytes) -> HubEvent | None:
    """The fields hubwatch acts on, or None for anything it does not understand."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    event, repo = doc.get("event"), doc.get("repo")
    if not isinstance(event, dict) or not isinstance(repo, dict):
        return None
    name = repo.get("name")
    if not isinstance(name, str) or name.count("/") != 1 or len(name) > 200:
        return None
    refs: list[tuple[str, str | None]] = []
    raw_refs = doc.get("updatedRefs")
    for r in raw_refs if isinstance(raw_refs, list) else []:
        if isinstance(r, dict) and isinstance(r.get("ref"), str):
            new = r.get("newSha")
            refs.append((r["ref"], new if isinstance(new, str) else None))
    head = repo.get("headSha")
    return HubEvent(
        action=str(event.get("action", "")), scope=str(event.get("scope", "")),
        repo_type=str(repo.get("type", "model")), repo_name=name,
        head_sha=head if isinstance(head, str) else None, updated_refs=tuple(refs),
    )


def secret_ok(expected: str, given: str | None) -> bool:
    """Constant-time comparison; an empty expected secret never matches."""
    return bool(expected) and given is not None and hmac.compare_digest(expected.encode(), given.encode())


def decide(ev: HubEvent | None, branch: str | None, head: str | None) -> str | None:
    """Why the event is ignored, or None when it should mark the repo due."""
    if ev is None:
        return "not a Hub repo event"
    if ev.repo_type != "model" or not (ev.scope == "repo" or ev.scope.startswith("repo.")):
        return f"{ev.repo_type} {ev.scope or 'event'} is not watched"
    if branch is None:
        return "not tracked"
    ref = f"refs/heads/{branch}"
    if ev.updated_refs:
        moved = [new for r, new in ev.updated_refs if r == ref]
        if not moved:
            return "another ref moved"
        if head is not None and moved[-1] == head:
            return "already current"
    elif branch == "main" and head is not None and ev.head_sha == head and ev.action == "update":
        return "already current"
    return None


def hooks_router(store: Store, settings: Settings) -> APIRouter:
    router = APIRouter()

    @router.post("/hooks/huggingface", tags=["hooks"])
    async def huggingface(request: Request) -> dict[str, Any]:
        metrics = getattr(request.app.state, "metrics", None)

        def outcome(name: str) -> None:
            if metrics is not None:
                metrics.hook(name)

        expected = settings.hooks.secret
        if not expected:
            outcome("disabled")
            raise HTTPException(403, "inbound webhooks are disabled: set [hooks] secret or HUBWATCH_WEBHOOK_SECRET")
        given = request.headers.get("x-webhook-secret")
        if given is None and settings.hooks.allow_query_secret:  # a query string ends up in access logs
            given = request.query_params.get("secret")
        if given is None:
            outcome("unauthorized")
            raise HTTPException(401, "missing X-Webhook-Secret")
        if not secret_ok(expected, given):
            outcome("forbidden")
            raise HTTPException(403, "wrong webhook secret")
        body = await _read_capped(request)
        ev = parse_hub_event(body)
        repo = store.get_repo(ev.repo_name) if ev is not None else None
        active = repo is not None and repo.active
        reason = decide(ev, repo.branch if repo is not None and active else None,
                        repo.head_sha if repo is not None else None)
        if reason is not None or repo is None:
            outcome("ignored")
            return {"status": "ignored", "reason": reason or "not tracked"}
        store.mark_due(repo.id)
        outcome("queued")
        log.info("hook repo=%s action=%s scope=%s: due now", repo.id, ev.action if ev else "", ev.scope if ev else "")
        return {"status": "queued", "repo": repo.id}

    return router


async def _read_capped(request: Request) -> bytes:
    """The body, refusing more than MAX_BODY bytes before reading them all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise HTTPException(413, "payload too large")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise HTTPException(413, "payload too large")
        chunks.append(chunk)
    return b"".join(chunks)
