"""The webhook outbox's state machine (stage 6, store): lease, deliver, retry, give up, prune.

A delivery row is ``pending`` until a POST succeeds (``delivered``). Nothing is given up
while the receiver is down: an event leaves ``pending`` for ``failed`` only after
``max_attempts`` and only when the receiver answered 2xx to something since the event was
queued (it is up and refuses this one). A receiver that keeps failing is disabled once its
failures span ``disable_after`` (days, by default) without one success; a disabled
subscription keeps its queue, and events keep being queued for it, for when it is enabled
again. Due rows are leased to one deliverer at a time (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL); a crashed deliverer's lease runs out and the row is retried under the same
``webhook_id`` (at least once).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, or_, update
from sqlmodel import col, select

from storage.store import Store
from storage.tables import DeliveryRow, SubscriptionRow

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


@dataclass(frozen=True, slots=True)
class DueDelivery:
    """A leased delivery with what it takes to send it; ``secrets``: the current one first,
    then the previous one while a rotation window is open."""

    id: int
    subscription_id: str
    url: str
    secrets: tuple[str, ...]
    webhook_id: str
    event_type: str
    payload: dict[str, Any]
    attempts: int


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt: what went wrong and when the next one may go."""

    error: str
    status_code: int | None
    retry_in: float  # seconds, from the retry schedule (Retry-After already folded in)
    hold_subscription: float | None = None  # a 429/503 Retry-After: nothing to this receiver before


def _signing_secrets(sub: SubscriptionRow, now: datetime) -> tuple[str, ...]:
    if sub.previous_secret and sub.previous_secret_until is not None and sub.previous_secret_until > now:
        return (sub.secret, sub.previous_secret)
    return (sub.secret,)


def claim_due(store: Store, owner: str, *, now: datetime, limit: int, lease_seconds: float) -> list[DueDelivery]:
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
                out.append(DueDelivery(d.id, sub.id, sub.url, _signing_secrets(sub, now), d.webhook_id,
                                       d.event_type, dict(d.payload), d.attempts))
        s.commit()
        return out


def mark_delivered(store: Store, delivery: DueDelivery, owner: str, *, now: datetime, status_code: int | None) -> None:
    """Record a 2xx. After a failing streak the rest of the queue falls due at once: the
    receiver is back, and whatever waited for its backoff goes now."""
    with store.session() as s:
        s.execute(
            update(DeliveryRow).where(col(DeliveryRow.id) == delivery.id, col(DeliveryRow.lease_owner) == owner)
            .values(status=DELIVERED, attempts=DeliveryRow.attempts + 1, delivered_at=now, last_error=None,
                    last_status_code=status_code, lease_owner=None, lease_expires_at=None)
        )
        sub = s.get(SubscriptionRow, delivery.subscription_id)
        if sub is not None:
            if sub.failing_since is not None:
                s.execute(
                    update(DeliveryRow).where(col(DeliveryRow.subscription_id) == sub.id)
                    .where(col(DeliveryRow.status) == PENDING, col(DeliveryRow.next_attempt_at) > now)
                    .values(next_attempt_at=now)
                )
            sub.consecutive_failures, sub.failing_since, sub.last_success_at = 0, None, now
            s.add(sub)
        s.commit()


def mark_failed(
    store: Store, delivery: DueDelivery, owner: str, *, now: datetime, failure: Failure, max_attempts: int,
    disable_after: timedelta,
) -> bool:
    """Record a failed attempt and schedule the next; True when the subscription got disabled."""
    with store.session() as s:
        row = s.get(DeliveryRow, delivery.id)
        if row is None or row.lease_owner != owner:
            return False  # our lease expired and someone else took the row over
        sub = s.get(SubscriptionRow, delivery.subscription_id)
        row.attempts += 1
        row.last_error = failure.error[:2000]
        row.last_status_code = failure.status_code
        row.lease_owner = row.lease_expires_at = None
        receiver_up = sub is not None and sub.last_success_at is not None and sub.last_success_at > row.created_at
        if row.attempts >= max_attempts and receiver_up:
            row.status = FAILED  # the receiver takes other events but keeps refusing this one
            row.next_attempt_at = now
        else:
            row.next_attempt_at = now + timedelta(seconds=failure.retry_in)
        s.add(row)
        disabled = False
        if sub is not None:
            if failure.hold_subscription:
                hold = now + timedelta(seconds=failure.hold_subscription)
                s.execute(
                    update(DeliveryRow).where(col(DeliveryRow.subscription_id) == sub.id)
                    .where(col(DeliveryRow.status) == PENDING, col(DeliveryRow.next_attempt_at) < hold)
                    .where(col(DeliveryRow.id) != row.id)
                    .where(or_(col(DeliveryRow.lease_owner).is_(None), col(DeliveryRow.lease_owner) == owner))
                    .values(next_attempt_at=hold)
                )
            sub.consecutive_failures += 1
            sub.failing_since = sub.failing_since or now
            if sub.active and now - sub.failing_since >= disable_after:
                sub.active = False
                sub.disabled_reason = (
                    f"disabled after {sub.consecutive_failures} failed deliveries over "
                    f"{_span(now - sub.failing_since)} without a success; last: {failure.error}; "
                    "its queue is kept: enable it again to resume"
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


def resume(s: Any, sub_id: str, now: datetime) -> int:
    """Every pending delivery of a subscription due now (it was enabled again); returns the count."""
    return int(s.execute(
        update(DeliveryRow).where(col(DeliveryRow.subscription_id) == sub_id, col(DeliveryRow.status) == PENDING)
        .values(next_attempt_at=now, lease_owner=None, lease_expires_at=None)
    ).rowcount)


def prune_delivered(store: Store, *, before: datetime) -> int:
    """Delete delivered rows older than ``before`` (pending and failed ones are kept)."""
    with store.session() as s:
        n = s.execute(
            delete(DeliveryRow).where(col(DeliveryRow.status) == DELIVERED, col(DeliveryRow.delivered_at) < before)
        ).rowcount  # type: ignore[attr-defined]
        s.commit()
        return int(n)


def _span(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"
