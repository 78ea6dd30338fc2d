"""The webhook outbox: deliveries are enqueued in the same transaction as the advisory edit
that causes them, so an advisory is never stored without its deliveries (at least once)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Session, select

from storage.tables import DeliveryRow, SubscriptionRow


def webhook_id(record: dict[str, Any]) -> str:
    """The Standard Webhooks message id of an advisory event: ``<advisory id>.<modified>``."""
    return f"{record['id']}.{record['modified']}"


def event_payload(record: dict[str, Any], event_type: str) -> dict[str, Any]:
    return {"type": event_type, "timestamp": record["modified"], "data": record}


def enqueue_advisory_event(
    s: Session, repo_id: str, record: dict[str, Any], event_type: str, now: datetime
) -> int:
    """One pending delivery per subscription that wants ``repo_id``; returns the count.

    Disabled subscriptions get theirs too: disabling pauses delivery, it does not drop events,
    so enabling one again delivers everything that happened meanwhile.
    """
    subs = s.exec(select(SubscriptionRow)).all()
    wid = webhook_id(record)
    n = 0
    for sub in subs:
        if sub.repos is not None and repo_id not in sub.repos:
            continue
        exists = s.exec(
            select(DeliveryRow.id).where(DeliveryRow.subscription_id == sub.id, DeliveryRow.webhook_id == wid)
        ).first()
        if exists is not None:
            continue
        s.add(DeliveryRow(
            subscription_id=sub.id, webhook_id=wid, event_type=event_type,
            payload=event_payload(record, event_type), next_attempt_at=now, created_at=now,
        ))
        n += 1
    return n
