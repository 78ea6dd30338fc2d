"""Webhook subscriptions (stage 6, store): create, list, enable/disable, rotate the secret, delete.

The outbox rows and their state machine live in :mod:`storage.deliveries`. Disabling keeps
a subscription's queue; enabling resumes it; deleting refuses to drop queued events unless
told to.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func
from sqlmodel import col, select

from storage.deliveries import DELIVERED, FAILED, PENDING, resume
from storage.store import Store
from storage.tables import DeliveryRow, SubscriptionRow


@dataclass(frozen=True, slots=True)
class SubscriptionRecord:
    id: str
    url: str
    repos: tuple[str, ...] | None
    secret: str
    created_at: datetime
    active: bool
    consecutive_failures: int
    disabled_reason: str | None
    pending: int = 0
    delivered: int = 0
    failed: int = 0
    last_error: str | None = None
    failing_since: datetime | None = None
    previous_secret_until: datetime | None = None

    @property
    def status(self) -> str:
        return "active" if self.active else "disabled"


def new_subscription_id() -> str:
    return "sub_" + secrets.token_hex(12)


def create_subscription(
    store: Store, *, url: str, repos: Sequence[str] | None, secret: str, now: datetime,
) -> SubscriptionRecord:
    row = SubscriptionRow(
        id=new_subscription_id(), url=url, repos=None if repos is None else list(dict.fromkeys(repos)),
        secret=secret, created_at=now,
    )
    with store.session() as s:
        s.add(row)
        s.commit()
    return _record(row, {})


def list_subscriptions(store: Store) -> list[SubscriptionRecord]:
    with store.session() as s:
        rows = s.exec(select(SubscriptionRow).order_by(col(SubscriptionRow.created_at), col(SubscriptionRow.id))).all()
        counts = _counts(s, None)
        return [_record(r, counts.get(r.id, {})) for r in rows]


def get_subscription(store: Store, sub_id: str) -> SubscriptionRecord | None:
    with store.session() as s:
        row = s.get(SubscriptionRow, sub_id)
        return None if row is None else _record(row, _counts(s, sub_id).get(sub_id, {}))


class PendingDeliveries(Exception):
    """Deleting would drop queued events; the caller must say that it means it."""

    def __init__(self, pending: int):
        super().__init__(f"{pending} deliveries are still queued")
        self.pending = pending


def delete_subscription(store: Store, sub_id: str, *, discard_pending: bool = False) -> int | None:
    """Remove a subscription and its outbox rows; None when there is none.

    Queued events are never dropped silently: with pending deliveries this raises
    :class:`PendingDeliveries` unless ``discard_pending``. Returns how many were discarded.
    """
    with store.session() as s:
        if s.get(SubscriptionRow, sub_id) is None:
            return None
        pending = int(s.exec(select(func.count()).select_from(DeliveryRow).where(
            DeliveryRow.subscription_id == sub_id, DeliveryRow.status == PENDING)).one())
        if pending and not discard_pending:
            raise PendingDeliveries(pending)
        s.execute(delete(DeliveryRow).where(col(DeliveryRow.subscription_id) == sub_id))
        s.execute(delete(SubscriptionRow).where(col(SubscriptionRow.id) == sub_id))
        s.commit()
        return pending


def set_active(store: Store, sub_id: str, active: bool, *, now: datetime) -> SubscriptionRecord | None:
    """Enable (its queue resumes at once, the failure streak starts afresh) or disable a subscription."""
    with store.session() as s:
        row = s.get(SubscriptionRow, sub_id)
        if row is None:
            return None
        if active and not row.active:
            row.active, row.disabled_reason, row.consecutive_failures, row.failing_since = True, None, 0, None
            resume(s, sub_id, now)
        elif not active and row.active:
            row.active, row.disabled_reason = False, "disabled by request; its queue is kept"
        s.add(row)
        s.commit()
    return get_subscription(store, sub_id)


def rotate_secret(store: Store, sub_id: str, new_secret: str, *, now: datetime, window: timedelta) -> SubscriptionRecord | None:
    """Sign with ``new_secret`` from now on, and with the old one too until ``now + window``."""
    with store.session() as s:
        row = s.get(SubscriptionRow, sub_id)
        if row is None:
            return None
        row.previous_secret, row.previous_secret_until = row.secret, now + window
        row.secret = new_secret
        s.add(row)
        s.commit()
    return get_subscription(store, sub_id)


def deliveries(store: Store, sub_id: str, *, limit: int = 50) -> list[dict[str, Any]]:
    """The newest deliveries of a subscription, for the API and the CLI."""
    with store.session() as s:
        rows = s.exec(
            select(DeliveryRow).where(DeliveryRow.subscription_id == sub_id)
            .order_by(col(DeliveryRow.id).desc()).limit(limit)
        ).all()
        return [
            {"webhook_id": r.webhook_id, "type": r.event_type, "status": r.status, "attempts": r.attempts,
             "next_attempt_at": r.next_attempt_at, "delivered_at": r.delivered_at, "last_error": r.last_error,
             "last_status_code": r.last_status_code}
            for r in rows
        ]


def _counts(s: Any, sub_id: str | None) -> dict[str, dict[str, Any]]:
    q = select(DeliveryRow.subscription_id, DeliveryRow.status, func.count()).group_by(
        col(DeliveryRow.subscription_id), col(DeliveryRow.status))
    if sub_id is not None:
        q = q.where(DeliveryRow.subscription_id == sub_id)
    out: dict[str, dict[str, Any]] = {}
    for sid, status, n in s.exec(q).all():
        out.setdefault(sid, {})[status] = int(n)
    newest = select(DeliveryRow.subscription_id, func.max(DeliveryRow.id)).where(
        col(DeliveryRow.last_error).is_not(None)).group_by(col(DeliveryRow.subscription_id))
    if sub_id is not None:
        newest = newest.where(DeliveryRow.subscription_id == sub_id)
    ids = [i for _, i in s.exec(newest).all()]
    if ids:
        for sid, err in s.exec(select(DeliveryRow.subscription_id, DeliveryRow.last_error)
                               .where(col(DeliveryRow.id).in_(ids))).all():
            out.setdefault(sid, {})["last_error"] = err
    return out


def _record(row: SubscriptionRow, counts: dict[str, Any]) -> SubscriptionRecord:
    return SubscriptionRecord(
        id=row.id, url=row.url, repos=None if row.repos is None else tuple(row.repos), secret=row.secret,
        created_at=row.created_at, active=row.active, consecutive_failures=row.consecutive_failures,
        disabled_reason=row.disabled_reason, pending=counts.get(PENDING, 0), delivered=counts.get(DELIVERED, 0),
        failed=counts.get(FAILED, 0), last_error=counts.get("last_error"), failing_since=row.failing_since,
        previous_secret_until=row.previous_secret_until,
    )
