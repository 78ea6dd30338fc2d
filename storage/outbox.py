"""The webhook outbox: deliveries are enqueued in the same transaction as the advisory edit
that causes them, so an advisory is never stored without its deliveries (at least once)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import insert, select

from storage.tables import DeliveryRow, SubscriptionRow

D = DeliveryRow.__table__.c  # type: ignore[attr-defined]
SUB = SubscriptionRow.__table__.c  # type: ignore[attr-defined]


def webhook_id(record: dict[str, Any]) -> str:
    """The Standard Webhooks message id of an advisory event: ``<advisory id>.<modified>``."""
    return f"{record['id']}.{record['modified']}"


def event_payload(record: dict[str, Any], event_type: str) -> dict[str, Any]:
    return {"type": event_type, "timestamp": record["modified"], "data": record}


def enqueue_advisory_event(db: Any, repo_id: str, record: dict[str, Any], event_type: str, now: datetime) -> int:
    """One pending delivery per subscription that wants ``repo_id``; returns the count.

    Disabled subscriptions get theirs too: disabling pauses delivery, it does not drop events,
    so enabling one again delivers everything that happened meanwhile. ``db``: the caller's
    Session or Connection (Core statements: storage.revision_rows).
    """
    wid = webhook_id(record)
    rows = []
    for sub_id, repos in db.execute(select(SUB.id, SUB.repos)).all():
        if repos is not None and repo_id not in repos:
            continue
        if db.execute(select(D.id).where(D.subscription_id == sub_id, D.webhook_id == wid)).first() is not None:
            continue
        rows.append({"subscription_id": sub_id, "webhook_id": wid, "event_type": event_type,
                     "payload": event_payload(record, event_type), "status": "pending", "attempts": 0,
                     "next_attempt_at": now, "created_at": now})
    if rows:
        db.execute(insert(DeliveryRow.__table__), rows)  # type: ignore[arg-type]
    return len(rows)
