"""Stage 8 (read): outbound webhook subscriptions, ``/api/v1/subscriptions`` (token needed).

``POST {"url", "repos": ["org/name"] | null, "secret"?}`` answers 201 with the subscription
and its ``whsec_`` secret (shown only then); ``GET`` lists them with their status (active or
disabled, and why), failure count and delivery counts; ``GET /{id}`` adds the newest
deliveries; ``PATCH /{id} {"status": "active" | "disabled", "rotate_secret": true, "secret"?}``
enables (its queue resumes at once) or disables (its queue is kept) a subscription and rotates
its secret (the old one still signs during ``[webhooks] secret_rotation_hours``);
``DELETE /{id}`` removes one, but answers 409 while events are queued for it unless
``?discard_pending=true`` (queued events are never dropped silently).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from advisories.webhooks import DestinationRefused, new_secret, secret_key, validate_subscription
from storage import subscriptions as subs
from storage.store import Store
from tracker.api.auth import token_guard
from tracker.api.views import iso, subscription_json
from tracker.config import Settings

SUB_ID = re.compile(r"^sub_[0-9a-f]{24}$")


class SubscriptionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(..., min_length=8, max_length=2000, description="http(s) URL the deliveries are POSTed to")
    repos: list[str] | None = Field(None, max_length=1000, description="only these org/name repos; null: all")
    secret: str | None = Field(None, max_length=200, description="a whsec_ secret; default: a new one")


class SubscriptionPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: Literal["active", "disabled"] | None = Field(None, description="active resumes the queue")
    rotate_secret: bool = Field(False, description="sign with a new secret; the old one too for a while")
    secret: str | None = Field(None, max_length=200, description="the new whsec_ secret; default: a new one")


def subscriptions_router(store: Store, settings: Settings) -> APIRouter:
    router = APIRouter(prefix="/subscriptions", tags=["subscriptions"], dependencies=[Depends(token_guard(settings))])

    def found(sub_id: str) -> subs.SubscriptionRecord:
        sub = subs.get_subscription(store, sub_id) if SUB_ID.match(sub_id) else None
        if sub is None:
            raise HTTPException(404, f"no subscription {sub_id[:60]!r}")
        return sub

    @router.post("", status_code=201)
    def create(body: SubscriptionIn) -> dict[str, Any]:
        try:
            validate_subscription(body.url, body.repos, body.secret,
                                  allow_private=settings.webhooks.allow_private_destinations)
        except DestinationRefused as e:
            raise HTTPException(400, f"destination refused: {e}") from e
        except ValueError as e:
            raise HTTPException(400, str(e)) from e
        sub = subs.create_subscription(store, url=body.url, repos=body.repos, secret=body.secret or new_secret(),
                                       now=datetime.now(UTC))
        return subscription_json(sub, with_secret=True)

    @router.get("")
    def list_all() -> list[dict[str, Any]]:
        return [subscription_json(s) for s in subs.list_subscriptions(store)]

    @router.get("/{sub_id}")
    def one(sub_id: str) -> dict[str, Any]:
        doc = subscription_json(found(sub_id))
        doc["recent_deliveries"] = [
            {**d, "next_attempt_at": iso(d["next_attempt_at"]), "delivered_at": iso(d["delivered_at"])}
            for d in subs.deliveries(store, sub_id)
        ]
        return doc

    @router.patch("/{sub_id}")
    def change(sub_id: str, body: SubscriptionPatch) -> dict[str, Any]:
        found(sub_id)
        if body.secret is not None and not body.rotate_secret:
            raise HTTPException(400, "a secret is set with rotate_secret: true")
        try:
            sub = apply_patch(store, settings, sub_id, status=body.status, rotate=body.rotate_secret,
                              secret=body.secret)
        except ValueError as e:
            raise HTTPException(400, str(e)) from e
        return subscription_json(sub, with_secret=body.rotate_secret)

    @router.delete("/{sub_id}", status_code=204)
    def remove(sub_id: str, discard_pending: bool = Query(False)) -> Response:
        found(sub_id)
        try:
            subs.delete_subscription(store, sub_id, discard_pending=discard_pending)
        except subs.PendingDeliveries as e:
            raise HTTPException(409, f"{e.pending} deliveries are still queued for {sub_id}: enable it and let "
                                     "them go out, or delete with ?discard_pending=true") from e
        return Response(status_code=204)

    return router


def apply_patch(store: Store, settings: Settings, sub_id: str, *, status: str | None, rotate: bool,
                secret: str | None) -> subs.SubscriptionRecord:
    """Enable/disable and rotate, as the API's PATCH and the CLI do it; ValueError for a bad secret."""
    now = datetime.now(UTC)
    if rotate:
        new = secret or new_secret()
        secret_key(new)
        subs.rotate_secret(store, sub_id, new, now=now,
                           window=timedelta(hours=settings.webhooks.secret_rotation_hours))
    if status is not None:
        subs.set_active(store, sub_id, status == "active", now=now)
    sub = subs.get_subscription(store, sub_id)
    if sub is None:
        raise ValueError(f"no subscription {sub_id!r}")
    return sub
