"""Stage 8 (read): outbound webhook subscriptions, ``/api/v1/subscriptions`` (token needed).

``POST {"url", "repos": ["org/name"] | null, "secret"?}`` answers 201 with the subscription
and its ``whsec_`` secret (shown only then); ``GET`` lists them with their status (active or
disabled, and why), failure count and delivery counts; ``GET /{id}`` adds the newest
deliveries; ``DELETE /{id}`` removes one and its pending deliveries.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Response
from pydantic import BaseModel, ConfigDict, Field

from advisories.webhooks import DestinationRefused, new_secret, validate_subscription
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

    @router.delete("/{sub_id}", status_code=204)
    def remove(sub_id: str) -> Response:
        found(sub_id)
        subs.delete_subscription(store, sub_id)
        return Response(status_code=204)

    return router
