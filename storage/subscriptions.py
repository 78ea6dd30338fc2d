"""Webhook subscriptions and the delivery outbox's state machine (stage 6, store).

A delivery row is ``pending`` until a POST succeeds (``delivered``) or ``max_attempts``
POSTs failed (``failed``). Due rows are leased to one deliverer at a time (``FOR UPDATE SKIP
LOCKED`` on PostgreSQL), so several daemons never send the same attempt twice; a crashed
deliverer's lease expires and the row is retried (at least once, same ``webhook_id``).
Every failed attempt counts against the subscription; ``disable_after`` failures in a row
disable it (with the reason, visible in the API); one success resets the count.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, or_, update
from sqlmodel import col, select

from storage.store import Store
from storage.tables import DeliveryRow, SubscriptionRow

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


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

    @property
    def status(self) -> str:
        return "active" if self.active else "disabled"


@dataclass(frozen=True, slots=True)
class DueDelivery:
    """A leased delivery with what it takes to send it."""

    id: int
    subscription_id: str
    url: str
    secret: str
    webhook_id: str
    event_type: str
    payload: dict[str, Any]
    attempts: int


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


def delete_subscription(store: Store, sub_id: str) -> bool:
    """Remove a subscription and its outbox rows (nothing more is sent to it)."""
    with store.session() as s:
        if s.get(SubscriptionRow, sub_id) is None:
            return False
        s.execute(delete(DeliveryRow).where(col(DeliveryRow.subscription_id) == sub_id))
        s.execute(delete(SubscriptionRow).where(col(SubscriptionRow.id) == sub_id))
        s.commit()
        return True


def claim_due(store: Store, owner: str, *, now: datetime, limit: int, lease_seconds: int) -> list[DueDelivery]:
    """Lease up to ``limit`` due deliveries of active subscriptions, oldest first."""
    with store.session() as s:
        q = (
            select(DeliveryRow, SubscriptionRow)
            .join(SubscriptionRow, col(SubscriptionRow.id) == col(DeliveryRow.subscription_id))
            .where(col(DeliveryRow.status) == PENDING, col(DeliveryRow.next_attempt_at) <= now)
            .where(col(SubscriptionRow.active))
            .where(or_(col(DeliveryRow.lease_expires_at).is_(None), col(DeliveryRow.lease_expires_at) < now))
            .order_by(col(DeliveryRow.next_attempt_at), col(DeliveryRow.id))
            .limit(limit)
        )
        if store.dialect == "postgresql":
            q = q.with_for_update(skip_locked=True, of=DeliveryRow)
        rows = s.exec(q).all()
        until = now + timedelta(seconds=lease_seconds)
        out = []
        for d, sub in rows:
            # a conditional UPDATE: of several deliverers that read the same row, one wins
            # (SQLite re-reads the row under its write lock; PostgreSQL already locked it)
            won = s.execute(
                update(DeliveryRow).where(col(DeliveryRow.id) == d.id, col(DeliveryRow.status) == PENDING)
                .where(or_(col(DeliveryRow.lease_expires_at).is_(None), col(DeliveryRow.lease_expires_at) < now))
                .values(lease_owner=owner, lease_expires_at=until)
            ).rowcount  # type: ignore[attr-defined]
            if won == 1 and d.id is not None:
                out.append(DueDelivery(d.id, sub.id, sub.url, sub.secret, d.webhook_id, d.event_type,
                                       dict(d.payload), d.attempts))
        s.commit()
        return out


def mark_delivered(store: Store, delivery: DueDelivery, owner: str, *, now: datetime, status_code: int | None) -> None:
    with store.session() as s:
        s.execute(
            update(DeliveryRow).where(col(DeliveryRow.id) == delivery.id, col(DeliveryRow.lease_owner) == owner)
            .values(status=DELIVERED, attempts=DeliveryRow.attempts + 1, delivered_at=now, last_error=None,
                    last_status_code=status_code, lease_owner=None, lease_expires_at=None)
        )
        s.execute(update(SubscriptionRow).where(col(SubscriptionRow.id) == delivery.subscription_id)
                  .values(consecutive_failures=0))
        s.commit()


def mark_failed(
    store: Store, delivery: DueDelivery, owner: str, *, now: datetime, error: str, status_code: int | None,
    retry_in: float, max_attempts: int, disable_after: int,
) -> bool:
    """Record a failed attempt; schedules a retry or gives up. True when the subscription got disabled."""
    with store.session() as s:
        row = s.get(DeliveryRow, delivery.id)
        if row is None or row.lease_owner != owner:
            return False  # our lease expired and someone else took the row over
        row.attempts += 1
        row.last_error = error[:2000]
        row.last_status_code = status_code
        row.lease_owner = row.lease_expires_at = None
        if row.attempts >= max_attempts:
            row.status = FAILED
        else:
            row.next_attempt_at = now + timedelta(seconds=retry_in)
        s.add(row)
        sub = s.get(SubscriptionRow, delivery.subscription_id)
        disabled = False
        if sub is not None:
            sub.consecutive_failures += 1
            if sub.active and disable_after > 0 and sub.consecutive_failures >= disable_after:
                sub.active = False
                sub.disabled_reason = (
                    f"disabled after {sub.consecutive_failures} failed deliveries in a row; last: {error}"
                )[:2000]
                disabled = True
            s.add(sub)
        s.commit()
        return disabled


def release(store: Store, delivery: DueDelivery, owner: str) -> None:
    """Give a leased delivery back untried (the pass skipped it)."""
    with store.session() as s:
        s.execute(
            update(DeliveryRow).where(col(DeliveryRow.id) == delivery.id, col(DeliveryRow.lease_owner) == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )
        s.commit()


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
        failed=counts.get(FAILED, 0), last_error=counts.get("last_error"),
    )
